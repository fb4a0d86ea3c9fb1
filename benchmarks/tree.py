"""The brokers' tree, measured with Flux itself: one instance of N real brokers on this machine
(``flux start --test-size=N``, the e2e toolchain's Flux, every broker a process, the overlay
over local sockets), once per tree, taking turns: the flat tree (``kary:0``), the operator's
``tbon.fanout=256`` and the one ``core.flux.tree`` chooses for N. For each: the seconds until
the initial program starts (every broker joined), and the throughput of ``--jobs`` one-node
jobs (``flux submit --cc`` of ``true``, until ``flux queue drain``), which route their events
and output through the tree.

No Kubernetes here: what a tree changes is Flux's work, and a real-node cluster of this machine
holds fewer brokers than the trees differ at (see benchmarks/brokers.py for the MiniClusters).

    .venv/bin/python benchmarks/tree.py [--sizes 256,512] [--jobs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "components"))

from e2e import toolchain_bin  # noqa: E402
from report import machine, table  # noqa: E402

from flux_minicluster.core.flux import tree  # noqa: E402

# Run by the initial program once every broker joined: when it started, and when the jobs ended.
PROGRAM = r"""
t1=$(date +%s.%N)
flux submit --cc=1-"$JOBS" --quiet -N1 true > /dev/null
flux queue drain
t2=$(date +%s.%N)
echo "RESULT $t1 $t2"
"""


def run(flux: Path, size: int, topo: str, jobs: int) -> tuple[float, float]:
    """(seconds until every broker joined, jobs per second) of one instance."""
    option = f"-Stbon.fanout={topo[7:]}" if topo.startswith("fanout:") else f"-Stbon.topo={topo}"
    env = {**os.environ, "JOBS": str(jobs)}
    t0 = time.time()
    proc = subprocess.run(
        [str(flux), "start", f"--test-size={size}", option, "bash", "-c", PROGRAM],
        capture_output=True, text=True, env=env, timeout=3600, check=True,
    )  # fmt: skip
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    _, t1, t2 = line.split()
    return float(t1) - t0, jobs / (float(t2) - float(t1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256,512", help="broker counts (default 256,512)")
    ap.add_argument("--jobs", type=int, default=1000, help="jobs per instance (default 1000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = ap.parse_args(argv)
    flux = toolchain_bin() / "flux"
    print(f"Flux's tree, `flux start --test-size`: {machine()}, load {os.getloadavg()[0]:.1f}")
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        trees = list(dict.fromkeys(["kary:0", "fanout:256", tree.for_size(size)]))
        got: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
        for _ in range(args.repeat):
            for topo in trees:
                got[topo].append(run(flux, size, topo, args.jobs))
                up, rate = got[topo][-1]
                print(f"({size} {topo}: up {up:.1f} s, {rate:.1f} jobs/s)", flush=True)
        flat = statistics.median(r for _, r in got["kary:0"])
        for topo in trees:
            up = statistics.median(u for u, _ in got[topo])
            rate = statistics.median(r for _, r in got[topo])
            shown = "kary:256 (the operator's fanout)" if topo == "fanout:256" else topo
            if topo == tree.for_size(size):
                shown += " (chosen)"
            rows.append([
                f"{size}", shown, f"{tree.widest_fanout(size, topo.replace('fanout', 'kary'))}",
                f"{up:.1f}", f"{rate:.1f}", f"{rate / flat:.2f}",
            ])  # fmt: skip
    print()
    headers = ["brokers", "tree", "widest fanout", "up s", "jobs/s", "vs flat"]
    print(table(headers, rows))
    print(f"\nmedians of {args.repeat}, {args.jobs} jobs each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
