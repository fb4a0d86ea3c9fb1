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

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from flux_minicluster.core.base import layout
from flux_minicluster.core.kube import podrules
from flux_minicluster.core.kube.quantity import parse_quantity, resource_problems

API_GROUP = "flux-framework.org"
API_VERSION = f"{API_GROUP}/v1alpha2"
API_VERSION_V1ALPHA1 = f"{API_GROUP}/v1alpha1"
KIND = "MiniCluster"
# Validation context key: the API version a document was written for. Fields only the older
# v1alpha1 API has (kept in this one model as features: see core/spec/v1alpha1.py) are refused in a
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
# The services Pod's restartPolicy when spec.pod.restartPolicy is unset (the operator's); the
# broker pods' is core.kube.completion.restart_policy's (Never where the target release renders a
# pod failure policy).
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


def _a_quantity(value: QuantityValue) -> QuantityValue:
    """A Kubernetes quantity (``parse_quantity``); checked per value, so that each bad one of a
    mapping is reported at its own key, all at once."""
    parse_quantity(value)
    return value


Quantity = Annotated[QuantityValue, AfterValidator(_a_quantity)]
"""A Kubernetes quantity: 500m, 2, 1.5Gi, 1e3."""


# --- Kubernetes types the operator embeds (corev1), kept to their documented fields ----------


class Capabilities(SpecModel):
    """corev1.Capabilities: Linux capabilities added to or dropped from a container."""

    add: list[str] = Field(default_factory=list)
    """Capabilities to add (Kubernetes' ``capabilities.add``); one added here is kept where the
    hardened baseline would drop it."""
    drop: list[str] = Field(default_factory=list)
    """Capabilities to drop (Kubernetes' ``capabilities.drop``), on top of what the baseline
    drops: NET_RAW on the Flux container, ALL on the flux-view init container."""


class SELinuxOptions(SpecModel):
    """corev1.SELinuxOptions: the SELinux labels of a container or a pod."""

    level: str | None = None
    """SELinux level label (Kubernetes' ``seLinuxOptions.level``)."""
    role: str | None = None
    """SELinux role label (Kubernetes' ``seLinuxOptions.role``)."""
    type: str | None = None
    """SELinux type label (Kubernetes' ``seLinuxOptions.type``)."""
    user: str | None = None
    """SELinux user label (Kubernetes' ``seLinuxOptions.user``)."""


def _named_when_localhost(profile: Any) -> Any:
    """A seccomp or AppArmor profile names its profile exactly when its type is Localhost."""
    problem = podrules.profile_problem(
        {"type": profile.type, "localhostProfile": profile.localhost_profile}
    )
    if problem:
        raise ValueError(problem)
    return profile


def _an_id(value: int) -> int:
    """A user or group ID the API server takes (``podrules.id_problem``)."""
    if problem := podrules.id_problem(value):
        raise ValueError(problem)
    return value


KubeId = Annotated[int, AfterValidator(_an_id)]
"""A user or group ID: 0 to 2147483647."""


class SeccompProfile(SpecModel):
    """corev1.SeccompProfile: the seccomp profile of a container or a pod."""

    type: Literal["RuntimeDefault", "Unconfined", "Localhost"]
    """RuntimeDefault, Unconfined or Localhost (Kubernetes' ``seccompProfile.type``)."""
    localhost_profile: str | None = None
    """With Localhost: the profile file, relative to the kubelet's seccomp directory (Kubernetes'
    ``seccompProfile.localhostProfile``)."""

    _localhost = model_validator(mode="after")(_named_when_localhost)


class AppArmorProfile(SpecModel):
    """corev1.AppArmorProfile: the AppArmor profile of a container or a pod."""

    type: Literal["RuntimeDefault", "Unconfined", "Localhost"]
    """RuntimeDefault, Unconfined or Localhost (Kubernetes' ``appArmorProfile.type``)."""
    localhost_profile: str | None = None
    """With Localhost: the name of a profile loaded on the node (Kubernetes'
    ``appArmorProfile.localhostProfile``)."""

    _localhost = model_validator(mode="after")(_named_when_localhost)


class WindowsSecurityContextOptions(SpecModel):
    """corev1.WindowsSecurityContextOptions: Windows settings of a container or a pod, passed
    through as given."""

    gmsa_credential_spec: str | None = None
    """The GMSA credential spec, inline (Kubernetes' ``windowsOptions.gmsaCredentialSpec``)."""
    gmsa_credential_spec_name: str | None = None
    """The name of the GMSA credential spec to use (Kubernetes'
    ``windowsOptions.gmsaCredentialSpecName``)."""
    host_process: bool | None = None
    """Run as a Windows HostProcess container (Kubernetes' ``windowsOptions.hostProcess``)."""
    run_as_user_name: str | None = None
    """The Windows user the entrypoint runs as (Kubernetes' ``windowsOptions.runAsUserName``)."""


class SecurityContext(SpecModel):
    """corev1.SecurityContext, for a container."""

    allow_privilege_escalation: bool | None = None
    """Kubernetes' ``allowPrivilegeEscalation``. Unset, the Flux and the flux-view containers get
    false, unless privileged or adding SYS_ADMIN."""
    app_armor_profile: AppArmorProfile | None = None
    """Kubernetes' ``appArmorProfile`` of this container."""
    capabilities: Capabilities | None = None
    """Kubernetes' ``capabilities``, merged with the baseline of the Flux container (NET_RAW
    dropped) and of the flux-view init container (ALL dropped)."""
    privileged: bool | None = None
    """Kubernetes' ``privileged`` (e.g. for Singularity); a privileged container keeps privilege
    escalation."""
    proc_mount: Literal["Default", "Unmasked"] | None = None
    """Kubernetes' ``procMount``: Default or Unmasked."""
    read_only_root_filesystem: bool | None = None
    """Kubernetes' ``readOnlyRootFilesystem``; the flux-view init container has it true unless
    set here."""
    run_as_group: KubeId | None = None
    """Kubernetes' ``runAsGroup``: the primary group of the container's processes."""
    run_as_non_root: bool | None = None
    """Kubernetes' ``runAsNonRoot``; the flux-view init container gets true unless it runs as
    user 0."""
    run_as_user: KubeId | None = None
    """Kubernetes' ``runAsUser``. Flux runs as the Flux container's user (v1alpha2 creates no
    Flux user); the flux-view init container defaults to 65532."""
    se_linux_options: SELinuxOptions | None = None
    """Kubernetes' ``seLinuxOptions`` of this container."""
    seccomp_profile: SeccompProfile | None = None
    """Kubernetes' ``seccompProfile`` of this container (else the pod's)."""
    windows_options: WindowsSecurityContextOptions | None = None
    """Kubernetes' ``windowsOptions`` of this container."""


class Sysctl(SpecModel):
    """corev1.Sysctl: one namespaced kernel parameter set in the pod."""

    name: str
    """The kernel parameter, e.g. net.core.somaxconn."""
    value: str
    """Its value, as a string."""


class PodSecurityContext(SpecModel):
    """corev1.PodSecurityContext. The operator copies only fsGroup; we pass all of it through."""

    app_armor_profile: AppArmorProfile | None = None
    """Kubernetes' ``appArmorProfile`` of every container that sets none."""
    fs_group: KubeId | None = None
    """Kubernetes' ``fsGroup``: the group that owns the pod's volumes (the one field the operator
    copies)."""
    fs_group_change_policy: Literal["OnRootMismatch", "Always"] | None = None
    """Kubernetes' ``fsGroupChangePolicy``: OnRootMismatch or Always."""
    run_as_group: KubeId | None = None
    """Kubernetes' ``runAsGroup`` of every container that sets none."""
    run_as_non_root: bool | None = None
    """Kubernetes' ``runAsNonRoot`` of every container that sets none."""
    run_as_user: KubeId | None = None
    """Kubernetes' ``runAsUser`` of every container that sets none; the flux-view init container
    then runs as it too, instead of 65532."""
    se_linux_change_policy: Literal["MountOption", "Recursive"] | None = None
    """Kubernetes' ``seLinuxChangePolicy``: MountOption or Recursive."""
    se_linux_options: SELinuxOptions | None = None
    """Kubernetes' ``seLinuxOptions`` of every container that sets none."""
    seccomp_profile: SeccompProfile | None = None
    """Kubernetes' ``seccompProfile`` of the pod; RuntimeDefault when unset."""
    supplemental_groups: list[KubeId] | None = None
    """Kubernetes' ``supplementalGroups``: groups added to every container's first process."""
    supplemental_groups_policy: Literal["Merge", "Strict"] | None = None
    """Kubernetes' ``supplementalGroupsPolicy``: Merge or Strict."""
    sysctls: list[Sysctl] | None = None
    """Kubernetes' ``sysctls``: namespaced kernel parameters set in the pod."""
    windows_options: WindowsSecurityContextOptions | None = None
    """Kubernetes' ``windowsOptions`` of every container that sets none."""


class ResourceClaim(SpecModel):
    """corev1.ResourceClaim: a dynamic resource claim a container uses."""

    name: str
    """The entry of the pod's resourceClaims to use (Kubernetes' ``resources.claims[].name``);
    the pod here declares none, so the API server refuses any claim."""
    request: str | None = None
    """One request of that claim; empty gives the container the whole claim."""


class Resources(SpecModel):
    """Container resource limits and requests; values are Kubernetes quantities."""

    limits: dict[str, Quantity] = Field(default_factory=dict)
    """Limits by resource name (cpu, memory, nvidia.com/gpu, ...), each a Kubernetes quantity."""
    requests: dict[str, Quantity] = Field(default_factory=dict)
    """Requests by resource name, each a Kubernetes quantity; a request above its limit is
    refused before deploying."""
    claims: list[ResourceClaim] = Field(default_factory=list)
    """Dynamic resource claims the container uses (Kubernetes' ``resources.claims``)."""

    @model_validator(mode="after")
    def _acceptable(self) -> Resources:
        # What the API server would refuse when the Job is created, after the rest is.
        problems = list(resource_problems(self.limits, self.requests))
        claims = podrules.claims_problem([{"name": c.name} for c in self.claims], ())
        if claims:
            problems.append(claims)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Toleration(SpecModel):
    """corev1.Toleration: lets the broker pods and the services Pod run on nodes with a matching
    taint."""

    key: str | None = None
    """The taint key to match; empty matches every key, with operator Exists."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    """The taint effect to match: NoSchedule, PreferNoSchedule or NoExecute; empty matches every
    effect."""
    operator: Literal["Exists", "Equal"] | None = None
    """Exists, or Equal (Kubernetes' default when unset)."""
    value: str | None = None
    """The taint value to match, with operator Equal."""
    toleration_seconds: int | None = None
    """With NoExecute: how long the pod stays on the node after the taint appears."""


# --- MiniCluster types ---------------------------------------------------------------------


class Network(SpecModel):
    """How the brokers find each other and where their pods are placed."""

    headless_name: str | None = None
    """Name of the headless Service the brokers resolve each other under
    (``<name>-<i>.<headlessName>``); default: the MiniCluster's name, as with the operator."""
    disable_affinity: bool = False
    """Drop the soft rules that keep the broker pods in one zone and one per node;
    ``pod.nodeAffinity`` still applies."""


class Logging(SpecModel):
    """What the entrypoint scripts and the brokers print, and whether a failure fails the pod."""

    quiet: bool = False
    """Silence the scripts' chatter and the output of the setup commands, and set the brokers'
    stderr log level to 0 (errors still show in a bursting group)."""
    strict: bool = False
    """Run the entrypoints under ``set -eEu -o pipefail`` and exit with the broker's status, so
    that a failure fails the pod; default false, as in v1alpha2."""
    debug: bool = False
    """Add ``-vvv`` to rank 0's ``flux submit`` or ``flux batch``."""
    zeromq: bool = False
    """Log ZeroMQ events (``-Stbon.zmqdebug=1``); always on in a bursting group."""
    timed: bool = False
    """Time rank 0's ``flux start`` and its program with GNU time (FLUXTIME lines); the
    application image must have /usr/bin/time."""


class Archive(SpecModel):
    """Where the instance's content (its queue and job history) is kept across rank 0's pods."""

    path: str | None = None
    """Absolute path of a ``flux dump`` archive, on a volume that outlives the pod: rank 0
    restores it (``-Scontent.restore``) when the file exists as its broker starts, and saves
    the instance there (``-Scontent.dump``) whenever its broker stops. Persistent and interactive
    clusters default to one on a claim the Flux container mounts (``core.spec.archive``)."""


class PodSpec(SpecModel):
    """Pod-level settings of the broker pods (the Indexed Job's pod template) and, where a field
    says so, of the services Pod."""

    annotations: dict[str, str] = Field(default_factory=dict)
    """Annotations of the broker pods and the services Pod."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels of the broker pods and the services Pod; this product's own (app,
    app.kubernetes.io/name, hpa-selector, ...) win on a clash. The Job controller's own
    (job-name, controller-uid, the completion index) are refused: they make its selector."""

    @field_validator("labels")
    @classmethod
    def _not_the_job_controllers(cls, labels: dict[str, str]) -> dict[str, str]:
        taken = [key for key in labels if key in podrules.JOB_CONTROLLER_LABELS]
        if taken:
            raise ValueError(
                f"{', '.join(taken)}: the Job controller sets these on the broker pods (its "
                "selector is made of them); choose another label"
            )
        return labels

    restart_policy: Literal["OnFailure", "Never"] | None = None
    """OnFailure or Never, for both pods. Unset: Never for the broker pods where the target
    Kubernetes release serves a pod failure policy (1.29 and newer), else OnFailure; OnFailure
    for the services Pod. With Never the Job retries each rank on its own and fails at once on a
    configuration error or on failed work; with OnFailure failed work leaves a Complete Job
    (rank 0 exits 0 so that the work is not run again; its termination message and `minicluster
    status` tell the failure)."""
    service_account_name: str | None = None
    """ServiceAccount of the broker pods and the services Pod."""
    runtime_class_name: str | None = None
    """RuntimeClass of both pods (e.g. nvidia); required with ``resources``."""
    automount_service_account_token: bool = False
    """Mount the ServiceAccount's token in both pods; false by default (brokers do not call the
    API server)."""
    scheduler_name: str | None = None
    """Scheduler of the broker pods (e.g. a gang scheduler); the services Pod keeps the default
    one."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Node labels both pods must match."""
    node_affinity: dict[str, list[str]] = Field(default_factory=dict)
    """Node label to the values it may have: one required node affinity term (``key In values``
    for each entry), for both pods."""
    tolerations: list[Toleration] = Field(default_factory=list)
    """Tolerations of both pods."""
    dns_policy: Literal["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"] | None = None
    """DNS policy of both pods: ClusterFirst, ClusterFirstWithHostNet, Default or None."""
    host_ipc: bool = Field(default=False, alias="hostIPC")
    """Share the node's IPC namespace with the broker pods."""
    host_pid: bool = Field(default=False, alias="hostPID")
    """Share the node's PID namespace with the broker pods."""
    resources: dict[str, Quantity] = Field(default_factory=dict)
    """The broker pods' overhead (Kubernetes quantities), as the operator uses this field; needs
    ``runtimeClassName``. Container resources are set on each container."""
    security_context: PodSecurityContext | None = None
    """The securityContext of both pods, passed through whole (the operator copies only fsGroup);
    seccomp RuntimeDefault unless it names a profile."""


class FluxContainer(SpecModel):
    """The init container that brings Flux (the "flux view") into every pod."""

    disable: bool = False
    """The application image brings its own Flux, on its PATH: the init container then only lays
    out the configs and copies no view."""
    name: str = "flux-view"
    """Name of the init container and of the flux view's volume; default flux-view."""
    working_dir: str | None = None
    """Working directory of the init container."""
    python_path: str | None = None
    """PYTHONPATH entry for Flux's Python bindings, instead of the view's site-packages the
    entrypoints find."""
    resources: Resources | None = None
    """Resources of the init container, replacing the defaults (requests 100m CPU, 64Mi memory,
    1Gi ephemeral storage; limits 1, 256Mi, 8Gi)."""
    image_pull_secret: str | None = None
    """A Secret to pull the flux view's image with (a private registry), added to the broker
    pods' imagePullSecrets; the operator ignores it."""
    image: str = DEFAULT_VIEW_IMAGE
    """Image with the flux view at /opt/view; default
    ghcr.io/converged-computing/flux-view-ubuntu:tag-noble."""
    pull_always: bool = False
    """Pull the image at every start (Always) instead of IfNotPresent."""
    security_context: SecurityContext | None = None
    """The init container's securityContext, over a baseline that drops every capability, forbids
    escalation, makes the root filesystem read-only and runs as 65532."""
    mount_path: str = "/mnt/flux"
    """Where the flux view's volume is mounted in every container; default /mnt/flux. The config
    tree follows it (the operator hard-codes /mnt/flux/config)."""


class FluxScheduler(SpecModel):
    """The scheduler the Flux instance runs, and its queue policy."""

    simple: bool = False
    """Run sched-simple instead of Fluxion (broker.toml selects it); autoscale requires it."""
    queue_policy: Literal["fcfs", "easy", "conservative", "hybrid"] = "fcfs"
    """Fluxion's queue policy in broker.toml: fcfs (default), easy, conservative or hybrid."""


class FluxBroker(SpecModel):
    """The lead broker a bursted cluster joins: its external address and the lead's shape.

    ``address`` may be left out when the deployer supplies it apart from the spec (the Pulumi
    component's ``lead_broker``, e.g. a root stack's output); validation requires it otherwise.
    """

    address: str | None = None
    """External address (DNS name or IPv4) of the lead's rank 0, which stands in its place at the
    head of this cluster's hostlist."""
    name: str
    """The lead MiniCluster's name: its other ranks are ``<name>-[1-...]``. It must differ from
    this cluster's name."""
    size: Annotated[int, Field(ge=1)]
    """How many ranks the lead holds (the root's maxSize), ahead of the clusters in
    ``bursting.clusters``."""
    port: Annotated[int, Field(ge=1, le=65535)] = layout.BROKER_PORT
    """Port of the lead's rank 0 at ``address``; default 8050."""


class BurstedCluster(SpecModel):
    """A cluster of a bursting group: its ranks follow the lead's own in every member's hostlist."""

    # None means "apply the operator's intended default": burst-<i> and the MiniCluster's size.
    name: str | None = None
    """The cluster's MiniCluster name: its ranks are ``<name>-[0-...]``. Default burst-<i> (the
    operator never applies it)."""
    size: int | None = None
    """Ranks reserved for the cluster; default this MiniCluster's size."""


class Bursting(SpecModel):
    """One Flux instance across clusters: the members share the CURVE certificate and one rank
    order, and the bursted clusters join the root's rank 0."""

    lead_broker: FluxBroker | None = None
    """Set on a bursted cluster: the lead broker it joins. Every broker of the cluster is then a
    worker of the lead's instance."""
    hostlist: str | None = None
    """A complete hostlist used verbatim instead of the generated one (e.g. with hosts outside
    Kubernetes); not with ``clusters``."""
    clusters: list[BurstedCluster] = Field(default_factory=list)
    """The burst clusters, in rank order, appended to the hostlist: a root lists those it bursts
    to, a bursted cluster the same list as its lead."""


class FluxSpec(SpecModel):
    """Flux itself: the flux view, the broker's options, the scheduler, the certificate and
    bursting."""

    container: FluxContainer = Field(default_factory=FluxContainer)
    """The init container that brings Flux into every pod (the flux view)."""
    arch: str | None = None
    """Has no effect, as with the operator (a warning says so): the view image decides the
    architecture."""
    submit_command: str | None = None
    """Replaces ``flux submit`` in submit mode, e.g. ``flux mini submit`` for an older Flux."""
    wrap: str | None = None
    """Value of ``flux start --wrap`` for every broker (the operator applies it to rank 0 only)."""
    connect_timeout: str = "5s"
    """Brokers' connect timeout (``-Stbon.connect_timeout``), a Flux duration; default 5s, empty
    to leave it out."""
    option_flags: str | None = None
    """Flags added to rank 0's ``flux submit`` or ``flux batch``, e.g. ``-ompi=openmpi@5``."""
    minimal_service: bool = False
    """The headless Service selects rank 0 only (port 8050), for fewer DNS records; it stays
    headless (the operator makes it a ClusterIP Service)."""
    disable_socket: bool = False
    """Leave out ``-Slocal-uri``: the broker opens Flux's default socket in its rundir."""
    topology: str | None = None
    """The brokers' tree (``-Stbon.topo``): kary:<N>, binomial, mincrit[:<N>] or custom. Unset:
    flat up to 257 brokers, then the fewest routers that keep every fanout within 256
    (``core.flux.tree``); the operator's ``tbon.fanout=256`` makes 256 routers there."""
    no_wait_socket: bool = False
    """Wrapped sidecars do not wait for the broker's socket before their command."""
    complete_workers: bool = False
    """Start a worker's broker once: its pod completes whatever it returned, instead of starting
    it again."""
    log_level: Annotated[int, Field(ge=0, le=7)] = 6
    """Brokers' stderr log level, 0 to 7 (``-Slog-stderr-level``); default 6, 0 with
    ``logging.quiet``."""
    curve_cert: str | None = None
    """A CURVE certificate (``flux keygen``'s format) used instead of a generated one; a
    certificate the deployer gives wins over it."""
    scheduler: FluxScheduler = Field(default_factory=FluxScheduler)
    """The scheduler and its queue policy."""
    munge_secret: str | None = None
    """A Secret with the munge key (key munge.key), mounted at /mnt/munge in the Flux container;
    only a v1alpha1 cluster starts munge with it."""
    bursting: Bursting = Field(default_factory=Bursting)
    """One Flux instance across clusters."""
    broker_config: str | None = None
    """A broker.toml that replaces the generated one: checked as TOML with Flux's keys before
    deploying, then used as written (the operator expands $VARs in it)."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Variables exported by ``<mountPath>/flux-view.sh``, which people and sidecars source to
    use this Flux."""
    # v1alpha1: Flux installed in the application image under this prefix (there is no view).
    install_root: str | None = None
    # v1alpha1: an existing Secret with the certificate under the key "curve-cert".
    curve_cert_secret: str | None = None

    _legacy = field_validator("install_root", "curve_cert_secret")(v1alpha1_only)


class Commands(SpecModel):
    """Shell commands the entrypoint scripts run around the broker (or a sidecar's command),
    placed verbatim. A services container keeps its image's entrypoint, so none runs there."""

    init: str | None = None
    """Runs first in the entrypoint, before Flux is set up."""
    pre: str | None = None
    """Runs on every broker before it starts; not allowed on services."""
    broker_pre: str | None = None
    """Runs on rank 0 only, just before it starts; not allowed on services."""
    worker_pre: str | None = None
    """Runs on the workers only (every broker of a bursted cluster) before they start; not
    allowed on services."""
    post: str | None = None
    """Runs after the broker, or a sidecar's command, exits."""
    prefix: str | None = None
    """Prepended to rank 0's initial program (its submit, batch or launcher command)."""
    script: str | None = None
    """A script written to /tmp/custom-entrypoint.sh that becomes the command; not with
    ``command`` on the Flux container."""
    service_pre: str | None = None
    """Runs in a wrapped sidecar's entrypoint, before it waits for the broker."""
    # v1alpha1: run the broker as root rather than as the Flux user.
    run_flux_as_root: bool = False

    _legacy = field_validator("run_flux_as_root")(v1alpha1_only)


class LifeCycle(SpecModel):
    """A container's lifecycle hooks, each run through /bin/sh -c (the operator passes the string
    as a one-element argv, which cannot take arguments)."""

    post_start_exec: str | None = None
    """Command run right after the container starts (the postStart hook)."""
    pre_stop_exec: str | None = None
    """Command run before the container is stopped (the preStop hook)."""


class SecretRef(SpecModel):
    """A key of a Secret in the MiniCluster's namespace, given to a container as an environment
    variable."""

    name: str
    """Name of the Secret."""
    key: str
    """The key whose value the variable gets."""


class ContainerVolume(SpecModel):
    """An existing volume mounted into one container (v1alpha2 never creates PVs or PVCs)."""

    path: str | None = None
    """Where it is mounted; required for every kind but emptyDir (default /dev/shm). A path alone
    is scratch space, an emptyDir (the operator emits an invalid claim)."""
    host_path: str | None = None
    """A directory on the node (hostPath of type Directory: it must exist)."""
    config_map_name: str | None = None
    """A ConfigMap to mount (the pod volume is named by this volume's key; the operator names it
    after the ConfigMap)."""
    items: dict[str, str] = Field(default_factory=dict)
    """With a ConfigMap or Secret: key to relative file path; only these keys are mounted."""
    claim_name: str | None = None
    """An existing PersistentVolumeClaim to mount."""
    secret_name: str | None = None
    """A Secret to mount."""
    read_only: bool = False
    """Mount the volume read-only."""
    empty_dir: bool = False
    """An emptyDir, mounted at ``path`` or /dev/shm (the operator always mounts it at /dev/shm)."""
    empty_dir_medium: str | None = None
    """With emptyDir: memory for a tmpfs; empty or default for the node's disk."""
    empty_dir_size_limit: Quantity | None = None
    """With emptyDir: its size limit, a Kubernetes quantity."""
    csi_driver: str | None = None
    """An inline CSI volume of this driver."""
    csi_driver_attributes: dict[str, str] = Field(default_factory=dict)
    """With csiDriver: the volume's attributes."""

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
    uid: KubeId = 1000


class Container(SpecModel):
    """A container of every broker pod (``containers``) or of the services Pod (``services``)."""

    image: str = DEFAULT_APP_IMAGE
    """The container's image; default ghcr.io/rse-ops/accounting:app-latest. Flux comes from the
    flux view, not from the image."""
    name: str | None = None
    """The container's name, required for sidecars and services; the Flux container is always
    named after the MiniCluster."""
    command: str | None = None
    """The work: rank 0 submits it, runs it (launcher) or batches its lines (batch); none makes a
    persistent cluster. A wrapped sidecar runs it; services do not."""
    working_dir: str | None = None
    """Working directory of the container (an absolute path)."""
    image_pull_secret: str | None = None
    """A Secret to pull images with, added once to the pod's imagePullSecrets."""
    pull_always: bool = False
    """Pull the image at every start (Always), overriding ``imagePullPolicy``."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    """Always, IfNotPresent (default) or Never."""
    ports: list[int] = Field(default_factory=list)
    """TCP ports it serves. A sidecar's or service's are open to all in the mesh NetworkPolicy,
    and a sidecar with ports gets a ClusterIP Service named after it."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Environment variables, in the order given (a value may use an earlier one as ``$(NAME)``)."""
    secrets: dict[str, SecretRef] = Field(default_factory=dict)
    """Environment variables from Secrets: the variable's name to a Secret's name and key."""
    launcher: bool = False
    """Rank 0 runs ``command`` as the instance's initial program (e.g. a workflow tool that
    submits its own jobs) instead of ``flux submit``."""
    batch: bool = False
    """Each line of ``command`` becomes a ``flux submit`` in a script rank 0 runs with ``flux
    batch``; output goes to ``logs``."""
    batch_raw: bool = False
    """With batch: the lines are the batch script as written (you write the ``flux submit``
    lines)."""
    logs: str | None = None
    """Directory of batch jobs' output (FLUX_OUTPUT_DIR); default /tmp/fluxout."""
    run_flux: bool = False
    """This container runs the Flux broker: exactly one must, and a lone container does."""
    no_wrap_entrypoint: bool = False
    """A sidecar keeps its image's entrypoint (no ``start-<i>.sh``, and ``command`` is not run)."""
    volumes: dict[str, ContainerVolume] = Field(default_factory=dict)
    """Existing volumes mounted in this container, by name; containers naming the same volume
    share one pod volume."""
    life_cycle: LifeCycle | None = None
    """The container's postStart and preStop hooks."""
    resources: Resources | None = None
    """The container's resource limits and requests."""
    commands: Commands = Field(default_factory=Commands)
    """Shell commands run around the broker or the sidecar's command."""
    security_context: SecurityContext | None = None
    """The container's securityContext; on the Flux container it goes over a baseline that drops
    NET_RAW and forbids privilege escalation."""
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
    """The directory on the node a hostpath volume holds (a CSI volume ignores it)."""
    storage_class: str = "hostpath"
    """Storage class of the volume and its claim; hostpath (default) makes a hostPath volume, any
    other class a CSI one."""
    capacity: str = "5Gi"
    """Size of the volume and of the claim's request, a Kubernetes quantity; default 5Gi."""
    delete: bool = True
    """Reclaim policy Delete (default); false keeps the volume (Retain), and Pulumi keeps both
    objects on destroy."""
    driver: str | None = None
    """The CSI driver; required for a class other than hostpath."""
    volume_handle: str | None = None
    """The CSI volume handle; default the storage class."""
    attributes: dict[str, str] = Field(default_factory=dict)
    """The CSI volume's attributes."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels of the PersistentVolume."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Annotations of the PersistentVolume."""
    claim_annotations: dict[str, str] = Field(default_factory=dict)
    """Annotations of the claim."""
    secret: str | None = None
    """A Secret the CSI driver gets for node publish, controller publish and node stage."""
    secret_namespace: str = "default"
    """Namespace of ``secret``; default ``default``."""

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
    """A MiniCluster spec as the Flux Operator takes it (flux-framework.org/v1alpha2), field for
    field, with the operator's defaults."""

    containers: list[Container]
    """The containers of every broker pod (one Indexed Job pod per rank); exactly one runs Flux.
    Required."""
    services: list[Container] = Field(default_factory=list)
    """Containers of a separate Pod ``<name>-services``, reached as
    ``<name>-services.<headlessName>``; each needs a name and keeps its entrypoint."""
    network: Network = Field(default_factory=Network)
    """The headless Service and the placement of the broker pods."""
    job_labels: dict[str, str] = Field(default_factory=dict)
    """Labels of the Job only, not its pods; ``kueue.x-k8s.io/queue-name`` queues it with Kueue
    (created suspended)."""
    interactive: bool = False
    """Rank 0's broker runs no initial program (``-Sbroker.rc2_none``): the instance stays up and
    ``command`` is not run."""
    flux: FluxSpec = Field(default_factory=FluxSpec)
    """Flux itself: the flux view, the brokers, the scheduler, the certificate."""
    logging: Logging = Field(default_factory=Logging)
    """What the scripts and brokers print, and whether a failure fails the pod."""
    archive: Archive | None = None
    """A Flux archive restored when rank 0 starts and saved whenever it stops."""
    share_process_namespace: bool = False
    """The broker pods' containers share one PID namespace."""
    cleanup: bool = False
    """Remove the Job and its pods once it finishes (``ttlSecondsAfterFinished: 0``; the operator
    deletes the MiniCluster instead)."""
    size: int = 1
    """Broker pods (the Job's parallelism and completions), at least 1; default 1. A new size
    within maxSize resizes the running Job."""
    max_size: int = 0
    """Most brokers the instance can have: the hostlist in broker.toml covers this many. 0
    (default) means size."""
    backoff_limit: int = 0
    """Pod failures allowed: the Job's backoffLimit, or each rank's with restartPolicy Never; 0
    (default) means 100."""
    min_size: int = 0
    """The brokers rank 0 waits for before it runs work (``-Sbroker.quorum``); 0 (default): size
    when maxSize is larger or the cluster is a bursting root, else every rank."""
    tasks: int = 1
    """Tasks of rank 0's job (``-n``), default 1; ``-N <size>`` is added when tasks is at least
    size, and 0 gives ``-N <size>`` alone."""
    deadline_seconds: int = DEFAULT_DEADLINE_SECONDS
    """The Job's activeDeadlineSeconds; default 31500000 (about a year)."""
    pod: PodSpec = Field(default_factory=PodSpec)
    """Pod-level settings of the broker pods and the services Pod."""
    # v1alpha1 features. ``volumes`` is also read from a v1alpha2 document (with a warning): the
    # operator's own v1alpha2 examples carry it, and its controller drops it silently.
    volumes: dict[str, OperatorVolume] = Field(default_factory=dict)
    """v1alpha1's volumes: a PersistentVolume and a claim ``<name>-<key>`` each, mounted by
    container volumes of that name without a source. A v1alpha2 document gets a warning (the
    operator drops it)."""
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
            if cluster.size is None and self.size >= 1:
                # A size below 1 is reported at spec.size alone: it lends the clusters nothing.
                cluster.size = self.size
        return self


class Metadata(BaseModel):
    """The subset of ObjectMeta a MiniCluster document carries that we use; the rest is kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: str | None = None
    """The MiniCluster's name: the Job, the Flux container, the hostnames ``<name>-<i>`` and the
    other objects' names derive from it. A deployer's name wins."""
    namespace: str | None = None
    """Namespace of every object, default ``default``; a deployer's namespace wins."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels copied onto every rendered object but the pods (which take ``spec.pod.labels``)."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """Read for this product's switches, ``minicluster.flux-framework.org/network-policy`` and
    ``minicluster.flux-framework.org/autoscale``; not copied onto the objects."""
