"""The Flux Operator's MiniCluster spec (``flux-framework.org/v1alpha2``) as pydantic models.

Users bring the YAML they already give the operator, so the models mirror it field for field:
camelCase aliases, the operator's defaults, the operator's types. Unknown fields are refused
(``extra="forbid"``) and types are strict, because the operator's CRD schema refuses a string
where an integer belongs and we want the same answer before anything is deployed rather than a
silently different cluster. Cross-field rules live in ``validation``; defaults that depend on
other fields are applied here, in the model validators, so every later layer sees one resolved
spec. Facts derived from a spec (names, the rank order, the mode rank 0 runs in) are computed
once, in ``plan``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from flux_minicluster.core import layout
from flux_minicluster.core.quantity import parse_quantity, resource_problems

API_GROUP = "flux-framework.org"
API_VERSION = f"{API_GROUP}/v1alpha2"
API_VERSION_V1ALPHA1 = f"{API_GROUP}/v1alpha1"
KIND = "MiniCluster"
# Validation context key: the API version a document was written for. Fields only the older
# v1alpha1 API has (kept in this one model as features: see core/v1alpha1.py) are refused in a
# v1alpha2 document, with a pointer to the version that has them.
VERSION_CONTEXT = "apiVersion"
# v1alpha1's flux.installRoot default: Flux from the image's packages.
DEFAULT_INSTALL_ROOT = "/usr"
DEFAULT_RESTFUL_PORT = 5000

DEFAULT_VIEW_IMAGE = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble"
DEFAULT_APP_IMAGE = "ghcr.io/rse-ops/accounting:app-latest"
DEFAULT_DEADLINE_SECONDS = 31_500_000
DEFAULT_BACKOFF_LIMIT = 100
# v1alpha1's default FLUX_USER for the RESTful server.
DEFAULT_RESTFUL_USER = "flux"
# The pods' restartPolicy when spec.pod.restartPolicy is unset (the operator's).
DEFAULT_RESTART_POLICY = "OnFailure"
DEFAULT_LOGS_DIR = "/tmp/fluxout"

QuantityValue = int | float | str


class SpecModel(BaseModel):
    """Base for every spec model: camelCase aliases, strict types, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
        validate_default=False,
    )


# What a v1alpha2 document offers instead of each v1alpha1 feature it may not set.
V1ALPHA1_HINTS: dict[str, str] = {
    "users": "in v1alpha2 Flux runs as the container's user (securityContext.runAsUser)",
    "fluxRestful": "in v1alpha2 run flux-restful-api as a launcher command or a sidecar",
    "cores": "in v1alpha2 Flux discovers cores with hwloc (set resources.limits.cpu)",
    "diagnostics": "in v1alpha2 run flux overlay status or flux dmesg in commands.pre",
    "fluxUser": "in v1alpha2 Flux runs as the container's user (securityContext.runAsUser)",
    "runFluxAsRoot": "in v1alpha2 set the container's securityContext.runAsUser: 0",
    "installRoot": "in v1alpha2 set flux.container.disable to use the image's own Flux",
    "curveCertSecret": "in v1alpha2 use flux.curveCert (or let the keygen make one)",
}


def v1alpha1_only(value: object, info: ValidationInfo) -> object:
    """A field validator for the fields only v1alpha1 documents may set (see VERSION_CONTEXT)."""
    if (info.context or {}).get(VERSION_CONTEXT, API_VERSION) == API_VERSION:
        name = to_camel(info.field_name or "")
        hint = V1ALPHA1_HINTS.get(name, "")
        raise ValueError(
            f"field of the older v1alpha1 API (set apiVersion: {API_VERSION_V1ALPHA1} to use it)"
            + (f"; {hint}" if hint else "")
        )
    return value


def _check_quantities(values: dict[str, QuantityValue]) -> dict[str, QuantityValue]:
    for key, value in values.items():
        try:
            parse_quantity(value)
        except ValueError as err:
            raise ValueError(f"{key}: {err}") from None
    return values


# --- Kubernetes types the operator embeds (corev1), kept to their documented fields ----------


class Capabilities(SpecModel):
    add: list[str] = Field(default_factory=list)
    drop: list[str] = Field(default_factory=list)


class SELinuxOptions(SpecModel):
    level: str | None = None
    role: str | None = None
    type: str | None = None
    user: str | None = None


class SeccompProfile(SpecModel):
    type: Literal["RuntimeDefault", "Unconfined", "Localhost"]
    localhost_profile: str | None = None


class AppArmorProfile(SpecModel):
    type: Literal["RuntimeDefault", "Unconfined", "Localhost"]
    localhost_profile: str | None = None


class WindowsSecurityContextOptions(SpecModel):
    gmsa_credential_spec: str | None = None
    gmsa_credential_spec_name: str | None = None
    host_process: bool | None = None
    run_as_user_name: str | None = None


class SecurityContext(SpecModel):
    """corev1.SecurityContext, for a container."""

    allow_privilege_escalation: bool | None = None
    app_armor_profile: AppArmorProfile | None = None
    capabilities: Capabilities | None = None
    privileged: bool | None = None
    proc_mount: Literal["Default", "Unmasked"] | None = None
    read_only_root_filesystem: bool | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    run_as_user: int | None = None
    se_linux_options: SELinuxOptions | None = None
    seccomp_profile: SeccompProfile | None = None
    windows_options: WindowsSecurityContextOptions | None = None


class Sysctl(SpecModel):
    name: str
    value: str


class PodSecurityContext(SpecModel):
    """corev1.PodSecurityContext. The operator copies only fsGroup; we pass all of it through."""

    app_armor_profile: AppArmorProfile | None = None
    fs_group: int | None = None
    fs_group_change_policy: Literal["OnRootMismatch", "Always"] | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    run_as_user: int | None = None
    se_linux_change_policy: Literal["MountOption", "Recursive"] | None = None
    se_linux_options: SELinuxOptions | None = None
    seccomp_profile: SeccompProfile | None = None
    supplemental_groups: list[int] | None = None
    supplemental_groups_policy: Literal["Merge", "Strict"] | None = None
    sysctls: list[Sysctl] | None = None
    windows_options: WindowsSecurityContextOptions | None = None


class ResourceClaim(SpecModel):
    name: str
    request: str | None = None


class Resources(SpecModel):
    """Container resource limits and requests; values are Kubernetes quantities."""

    limits: dict[str, QuantityValue] = Field(default_factory=dict)
    requests: dict[str, QuantityValue] = Field(default_factory=dict)
    claims: list[ResourceClaim] = Field(default_factory=list)

    _limits = field_validator("limits", "requests")(_check_quantities)

    @model_validator(mode="after")
    def _acceptable(self) -> Resources:
        # What the API server would refuse when the Job is created, after the rest is.
        problems = list(resource_problems(self.limits, self.requests))
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Toleration(SpecModel):
    key: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    toleration_seconds: int | None = None


# --- MiniCluster types ---------------------------------------------------------------------


class Network(SpecModel):
    headless_name: str | None = None
    disable_affinity: bool = False


class Logging(SpecModel):
    quiet: bool = False
    strict: bool = False
    debug: bool = False
    zeromq: bool = False
    timed: bool = False


class Archive(SpecModel):
    path: str | None = None


class PodSpec(SpecModel):
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    restart_policy: Literal["OnFailure", "Never"] | None = None
    service_account_name: str | None = None
    runtime_class_name: str | None = None
    automount_service_account_token: bool = False
    scheduler_name: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    node_affinity: dict[str, list[str]] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    dns_policy: Literal["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"] | None = None
    host_ipc: bool = Field(default=False, alias="hostIPC")
    host_pid: bool = Field(default=False, alias="hostPID")
    resources: dict[str, QuantityValue] = Field(default_factory=dict)
    security_context: PodSecurityContext | None = None

    _resources = field_validator("resources")(_check_quantities)


class FluxContainer(SpecModel):
    """The init container that brings Flux (the "flux view") into every pod."""

    disable: bool = False
    name: str = "flux-view"
    working_dir: str | None = None
    python_path: str | None = None
    resources: Resources | None = None
    image_pull_secret: str | None = None
    image: str = DEFAULT_VIEW_IMAGE
    pull_always: bool = False
    security_context: SecurityContext | None = None
    mount_path: str = "/mnt/flux"


class FluxScheduler(SpecModel):
    simple: bool = False
    queue_policy: Literal["fcfs", "easy", "conservative", "hybrid"] = "fcfs"


class FluxBroker(SpecModel):
    """The lead broker a bursted cluster joins: its external address and the lead's shape.

    ``address`` may be left out when the deployer supplies it apart from the spec (the Pulumi
    component's ``lead_broker``, e.g. a root stack's output); validation requires it otherwise.
    """

    address: str | None = None
    name: str
    size: Annotated[int, Field(ge=1)]
    port: Annotated[int, Field(ge=0, le=65535)] = layout.BROKER_PORT


class BurstedCluster(SpecModel):
    # None means "apply the operator's intended default": burst-<i> and the MiniCluster's size.
    name: str | None = None
    size: int | None = None


class Bursting(SpecModel):
    lead_broker: FluxBroker | None = None
    hostlist: str | None = None
    clusters: list[BurstedCluster] = Field(default_factory=list)


class FluxSpec(SpecModel):
    container: FluxContainer = Field(default_factory=FluxContainer)
    arch: str | None = None
    submit_command: str | None = None
    wrap: str | None = None
    connect_timeout: str = "5s"
    option_flags: str | None = None
    minimal_service: bool = False
    disable_socket: bool = False
    topology: str | None = None
    no_wait_socket: bool = False
    complete_workers: bool = False
    log_level: Annotated[int, Field(ge=0, le=7)] = 6
    curve_cert: str | None = None
    scheduler: FluxScheduler = Field(default_factory=FluxScheduler)
    munge_secret: str | None = None
    bursting: Bursting = Field(default_factory=Bursting)
    broker_config: str | None = None
    environment: dict[str, str] = Field(default_factory=dict)
    # v1alpha1: Flux installed in the application image under this prefix (there is no view).
    install_root: str | None = None
    # v1alpha1: an existing Secret with the certificate under the key "curve-cert".
    curve_cert_secret: str | None = None

    _legacy = field_validator("install_root", "curve_cert_secret")(v1alpha1_only)


class Commands(SpecModel):
    init: str | None = None
    pre: str | None = None
    broker_pre: str | None = None
    worker_pre: str | None = None
    post: str | None = None
    prefix: str | None = None
    script: str | None = None
    service_pre: str | None = None
    # v1alpha1: run the broker as root rather than as the Flux user.
    run_flux_as_root: bool = False

    _legacy = field_validator("run_flux_as_root")(v1alpha1_only)


class LifeCycle(SpecModel):
    post_start_exec: str | None = None
    pre_stop_exec: str | None = None


class SecretRef(SpecModel):
    name: str
    key: str


class ContainerVolume(SpecModel):
    """An existing volume mounted into one container (v1alpha2 never creates PVs or PVCs)."""

    path: str | None = None
    host_path: str | None = None
    config_map_name: str | None = None
    items: dict[str, str] = Field(default_factory=dict)
    claim_name: str | None = None
    secret_name: str | None = None
    read_only: bool = False
    empty_dir: bool = False
    empty_dir_medium: str | None = None
    empty_dir_size_limit: QuantityValue | None = None
    csi_driver: str | None = None
    csi_driver_attributes: dict[str, str] = Field(default_factory=dict)

    @field_validator("empty_dir_size_limit")
    @classmethod
    def _size_limit(cls, value: QuantityValue | None) -> QuantityValue | None:
        if value is not None:
            parse_quantity(value)
        return value

    @property
    def kind(self) -> str:
        """The pod volume source, chosen in the operator's order of precedence."""
        if self.csi_driver:
            return "csi"
        if self.secret_name:
            return "secret"
        if self.empty_dir:
            return "emptyDir"
        if self.host_path:
            return "hostPath"
        if self.config_map_name:
            return "configMap"
        if self.claim_name:
            return "persistentVolumeClaim"
        # The operator renders a PVC with an empty claimName here, which the API server refuses.
        # A path-only volume is scratch space at that path: an emptyDir.
        return "scratch"


class FluxUser(SpecModel):
    """v1alpha1: the user the broker runs as (created in the container when missing)."""

    name: str = "flux"
    uid: int = 1000


class Container(SpecModel):
    image: str = DEFAULT_APP_IMAGE
    name: str | None = None
    command: str | None = None
    working_dir: str | None = None
    image_pull_secret: str | None = None
    pull_always: bool = False
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    ports: list[int] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, SecretRef] = Field(default_factory=dict)
    launcher: bool = False
    batch: bool = False
    batch_raw: bool = False
    logs: str | None = None
    run_flux: bool = False
    no_wrap_entrypoint: bool = False
    volumes: dict[str, ContainerVolume] = Field(default_factory=dict)
    life_cycle: LifeCycle | None = None
    resources: Resources | None = None
    commands: Commands = Field(default_factory=Commands)
    security_context: SecurityContext | None = None
    # v1alpha1 features.
    cores: int | None = None
    diagnostics: bool = False
    flux_user: FluxUser | None = None

    _legacy = field_validator("cores", "diagnostics", "flux_user")(v1alpha1_only)

    @property
    def pull_policy(self) -> str:
        return "Always" if self.pull_always else self.image_pull_policy

    @property
    def wrapped(self) -> bool:
        """A sidecar gets our start-<i>.sh entrypoint unless it keeps its image's entrypoint."""
        return not self.run_flux and not self.no_wrap_entrypoint


class OperatorVolume(SpecModel):
    """v1alpha1's ``spec.volumes.<name>``: a PersistentVolume and a claim the MiniCluster creates.

    ``hostpath`` (the storage class) makes a hostPath volume on the node; any other class a CSI
    volume (``driver``, ``volumeHandle``, ``attributes``, and ``secret`` for the driver's
    node-publish, controller-publish and node-stage secrets). Containers mount it by name.
    """

    path: str
    storage_class: str = "hostpath"
    capacity: str = "5Gi"
    delete: bool = True
    driver: str | None = None
    volume_handle: str | None = None
    attributes: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    claim_annotations: dict[str, str] = Field(default_factory=dict)
    secret: str | None = None
    secret_namespace: str = "default"

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, value: str) -> str:
        parse_quantity(value)
        return value

    @property
    def host_path(self) -> bool:
        return self.storage_class == "hostpath"


class User(SpecModel):
    """v1alpha1 multi-user mode: a user created in every pod (and in the RESTful server)."""

    name: str
    # None: a password is generated once and kept in the MiniCluster's users Secret.
    password: str | None = None


class FluxRestful(SpecModel):
    """v1alpha1: the Flux RESTful API server rank 0 runs when there is no command."""

    branch: str = "main"
    port: int = DEFAULT_RESTFUL_PORT
    # None: generated once and kept in the MiniCluster's RESTful Secret.
    secret_key: str | None = None
    username: str | None = None
    token: str | None = None


class MiniClusterSpec(SpecModel):
    containers: list[Container]
    services: list[Container] = Field(default_factory=list)
    network: Network = Field(default_factory=Network)
    job_labels: dict[str, str] = Field(default_factory=dict)
    interactive: bool = False
    flux: FluxSpec = Field(default_factory=FluxSpec)
    logging: Logging = Field(default_factory=Logging)
    archive: Archive | None = None
    share_process_namespace: bool = False
    cleanup: bool = False
    size: int = 1
    max_size: int = 0
    backoff_limit: int = 0
    min_size: int = 0
    tasks: int = 1
    deadline_seconds: int = DEFAULT_DEADLINE_SECONDS
    pod: PodSpec = Field(default_factory=PodSpec)
    # v1alpha1 features. ``volumes`` is also read from a v1alpha2 document (with a warning): the
    # operator's own v1alpha2 examples carry it, and its controller drops it silently.
    volumes: dict[str, OperatorVolume] = Field(default_factory=dict)
    users: list[User] = Field(default_factory=list)
    flux_restful: FluxRestful | None = None

    _legacy = field_validator("users", "flux_restful")(v1alpha1_only)

    @model_validator(mode="after")
    def _operator_defaults(self) -> MiniClusterSpec:
        """Defaults the operator's Validate() applies (or means to), applied for real."""
        if self.max_size == 0:
            self.max_size = self.size
        if len(self.containers) == 1:
            self.containers[0].run_flux = True
        for i, cluster in enumerate(self.flux.bursting.clusters):
            if cluster.name is None:
                cluster.name = f"burst-{i}"
            if cluster.size is None:
                cluster.size = self.size
        return self


class Metadata(BaseModel):
    """The subset of ObjectMeta a MiniCluster document carries that we use; the rest is kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
