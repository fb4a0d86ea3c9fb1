"""Every fact of a MiniCluster derived once, from its validated definition.

The renderer, the component, the stack program and the CLI all need the same facts: the object
names, whether rank 0 runs a command or stays up, where the broker's files live in a pod, the rank
order, the quorum. Each is derived here exactly once, into a frozen ``MiniClusterPlan``, and
everything downstream reads the plan: nothing re-derives a name, a mode or a hostlist from the
spec, so two copies of a fact cannot disagree.

The plan holds facts, not bytes: turning it into broker.toml, scripts and Kubernetes objects is the
renderer's job (``render``), done once per plan.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from flux_minicluster.core.base import layout, placeholders
from flux_minicluster.core.base.errors import Problem
from flux_minicluster.core.flux import brokerconfig, hostlist, tree
from flux_minicluster.core.kube import completion, kubeversion
from flux_minicluster.core.kube.labels import NETWORK_POLICY_ANNOTATION
from flux_minicluster.core.planning import autoscale as autoscaling
from flux_minicluster.core.planning.autoscale import Autoscale
from flux_minicluster.core.reading.loading import has_deferred_group
from flux_minicluster.core.spec.archive import archive_path
from flux_minicluster.core.spec.definition import MiniClusterDefinition, ObjectNames
from flux_minicluster.core.spec.models import (
    DEFAULT_BACKOFF_LIMIT,
    DEFAULT_INSTALL_ROOT,
    DEFAULT_RESTFUL_USER,
    BurstedCluster,
    Container,
    FluxBroker,
    FluxRestful,
    FluxUser,
    MiniClusterSpec,
    OperatorVolume,
)

__all__ = [
    "RESTART_POLICY_FIELD",
    "ConfigPaths",
    "HostEntry",
    "Imp",
    "MiniClusterPlan",
    "Mode",
    "Role",
    "build",
    "group_host_entries",
    "with_burst_group",
]


RESTART_POLICY_FIELD = "spec.pod.restartPolicy"
"""Where the advice on failed work points (``MiniClusterPlan.warnings``)."""


class Role(enum.StrEnum):
    """A MiniCluster's place in a bursting group."""

    STANDALONE = "standalone"
    ROOT = "root"
    """Declares the clusters it bursts to; its rank 0 is the whole instance's."""
    BURST = "burst"
    """Joins a lead broker elsewhere; it has no rank 0 of its own."""


class Mode(enum.StrEnum):
    """What rank 0 does with the user's work."""

    SUBMIT = "submit"
    """``flux submit`` the command, watch it, and exit when it ends (the default)."""
    LAUNCHER = "launcher"
    """Run the command as the instance's initial program (it launches its own work)."""
    BATCH = "batch"
    """Turn the command's lines into a ``flux batch`` script."""
    INTERACTIVE = "interactive"
    """A command is given but the broker stays up without running it; users submit work."""
    PERSISTENT = "persistent"
    """No command: the broker stays up until ``flux shutdown`` or deletion."""
    RESTFUL = "restful"
    """v1alpha1 without a command: rank 0 serves the Flux RESTful API, which takes the work."""

    @property
    def persistent(self) -> bool:
        """The cluster never completes on its own, so nothing may wait for it to."""
        return self in (Mode.INTERACTIVE, Mode.PERSISTENT, Mode.RESTFUL)


@dataclass(frozen=True)
class HostEntry:
    """One table of ``[bootstrap] hosts``: a hostlist block plus optional endpoint overrides."""

    host: str
    bind: str | None = None
    connect: str | None = None


@dataclass(frozen=True)
class ConfigPaths:
    """Where the flux view and the broker's files live inside a pod (all absolute)."""

    view_base: str  # the flux-view emptyDir (spec.flux.container.mountPath)
    view_root: str  # the copied spack view (bin/, lib/, etc/)
    software: str  # the copied spack software tree, restored into /opt/software
    config_root: str  # configs and runtime state written by the init and entrypoint scripts
    config_dir: str  # the broker's --config-path: holds broker.toml only
    broker_toml: str
    system_dir: str
    hostlist: str
    cron_dir: str
    shell_initrc: str  # the job shell's initrc when this pod adds to Flux's (conf.shell_initrc)
    resource: str  # R, written by `flux R encode` at start; [resource] path
    curve_cert: str  # the 0600 copy of the Secret's certificate; [bootstrap] curve_cert
    state_dir: str
    run_dir: str
    socket: str  # the broker's local socket (rundir/local): sidecars wait for it
    archive_db: str
    done_marker: str  # touched by the init container when the view is in place
    complete_marker: str  # touched by the Flux container when it is done
    instance_ended: str  # a worker's: its instance shut down and it has not joined one again


@dataclass(frozen=True)
class OperatorVolumePlan:
    """A ``spec.volumes`` entry with the names of the PersistentVolume and claim made for it."""

    key: str
    volume: OperatorVolume
    persistent_volume: str
    claim: str


@dataclass(frozen=True)
class MultiUser:
    """v1alpha1 multi-user mode: users in every pod, munge, and flux-imp to run their jobs."""

    users: tuple[str, ...]
    """The users to create, each with its password in the users Secret."""
    generated_passwords: tuple[str, ...]
    """Those whose password the MiniCluster makes (the spec gives none)."""


@dataclass(frozen=True)
class Imp:
    """v1alpha1 multi-user mode: flux-security's IMP, which runs each user's job as that user.

    Both paths are in the application image, under ``flux.installRoot``.
    """

    path: str
    """``<installRoot>/libexec/flux/flux-imp``: made setuid at start; broker.toml's [exec] imp."""
    shell: str
    """``<installRoot>/libexec/flux/flux-shell``: the one shell imp.toml allows."""
    allowed_users: tuple[str, ...]
    """Who may run ``flux-imp exec`` (imp.toml's allowed-users): the instance owner, the user
    the broker runs as, and root, as v1alpha1 allowed."""


@dataclass(frozen=True)
class MiniClusterPlan:
    """A validated MiniCluster and every fact derived from it, each computed once."""

    definition: MiniClusterDefinition
    names: ObjectNames
    role: Role
    mode: Mode
    flux_index: int
    """Index of the container that runs Flux (validation guarantees exactly one)."""
    paths: ConfigPaths
    host_entries: tuple[HostEntry, ...]
    """The generated ``[bootstrap] hosts`` tables, in rank order (unused with brokerConfig)."""
    hostlist: str
    """Every broker's host in rank order: the ``hostlist`` file, R's hosts, an output."""
    quorum: int | None
    """Broker quorum, or None for Flux's default of every rank."""
    topology: str | None
    """The brokers' tree (``tbon.topo``): the spec's ``flux.topology``, else the one
    ``core.flux.tree`` chooses for ``maxSize`` brokers; None where the operator's fanout of 256
    stays (a bursting group, a custom hostlist, the user's broker config)."""
    burst_group: str | None
    """The bursting group this cluster belongs to (the lead's name), None when it has none."""
    rank_order_deferred: bool
    """A burst whose group comes from its root's outputs at deploy time
    (``loading.with_deferred_group``): its rank order is not known yet, so ``host_entries`` is
    empty, ``hostlist`` is ``placeholders.RANK_ORDER_HOSTLIST`` and the renderer writes the
    ``placeholders.RANK_ORDER`` tokens; ``with_burst_group`` gives the plan with the group."""
    network_policy: bool
    """Whether the MiniCluster wants its NetworkPolicy (its metadata may opt out)."""
    kube_version: kubeversion.KubeVersion
    """The Kubernetes release the MiniCluster is rendered for (``core.kube.kubeversion``)."""
    job: completion.JobBehaviour
    """How the Job completes, retries and fails on ``kube_version`` (``core.kube.completion``)."""
    operator_volumes: tuple[OperatorVolumePlan, ...] = ()
    """v1alpha1's operator-made volumes: a PersistentVolume and a claim each."""
    multi_user: MultiUser | None = None
    munge_secret: str | None = None
    """The Secret with the munge key brokers need (the spec's flux.mungeSecret, or the one the
    MiniCluster makes for multi-user mode); None when nothing needs munge."""
    flux_user: FluxUser | None = None
    """v1alpha1: the user the broker runs as (None: the container's own user)."""
    install_root: str | None = None
    """v1alpha1: where Flux is installed in the application image."""
    v1alpha1: bool = False
    """Read from a v1alpha1 document (its conversion always sets ``flux.installRoot``): the
    entrypoint keeps v1alpha1's ``asFlux`` for every broker and installs and starts munge."""
    imp: Imp | None = None
    """Multi-user mode's IMP (None without ``spec.users``)."""
    autoscale: Autoscale | None = None
    """The scaler rank 0 runs beside its broker (None unless the MiniCluster opts in)."""
    archive: str | None = None
    """The archive rank 0 restores at start and saves at every stop (``core.spec.archive``);
    None for a burst, whose brokers hold no content of their own."""

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def namespace(self) -> str:
        return self.definition.namespace

    @property
    def spec(self) -> MiniClusterSpec:
        return self.definition.spec

    @property
    def flux_container(self) -> Container:
        return self.spec.containers[self.flux_index]

    @property
    def persistent(self) -> bool:
        return self.mode.persistent

    @property
    def backoff_limit(self) -> int:
        """The operator's backoffLimit: its default when the spec leaves it at 0. The Job carries
        it as its own, or per index (``job``)."""
        return _backoff_limit(self.spec)

    @property
    def restful(self) -> FluxRestful | None:
        """The Flux RESTful API server rank 0 runs (v1alpha1 with no command and not
        interactive); None for every other MiniCluster."""
        return self.spec.flux_restful if self.mode is Mode.RESTFUL else None

    @property
    def makes_munge_secret(self) -> bool:
        """Whether the MiniCluster makes the munge key's Secret (multi-user mode without the
        spec's own ``flux.mungeSecret``) rather than mounting one the user made."""
        return self.munge_secret is not None and self.munge_secret == self.names.munge_secret

    @property
    def restful_user(self) -> str | None:
        """The RESTful API's user (v1alpha1's FLUX_USER, ``flux`` unless the spec names one);
        None without the server."""
        restful = self.restful
        if restful is None:
            return None
        return restful.username or DEFAULT_RESTFUL_USER

    @property
    def lead_broker(self) -> FluxBroker | None:
        """The lead a bursted cluster joins (None for a root or a standalone cluster)."""
        return self.spec.flux.bursting.lead_broker

    def mounted_certificate_problem(self, given_as: str) -> str | None:
        """Why a certificate must be given (as ``given_as``) when the brokers mount the user's
        own Secret (v1alpha1's ``flux.curveCertSecret``): the pod template records the public
        key, the outputs publish the certificate and v1alpha1's credentials derive from it, so
        all must come from the certificate in that Secret, which nothing here can read."""
        secret = self.spec.flux.curve_cert_secret
        if secret is None:
            return None
        return (
            f"required with spec.flux.curveCertSecret: the brokers mount the certificate in "
            f"Secret {self.namespace}/{secret}; give that certificate as {given_as} too, so that "
            "the pod template's public key, the published certificate and the credentials "
            "derived from it match the one the brokers use"
        )

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """What every surface says of this MiniCluster besides its problems: its definition's
        warnings, then what the plan advises (failed work that would leave a Complete Job)."""
        advice = completion.failed_work_advisory(self.kube_version, self.job)
        if advice is None:
            return self.definition.warnings
        return (*self.definition.warnings, Problem(RESTART_POLICY_FIELD, advice))

    def summary(self) -> str:
        """One line a person can read: what ``minicluster validate`` prints for a good file."""
        spec = self.spec
        mode = Role.BURST.value if self.role is Role.BURST else self.mode.value
        return (
            f"{self.namespace}/{self.name}: size={spec.size} maxSize={spec.max_size} "
            f"mode={mode} containers={len(spec.containers)}"
            + (f" services={len(spec.services)}" if spec.services else "")
        )


def build(
    definition: MiniClusterDefinition,
    kube_version: kubeversion.KubeVersion = kubeversion.DEFAULT,
) -> MiniClusterPlan:
    """The plan of a validated MiniCluster (from ``loading.parse``), rendered for Kubernetes
    ``kube_version`` (``kubeversion.parse`` makes one of a user's text)."""
    spec = definition.spec
    names = definition.names
    flux_index = next(i for i, c in enumerate(spec.containers) if c.run_flux)
    user = (
        brokerconfig.read(spec.flux.broker_config) if spec.flux.broker_config is not None else None
    )
    deferred = has_deferred_group(spec)
    entries = () if deferred else tuple(_host_entries(definition))
    role = _role(spec)
    mode = _mode(spec, spec.containers[flux_index])
    if deferred:
        hosts = placeholders.RANK_ORDER_HOSTLIST
    elif user is not None and user.hosts:
        # R is encoded from this hostlist: it must name the ranks the brokers bootstrap with.
        hosts = ",".join(user.hosts)
    else:
        hosts = ",".join(entry.host for entry in entries)
    return MiniClusterPlan(
        definition=definition,
        names=names,
        role=role,
        mode=mode,
        flux_index=flux_index,
        paths=_config_paths(spec, user),
        host_entries=entries,
        hostlist=hosts,
        quorum=_quorum(spec),
        topology=_topology(spec, role, user),
        burst_group=_burst_group(spec, definition.name),
        rank_order_deferred=deferred,
        network_policy=definition.annotations.get(NETWORK_POLICY_ANNOTATION) != "false",
        operator_volumes=tuple(
            OperatorVolumePlan(key, volume, names.persistent_volume(key), names.claim(key))
            for key, volume in spec.volumes.items()
        ),
        multi_user=_multi_user(spec),
        munge_secret=spec.flux.munge_secret or (names.munge_secret if spec.users else None),
        flux_user=_flux_user(spec.containers[flux_index]),
        install_root=spec.flux.install_root,
        v1alpha1=spec.flux.install_root is not None,
        imp=_imp(spec, spec.containers[flux_index]),
        kube_version=kube_version,
        job=completion.behaviour(
            kube_version,
            lead_is_index_0=role is not Role.BURST,
            work_at_lead=role is not Role.BURST and not mode.persistent,
            requested_restart=spec.pod.restart_policy,
            backoff_limit=_backoff_limit(spec),
        ),
        autoscale=autoscaling.of(definition, kube_version),
        archive=archive_path(spec, definition.name),
    )


# --- the facts, one function each ---------------------------------------------------------------


def _role(spec: MiniClusterSpec) -> Role:
    bursting = spec.flux.bursting
    if bursting.lead_broker is not None:
        return Role.BURST
    if bursting.clusters:
        return Role.ROOT
    return Role.STANDALONE


def _mode(spec: MiniClusterSpec, flux: Container) -> Mode:
    if not (flux.command or flux.commands.script):
        if spec.flux_restful is not None and not spec.interactive:
            return Mode.RESTFUL
        return Mode.PERSISTENT
    if spec.interactive:
        return Mode.INTERACTIVE
    if flux.batch:
        return Mode.BATCH
    if flux.launcher:
        return Mode.LAUNCHER
    return Mode.SUBMIT


def _backoff_limit(spec: MiniClusterSpec) -> int:
    return spec.backoff_limit or DEFAULT_BACKOFF_LIMIT


def _multi_user(spec: MiniClusterSpec) -> MultiUser | None:
    if not spec.users:
        return None
    return MultiUser(
        users=tuple(u.name for u in spec.users),
        generated_passwords=tuple(u.name for u in spec.users if u.password is None),
    )


def _flux_user(flux: Container) -> FluxUser | None:
    """The broker's user: the spec's fluxUser (v1alpha1), unless it runs Flux as root."""
    if flux.flux_user is None or flux.commands.run_flux_as_root:
        return None
    return flux.flux_user


def _imp(spec: MiniClusterSpec, flux: Container) -> Imp | None:
    """Multi-user mode's IMP, under installRoot (``/usr`` when a spec leaves it unset)."""
    if not spec.users:
        return None
    libexec = _join(spec.flux.install_root or DEFAULT_INSTALL_ROOT, "libexec/flux")
    user = _flux_user(flux)
    owner = user.name if user is not None else "root"
    return Imp(
        path=f"{libexec}/flux-imp",
        shell=f"{libexec}/flux-shell",
        allowed_users=tuple(dict.fromkeys((owner, "root"))),
    )


def _quorum(spec: MiniClusterSpec) -> int | None:
    """minSize if set, else this cluster's size when the instance has more ranks than it starts
    with (room to grow, or a bursting root whose hostlist also lists the burst clusters), else
    None: Flux's default of every rank.

    Without it, rank 0 of an elastic or bursting cluster would wait for ranks that may never come
    before it runs anything.
    """
    if spec.min_size:
        return spec.min_size
    bursting = spec.flux.bursting
    root_of_bursts = bursting.lead_broker is None and bool(bursting.clusters or bursting.hostlist)
    if spec.size != spec.max_size or root_of_bursts:
        return spec.size
    return None


def _topology(
    spec: MiniClusterSpec, role: Role, user: brokerconfig.UserConfig | None
) -> str | None:
    """The spec's tree, or the size's for a MiniCluster whose brokers are its ``maxSize`` pods.

    The clusters of a bursting group must all pass the same tree, and a burst learns the
    group's size only when it deploys; a custom hostlist or broker config is the user's own
    layout. Those keep the operator's ``tbon.fanout=256``."""
    if spec.flux.topology:
        return spec.flux.topology
    if role is not Role.STANDALONE or spec.flux.bursting.hostlist or user is not None:
        return None
    return tree.for_size(spec.max_size)


def size_free(plan: MiniClusterPlan) -> MiniClusterPlan:
    """``plan`` with every fact made of ``spec.size`` at one value: ``size`` at ``maxSize``, the
    quorum and the scaler's floor at ``minSize`` (or none). Its scripts are the same at any size
    within ``maxSize``, and change with everything else: what the pod template's digest of the
    scripts is taken of, so that a resize keeps the Job and any other change of the scripts
    replaces it. Only for that digest: the plan is no MiniCluster's."""
    spec = plan.spec
    floor = spec.min_size or None
    return dataclasses.replace(
        plan,
        definition=plan.definition.with_spec(spec.model_copy(update={"size": spec.max_size})),
        quorum=floor,
        autoscale=(
            None
            if plan.autoscale is None
            else dataclasses.replace(plan.autoscale, min_size=floor or 0)
        ),
    )


def _burst_group(spec: MiniClusterSpec, name: str) -> str | None:
    bursting = spec.flux.bursting
    if bursting.lead_broker is not None:
        return bursting.lead_broker.name
    if bursting.clusters:
        return name
    return None


def _config_paths(spec: MiniClusterSpec, user: brokerconfig.UserConfig | None) -> ConfigPaths:
    """The pod paths; with ``flux.brokerConfig``, R and the certificate go where it says.

    The operator hard-codes ``/mnt/flux/config`` in its init script even when ``mountPath``
    differs; everything here follows ``mountPath``.
    """
    base = spec.flux.container.mount_path.rstrip("/") or "/"
    root = _join(base, "config")
    system = f"{root}/etc/flux/system"
    config_dir = f"{root}/etc/flux/config"
    run_dir = f"{root}/run/flux"
    return ConfigPaths(
        view_base=base,
        view_root=_join(base, "view"),
        software=_join(base, "software"),
        config_root=root,
        config_dir=config_dir,
        broker_toml=f"{config_dir}/{layout.BROKER_TOML}",
        system_dir=system,
        hostlist=f"{system}/{layout.HOSTLIST}",
        cron_dir=f"{system}/cron.d",
        shell_initrc=f"{root}/etc/flux/shell/initrc.lua",
        resource=(user.resource if user else None) or f"{system}/R",
        curve_cert=(user.curve_cert if user else None) or f"{root}/curve/{layout.CURVE_FILE}",
        state_dir=f"{root}/var/lib/flux",
        run_dir=run_dir,
        socket=f"{run_dir}/local",
        archive_db=f"{root}/var/lib/flux/job-archive.sqlite",
        done_marker=_join(base, "flux-operator-done.txt"),
        complete_marker=_join(base, "flux-operator-complete.txt"),
        instance_ended=f"{run_dir}/instance-ended",
    )


def _host_entries(definition: MiniClusterDefinition) -> list[HostEntry]:
    """The ``[bootstrap] hosts`` tables, in rank order.

    * a root (or a standalone cluster) lists its own ``maxSize`` pods, then each cluster it
      declares in ``flux.bursting.clusters``, in order;
    * a bursted cluster lists the lead broker's external address first (rank 0 of the whole
      instance, reached through that address rather than this cluster's headless Service), then
      the lead's other ranks, then the lead's ``bursting.clusters`` list, so ranks line up;
    * a custom ``bursting.hostlist`` is used verbatim.

    Each block stays a hostlist range (``name-[0-65535]``), never an enumeration, so the config is
    the same size at 2 pods and at 65536. The Flux Operator renders a bursted child's block with
    a broken ``Sprintf`` and never applies the ``clusters`` defaults; both are fixed here.
    """
    spec = definition.spec
    bursting = spec.flux.bursting
    lead = bursting.lead_broker
    if bursting.hostlist:
        custom = bursting.hostlist
        # A child's custom list that starts with the lead's address still needs the lead's
        # endpoint: the default connect would look the address up under this cluster's domain.
        if lead is not None:
            address = _address(lead)
            if custom == address:
                return [_lead_entry(lead)]
            if custom.startswith(address + ","):
                return [_lead_entry(lead), HostEntry(custom[len(address) + 1 :])]
        return [HostEntry(custom)]
    if lead is not None:
        return group_host_entries(lead, bursting.clusters, spec.size)
    own = HostEntry(hostlist.block(f"{definition.name}-", spec.max_size))
    return [own, *_cluster_entries(bursting.clusters, spec.size)]


def group_host_entries(
    lead: FluxBroker, clusters: Sequence[BurstedCluster], default_size: int
) -> list[HostEntry]:
    """A bursted cluster's rank order: the lead's address, the lead's other ranks, the clusters.

    ``default_size`` is the size of a listed cluster that gives none (the spec model fills it in
    with the bursted cluster's own size). The component calls this too, once a burst stack has
    read its root's outputs.
    """
    entries = [_lead_entry(lead)]
    if lead.size > 1:
        rest = f"[1-{lead.size - 1}]" if lead.size > 2 else "[1]"
        entries.append(HostEntry(f"{lead.name}-{rest}"))
    return entries + _cluster_entries(clusters, default_size)


def with_burst_group(
    plan: MiniClusterPlan, lead: FluxBroker, clusters: Sequence[BurstedCluster]
) -> MiniClusterPlan:
    """A bursted cluster's plan once its group is known (a burst stack reads it from its root's
    outputs when it deploys): the group in its spec, the group's rank order and hostlist, and the
    lead's name as the group, in place of the placeholders of a deferred plan
    (``rank_order_deferred``). The group was checked where it was read; nothing else changes."""
    spec = plan.spec
    bursting = spec.flux.bursting.model_copy(
        update={"lead_broker": lead, "clusters": list(clusters)}
    )
    grouped = spec.model_copy(update={"flux": spec.flux.model_copy(update={"bursting": bursting})})
    entries = tuple(group_host_entries(lead, clusters, spec.size))
    return dataclasses.replace(
        plan,
        definition=plan.definition.with_spec(grouped),
        host_entries=entries,
        hostlist=",".join(entry.host for entry in entries),
        burst_group=lead.name,
        rank_order_deferred=False,
    )


def _lead_entry(lead: FluxBroker) -> HostEntry:
    address = _address(lead)
    return HostEntry(
        host=address, bind=f"tcp://eth0:{lead.port}", connect=f"tcp://{address}:{lead.port}"
    )


def _address(lead: FluxBroker) -> str:
    """The lead's address; validation has made sure a plan's lead has one."""
    if lead.address is None:
        raise ValueError("a bursted cluster's leadBroker.address is required")
    return lead.address


def _cluster_entries(clusters: Sequence[BurstedCluster], default_size: int) -> list[HostEntry]:
    # The spec model fills in the operator's intended defaults (burst-<i>, spec.size).
    return [
        HostEntry(
            hostlist.block(
                f"{cluster.name or ''}-", cluster.size if cluster.size is not None else default_size
            )
        )
        for cluster in clusters
    ]


def _join(base: str, name: str) -> str:
    return f"{base}{name}" if base.endswith("/") else f"{base}/{name}"
