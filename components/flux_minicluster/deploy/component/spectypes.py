"""Typed object types for the MiniCluster spec, for the component package's schema.

``spec`` is validated by the one pydantic model (``core.spec.models.MiniClusterSpec``); TypeScript,
Go and YAML programs get that model as schema object types, generated here from it, so that their
SDKs complete the fields and a misspelt one is a compile error rather than a failed ``up``. Every
v1alpha2 field is there, named as a document spells it (camelCase), described by its class and
attribute docstrings; the fields only a v1alpha1 document may set are left out. ``spec`` is then a
v1alpha2 document or a bare v1alpha2 spec (a schema ``oneOf``). Go SDKs make a ``oneOf`` an
``interface{}``, so Go programs keep passing maps.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from flux_minicluster.core.spec import models as spec
from flux_minicluster.core.spec.models import Metadata, MiniClusterSpec

ANY: Final = {"$ref": "pulumi.json#/Any"}
DOCUMENT: Final = "MiniClusterDocument"
METADATA: Final = "MiniClusterMetadata"
SPEC: Final = "MiniClusterSpec"
API_VERSION: Final = spec.API_VERSION


def _v1alpha1_only(model: type[BaseModel]) -> set[str]:
    """The fields of ``model`` only v1alpha1 documents may set (``v1alpha1_only`` validators)."""
    found: set[str] = set()
    for decorator in model.__pydantic_decorators__.field_validators.values():
        if getattr(decorator.func, "__name__", "") == "v1alpha1_only":
            found.update(decorator.info.fields)
    return found


def _models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every pydantic model reachable from ``root`` by its fields, by class name."""
    found: dict[str, type[BaseModel]] = {}
    todo: list[Any] = [root]
    while todo:
        item = todo.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item.__name__ in found:
                continue
            found[item.__name__] = item
            todo += [f.annotation for f in item.model_fields.values()]
        for arg in getattr(item, "__args__", ()) or ():
            todo.append(arg)
    return found


def _docstring(model: type[BaseModel], field: str) -> str | None:
    """The attribute docstring of ``field`` (the string literal after its line), if any."""
    import inspect

    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):
        return None
    match = re.search(
        rf"^\s+{re.escape(field)}:[^\n]*\n\s+(?:\"\"\"|''')(.*?)(?:\"\"\"|''')",
        source,
        re.MULTILINE | re.DOTALL,
    )
    return " ".join(match.group(1).split()) if match else None


def _type(js: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A pydantic JSON schema fragment as a Pulumi schema type."""
    if "$ref" in js:
        return {"$ref": f"#/types/{prefix}{js['$ref'].rsplit('/', 1)[-1]}"}
    if "anyOf" in js:
        members = [m for m in js["anyOf"] if m.get("type") != "null"]
        if len(members) == 1:
            return _type(members[0], prefix)
        return {"oneOf": [_type(m, prefix) for m in members]}
    kind = js.get("type")
    if kind in ("string", "integer", "number", "boolean"):
        return {"type": kind}
    if kind == "array":
        return {"type": "array", "items": _type(js.get("items", {}), prefix)}
    if kind == "object":
        extra = js.get("additionalProperties")
        return {
            "type": "object",
            "additionalProperties": _type(extra, prefix) if isinstance(extra, dict) else ANY,
        }
    return dict(ANY)


def _object(model: type[BaseModel], js: dict[str, Any], prefix: str) -> dict[str, Any]:
    skip = {to_camel(f) for f in _v1alpha1_only(model)}
    properties: dict[str, Any] = {}
    names = {(field.alias or to_camel(name)): name for name, field in model.model_fields.items()}
    for key, value in js.get("properties", {}).items():
        if key in skip:
            continue
        prop = _type(value, prefix)
        text = value.get("description") or _docstring(model, names.get(key, key))
        if text:
            prop["description"] = text
        properties[key] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties}
    required = [r for r in js.get("required", []) if r in properties]
    if required:
        out["required"] = required
    if model.__doc__:
        out["description"] = " ".join(model.__doc__.split())
    return out


def spec_types(package: str) -> dict[str, dict[str, Any]]:
    """The schema ``types`` of a v1alpha2 MiniCluster document and spec, keyed by token."""
    prefix = f"{package}:index:"
    schema = MiniClusterSpec.model_json_schema(by_alias=True)
    definitions = {**schema.pop("$defs", {}), SPEC: schema}
    models = _models(MiniClusterSpec)
    types = {
        f"{prefix}{name}": _object(models[name], js, prefix)
        for name, js in definitions.items()
        if name in models
    }
    # Types only the left-out v1alpha1 fields use (users, fluxRestful, ...) are left out too.
    reached: set[str] = set()
    todo = [f"{prefix}{SPEC}"]
    while todo:
        token = todo.pop()
        if token not in reached:
            reached.add(token)
            todo += re.findall(r'"#/types/([^"]+)"', json.dumps(types[token]))
    types = {k: v for k, v in types.items() if k in reached}
    types[f"{prefix}{METADATA}"] = _object(
        Metadata, Metadata.model_json_schema(by_alias=True), prefix
    )
    types[f"{prefix}{DOCUMENT}"] = {
        "type": "object",
        "description": f"A MiniCluster document as the Flux Operator takes it ({API_VERSION}).",
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION},
            "kind": {"type": "string", "description": "MiniCluster"},
            "metadata": {
                "$ref": f"#/types/{prefix}{METADATA}",
                "description": "The MiniCluster's name, namespace, labels and annotations.",
            },
            "spec": {
                "$ref": f"#/types/{prefix}{SPEC}",
                "description": "The MiniCluster spec, as the Flux Operator takes it.",
            },
        },
        "required": ["apiVersion", "kind", "spec"],
    }
    return dict(sorted(types.items()))


def typed_spec(package: str, untyped: dict[str, Any]) -> dict[str, Any]:
    """The ``spec`` input (``untyped``: as the analyzer wrote it, a plain object) as a v1alpha2
    document or a bare v1alpha2 spec; still plain, its description and flags kept."""
    prefix = f"#/types/{package}:index:"
    kept = {k: v for k, v in untyped.items() if k not in ("type", "additionalProperties")}
    return {**kept, "oneOf": [{"$ref": f"{prefix}{DOCUMENT}"}, {"$ref": f"{prefix}{SPEC}"}]}
