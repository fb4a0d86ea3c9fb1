"""The MiniCluster as programs in other languages see it: a component provider with a schema.

Pulumi hosts a Python component for TypeScript, Go, YAML and C# programs through its component
provider host: it reads the component's type annotations, writes a package schema from them, and
each consuming program generates a local SDK from that schema (``pulumi package add``). The
Python face, ``deploy.minicluster.MiniCluster``, takes forms no schema can say (a file path,
pydantic models, ``Literal`` strings), so other languages get a face of their own here, made
from the same declarations (``arguments.MiniClusterArgs``: each argument's ``schema`` type and
``schema_description`` where they differ). It is the same component underneath: the same type
token, the same children and outputs, because both faces call ``minicluster.prepare`` and
``minicluster.expand``. The schema differs only where it must:

* ``spec`` is a v1alpha2 document or a bare v1alpha2 spec, typed from the pydantic model
  (``spectypes``), so other languages complete its fields and refuse a misspelt one. It must be
  known when the program runs, because it is validated before anything is registered;
* ``wait``, ``keygen.strategy`` and ``keygen.containerRuntime`` are enums, made from their
  ``Literal`` types (``declaring.schema_enum``);
* every description is the Python face's docstring, unless its declaration says otherwise;
* the schema marks ``curveCert`` (input and output), ``restfulToken`` and
  ``restfulSecretKey`` secret, which the annotations cannot say: generated SDKs then keep them
  secret too.

Two things the SDK's provider does not do for a Python component are done here. An object input
that arrives as an Output (``burstGroup`` from a StackReference) would be mapped to an empty
object, and an integer inside it that is an Output would fail to convert, so ``burstGroup`` is
mapped to Python names inside an ``apply`` instead. Numbers cross the wire as doubles, so the
spec's ``4.0`` becomes ``4`` again before validation.

No ``from __future__ import annotations`` in this module: the analyzer reads the annotations as
objects, not strings (``MiniClusterInputs`` is made, so it is set on ``MiniCluster.__init__``'s
annotations after the class).
"""

import json
import re
import sys
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

import pulumi
from pulumi.provider import main
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.util import camel_case

from flux_minicluster.core.base import jsonvalues
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.deploy.component import (
    arguments,
    burstgroup,
    declaring,
    keygen,
    minicluster,
    spectypes,
)
from flux_minicluster.deploy.component.arguments import Autoscale, BurstCluster, BurstGroup
from flux_minicluster.deploy.component.published import MiniClusterOutputs
from flux_minicluster.version import __version__

__all__ = [
    "PACKAGE",
    "SECRETS",
    "Autoscale",
    "BurstCluster",
    "BurstGroup",
    "ContainerRuntime",
    "Keygen",
    "KeygenStrategy",
    "MiniCluster",
    "MiniClusterInputs",
    "MiniClusterProvider",
    "Wait",
    "python_args",
    "schema",
    "serve",
]

PACKAGE: Final = minicluster.TYPE.split(":", 1)[0]
# (inputProperties|properties, name): the values the schema marks secret.
SECRETS: Final = (("inputProperties", "curveCert"), ("properties", "curveCert"),
                  ("properties", "restfulToken"), ("properties", "restfulSecretKey"))  # fmt: skip


# The types other languages see, made from the declarations (``arguments``): enums for the
# Literals, ``Keygen`` for ``KeygenArgs``, the inputs for ``MiniClusterArgs``.
MiniClusterInputs: Final = declaring.schema_inputs(arguments.ARGUMENTS, "MiniClusterInputs")
_SCHEMA_TYPES: Final = {argument.name: argument.schema_type() for argument in arguments.ARGUMENTS}
Wait: Final[type[StrEnum]] = _SCHEMA_TYPES["wait"]
Keygen: Final[type] = _SCHEMA_TYPES["keygen"]
_KEYGEN_TYPES: Final = {
    argument.name: argument.schema_type() for argument in declaring.declared(keygen.KeygenArgs)
}
KeygenStrategy: Final[type[StrEnum]] = _KEYGEN_TYPES["strategy"]
ContainerRuntime: Final[type[StrEnum]] = _KEYGEN_TYPES["container_runtime"]


class MiniCluster(MiniClusterOutputs):
    """A Flux MiniCluster on Kubernetes without the Flux Operator: its ConfigMaps, the curve
    certificate's Secret, the headless and lead Services, NetworkPolicies and the Indexed Job of
    its brokers, as the operator would create them."""

    def __init__(
        self,
        name: str,
        args: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        prepared = minicluster.prepare(name, python_args(args))
        super().__init__(minicluster.TYPE, name, {}, opts)
        minicluster.expand(self, name, prepared, opts)


# What the analyzer reads as the inputs: made, so annotated here rather than in the signature.
MiniCluster.__init__.__annotations__["args"] = MiniClusterInputs


def python_args(inputs: Mapping[str, Any]) -> minicluster.MiniClusterArgs:
    """The Python face's arguments for this face's inputs (already under their Python names).

    Enums become their strings, the spec plain JSON again, a whole number of an integer argument
    an integer (numbers cross the gRPC boundary as doubles); everything else is passed as it
    is, so the Python face's checks and messages apply to every language.
    """
    args: dict[str, Any] = dict(inputs)
    spec = args.get("spec")
    if isinstance(spec, pulumi.Output):
        raise SpecError(
            Problem(
                "spec",
                "must be known when the program runs (a literal or config object), "
                "not a resource's output: it is validated before anything is created",
            ),
            source="MiniCluster",
        )
    if spec is not None:
        args["spec"] = jsonvalues.plain(spec)
    for argument in arguments.ARGUMENTS:
        if argument.name in args:
            args[argument.name] = _python_value(args[argument.name], argument.python)
    return typing.cast(minicluster.MiniClusterArgs, args)


def _python_value(value: Any, python: Any) -> Any:
    if isinstance(value, StrEnum):
        return value.value
    if python is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping) and typing.is_typeddict(python):
        return {key: _string(item) for key, item in value.items()}
    return value


def _string(value: Any) -> Any:
    return value.value if isinstance(value, StrEnum) else value


class MiniClusterProvider(ComponentProvider):
    """The component provider that hosts ``MiniCluster``, with the schema completed."""

    def __init__(self, version: str) -> None:
        super().__init__([MiniCluster], PACKAGE, None, version)
        self.schema = json.dumps(_complete(json.loads(self.schema or "{}")))

    def map_inputs(self, inputs: Any, component_def: Any) -> Any:
        """Python names for the inputs; ``burstGroup`` mapped once its Outputs are known."""
        group = inputs.pop("burstGroup", None) if isinstance(inputs, dict) else None
        mapped = dict(super().map_inputs(inputs, component_def))
        if group is not None:
            mapped["burst_group"] = pulumi.Output.from_input(group).apply(_burst_group)
        return mapped


def _burst_group(value: Any) -> Any:
    """A burst group as its root publishes it (camelCase keys, doubles), in Python names."""
    if not isinstance(value, Mapping):
        return value  # the Python face says what is wrong with it
    names = {camel_case(name): name for name in BurstGroup.__annotations__}
    return {names.get(key, key): item for key, item in jsonvalues.plain(value).items()}


def schema() -> dict[str, Any]:
    """The package schema the provider serves (what ``pulumi package get-schema`` prints)."""
    return typing.cast(dict[str, Any], json.loads(MiniClusterProvider(__version__).schema or "{}"))


def serve() -> None:
    """Serve the provider to the Pulumi engine whose address is on the command line.

    ``components/__main__.py`` calls this when Pulumi runs the component package, and the
    ``pulumi-resource-minicluster`` command when the package is installed.
    """
    main(MiniClusterProvider(__version__), sys.argv[1:])


# The Python face's types whose docstrings describe this face's where it gives none.
_DESCRIBED_BY: Final[dict[str, type]] = {
    "MiniCluster": arguments.MiniClusterArgs,
    "Keygen": keygen.KeygenArgs,
    "BurstGroup": burstgroup.BurstGroupArgs,
}


def _complete(spec: dict[str, Any]) -> dict[str, Any]:
    """The analyzer's schema with secrets marked and the Python face's descriptions added."""
    analyzer = Analyzer(PACKAGE)
    resource = spec["resources"][minicluster.TYPE]
    for section, name in SECRETS:
        resource[section][name]["secret"] = True
    inputs = resource["inputProperties"]
    for argument in arguments.ARGUMENTS:
        if argument.arg.schema_description is not None:  # first, as the analyzer puts its own
            prop = inputs[camel_case(argument.name)]
            inputs[camel_case(argument.name)] = {
                "description": argument.arg.schema_description,
                **prop,
            }
    _describe(analyzer, inputs, _DESCRIBED_BY["MiniCluster"])
    _describe(analyzer, resource["properties"], MiniClusterOutputs)
    for token, definition in spec.get("types", {}).items():
        described_by = _DESCRIBED_BY.get(token.rsplit(":", 1)[-1])
        if described_by is not None:
            _describe(analyzer, definition.get("properties", {}), described_by)
        for member in definition.get("enum", ()):
            said = declaring.ENUM_MEMBER_DOCS.get(token.rsplit(":", 1)[-1], {})
            if member.get("value") in said:
                member["description"] = said[member["value"]]
    # As Pulumi reads a schema (``pulumi package get-schema`` prints it so): no empty
    # dependencies, a config section, and the spec's description once, not on its values too.
    resource["inputProperties"]["spec"]["additionalProperties"].pop("description", None)
    # spec typed from the one pydantic model: completion and compile errors in other languages.
    spec["types"] = {**spec.get("types", {}), **spectypes.spec_types(PACKAGE)}
    resource["inputProperties"]["spec"] = spectypes.typed_spec(
        PACKAGE, resource["inputProperties"]["spec"]
    )
    if not spec.get("dependencies"):
        spec.pop("dependencies", None)
    spec.setdefault("config", {})
    return typing.cast(dict[str, Any], _prose(spec))


def _prose(value: Any) -> Any:
    """Descriptions for every language: one paragraph, Markdown code, schema (camelCase) names;
    no null values (Pulumi's schema reader drops them)."""
    if isinstance(value, dict):
        return {
            key: _markdown(item) if key == "description" and isinstance(item, str) else _prose(item)
            for key, item in value.items()
            if item is not None
        }
    if isinstance(value, list):
        return [_prose(item) for item in value]
    return value


def _markdown(text: str) -> str:
    def code(match: re.Match[str]) -> str:
        word = match.group(1)
        return f"`{camel_case(word) if _SNAKE.fullmatch(word) else word}`"

    return _RST_CODE.sub(code, " ".join(text.split()))


_RST_CODE: Final = re.compile(r"``(.+?)``")
_SNAKE: Final = re.compile(r"[a-z]+(?:_[a-z]+)+")


def _describe(analyzer: Analyzer, properties: dict[str, Any], described_by: type) -> None:
    for schema_name, prop in properties.items():
        if prop.get("description"):
            continue
        names = {camel_case(name): name for name in described_by.__annotations__}
        text = analyzer.get_docstring(described_by, names.get(schema_name, schema_name))
        if text:
            prop["description"] = text
