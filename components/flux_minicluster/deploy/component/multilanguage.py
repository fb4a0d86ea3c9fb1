"""The MiniCluster as programs in other languages see it: a component provider with a schema.

Pulumi hosts a Python component for TypeScript, Go, YAML and C# programs through its component
provider host: it reads the component's type annotations, writes a package schema from them, and
each consuming program generates a local SDK from that schema (``pulumi package add``). The
Python face, ``deploy.minicluster.MiniCluster``, takes forms no schema can say (a file path,
pydantic models, ``Literal`` strings), so other languages get a face of their own here. It is the
same component underneath: the same type token, the same children and outputs, because both faces
call ``minicluster.prepare`` and ``minicluster.expand``. The schema differs only where it must:

* ``spec`` is a v1alpha2 document or a bare v1alpha2 spec, typed from the pydantic model
  (``spectypes``), so other languages complete its fields and refuse a misspelt one. It must be
  known when the program runs, because it is validated before anything is registered;
* ``wait``, ``keygen.strategy`` and ``keygen.containerRuntime`` are enums;
* every description is the Python face's docstring, unless this face says otherwise;
* the schema marks ``curveCert`` (input and output), ``restfulToken`` and
  ``restfulSecretKey`` secret, which the annotations cannot say: generated SDKs then keep them
  secret too.

Two things the SDK's provider does not do for a Python component are done here. An object input
that arrives as an Output (``burstGroup`` from a StackReference) would be mapped to an empty
object, and an integer inside it that is an Output would fail to convert, so ``burstGroup`` is
mapped to Python names inside an ``apply`` instead. Numbers cross the wire as doubles, so the
spec's ``4.0`` becomes ``4`` again before validation.

No ``from __future__ import annotations`` in this module: the analyzer reads the annotations as
objects, not strings.
"""

import json
import re
import sys
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, Required, TypedDict

import pulumi
from pulumi.provider import main
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.util import camel_case

from flux_minicluster.core.base import jsonvalues
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.deploy.component import burstgroup, keygen, minicluster, spectypes
from flux_minicluster.deploy.component.published import MiniClusterOutputs
from flux_minicluster.version import __version__

__all__ = [
    "PACKAGE",
    "SECRETS",
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


class Wait(StrEnum):
    """How long ``pulumi up`` waits for the MiniCluster."""

    NONE = "none"
    """Not at all."""
    READY = "ready"
    """Until every broker pod of an ephemeral cluster is Ready (the default)."""
    COMPLETE = "complete"
    """Until the Job of an ephemeral cluster completes."""


class KeygenStrategy(StrEnum):
    """Where ``flux keygen`` runs when the component generates the curve certificate."""

    AUTO = "auto"
    FLUX = "flux"
    KUBECTL = "kubectl"
    CONTAINER = "container"
    BUILTIN = "builtin"


class ContainerRuntime(StrEnum):
    """The container runtime of the ``container`` keygen strategy."""

    DOCKER = "docker"
    PODMAN = "podman"


class Keygen(TypedDict, total=False):
    strategy: KeygenStrategy
    rotation: str
    kubeconfig: str
    context: str
    image: str
    container_runtime: ContainerRuntime


class BurstCluster(TypedDict):
    name: str
    """A cluster's MiniCluster name."""
    size: int
    """Its maxSize: how many ranks it holds."""


class BurstGroup(TypedDict):
    lead_name: str
    lead_size: int
    lead_port: int
    clusters: list[BurstCluster]


class Autoscale(TypedDict, total=False):
    interval_seconds: int
    """How often the scaler reads the queue (default 10)."""
    idle_seconds: int
    """How long a rank runs nothing before it is given back (default 60)."""


class MiniClusterInputs(TypedDict, total=False):
    spec: Required[dict[str, Any]]
    """The MiniCluster as the Flux Operator takes it: a whole document (apiVersion
    flux-framework.org/v1alpha2, kind MiniCluster, metadata, spec) or a bare spec, typed field by
    field (a v1alpha1 document is accepted too, untyped: cast it, e.g. ``as any`` in TypeScript).
    It must be known when the program runs (a literal, a config object or a file read with the
    language's own tools), because it is validated before anything is created."""
    namespace: str
    name: str
    keygen: Keygen
    curve_cert: pulumi.Input[str]
    wait: Wait
    lead_broker: pulumi.Input[str]
    burst_group: pulumi.Input[BurstGroup]
    network_policy: bool
    lead_source_ranges: list[str]
    kube_version: str
    queue: str
    """The Kueue LocalQueue that admits the Job (created suspended, labelled for the queue)."""
    managed_by: str
    """The Job's spec.managedBy (kueue.x-k8s.io/multikueue for MultiKueue)."""
    wait_timeout: int
    """Seconds `wait` may take, admission included, before the deployment fails."""
    autoscale: Autoscale


class MiniCluster(MiniClusterOutputs):
    """A Flux MiniCluster on Kubernetes without the Flux Operator: its ConfigMaps, the curve
    certificate's Secret, the headless and lead Services, NetworkPolicies and the Indexed Job of
    its brokers, as the operator would create them."""

    def __init__(
        self,
        name: str,
        args: MiniClusterInputs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        prepared = minicluster.prepare(name, python_args(args))
        super().__init__(minicluster.TYPE, name, {}, opts)
        minicluster.expand(self, name, prepared, opts)


def python_args(inputs: Mapping[str, Any]) -> minicluster.MiniClusterArgs:
    """The Python face's arguments for this face's inputs (already under their Python names).

    Enums become their strings, the spec plain JSON again; everything else is passed as it is,
    so the Python face's checks and messages apply to every language.
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
    if "wait" in args:
        args["wait"] = _string(args["wait"])
    timeout = args.get("wait_timeout")
    if isinstance(timeout, float) and timeout.is_integer():
        args["wait_timeout"] = int(timeout)  # numbers cross the gRPC boundary as floats
    if isinstance(args.get("keygen"), Mapping):
        args["keygen"] = {key: _string(value) for key, value in args["keygen"].items()}
    return typing.cast(minicluster.MiniClusterArgs, args)


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
    "MiniCluster": minicluster.MiniClusterArgs,
    "Keygen": keygen.KeygenArgs,
    "BurstGroup": burstgroup.BurstGroupArgs,
}


def _complete(spec: dict[str, Any]) -> dict[str, Any]:
    """The analyzer's schema with secrets marked and the Python face's descriptions added."""
    analyzer = Analyzer(PACKAGE)
    resource = spec["resources"][minicluster.TYPE]
    for section, name in SECRETS:
        resource[section][name]["secret"] = True
    _describe(analyzer, resource["inputProperties"], _DESCRIBED_BY["MiniCluster"])
    _describe(analyzer, resource["properties"], MiniClusterOutputs)
    for token, definition in spec.get("types", {}).items():
        described_by = _DESCRIBED_BY.get(token.rsplit(":", 1)[-1])
        if described_by is not None:
            _describe(analyzer, definition.get("properties", {}), described_by)
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
