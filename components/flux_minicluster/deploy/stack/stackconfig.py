"""The typed stack configuration that ``__main__.py`` reads from ``stacks/Pulumi.<stack>.yaml``.

Pulumi's project-level config schema cannot describe objects, so the structured values
(``flux-minicluster:cluster``, ``:minicluster``, ``:keygen``, ``:bursting``) are validated here
with pydantic, and every problem names the config key a user must edit, e.g.
``flux-minicluster:cluster.cloud: must be one of 'gke', 'eks', ...``. This module knows nothing
of Pulumi itself; the program hands it plain values.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from flux_minicluster.core.base.errors import Problem, SpecError, unknown_key
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning.plan import Role
from flux_minicluster.core.reading import documents
from flux_minicluster.core.reading.loading import parse, with_deferred_group
from flux_minicluster.core.render.fillins import normalize_certificate
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import BurstedCluster, MiniClusterSpec
from flux_minicluster.core.validation.crossfield import burst_membership_problem
from flux_minicluster.core.validation.fielderrors import translate_errors
from flux_minicluster.deploy.component.arguments import ARGUMENTS, MiniClusterArgs
from flux_minicluster.deploy.component.keygen import ContainerRuntime, Strategy

PROJECT = "flux-minicluster"

Cloud = Literal["gke", "eks", "aks", "kind", "generic"]
StackRole = Literal["none", "root", "burst"]
"""A stack's place in a bursting group (``bursting.role``): as the plan's ``Role`` says it,
except that a stack without one says ``none``."""
ROLE_NONE: Final[StackRole] = "none"
ROLE_ROOT: Final[StackRole] = Role.ROOT.value
ROLE_BURST: Final[StackRole] = Role.BURST.value


class ConfigModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )


def _arguments(section: str) -> type[ConfigModel]:
    """A config model whose fields are the component arguments the stack config takes in
    ``section`` (``declaring.Stack``), under the arguments' names (camelCase in the file)."""
    fields: dict[str, Any] = {}
    for argument in ARGUMENTS:
        place = argument.arg.stack
        if place is not None and place.section == section:
            typ = place.type if place.type is not None else argument.python
            fields[argument.name] = (
                typ if place.default is not None else typ | None,
                place.default,
            )
    return create_model(f"{section}Arguments", __base__=ConfigModel, **fields)


# Each a model of the arguments it takes and its own fields; for a type checker, a ConfigModel
# (the arguments are read by name: StackConfig.arguments).
if TYPE_CHECKING:
    _ClusterArguments = ConfigModel
    _MiniClusterArguments = ConfigModel
else:
    _ClusterArguments = _arguments("cluster")
    _MiniClusterArguments = _arguments("minicluster")


class ClusterConfig(_ClusterArguments):
    """Which Kubernetes cluster to deploy to, and how to reach it."""

    cloud: Cloud = "generic"
    kubeconfig: str | None = None
    context: str | None = None
    # A stable identity for the provider, so a refreshed token in the kubeconfig does not
    # replace every resource (pulumi-kubernetes clusterIdentifier).
    cluster_identifier: str | None = None
    namespace: str = "flux"
    create_namespace: bool = True
    arm: bool = False
    # The cluster's Kubernetes release ("1.33"): the Job carries only the fields it serves
    # (core.kube.kubeversion); unset, the default release.
    kubernetes_version: str | None = None

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _release(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            # YAML reads 1.30 as the number 1.3: only a string keeps the minor release.
            raise ValueError(
                f"must be a quoted string such as '{kubeversion.DEFAULT}', got {value!r}"
            )
        try:
            kubeversion.parse(value)
        except SpecError as err:
            raise ValueError(err.problems[0].message) from None
        return value


class MiniClusterConfig(_MiniClusterArguments):
    """The MiniCluster to run: an inline operator document or spec, or a YAML file."""

    spec: dict[str, Any] | None = None
    file: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> MiniClusterConfig:
        if (self.spec is None) == (self.file is None):
            raise ValueError("set exactly one of spec (inline) or file (a YAML in the repo)")
        return self


class KeygenConfig(ConfigModel):
    strategy: Strategy = "auto"
    rotation: str = "1"
    image: str | None = None
    container_runtime: ContainerRuntime | None = None


class BurstTarget(ConfigModel):
    name: str
    size: int = Field(ge=1)


class BurstingConfig(ConfigModel):
    """A root declares where it bursts; a burst stack names its root stack."""

    role: StackRole = ROLE_NONE
    # root
    clusters: list[BurstTarget] = Field(default_factory=list)
    expose: Literal["LoadBalancer", "NodePort"] | None = None
    node_port: int | None = Field(default=None, ge=30000, le=32767)
    # The address bursts should dial when the lead is exposed by NodePort (a node's address).
    lead_address: str | None = None
    # Who may reach the lead broker's port from outside (CIDRs): the bursts' egress addresses.
    # Becomes the lead Service's loadBalancerSourceRanges; empty means every address.
    source_ranges: list[str] = Field(default_factory=list)
    # burst
    root_stack: str | None = None

    @model_validator(mode="after")
    def _role_fields(self) -> BurstingConfig:
        if self.role == ROLE_ROOT and not self.clusters:
            raise ValueError("a root must declare the clusters it bursts to (clusters)")
        if self.role == ROLE_BURST and not self.root_stack:
            raise ValueError("a burst stack must name its root stack (rootStack)")
        if self.role != ROLE_ROOT and (
            self.clusters or self.expose or self.node_port or self.source_ranges
        ):
            raise ValueError("clusters, expose, nodePort and sourceRanges belong to role: root")
        for cidr in self.source_ranges:
            try:
                ipaddress.ip_network(cidr, strict=True)
            except ValueError:
                raise ValueError(
                    f"sourceRanges: {cidr!r} is not a CIDR such as 203.0.113.0/24"
                ) from None
        if self.role != ROLE_BURST and self.root_stack:
            raise ValueError("rootStack belongs to role: burst")
        return self


class StackConfig(ConfigModel):
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    minicluster: MiniClusterConfig
    keygen: KeygenConfig = Field(default_factory=KeygenConfig)
    bursting: BurstingConfig = Field(default_factory=BurstingConfig)
    # A certificate from your secret store instead of the keygen Command's:
    # `pulumi config set --secret flux-minicluster:curveCert -- "$(cat curve.cert)"`.
    curve_cert: str | None = None

    def arguments(self) -> MiniClusterArgs:
        """The component arguments the stack config takes (``declaring.Stack``), as set or by
        their defaults; unset ones are left out."""
        found: dict[str, Any] = {}
        for argument in ARGUMENTS:
            if argument.arg.stack is not None:
                value = getattr(getattr(self, argument.arg.stack.section), argument.name)
                if value is not None:
                    found[argument.name] = value
        return cast(MiniClusterArgs, found)

    def argument_problems(self) -> list[Problem]:
        """The arguments' own checks on the values the stack config gives, at their keys."""
        found: list[Problem] = []
        for argument in ARGUMENTS:
            place = argument.arg.stack
            if place is not None and argument.arg.check is not None:
                value = getattr(getattr(self, place.section), argument.name)
                if value is not None:
                    where = f"{PROJECT}:{place.section}.{to_camel(argument.name)}"
                    found += argument.arg.check(value, where)
        return found

    def checked_curve_cert(self) -> str | None:
        """``curveCert`` once Flux's rules accept it (``core.flux.certificate``), else a problem at
        the key. The program checks it before handing it on as a secret Output, which the
        component could only check inside an apply, where a refusal reads as an internal error.
        (Not a model validator: offline, a ``secure:`` value is a stand-in that is no
        certificate.)"""
        if self.curve_cert is None:
            return None
        try:
            certificate.parse(normalize_certificate(self.curve_cert))
        except certificate.CertificateError as err:  # its messages never quote a key
            raise SpecError(
                Problem(f"{PROJECT}:curveCert", f"not a certificate Flux accepts: {err}")
            ) from None
        return self.curve_cert

    def load_spec(self, root: Path) -> dict[str, Any]:
        """The MiniCluster document (inline or from ``file``, relative to the project)."""
        if self.minicluster.spec is not None:
            return dict(self.minicluster.spec)
        assert self.minicluster.file is not None
        path = root / self.minicluster.file
        try:
            docs = documents.read_file(path)
        except SpecError as err:
            raise SpecError(
                [Problem(f"{PROJECT}:minicluster.file", f"{path}: {p}") for p in err.problems]
            ) from None
        if len(docs) != 1 or not isinstance(docs[0], Mapping):
            raise SpecError(
                Problem(f"{PROJECT}:minicluster.file", f"{path} must hold one MiniCluster")
            )
        return dict(docs[0])

    def definition(self, root: Path) -> MiniClusterDefinition:
        """The stack's MiniCluster, parsed once, with the stack's names, its cloud's defaults and
        its role settled (``settle``) before the cross-field rules run: they run once."""
        return parse(
            self.load_spec(root),
            name=self.minicluster.name,
            namespace=self.cluster.namespace,
            source=self.minicluster.file or "",
            settle=self.settle,
        )

    def settle(self, spec: MiniClusterSpec, name: str) -> MiniClusterSpec:
        """The user's spec as this stack deploys it (``loading.parse``'s ``settle``): with the
        cloud's defaults where the user left them unset and, by ``bursting.role``, a root's
        declared burst clusters appended to its rank order, or a burst's group deferred to its
        root's outputs (``loading.with_deferred_group``) and no command of its own: the root
        schedules work onto its brokers."""
        spec = _cloud_defaults(spec, self)
        role = self.bursting.role
        if role == ROLE_ROOT:
            clusters = [BurstedCluster(name=c.name, size=c.size) for c in self.bursting.clusters]
            bursting = spec.flux.bursting.model_copy(update={"clusters": clusters})
            return spec.model_copy(
                update={"flux": spec.flux.model_copy(update={"bursting": bursting})}
            )
        if role == ROLE_BURST:
            containers = [c.model_copy(update={"command": None}) for c in spec.containers]
            grouped = with_deferred_group(spec, name)
            return grouped.model_copy(update={"containers": containers})
        return spec


# Per-cloud facts that matter for a MiniCluster: how to expose the lead broker to other clouds,
# and the flux-view image for arm nodes (storage classes: docs/stacks.md). The lead pod must
# see each burst's own address, since the <root>-lead NetworkPolicy admits only sourceRanges: GKE's
# and AKS's passthrough load balancers keep it (with externalTrafficPolicy: Local); an AWS NLB with
# IP targets over TCP replaces it by its own private addresses unless its target group preserves
# the client IP (AWS disables that by default for IP targets with TCP/TLS).
LEAD_SERVICE_ANNOTATIONS: dict[str, dict[str, str]] = {
    "gke": {"networking.gke.io/load-balancer-type": "External"},
    "eks": {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external",
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
        "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
        "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": (
            "preserve_client_ip.enabled=true"
        ),
    },
    "aks": {
        "service.beta.kubernetes.io/azure-load-balancer-internal": "false",
        "service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol": "tcp",
    },
    "kind": {},
    "generic": {},
}
DEFAULT_EXPOSE: dict[str, Literal["LoadBalancer", "NodePort"]] = {
    "gke": "LoadBalancer",
    "eks": "LoadBalancer",
    "aks": "LoadBalancer",
    "kind": "NodePort",
    "generic": "LoadBalancer",
}
ARM_VIEW_IMAGE = "ghcr.io/converged-computing/flux-view-ubuntu:arm-jammy"


def parse_stack_config(values: Mapping[str, Any]) -> StackConfig:
    """Validate the project's config values (keys without the ``flux-minicluster:`` prefix)."""
    problems: list[Problem] = []
    # The keys as a stack file spells them (``curveCert``), not the Python field names.
    known = {field.alias or name for name, field in StackConfig.model_fields.items()}
    for key in values:
        if key not in known:
            # Said as a stack file spells the keys: flux-minicluster:curveCert.
            spelled = [f"{PROJECT}:{k}" for k in known]
            message = unknown_key(f"{PROJECT}:{key}", spelled, "config key")
            problems.append(Problem(f"{PROJECT}:{key}", message))
    if "minicluster" not in values:
        problems.append(
            Problem(f"{PROJECT}:minicluster", "required: the MiniCluster spec (spec or file)")
        )
    if problems:
        raise SpecError(problems)
    try:
        config = StackConfig.model_validate(dict(values))
    except ValidationError as err:
        raise SpecError(_config_problems(err)) from None
    if problems := config.argument_problems():
        raise SpecError(problems)
    if config.curve_cert is not None and config.bursting.role == ROLE_BURST:
        raise SpecError(
            Problem(f"{PROJECT}:curveCert", "a burst uses its root's certificate; leave it out")
        )
    return config


def _config_problems(err: ValidationError) -> list[Problem]:
    out = []
    for p in translate_errors(err, "", StackConfig):
        head, _, rest = p.path.partition(".")
        path = f"{PROJECT}:{head}" + (f".{rest}" if rest else "")
        out.append(Problem(path, p.message))
    return out


def _cloud_defaults(spec: MiniClusterSpec, config: StackConfig) -> MiniClusterSpec:
    """The spec with the stack's cloud choices applied where the user left them unset."""
    view = spec.flux.container
    if not config.cluster.arm or "image" in view.model_fields_set:
        return spec
    flux = spec.flux.model_copy(
        update={"container": view.model_copy(update={"image": ARM_VIEW_IMAGE})}
    )
    return spec.model_copy(update={"flux": flux})


def validate_burst_membership(
    name: str, max_size: int, declared: Sequence[Mapping[str, Any]], root_stack: str
) -> None:
    """The core's one rule of burst membership (``crossfield.burst_membership_problem``) against
    the clusters a root stack publishes, said as the stack config a user edits."""
    clusters = [
        BurstedCluster(name=str(c.get("name")), size=int(c.get("size", 0))) for c in declared
    ]
    problem = burst_membership_problem(name, max_size, clusters)
    if problem is None:
        return
    path, message = problem
    said = f"spec.maxSize {message}" if path else f"the root's bursting.clusters {message}"
    raise SpecError(
        Problem(
            f"{PROJECT}:minicluster",
            f"burst cluster {name!r} does not fit the root stack {root_stack!r}: {said}; change "
            f"it, or the root's {PROJECT}:bursting.clusters",
        )
    )
