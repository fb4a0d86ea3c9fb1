"""Rank 0's pod as the API server returns it, and a flux view a test can exec into.

``rank0_pod`` is a pod of the shape the renderer makes (the flux view's init container and the
Flux container sharing the view's emptyDir); ``flux_view`` writes, in a folder, the
``flux-view.sh`` the entrypoint would write, with a fake ``flux`` on its PATH that answers
``job stats`` with ``STATS`` (``$STATS``), ``getattr content.dump`` with ``$DUMP``,
``getattr statedir`` with ``$STATEDIR``, and anything
else by printing ``FLUX_URI``, its arguments and a line of standard input, then exiting
``$FLUX_EXIT``. Mount the pod's view at that folder and what ``kubectl exec`` would run in the
pod runs here (tests/core/test_rankzero.py, tests/cli/test_cli_flux.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from flux_minicluster.core.deployed import status
from flux_minicluster.core.kube.labels import COMPLETION_INDEX_LABEL

STATS: dict[str, Any] = {
    "job_states": {
        "depend": 1,
        "priority": 0,
        "sched": 2,
        "run": 3,
        "cleanup": 1,
        "inactive": 9,
        "total": 16,
    },
    "successful": 5,
    "failed": 2,
    "canceled": 1,
    "timeout": 1,
    "inactive_purged": 0,
    "queues": [],
}
"""What job-list's ``job-stats`` answers (flux-core 0.88's ``flux job stats``)."""
COUNTS = status.FluxJobs(pending=3, running=4, completed=5, failed=2, cancelled=1, timeout=1)
"""``STATS`` as status reads it."""

FAKE_FLUX = """#!/bin/bash
case "$1 $2" in
  "job stats") printf '%s\\n' "${STATS:-}"; exit 0 ;;
  "getattr content.dump") [ -n "${DUMP:-}" ] && { printf '%s\\n' "$DUMP"; exit 0; }; exit 1 ;;
  "getattr content.restore") exit 1 ;;
  "getattr statedir") [ -n "${STATEDIR:-}" ] && { printf '%s\\n' "$STATEDIR"; exit 0; }; exit 1 ;;
esac
printf '%s\\n' "FLUX_URI=${FLUX_URI}" "$@"
read -r line && printf 'stdin: %s\\n' "$line"
exit "${FLUX_EXIT:-0}"
"""


def flux_view(folder: Path) -> Path:
    """``folder/flux-view.sh`` as the entrypoint writes it, with the fake flux; its path."""
    bin_dir = folder / "view" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "flux").write_text(FAKE_FLUX)
    (bin_dir / "flux").chmod(0o755)
    helper = folder / "flux-view.sh"
    helper.write_text(
        f'#!/bin/bash\nexport PATH={bin_dir}:"$PATH"\n'
        f"export fluxsocket=local://{folder}/config/run/flux/local\n"
    )
    return helper


def stats_env() -> dict[str, str]:
    return {"STATS": json.dumps(STATS)}


def rank0_pod(
    name: str,
    pod: str,
    owner: str,
    *,
    index: int = 0,
    phase: str = "Running",
    running: bool = True,
    ready: bool = True,
    created: str = "2026-11-28T10:00:00Z",
    deleting: bool = False,
    view: str = "/mnt/flux",
) -> dict[str, Any]:
    """A pod of Job ``owner`` (its uid) of MiniCluster ``name``, its flux view at ``view``."""
    metadata: dict[str, Any] = {
        "name": pod,
        "creationTimestamp": created,
        "labels": {COMPLETION_INDEX_LABEL: str(index), "job-name": name},
        "ownerReferences": [{"kind": "Job", "uid": owner}],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-28T11:00:00Z"
    state = {"running": {}} if running else {"waiting": {"reason": "PodInitializing"}}
    mounts = [{"name": "flux-view", "mountPath": view}]
    return {
        "metadata": metadata,
        "spec": {
            "initContainers": [
                {
                    "name": "flux-view",
                    "command": ["/bin/bash", "/flux_operator/flux-init.sh"],
                    "volumeMounts": mounts,
                }
            ],
            "containers": [{"name": name, "volumeMounts": mounts}],
        },
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": name, "state": state, "ready": ready}],
        },
    }


FAKE_KUBECTL = """#!/bin/bash
# kubectl as the CLI calls it: `get` prints $JOB or $PODS, `exec` runs the command here (or
# fails as the API server refuses it, with $REFUSED); every call is kept in $ASKED.
printf '%s\\n' "$*" >> "$ASKED"
case " $* " in
  *" config view "*) printf '%s' "${CONTEXT_NS:-}"; exit 0 ;;
  *" exec "*)
    if [ -n "${REFUSED:-}" ]; then printf '%s\\n' "$REFUSED" >&2; exit 1; fi
    while [ "$1" != "--" ]; do shift; done
    shift
    exec "$@" ;;
  *" job "*) [ -f "$JOB" ] && cat "$JOB"; exit 0 ;;
  *" pods "*) cat "$PODS"; exit 0 ;;
esac
exit 0
"""
REFUSED = (
    'Error from server (Forbidden): pods "flux-sample-0-x" is forbidden: User "alice" cannot '
    'create resource "pods/exec" in API group "" in the namespace "team-a"'
)
"""What the API server answers a ``kubectl exec`` without ``pods/exec``."""


def fake_kubectl(
    folder: Path, job: dict[str, Any] | None, pods: list[dict[str, Any]]
) -> dict[str, str]:
    """``kubectl`` in ``folder`` serving ``job`` and ``pods``; the environment it needs (PATH
    first), to which a test adds ``REFUSED`` to refuse every exec."""
    kubectl = folder / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    (folder / "job.json").write_text(json.dumps(job) if job else "")
    if job is None:
        (folder / "job.json").unlink()
    (folder / "pods.json").write_text(json.dumps({"items": pods}))
    return {
        "ASKED": str(folder / "asked"),
        "JOB": str(folder / "job.json"),
        "PODS": str(folder / "pods.json"),
        "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
        **stats_env(),
    }
