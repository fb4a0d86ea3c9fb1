"""What a MiniCluster's archive costs (core.spec.archive): the time rank 0's broker takes to stop
when it dumps the instance (``-Scontent.dump``, what a replaced or deleted rank 0 spends of its
grace period), the time a new rank 0 takes to start when it restores it (``-Scontent.restore``,
what it adds before the instance takes work again), and the archive's size, for instances holding
``--jobs`` finished jobs, beside an instance that keeps nothing.

It runs the project's Flux build (the e2e toolchain's) on this machine, one broker, as rank 0
runs in its pod: the jobs are short (``true``), so the figures are those of the job records and
eventlogs; jobs with large outputs make larger archives. Medians of ``--repeat`` runs.

    .venv/bin/python benchmarks/archive.py [--jobs 1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e2e import toolchain_bin  # noqa: E402
from fluxnodes import flux_prefix  # noqa: E402
from report import machine, table  # noqa: E402


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.monotonic()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def one_run(flux: Path, env: dict[str, str], jobs: int, where: Path) -> dict[str, float]:
    """Stop with a dump, start with a restore, and the same instance without either."""
    archive = where / "archive.tgz"
    mark = where / "jobs-done"
    # the instance: submit, wait for every job, mark the time; the broker then shuts down
    # (rc3: the dump), and the command returns once it has
    fill = (
        f"flux submit --quiet --cc=1-{jobs} true > /dev/null && flux queue drain && "
        f"date +%s.%N > {mark}"
    )
    subprocess.run(
        [str(flux), "start", f"-Scontent.dump={archive}", "sh", "-c", fill],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    t_end = time.time()
    stop_dump = t_end - float(mark.read_text())
    subprocess.run(
        [str(flux), "start", "sh", "-c", fill.replace(str(mark), str(mark) + ".plain")],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    stop_plain = time.time() - float((where / "jobs-done.plain").read_text())
    count = where / "count"
    start_restore = timed(
        [str(flux), "start", f"-Scontent.restore={archive}", "sh", "-c",
         f"flux jobs -a -n --count=0 -o '{{id}}' | wc -l > {count}"],
        env,
    )  # fmt: skip
    start_plain = timed([str(flux), "start", "true"], env)
    restored = int(count.read_text())
    if restored != jobs:
        sys.exit(f"restored {restored} jobs of {jobs}")
    return {
        "stop_dump": stop_dump,
        "stop_plain": stop_plain,
        "start_restore": start_restore,
        "start_plain": start_plain,
        "size": archive.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    prefix = flux_prefix(toolchain_bin())
    if prefix is None:
        sys.exit("no Flux build: make e2e-tools")
    flux = prefix / "bin" / "flux"
    env = {**os.environ, "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}"}
    rows = []
    for jobs in (int(j) for j in args.jobs.split(",")):
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as where:
                runs.append(one_run(flux, env, jobs, Path(where)))

        def median(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        rows.append(
            [
                f"{jobs:,}",
                f"{median('stop_plain'):.1f}",
                f"{median('stop_dump'):.1f}",
                f"{median('start_plain'):.1f}",
                f"{median('start_restore'):.1f}",
                f"{median('size') / 1024:.0f}",
            ]
        )
    print(f"archive: {machine()}; medians of {args.repeat}; seconds")
    print(
        table(
            ["finished jobs", "stop", "stop + dump", "start", "start + restore", "archive KiB"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
