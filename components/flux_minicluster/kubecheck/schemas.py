"""The strict OpenAPI schemas of a Kubernetes release, as the API server's first check.

``schema_errors``: types, required fields and unknown fields, from the strict variants of the
real schemas that ``kubernetes-validate`` ships (1.25 to 1.37). It is a development dependency,
so it is imported only when a schema is needed; without it ``schema_errors`` says how to install
it. Schemas and validators are cached per Kubernetes version and kind: checking hundreds of
manifests reads each schema once.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from flux_minicluster.core.kube import kubeversion

# The release renderings target by default (its one owner: core.kube.kubeversion).
DEFAULT_VERSION: Final = str(kubeversion.DEFAULT)


def schemas_missing() -> str | None:
    """Why the strict schema check cannot run here (None when it can): its schemas and validator
    come with the ``dev`` extra, which a plain install of the package does not have."""
    import importlib.util

    missing = [m for m in ("kubernetes_validate", "jsonschema") if not importlib.util.find_spec(m)]
    if not missing:
        return None
    return (
        f"needs kubernetes-validate ({', '.join(missing)} not installed): "
        "pip install kubernetes-validate (in a checkout, `make venv` installs it)"
    )


def _schema_root() -> Any:
    try:
        import kubernetes_validate  # noqa: F401  (imported for its data files)
    except ImportError:
        raise RuntimeError(
            "kubernetes-validate is not installed; it is a development dependency: "
            "pip install -e '.[dev]' (or pip install kubernetes-validate)"
        ) from None
    from importlib.resources import files

    return files("kubernetes_validate") / "kubernetes-json-schema"


def available_versions() -> list[str]:
    """The Kubernetes minor versions with bundled schemas, oldest first (``["1.25", ...]``)."""
    found = set()
    for entry in _schema_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.0-local-strict", entry.name)
        if match:
            found.add((int(match[1]), int(match[2])))
    return [f"{major}.{minor}" for major, minor in sorted(found)]


@functools.cache
def _load(version: str, filename: str) -> Any:
    folder = _schema_root() / f"v{version}.0-local-strict"
    if not folder.is_dir():
        raise ValueError(
            f"no schemas for Kubernetes {version}; available: {', '.join(available_versions())}"
        )
    path = folder / filename
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def _validator(version: str, filename: str) -> Any:
    """A Draft 2020-12 validator for one kind, resolving refs into ``_definitions.json``."""
    import jsonschema
    from referencing import Registry, Resource

    schema = _load(version, filename)
    if schema is None:
        return None
    definitions = _load(version, "_definitions.json")
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _schema_file(manifest: Mapping[str, Any]) -> str:
    """``batch/v1`` + ``Job`` -> ``job-batch-v1.json``; ``v1`` + ``Pod`` -> ``pod-v1.json``."""
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", str(manifest.get("apiVersion", "")))
    return f"{str(manifest.get('kind', '')).lower()}-{api}.json"


def schema_errors(manifest: Mapping[str, Any], version: str = DEFAULT_VERSION) -> list[str]:
    """Every strict-schema error of ``manifest`` for Kubernetes ``version``, as ``path: message``.

    Unknown fields are errors (strict schemas), so a misspelt field is caught, not dropped.
    """
    if not isinstance(manifest.get("apiVersion"), str) or not isinstance(manifest.get("kind"), str):
        return ["<root>: apiVersion and kind are required strings"]
    validator = _validator(version, _schema_file(manifest))
    if validator is None:
        return [
            f"<root>: Kubernetes {version} has no schema for "
            f"{manifest['apiVersion']} {manifest['kind']}"
        ]
    errors = sorted(validator.iter_errors(manifest), key=lambda e: [str(p) for p in e.path])
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]
