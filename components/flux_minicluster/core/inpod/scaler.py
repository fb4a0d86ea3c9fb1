"""The scaler of an elastic MiniCluster: rank 0 runs this file beside its broker.

It is shipped as it is, in the entrypoint ConfigMap (``autoscale.py``), and run with the Python
of the Flux view: so it imports only the standard library and, when it runs, Flux's own Python
bindings (``flux``, the view's site-packages). The tests import the same file.

Every ``intervalSeconds`` it reads the queue (the jobs waiting for resources and the nodes each
needs: its ``-N``, else its cores over a rank's; a held job waits for a person, not for nodes),
which ranks are online, which run a job, which it drained itself and which someone else drained
(left alone, and never counted as free), and its own Job's size; ``decide`` (pure) says what to
do, and one line is logged for each decision:

* **grow** when waiting jobs need more nodes than the ranks below the Job's size can give
  (``parallelism`` and ``completions`` together, up to ``maxSize``); ranks it drained earlier
  are given back first (undrained) when that is enough;
* **drain** the highest ranks, down to ``minSize``, that have run nothing for ``idleSeconds``
  (``flux resource drain``: the scheduler places nothing new there);
* **shrink** over the highest ranks once every one of them is drained and runs nothing: the Job
  controller removes the pods of the highest indexes, so no running job loses a node.

A rank given back is undrained again only once its broker has been seen offline: until then
its old pod may still be shutting down, and a job placed there would lose its node.

The Kubernetes side is one ``get`` and one merge ``patch`` of its own Job, with the projected
service-account token (read again before each request: the kubelet renews it), straight to the
API server (never through a proxy the image sets), and with the ``resourceVersion`` read, so a
Job changed in between is read again rather than resized blindly.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DRAIN_REASON",
    "Decision",
    "FluxState",
    "Observation",
    "cores_per_rank",
    "decide",
    "format_idset",
    "log_line",
    "nodes_wanted",
    "observe_flux",
    "parse_idset",
    "track_idle",
    "track_leaving",
]

# The reason on every rank this scaler drains: it undrains only ranks carrying it.
DRAIN_REASON = "flux-minicluster autoscale: idle, being given back"
# job-list states (flux-core's job state bits): waiting for resources, and holding them.
_SCHED = 8
_HOLDING = ("run", "cleanup")


def parse_idset(text: str) -> frozenset[int]:
    """Flux's idset text (``"0-2,5"``, ``"[0-1]"``, ``""``) as a set of ranks."""
    ranks: set[int] = set()
    for part in text.strip().strip("[]").split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        ranks.update(range(int(low), int(high or low) + 1))
    return frozenset(ranks)


def format_idset(ranks: Iterable[int]) -> str:
    """Ranks as Flux's idset text, e.g. ``2-3``."""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    start = prev = -2
    for rank in ordered:
        if rank != prev + 1:
            if start >= 0:
                parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = rank
        prev = rank
    if start >= 0:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


@dataclass(frozen=True)
class Observation:
    """What the scaler sees at one tick."""

    size: int
    """The Job's parallelism (and completions) now."""
    pending: tuple[int, ...]
    """The nodes each job waiting for resources needs (``nodes_wanted``); held jobs left out."""
    online: frozenset[int]
    busy: frozenset[int]
    """Ranks that hold a running job's resources."""
    drained: frozenset[int]
    """Ranks this scaler drained (their reason is ``DRAIN_REASON``)."""
    idle_for: Mapping[int, float]
    """Seconds each rank below ``size`` has run nothing (``track_idle``)."""
    drained_by_others: frozenset[int] = frozenset()
    """Ranks drained for another reason (a person, a health check): never used, never touched."""
    leaving: frozenset[int] = frozenset()
    """Ranks given back whose brokers have not yet been seen offline: their old pods may still be
    shutting down, so they are not undrained yet (``track_leaving``)."""


@dataclass(frozen=True)
class Decision:
    action: str
    """``hold``, ``grow``, ``undrain``, ``drain`` or ``shrink``."""
    size: int
    """The Job's size after it (``size`` unless growing or shrinking)."""
    ranks: frozenset[int]
    """The ranks to drain, or to undrain (with ``grow`` and ``undrain``)."""
    why: str


def track_idle(
    previous: Mapping[int, float], size: int, busy: frozenset[int], now: float
) -> dict[int, float]:
    """Since when each rank below ``size`` has run nothing (an offline rank runs nothing)."""
    return {r: previous.get(r, now) for r in range(size) if r not in busy}


def track_leaving(previous: frozenset[int], online: frozenset[int]) -> frozenset[int]:
    """The ranks given back that are still online (a rank seen offline has left for good)."""
    return previous & online


def cores_per_rank(resources: Mapping[str, Any] | None) -> int | None:
    """The fewest cores a rank has in the instance's R (``resource.status``), or None when R
    does not say (a MiniCluster's ranks are alike: one pod template)."""
    execution = (resources or {}).get("execution") or {}
    counts = [
        len(parse_idset(str((entry.get("children") or {}).get("core", ""))))
        for entry in execution.get("R_lite") or []
        if isinstance(entry, Mapping)
    ]
    counts = [c for c in counts if c > 0]
    return min(counts) if counts else None


def nodes_wanted(job: Mapping[str, Any], cores: int | None) -> int:
    """The nodes a waiting job needs: its node count (``-N``), else its cores (``-n``, ``-c``)
    over the cores of a rank, rounded up, else 1. job-list leaves ``nnodes`` out for a job that
    names no node count, which is how most jobs are submitted."""
    nnodes = int(job.get("nnodes") or 0)
    if nnodes > 0:
        return nnodes
    ncores = int(job.get("ncores") or 0)
    if ncores > 0 and cores:
        return max(1, -(-ncores // cores))
    return 1


def decide(seen: Observation, min_size: int, max_size: int, idle_seconds: float) -> Decision:
    """What to do about ``seen``, within ``[min_size, max_size]``: pure, one table of cases in
    ``tests/core/test_autoscale.py``."""
    size = seen.size
    below = frozenset(range(size))
    mine = below & seen.drained
    others = below & seen.drained_by_others
    # Nodes the instance has or is getting: ranks below the Job's size that run nothing and are
    # not drained (a rank still joining counts: it was asked for).
    available = size - len((seen.busy & below) | mine | others)
    wanted = sum(seen.pending)
    lacking = wanted - available
    why = f"{wanted} node(s) wanted, {available} free"
    if seen.pending and lacking > 0:
        if ready := mine - seen.leaving:
            return Decision("undrain", size, frozenset(sorted(ready)[:lacking]), why)
        if mine:
            going = format_idset(mine)
            return Decision("hold", size, frozenset(), f"{why}; ranks {going} still shutting down")
        if size < max_size:
            target = min(max_size, size + lacking)
            again = frozenset(
                r for r in range(size, target) if r in seen.drained and r not in seen.leaving
            )
            return Decision("grow", target, again, why)
        return Decision("hold", size, frozenset(), f"{wanted} node(s) wanted, at maxSize")
    if seen.pending:
        return Decision("hold", size, frozenset(), why)
    # Shrink over a top block of drained ranks that run nothing.
    top = size
    while top - 1 >= min_size and (top - 1) in mine and (top - 1) not in seen.busy:
        top -= 1
    if top < size:
        return Decision("shrink", top, frozenset(range(top, size)), "drained ranks run nothing")
    # Drain the highest ranks idle for long enough, highest first, never below min_size.
    chosen: list[int] = []
    for rank in range(size - 1, min_size - 1, -1):
        if rank in seen.busy or rank in others or seen.idle_for.get(rank, 0.0) < idle_seconds:
            break
        chosen.append(rank)
    todo = frozenset(chosen) - mine
    if todo:
        return Decision("drain", size, todo, f"idle for {idle_seconds:g}s or more")
    return Decision("hold", size, frozenset(), "nothing waits, nothing idle long enough")


def log_line(seen: Observation, decision: Decision) -> str:
    """The one line a decision leaves: queue, idle ranks, from, to, why."""
    idle = [r for r in sorted(seen.idle_for) if r in seen.online]
    return (
        f"autoscale: action={decision.action} queue={len(seen.pending)} job(s)/"
        f"{sum(seen.pending)} node(s) idle={format_idset(idle) or '-'} "
        f"online={format_idset(seen.online) or '-'} from={seen.size} to={decision.size}"
        + (f" ranks={format_idset(decision.ranks)}" if decision.ranks else "")
        + f" why={decision.why}"
    )


# --- the program: Flux and Kubernetes ------------------------------------------------------------


class Kube:
    """Its own Job through the API server, as the pod's service account."""

    def __init__(self, namespace: str, job: str, token_file: str, ca_file: str) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if ":" in host:
            host = f"[{host}]"
        self.url = f"https://{host}:{port}/apis/batch/v1/namespaces/{namespace}/jobs/{job}"
        self.token_file = token_file
        # Straight to the API server: an HTTPS_PROXY the image sets is for the user's traffic.
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}),
            urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file)),
        )
        self.resource_version = ""

    def _call(self, method: str, body: dict[str, Any] | None = None, query: str = "") -> Any:
        with open(self.token_file) as f:
            token = f.read().strip()
        request = urllib.request.Request(
            self.url + query,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "Content-Type": "application/merge-patch+json",
            },
        )
        with self.opener.open(request, timeout=30) as response:
            return json.load(response)

    def size(self) -> int:
        job = self._call("GET")
        self.resource_version = str(job["metadata"]["resourceVersion"])
        return int(job["spec"]["parallelism"])

    def resize(self, size: int, manager: str) -> None:
        """Resize the Job as last read: a Job changed since (409 Conflict) is read again on the
        next round, so no decision is applied to a size it was not made for."""
        body = {
            "metadata": {"resourceVersion": self.resource_version},
            "spec": {"parallelism": size, "completions": size},
        }
        self._call("PATCH", body, f"?fieldManager={manager}")


@dataclass(frozen=True)
class FluxState:
    """What the broker says at one tick (``observe_flux``)."""

    pending: tuple[int, ...]
    online: frozenset[int]
    busy: frozenset[int]
    drained: frozenset[int]
    """Ranks drained by this scaler."""
    drained_by_others: frozenset[int]


def observe_flux(handle: Any) -> FluxState:
    """The queue and the ranks, from ``resource.status`` and ``job-list``."""
    status = handle.rpc("resource.status", nodeid=0).get()
    online = parse_idset(status.get("online", ""))
    drained: set[int] = set()
    others: set[int] = set()
    for ranks, entry in (status.get("drain") or {}).items():
        mine = isinstance(entry, Mapping) and entry.get("reason") == DRAIN_REASON
        (drained if mine else others).update(parse_idset(ranks))
    cores = cores_per_rank(status.get("R"))
    listing = handle.rpc(
        "job-list.list",
        {
            "max_entries": 0,
            "attrs": ["state", "nnodes", "ncores", "priority", "ranks"],
            "constraint": {"states": ["sched", *_HOLDING]},
        },
    ).get()
    pending: list[int] = []
    busy: set[int] = set()
    for job in listing.get("jobs", []):
        if job.get("state") == _SCHED:
            if job.get("priority") == 0:  # held (urgency 0): it waits for a person, not nodes
                continue
            pending.append(nodes_wanted(job, cores))
        elif job.get("ranks"):
            busy |= parse_idset(str(job["ranks"]))
    return FluxState(tuple(pending), online, frozenset(busy), frozenset(drained), frozenset(others))


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - runs in the pod
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--min-size", type=int, required=True)
    parser.add_argument("--max-size", type=int, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--idle", type=float, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--field-manager", required=True)
    args = parser.parse_args(argv)

    import flux  # type: ignore[import-not-found,unused-ignore]  # Flux's bindings, from the view

    kube = Kube(args.namespace, args.job, args.token, args.ca)
    handle: Any = None
    idle: dict[int, float] = {}
    leaving: frozenset[int] = frozenset()
    last = ""
    while True:
        # Nothing ends the scaler but its pod: any error is logged and the next round tries
        # again, with a new connection to the broker when the last one failed.
        try:
            if handle is None:
                handle = flux.Flux()
            size = kube.size()
            flux_state = observe_flux(handle)
            now = time.monotonic()
            idle = track_idle(idle, size, flux_state.busy, now)
            leaving = track_leaving(leaving, flux_state.online)
            seen = Observation(
                size=size,
                pending=flux_state.pending,
                online=flux_state.online,
                busy=flux_state.busy,
                drained=flux_state.drained,
                idle_for={r: now - t for r, t in idle.items()},
                drained_by_others=flux_state.drained_by_others,
                leaving=leaving,
            )
            decision = decide(seen, args.min_size, args.max_size, args.idle)
            line = log_line(seen, decision)
            if decision.action != "hold" or line.split(" why=")[1] != last:
                print(line, flush=True)
                last = line.split(" why=")[1]
            ranks = format_idset(decision.ranks)
            if decision.action in ("grow", "undrain") and ranks:
                handle.rpc("resource.undrain", {"targets": ranks}, nodeid=0).get()
            if decision.action == "drain":
                payload = {"targets": ranks, "reason": DRAIN_REASON, "mode": "update"}
                handle.rpc("resource.drain", payload, nodeid=0).get()
            if decision.action in ("grow", "shrink"):
                kube.resize(decision.size, args.field_manager)
                if decision.action == "shrink":
                    idle = {r: t for r, t in idle.items() if r < decision.size}
                    leaving |= decision.ranks
        except Exception as err:  # the API server, the broker, or a bug: log, then try again
            print(f"autoscale: error {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            handle = None  # a broker handle that failed once is not trusted again
        time.sleep(args.interval)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
