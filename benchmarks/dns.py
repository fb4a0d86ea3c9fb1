"""What real cluster DNS changes for a MiniCluster's start: from `pulumi up` until every broker has
joined (every pod Ready; a persistent cluster's `up` itself does not wait) on real nodes
(tests/e2e's ``fluxnodes.FluxPlane``: the real kubelet, containerd, kube-proxy and CoreDNS),
under two CoreDNS configurations:

* ``kubeadm-1.32``: kubeadm's Corefile since Kubernetes 1.32, whose cache never keeps the
  cluster's own names (kubernetes#128359);
* ``kubeadm-1.31``: the Corefile before it (and of every cluster whose Corefile predates it):
  ``cache 30`` in front of the kubernetes plugin with ``ttl 30``, so an NXDOMAIN for a broker's
  name asked before its record exists is served from the cache for up to 30 s after the record
  appears.

Each run is a fresh namespace with an interactive MiniCluster of ``--size`` brokers on two nodes.
CoreDNS logs every query (JSON, with its time); from its log, for the MiniCluster's pod names
that resolved in the end: how many answers were NXDOMAIN before the first address, and the
longest time a name went from its first NXDOMAIN to its first answer. (Where a name is certainly
asked before its record exists, rank 0's replacement, a persistent MiniCluster does not come back
today: its workers end with their lead's instance and the Job counts them done; to be measured
once it does.) The two configurations take turns; figures are medians of ``--repeat`` runs.

    .venv/bin/python benchmarks/dns.py [--repeat N] [--size N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e2e import hello, nodes_set, toolchain_bin  # noqa: E402
from fluxnodes import FluxPlane, localize  # noqa: E402
from report import machine, table  # noqa: E402
from stackrun import PREFIX, Engine, copy_project, new_certificate  # noqa: E402

CONFIGS = ("kubeadm-1.32", "kubeadm-1.31")


def _seconds(stamp: str) -> float:
    """An RFC 3339 time as CoreDNS's JSON log writes it (nanoseconds), in epoch seconds."""
    stamp = re.sub(r"(\.\d{6})\d+", r"\1", stamp).replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp()


def answers(log: Path, offset: int, prefix: str) -> list[tuple[float, str, str]]:
    """(time, name, rcode) of the A queries for names starting with ``prefix`` in CoreDNS's
    JSON log (``-log-format json``: one object per query, with its time) after ``offset``."""
    found = []
    with log.open(errors="replace") as fh:
        fh.seek(offset)
        for line in fh:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("plugin") != "log" or entry.get("qtype") != "A":
                continue
            if str(entry.get("qname", "")).startswith(prefix):
                found.append((_seconds(entry["time"]), entry["qname"], str(entry.get("rcode"))))
    return found


def misses(got: list[tuple[float, str, str]]) -> dict[str, float]:
    """Of the names that resolved in the end (a search-path expansion never does): the NXDOMAIN
    answers before each one's first address, how many names had one, and the longest time from
    a name's first NXDOMAIN to its first address."""
    first_hit: dict[str, float] = {}
    for when, qname, rcode in got:
        if rcode == "NOERROR":
            first_hit.setdefault(qname, when)
    early = [(w, q) for w, q, rcode in got if rcode == "NXDOMAIN" and w < first_hit.get(q, 0)]
    first_miss: dict[str, float] = {}
    for when, qname in early:
        first_miss.setdefault(qname, when)
    waits = [first_hit[q] - t for q, t in first_miss.items()]
    return {
        "nxdomain": len(early),
        "names missed": len(first_miss),
        "longest miss": max(waits, default=0.0),
    }


def run_once(engine: Engine, project: Path, plane: FluxPlane, size: int, ns: str) -> dict[str, Any]:
    """`up` until every broker joined: the seconds, and the NXDOMAIN answers for its names."""
    doc = localize(hello(size))
    doc["spec"]["interactive"] = True
    name = str(doc["metadata"]["name"])
    stack = engine.stack(
        project,
        ns,
        like="local",
        kubeconfig=plane.cp.kubeconfig,
        context=plane.cp.name,
        curve_cert=new_certificate(name),
    )
    stack.set(f"{PREFIX}:cluster.namespace", ns)
    stack.set(f"{PREFIX}:cluster.createNamespace", "true")
    stack.set_object(f"{PREFIX}:minicluster", {"spec": doc})
    log = plane.rc.workdir / "coredns" / "coredns.log"
    job = f"/apis/batch/v1/namespaces/{ns}/jobs/{name}"

    def joined() -> bool:
        return bool((plane.cp.get(job) or {}).get("status", {}).get("ready") == size)

    offset = log.stat().st_size
    t0 = time.perf_counter()
    stack.up()
    # a persistent cluster's `up` never waits (docs/lifecycle.md): every broker joined is every
    # pod Ready (the readiness probe), counted by the Job
    plane.cp.wait_for(f"the {size} brokers of {ns} joined", joined, timeout=300)
    start = {"up to all joined s": time.perf_counter() - t0}
    got = answers(log, offset, f"{name}-")
    if not got:
        with log.open(errors="replace") as fh:
            fh.seek(offset)
            tail = fh.read()[-2000:]
        raise SystemExit(f"CoreDNS logged no query for {name}'s pods ({log}); its log:\n{tail}")
    start.update(misses(got))
    stack.destroy()
    stack.auto.workspace.remove_stack(stack.name)
    return {"start": start}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median)")
    ap.add_argument("--size", type=int, default=8, help="brokers (default 8, on two nodes)")
    args = ap.parse_args(argv)
    bindir, nodes = toolchain_bin(), nodes_set()
    t0 = time.perf_counter()
    print(f"CoreDNS's cache and the start of {args.size} brokers: `pulumi up` until all joined")
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the start")
    figures: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="bench-dns-") as tmp, ExitStack() as planes:
        work = Path(tmp)
        engine = Engine.create(bindir, work / "engine")
        project = copy_project(work / "project")
        clusters = {
            config: planes.enter_context(
                FluxPlane(bindir, nodes, f"dns{i}", dns_cache=config, dns_log=True)
            )
            for i, config in enumerate(CONFIGS)
        }
        for run in range(args.repeat):
            for config, plane in clusters.items():
                result = run_once(engine, project, plane, args.size, f"dns-{run}")
                figures[config].append(result)
                load = os.getloadavg()[0]
                print(f"({config} run {run + 1}: {result}; load {load:.1f})", flush=True)
    headers = [
        "CoreDNS",
        "up to all joined s",
        "NXDOMAIN answers",
        "names missed",
        "longest miss s",
    ]
    rows = []
    for config, runs in figures.items():
        starts: list[dict[str, float]] = [r["start"] for r in runs]

        def median(key: str, starts: list[dict[str, float]] = starts) -> float:
            return float(statistics.median(g[key] for g in starts))

        worst = max(g["longest miss"] for g in starts)
        rows.append(
            [
                config,
                f"{median('up to all joined s'):.1f}",
                f"{median('nxdomain'):.0f}",
                f"{median('names missed'):.0f}",
                f"{median('longest miss'):.1f} (max {worst:.1f})",
            ]
        )
    print()
    print(table(headers, rows))
    print(f"\nmedians of {args.repeat}; done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
