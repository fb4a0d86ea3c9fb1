"""What a MiniCluster locks down by default, and where it deliberately does not.

The Flux Operator sets no security context at all. Here the containers and pods we generate start
from a baseline a security reviewer signs off on, and the user's own settings always win (a spec
that asks for more, such as ``privileged`` or an added capability, still gets it; the policy pack
reports it as before). Each exception is written next to the baseline it weakens:

* the flux-view init container (ours alone) drops every capability, cannot escalate privileges,
  has a read-only root filesystem and runs as a non-root user (``VIEW_USER``, with
  ``runAsNonRoot``): ``flux-init.sh`` only reads the view and the entrypoint ConfigMap and writes
  into the view emptyDir, which the kubelet makes writable by all; what it copies keeps modes
  readable by all, so an application container of any user (root or not) reads it. A pod-level
  ``runAsUser`` in the spec, or the view's own securityContext, wins;
* every container of the user's image, the Flux container, a sidecar and a services container
  alike, drops ``NET_RAW`` (raw sockets: packet crafting, ARP spoofing; Flux and MPI's TCP,
  shared-memory and verbs transports never use them, nor does a database or an exporter) and
  cannot gain privileges through setuid binaries. Everything else is the image's: brokers run as
  the image's user, MPI's shared-memory transports need no capability, and a services image
  that starts as root and steps down to its own user (redis, postgres: ``gosu``) keeps the
  capabilities it does that with (``no_new_privs`` stops only a gain through ``execve``).
  Privilege escalation stays allowed when the spec makes the container privileged or adds
  ``SYS_ADMIN`` (the API server refuses the two together);
* every pod gets the container runtime's default seccomp profile unless the spec sets one.
"""

from __future__ import annotations

from typing import Any, Final

from flux_minicluster.core.kube import qos
from flux_minicluster.core.kube.quantity import parse_quantity
from flux_minicluster.core.render.kube import dump, quantity
from flux_minicluster.core.spec.models import Resources, SecurityContext

__all__ = [
    "FLUX_DROPPED",
    "INIT_RESOURCES",
    "VIEW_USER",
    "application_context",
    "container_context",
    "flux_context",
    "init_context",
    "pod_seccomp",
]

# The init container copies a view (a few hundred MB of files): a little CPU, memory for `cp`
# only (the page cache is reclaimable, so the limit cannot OOM-kill a large copy).
#
# Ephemeral storage: the copy lands in the view emptyDir and stays there for the pod's life, and
# a pod's effective request is the larger of its init containers' and the sum of its other
# containers', so the request (1Gi) reserves room on the node for the copy: a bare
# flux-core + flux-sched prefix is 170 MB, the published views (with their Python and spack
# tree) a few hundred. The container itself writes nothing of its own (read-only root, a few
# lines of log), so its limit never binds on it; but the kubelet also evicts a pod whose total
# use (every emptyDir, the view's copy included, every writable layer and log) exceeds its pod
# limit, the larger of the init containers' limits and the sum of the others', once any
# container sets one. This limit (8Gi: eight views' worth) is thus the whole pod's ceiling when
# the user's containers set none; their own ``ephemeral-storage`` limits govern when they add up
# to more, and ``flux.container.resources`` replaces these values.
INIT_RESOURCES: Final = {
    "requests": {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"},
    "limits": {"cpu": "1", "memory": "256Mi", "ephemeral-storage": "8Gi"},
}
FLUX_DROPPED: Final = ("NET_RAW",)
# The init container's user: it only reads the view and writes into the pod's emptyDirs (which
# the kubelet makes writable by all), so it needs no root; 65532 is the "nonroot" user of
# distroless images, a high UID no node account uses.
VIEW_USER: Final = 65532
RUNTIME_DEFAULT: Final = {"type": "RuntimeDefault"}


def container_context(
    user: SecurityContext | None, drop: tuple[str, ...], *, read_only_root: bool
) -> dict[str, Any]:
    """A container's securityContext: the user's settings over the baseline.

    The baseline drops ``drop`` (every capability for ``("ALL",)``), forbids privilege
    escalation and, with ``read_only_root``, makes the root filesystem read-only. The user's
    fields win; a capability the user adds is not dropped; a privileged container, or one that
    adds SYS_ADMIN, keeps privilege escalation (the API server refuses both together).
    """
    spec = dump(user) if user is not None else {}
    added = {c.upper() for c in (user.capabilities.add if user and user.capabilities else [])}
    drops = [c for c in drop if c.upper() not in added]
    user_drops = list(user.capabilities.drop) if user and user.capabilities else []
    capabilities: dict[str, Any] = {}
    if user and user.capabilities and user.capabilities.add:
        capabilities["add"] = list(user.capabilities.add)
    # Dropping ALL already drops ours: the user's list is then the whole of it.
    dropped_all = any(c.upper() == "ALL" for c in user_drops)
    all_drops = list(dict.fromkeys(user_drops if dropped_all else [*drops, *user_drops]))
    if all_drops:
        capabilities["drop"] = all_drops
    out: dict[str, Any] = {}
    escalates = bool(user and user.privileged) or "SYS_ADMIN" in added or "CAP_SYS_ADMIN" in added
    if not escalates:
        out["allowPrivilegeEscalation"] = False
    if capabilities:
        out["capabilities"] = capabilities
    if read_only_root:
        out["readOnlyRootFilesystem"] = True
    spec.pop("capabilities", None)
    return {**out, **spec}


def init_context(user: SecurityContext | None, pod_user: int | None = None) -> dict[str, Any]:
    """The flux-view init container: no capability, no escalation, read-only root, and not
    root: ``VIEW_USER`` with ``runAsNonRoot``, unless the pod's securityContext names a user
    (``pod_user``: it applies, and is non-root unless it is 0) or the view's own does."""
    context = container_context(user, ("ALL",), read_only_root=True)
    if pod_user is None and "runAsUser" not in context:
        context["runAsUser"] = VIEW_USER
        context.setdefault("runAsGroup", VIEW_USER)
    if context.get("runAsUser", pod_user) != 0:
        context.setdefault("runAsNonRoot", True)
    return context


def application_context(user: SecurityContext | None) -> dict[str, Any]:
    """A container of the user's image (a sidecar, a services container): NET_RAW dropped and
    no escalation; the rest is the image's."""
    return container_context(user, FLUX_DROPPED, read_only_root=False)


def flux_context(user: SecurityContext | None, *, setuid: bool = False) -> dict[str, Any]:
    """The Flux container: an application container's baseline.

    ``setuid``: v1alpha1's multi-user mode runs each user's job through flux-imp, a setuid
    helper, which no-new-privileges would defeat; escalation is left to the image there
    (unless the spec itself forbids it).
    """
    context = application_context(user)
    if setuid and (user is None or user.allow_privilege_escalation is None):
        context.pop("allowPrivilegeEscalation", None)
    return context


def init_resources(
    user: Resources | None, rendered: dict[str, Any] | None, beside: Resources | None = None
) -> dict[str, Any]:
    """The init container's resources: the user's when given, else ``INIT_RESOURCES``.

    ``beside``: the Flux container's resources when every container of the pod is
    Guaranteed-shaped. The init container's cpu and memory requests then equal their limits
    (each no more than the Flux container's), so the pod is Guaranteed as its user meant it to be
    (``INIT_RESOURCES`` alone would make every such pod Burstable)."""
    if user is not None and rendered:
        return rendered
    out: dict[str, dict[str, Any]] = {k: dict(v) for k, v in INIT_RESOURCES.items()}
    if beside is not None:
        for name in qos.QOS_RESOURCES:
            ours, theirs = out["limits"][name], beside.limits[name]
            value = ours if parse_quantity(ours) <= parse_quantity(theirs) else quantity(theirs)
            out["requests"][name] = out["limits"][name] = value
    return out


def pod_seccomp(context: dict[str, Any] | None) -> dict[str, Any]:
    """A pod securityContext with the runtime's default seccomp profile unless it sets one."""
    out = dict(context or {})
    out.setdefault("seccompProfile", dict(RUNTIME_DEFAULT))
    return out
