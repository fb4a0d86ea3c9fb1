"""Ready means Flux is up: the readiness probe of every broker.

The operator's pods are Ready as soon as their containers start, so its only condition
(``JobMiniClusterReady``) and a Job's ``status.ready`` say "processes started", long before the
brokers form an instance. Here the Flux container is Ready once its broker is in the instance:

* a worker (any rank but 0) once it has **joined**: its state is past ``join``;
* rank 0 once the **instance is up**: its state is ``run`` (the quorum is online).

Why those states (see ``../shared/reference/flux-runtime-facts.md`` and the join watchdog in
``wait-workers.sh.j2``): a broker goes through join -> init -> quorum -> run. A worker leaves join
only when its parent accepted it (the CURVE handshake succeeded and the parent answered its hello);
it then waits in quorum until rank 0 is in run, which rank 0 reaches once the quorum (every rank,
or ``minSize``) is online. ``flux uptime`` and ``flux getattr rank`` are answered even during
join, so the probe answers at once either way, and a broker that never joins (a wrong
certificate, an unreachable lead) is never Ready. When the instance shuts down the states leave
these and the pod is Ready no more. So a Job's ``status.ready``, and ``wait: ready``, count the
brokers that joined (and rank 0 once they all have).

The probe runs in the Flux container, with the environment the entrypoint writes for people who
exec into the pod (``flux-view.sh``: Flux on PATH), and as the broker's user when it runs as
another (v1alpha1's ``fluxUser``): Flux answers only its instance's owner. v1alpha1's
``diagnostics`` start no lasting broker, so there is no probe there.
"""

from __future__ import annotations

from typing import Any, Final

from flux_minicluster.core.base import layout
from flux_minicluster.core.base.templating import shquote
from flux_minicluster.core.planning.plan import MiniClusterPlan

__all__ = [
    "JOINED_STATES",
    "PERIOD_SECONDS",
    "RUNNING_STATE",
    "TIMEOUT_SECONDS",
    "broker_probe",
    "period_seconds",
]

RUNNING_STATE: Final = "run"
"""Rank 0's state once the instance is up (its quorum online)."""
JOINED_STATES: Final = ("init", "quorum", RUNNING_STATE)
"""A worker's states once its parent accepted it."""
PERIOD_SECONDS: Final = 5
"""The probe's period for up to ``4 * PERIOD_SECONDS`` brokers; see :func:`period_seconds`."""
MAX_PERIOD_SECONDS: Final = 30
TIMEOUT_SECONDS: Final = 5
"""``flux uptime`` answers in milliseconds; a loaded node may take seconds (the default is 1)."""
FAILURE_THRESHOLD: Final = 3


def _script(plan: MiniClusterPlan) -> str:
    view = f"{plan.paths.view_base.rstrip('/')}/{layout.VIEW_HELPER}"
    flux = f'env FLUX_URI={shquote("local://" + plan.paths.socket)} PATH="${{PATH}}" flux'
    if plan.flux_user is not None:
        flux = f"sudo -u {shquote(plan.flux_user.name)} {flux}"
    joined = " | ".join(s for s in JOINED_STATES if s != RUNNING_STATE)
    # `flux uptime` prints "<time> <state> <duration>, owner ...": the state is the second word.
    return (
        f". {shquote(view)} > /dev/null 2>&1 || exit 1\n"
        f"set -- $({flux} uptime 2> /dev/null)\n"
        f'case "${{2:-}}" in\n'
        f"  {RUNNING_STATE}) exit 0 ;;\n"
        f'  {joined}) [ "$({flux} getattr rank 2> /dev/null)" != 0 ] ;;\n'
        "  *) exit 1 ;;\n"
        "esac\n"
    )


def period_seconds(brokers: int) -> int:
    """How often each broker is probed: every 5 s up to 20 brokers, then every ``brokers / 4``
    seconds, at most every 30 s.

    An exec probe is a process the container runtime starts in the container (runc exec, bash,
    two ``flux`` calls): nothing on a node of one broker, but a node holding many brokers pays
    it for each of them, and most while the brokers start. Measured with 64 brokers on two
    nodes of two cores (benchmarks/brokers.py): every 5 s, the last broker joined 150 s after
    ``kubectl apply``; without the probe, 95 s. The longer period costs a large MiniCluster up
    to that many seconds before ``status.ready`` (and ``wait: ready``) counts a broker that
    joined, against a start-up of minutes."""
    return min(MAX_PERIOD_SECONDS, max(PERIOD_SECONDS, brokers // 4))


def broker_probe(plan: MiniClusterPlan) -> dict[str, Any] | None:
    """The Flux container's readinessProbe; None where no lasting broker runs (diagnostics)."""
    if plan.flux_container.diagnostics:
        return None
    return {
        "exec": {"command": ["/bin/bash", "-c", _script(plan)]},
        "periodSeconds": period_seconds(plan.spec.max_size),
        "timeoutSeconds": TIMEOUT_SECONDS,
        "failureThreshold": FAILURE_THRESHOLD,
    }
