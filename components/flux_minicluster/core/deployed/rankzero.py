"""Rank 0's pod of a deployed MiniCluster, and Flux run in it through the API server's exec.

``minicluster flux NAME -- ARGS`` and the queue ``minicluster status`` shows run ``flux`` in the
Flux container of rank 0's pod with ``kubectl exec``, under the user's own kubeconfig: what the
user may do is what their RBAC lets them do (``pods/exec`` in the namespace), and no pod, Service
account or sidecar gets a right it did not have. This module says, from the objects as the API
server returns them (plain JSON), where that is and what runs there; the CLI fetches and execs.

* **rank 0's pod**: the Job's own pod (by the Job's uid, ``status.owned_pods``) of completion
  index 0 (the Job controller's ``COMPLETION_INDEX_LABEL``), the newest that is not being
  deleted; its Flux container is named after the MiniCluster (``render/pod.py``).
* **Flux's environment**: an exec'd process does not inherit the entrypoint's. The entrypoint
  writes it for people in the pod: ``flux-view.sh`` in the flux view's directory (the view's
  ``PATH``, ``PYTHONPATH``, ``LD_LIBRARY_PATH``, ``spec.flux.environment`` and ``fluxsocket``,
  the broker's ``local://`` URI, from the plan's paths; ``templates/wait-view.sh.j2``), for the
  default view image, ``flux.container.disable`` and ``flux.installRoot`` alike. The commands
  here source that file, so the pod stays the one owner of those facts; where it is comes from
  the pod itself (the flux view's mount, ``view_helper``), so it is right for whatever spec the
  pod was rendered from.
* **the instance's owner**: Flux answers only its owner. When the broker runs as another user
  than the container's (v1alpha1's ``fluxUser``), the command runs as the owner of the broker's
  socket through ``sudo``, as the readiness probe does (``render/readiness.py``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from flux_minicluster.core.base import layout
from flux_minicluster.core.kube.labels import COMPLETION_INDEX_LABEL

__all__ = [
    "FLUX_SCRIPT",
    "INSTANCE_SCRIPT",
    "Rank0",
    "find",
    "flux_command",
    "instance_command",
    "owned_pods",
    "rank0_pods",
    "view_helper",
]

_PROGRAM: Final = "minicluster-flux"
"""``$0`` of the exec'd scripts, which bash names in its own messages."""

NO_FLUX: Final = 69
"""The scripts' exit code when the pod has no Flux set up (EX_UNAVAILABLE: no flux-view.sh)."""

_PRELUDE: Final = (
    f"""view=$1
shift
if [ ! -r "${{view}}" ]; then
  printf 'minicluster: %s is not there: the Flux container has not set Flux up yet\\n' \\
    "${{view}}" >&2
  exit {NO_FLUX}
fi
. "${{view}}" > /dev/null || exit {NO_FLUX}
"""
    + r"""export FLUX_URI="${fluxsocket:?flux-view.sh names no broker socket}"
# Flux answers only its instance's owner: the owner of the broker's socket.
run=(env)
owner=$(stat -c %u -- "${FLUX_URI#local://}" 2> /dev/null) || owner=
if [ -n "${owner}" ] && [ "${owner}" != "$(id -u)" ] && command -v sudo > /dev/null; then
  run=(sudo -u "#${owner}" env FLUX_URI="${FLUX_URI}" PATH="${PATH}"
    PYTHONPATH="${PYTHONPATH:-}" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}")
fi
"""
)

FLUX_SCRIPT: Final = _PRELUDE + 'exec "${run[@]}" flux "$@"\n'
"""``bash -c FLUX_SCRIPT minicluster-flux VIEW_HELPER ARGS...``: ``flux ARGS...`` in the
instance, its exit code the script's (69, EX_UNAVAILABLE, when the pod has no Flux set up)."""

ARCHIVE_LINE: Final = "archive"

INSTANCE_SCRIPT: Final = (
    _PRELUDE
    + r"""archive=${1:-}
"${run[@]}" flux job stats || exit
if [ -z "${archive}" ]; then
  archive=$("${run[@]}" flux getattr content.restore 2> /dev/null) \
    || archive=$("${run[@]}" flux getattr content.dump 2> /dev/null) || archive=
fi
# auto: the newest dump, which Flux links as RESTORE in the state directory (none without one).
if [ "${archive}" = auto ]; then
  statedir=$("${run[@]}" flux getattr statedir 2> /dev/null) || statedir=
  archive=${statedir:+${statedir}/dump/RESTORE}
fi
if [ -n "${archive}" ]; then
  written=$(stat -L -c '%Y %s' -- "${archive}" 2> /dev/null) || written='- -'
"""
    + f'  printf \'{ARCHIVE_LINE} %s %s\\n\' "${{written}}" "${{archive}}"\n'
    + "fi\n"
)
"""``bash -c INSTANCE_SCRIPT minicluster-flux VIEW_HELPER [ARCHIVE]``: what ``status`` reads of
the instance, for ``status.read_instance``: the JSON ``flux job stats`` prints (job-list's
counts, one line), then, when there is an archive (``ARCHIVE``, the one the Job names, else
the spec's; else the one the broker was started with, its ``content.restore`` or
``content.dump`` attribute, as an operator's broker is; for ``auto``, the ``dump/RESTORE`` link
in its state directory),
``archive <mtime> <bytes> <path>``, ``- -`` for a file that is not there."""


@dataclass(frozen=True)
class Rank0:
    """Rank 0's pod of a MiniCluster, as the API server reports it."""

    pod: str
    container: str
    """The Flux container (named after the MiniCluster)."""
    phase: str
    """The pod's phase (Pending, Running, Succeeded, Failed, Unknown)."""
    running: bool
    """The pod runs and so does its Flux container: something can be exec'd in it."""
    ready: bool
    """The Flux container is Ready: rank 0's broker is up with its quorum (the probe)."""
    view_helper: str | None
    """Where the pod's ``flux-view.sh`` is, None when the pod has no flux view."""

    def state(self) -> str:
        """A few words for a person: why Flux cannot be reached here, or that it can."""
        if not self.running:
            return f"rank 0's pod {self.pod} is {self.phase}, its Flux container not running"
        if not self.ready:
            return f"rank 0's pod {self.pod} is running but not Ready: the instance is not up yet"
        return f"rank 0's pod {self.pod} is Ready"


def owned_pods(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The pods of ``job`` itself (by its uid), not those an earlier Job of the same name left
    behind, which carry the same ``job-name`` label until they are gone."""
    uid = (job.get("metadata") or {}).get("uid")
    return [
        p
        for p in pods
        if uid is None
        or any(o.get("uid") == uid for o in (p.get("metadata") or {}).get("ownerReferences") or [])
    ]


def rank0_pods(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods of completion index 0, oldest first (a replaced rank 0 leaves one behind)."""
    rank0 = [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(COMPLETION_INDEX_LABEL) == "0"
    ]
    return sorted(rank0, key=_created)


def _created(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")


def _named(items: Any, name: str) -> Mapping[str, Any] | None:
    return next((i for i in items or [] if isinstance(i, Mapping) and i.get("name") == name), None)


def view_helper(pod: Mapping[str, Any], container: str) -> str | None:
    """The path of ``flux-view.sh`` in ``container`` of ``pod``: in the flux view's directory,
    the emptyDir the init container (the one that runs ``flux-init.sh``) shares with the Flux
    container under the init container's name (``render/volumes.py``); None without one."""
    spec = pod.get("spec") or {}
    init_command = f"{layout.ENTRYPOINT_DIR}/{layout.INIT_SCRIPT}"
    init = next(
        (
            c
            for c in spec.get("initContainers") or []
            if isinstance(c, Mapping) and init_command in (c.get("command") or [])
        ),
        None,
    )
    flux = _named(spec.get("containers"), container)
    if init is None or flux is None:
        return None
    mount = _named(flux.get("volumeMounts"), str(init.get("name")))
    if mount is None or not mount.get("mountPath"):
        return None
    return posixpath.join(str(mount["mountPath"]), layout.VIEW_HELPER)


def find(name: str, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Rank0 | None:
    """Rank 0 of MiniCluster ``name`` from its Job and the pods labelled with its name (as
    ``kubectl get -o json`` prints them): the newest of the Job's index-0 pods that is not
    being deleted, None when there is none."""
    live = [
        p
        for p in rank0_pods(owned_pods(job, pods))
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    if not live:
        return None
    pod = live[-1]
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Unknown")
    flux = _named(status.get("containerStatuses"), name) or {}
    return Rank0(
        pod=str((pod.get("metadata") or {}).get("name")),
        container=name,
        phase=phase,
        running=phase == "Running" and "running" in (flux.get("state") or {}),
        ready=phase == "Running" and flux.get("ready") is True,
        view_helper=view_helper(pod, name),
    )


def flux_command(rank0: Rank0, args: Sequence[str]) -> list[str]:
    """What ``kubectl exec`` runs in rank 0's Flux container for ``flux ARGS...``."""
    if rank0.view_helper is None:
        raise ValueError(f"rank 0's pod {rank0.pod} has no flux view")
    return ["/bin/bash", "-c", FLUX_SCRIPT, _PROGRAM, rank0.view_helper, *args]


def instance_command(rank0: Rank0, archive: str | None = None) -> list[str]:
    """What ``kubectl exec`` runs in rank 0's Flux container for ``INSTANCE_SCRIPT``:
    ``archive``, the spec's ``archive.path`` when the caller knows the spec."""
    if rank0.view_helper is None:
        raise ValueError(f"rank 0's pod {rank0.pod} has no flux view")
    return ["/bin/bash", "-c", INSTANCE_SCRIPT, _PROGRAM, rank0.view_helper, archive or ""]
