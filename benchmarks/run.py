"""Benchmarks: flat cost at any cluster size, a fast CLI, and how long each bundled stack takes.

Why these numbers matter to a user:

* ``pulumi preview`` renders every MiniCluster of a stack each time, so rendering must stay in
  the low milliseconds and must not grow with ``maxSize``: a 65536-rank cluster is one hostlist
  range (``name-[0-65535]``), never 65536 lines, in its broker config and in its objects;
* every object must stay far below the API server's 1 MiB object limit at any size;
* ``minicluster validate`` runs in editors and pre-commit hooks: it must start quickly and must
  not import Pulumi (which alone takes longer than the whole target);
* a custom ``flux.bursting.hostlist`` is checked at validation time, and that check must not
  grow faster than the hostlist itself.

Run with ``make bench`` (``.venv/bin/python benchmarks/run.py``). It prints plain-text tables
and a PASS/FAIL line per target, and exits 1 if any target fails. Timings are medians of many
warm, in-process repetitions measured with ``time.perf_counter``; performance is measured here,
never in a timed test. Budget: well under two minutes on two cores.
"""

from __future__ import annotations

import gc
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from report import machine, table  # noqa: E402

from flux_minicluster.core.planning import plan  # noqa: E402
from flux_minicluster.core.reading.loading import parse  # noqa: E402
from flux_minicluster.core.render.manifests import render, to_yaml  # noqa: E402

SIZES = (1, 64, 1024, 16384, 65536)
RENDER_TARGET_MS = 20.0
TIME_RATIO_TARGET = 1.5
BYTES_RATIO_TARGET = 1.05
API_OBJECT_LIMIT = 1024 * 1024
OBJECT_TARGET = API_OBJECT_LIMIT // 4  # "far below": a quarter of what the API server takes
COLD_VALIDATE_TARGET_S = 0.4
COLD_RUNS = 5
EXAMPLE = ROOT / "examples" / "hello-world.yaml"
# A custom hostlist may only cost time in proportion to its hosts: 4x the hosts, at most 6x.
HOSTLIST_SIZES = (1024, 4096)
HOSTLIST_RATIO_TARGET = 6.0
# Per measurement: at least this many repetitions, and more until this much time has passed.
MIN_REPS = 30
MIN_SECONDS = 1.0
MAX_REPS = 2000


# --- measuring ------------------------------------------------------------------------------


def bench_document(max_size: int) -> dict[str, Any]:
    """A realistic MiniCluster: a sidecar with a port, volumes of several kinds, commands,
    environment, pod settings; ``size`` is what a user starts with, ``maxSize`` the ceiling."""
    size = min(max_size, 4)
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "bench", "namespace": "hpc", "labels": {"team": "science"}},
        "spec": {
            "size": size,
            "maxSize": max_size,
            "tasks": size * 4,
            "logging": {"quiet": True},
            "flux": {
                "optionFlags": "-o cpu-affinity=per-task",
                "environment": {"OMP_NUM_THREADS": "4", "GREETING": "it's $(not run)"},
                "scheduler": {"queuePolicy": "easy"},
            },
            "pod": {
                "labels": {"app.kubernetes.io/part-of": "bench"},
                "nodeSelector": {"node.kubernetes.io/instance-type": "c2-standard-8"},
                "securityContext": {"fsGroup": 1000},
            },
            "containers": [
                {
                    "image": "ghcr.io/converged-computing/metric-lammps:2024.05",
                    "runFlux": True,
                    "workingDir": "/opt/lammps/examples/reaxff/HNS",
                    "command": "lmp -v x 2 -v y 2 -v z 2 -in in.reaxc.hns -nocite",
                    "commands": {"pre": "echo pre on $(hostname)", "post": "echo done"},
                    "environment": {"LAMMPS_LOG": "/data/log.lammps"},
                    "resources": {"requests": {"cpu": 2, "memory": "4Gi"}},
                    "volumes": {
                        "data": {"path": "/data", "claimName": "lammps-data"},
                        "inputs": {
                            "path": "/inputs",
                            "configMapName": "lammps-inputs",
                            "items": {"in.reaxc.hns": "in.reaxc.hns"},
                        },
                        "shm": {"emptyDir": True, "emptyDirMedium": "memory"},
                    },
                },
                {
                    "name": "metrics",
                    "image": "ghcr.io/converged-computing/metrics:latest",
                    "command": "metrics --port 9100",
                    "ports": [9100],
                    "volumes": {"data": {"path": "/data", "claimName": "lammps-data"}},
                },
            ],
        },
    }


def interleaved_medians(
    funcs: dict[str, Callable[[], object]],
    *,
    min_rounds: int = MIN_REPS,
    seconds: float = 0.0,
    statistic: Callable[[list[float]], float] = statistics.median,
) -> dict[str, float]:
    """Median (or ``statistic``) time of each function, sampled in turns (a, b, c, a, b, ...).

    Taking turns spreads drift (CPU frequency, other processes, allocator state) over every
    function alike, so ratios between them mean something; a warm-up call comes first.
    """
    for func in funcs.values():
        func()
    gc.collect()
    samples: dict[str, list[float]] = {key: [] for key in funcs}
    budget = seconds or MIN_SECONDS * len(funcs)
    started = time.perf_counter()
    rounds = 0
    while rounds < MAX_REPS and (rounds < min_rounds or time.perf_counter() - started < budget):
        for key, func in funcs.items():
            t0 = time.perf_counter()
            func()
            samples[key].append(time.perf_counter() - t0)
        rounds += 1
    return {key: statistic(values) for key, values in samples.items()}


@dataclass
class SizeResult:
    max_size: int
    render_s: float
    validate_render_s: float
    total_bytes: int
    largest_bytes: int
    largest_kind: str


def measure_sizes(sizes: Sequence[int]) -> list[SizeResult]:
    """Render (spec already validated) and validate+render medians, all sizes in turns."""
    documents = {n: bench_document(n) for n in sizes}
    plans = {n: plan.build(parse(documents[n])) for n in sizes}

    def render_only(n: int) -> Callable[[], object]:
        return lambda: render(plans[n])

    def validate_and_render(n: int) -> Callable[[], object]:
        return lambda: render(plan.build(parse(documents[n])))

    render_times = interleaved_medians({str(n): render_only(n) for n in sizes})
    full_times = interleaved_medians({str(n): validate_and_render(n) for n in sizes})
    results = []
    for n in sizes:
        manifests = render(plans[n]).objects()
        largest, kind = max((len(to_yaml([m]).encode("utf-8")), m["kind"]) for m in manifests)
        results.append(
            SizeResult(
                max_size=n,
                render_s=render_times[str(n)],
                validate_render_s=full_times[str(n)],
                total_bytes=len(to_yaml(manifests).encode("utf-8")),
                largest_bytes=largest,
                largest_kind=kind,
            )
        )
    return results


def hostlist_validation(sizes: Sequence[int]) -> dict[int, float]:
    """Validation of a spec whose custom bursting hostlist lists its own ``hosts`` pods, for each
    size, in turns. The minimum of the samples: these are milliseconds, and on a shared machine a
    median of a few samples once measured 7x for 4x the hosts while the minimum (the cost of the
    work itself) grew 2.5x; the ratio asks how the work grows, not how busy the machine was."""
    documents = {}
    for hosts in sizes:
        document = bench_document(hosts)
        document["spec"]["flux"]["bursting"] = {"hostlist": f"bench-[0-{hosts - 1}],other-[0-3]"}
        documents[str(hosts)] = document

    def validate(document: dict[str, Any]) -> Callable[[], object]:
        return lambda: parse(document)

    found = interleaved_medians(
        {key: validate(doc) for key, doc in documents.items()}, statistic=min
    )
    return {int(key): value for key, value in found.items()}


def cold_cli(args: Sequence[str]) -> tuple[float, str]:
    """Median wall time of the CLI as a fresh process, and the last run's stderr."""
    times = []
    stderr = ""
    for _ in range(COLD_RUNS):
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "flux_minicluster.cli.main", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - started)
        stderr = result.stderr
        if result.returncode != 0:
            raise RuntimeError(f"minicluster {' '.join(args)} exited {result.returncode}: {stderr}")
    return statistics.median(times), stderr


PROBE = """
import sys
from flux_minicluster.cli.main import main
status = main(["validate", sys.argv[1]])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pulumi", "pulumi_kubernetes"))
print(f"PROBE {status} {len(sys.modules)} {len(heavy)}", file=sys.stderr)
"""


def validate_imports() -> tuple[int, int]:
    """(modules loaded, Pulumi modules loaded) by ``minicluster validate`` in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(EXAMPLE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("PROBE "))
    _, _status, modules, heavy = line.split()
    return int(modules), int(heavy)


def slowest_imports(args: Sequence[str], count: int = 5) -> list[tuple[str, float]]:
    """The top-level imports that cost the most (``-X importtime``, cumulative)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flux_minicluster.cli.main", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line[len("import time:") :].split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        cumulative, name = parts[1].strip(), parts[2]
        # A top-level import is written with one space before its name, nested ones with more.
        if cumulative.isdigit() and not name[1:].startswith(" "):
            rows.append((name.strip(), int(cumulative) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:count]


def render_stacks() -> list[tuple[str, str, str]]:
    """Each bundled stack rendered offline (roots first): (stack, objects, seconds or error)."""
    try:
        from flux_minicluster.deploy.stack import stackrender
    except ImportError as err:
        return [("(none)", "-", f"stackrender unavailable: {err}")]
    stacks = sorted(
        p.name[len("Pulumi.") : -len(".yaml")] for p in ROOT.glob("stacks/Pulumi.*.yaml")
    )
    from flux_minicluster.deploy.stack import project

    where = project.find(ROOT)
    rows = []
    rendered: dict[str, Any] = {}
    for stack in stackrender.order_stacks(where, stacks):
        started = time.perf_counter()
        try:
            rendering = stackrender.render_stack(where, stack, rendered)
        except Exception as err:  # a broken stack is a result to print, not a crash
            rows.append((stack, "-", f"error: {type(err).__name__}: {err}"))
            continue
        rendered[stack] = rendering
        seconds = time.perf_counter() - started
        objects = len(rendering.objects) + len(rendering.patches)
        rows.append((stack, str(objects), f"{seconds:.2f}"))
    return rows


# --- reporting ------------------------------------------------------------------------------


class Targets:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def check(self, name: str, value: str, limit: str, ok: bool) -> None:
        self.rows.append((name, value, limit, "PASS" if ok else "FAIL"))

    @property
    def failed(self) -> bool:
        return any(r[3] == "FAIL" for r in self.rows)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def main() -> int:
    started = time.perf_counter()
    print("flux-minicluster benchmarks")
    print(f"machine: {machine()}")
    print(f"python:  {platform.python_implementation()} {platform.python_version()}")
    print()
    targets = Targets()

    results = measure_sizes(SIZES)
    print("Render a realistic spec (sidecar with a port, volumes), warm, in process; medians")
    print(
        table(
            (
                "maxSize",
                "size",
                "render ms",
                "validate+render ms",
                "total bytes",
                "largest object bytes",
            ),
            [
                (
                    str(r.max_size),
                    str(min(r.max_size, 4)),
                    ms(r.render_s),
                    ms(r.validate_render_s),
                    str(r.total_bytes),
                    f"{r.largest_bytes} ({r.largest_kind})",
                )
                for r in results
            ],
        )
    )
    first, last = results[0], results[-1]
    print(
        f"ratios {last.max_size}/{first.max_size}: render time "
        f"{last.render_s / first.render_s:.2f}, validate+render time "
        f"{last.validate_render_s / first.validate_render_s:.2f}, bytes "
        f"{last.total_bytes / first.total_bytes:.4f}"
    )
    print()
    slowest = max(results, key=lambda r: r.render_s)
    targets.check(
        "render median, every size",
        f"{ms(slowest.render_s)} ms (maxSize {slowest.max_size})",
        f"<= {RENDER_TARGET_MS:.0f} ms",
        slowest.render_s * 1000 <= RENDER_TARGET_MS,
    )
    ratio = last.render_s / first.render_s
    targets.check(
        f"render time t({last.max_size})/t({first.max_size})",
        f"{ratio:.2f}",
        f"<= {TIME_RATIO_TARGET}",
        ratio <= TIME_RATIO_TARGET,
    )
    ratio = last.total_bytes / first.total_bytes
    targets.check(
        f"manifest bytes b({last.max_size})/b({first.max_size})",
        f"{ratio:.4f}",
        f"<= {BYTES_RATIO_TARGET}",
        ratio <= BYTES_RATIO_TARGET,
    )
    biggest = max(results, key=lambda r: r.largest_bytes)
    targets.check(
        "largest object, every size",
        f"{biggest.largest_bytes} bytes ({biggest.largest_kind})",
        f"<= {OBJECT_TARGET} (API limit {API_OBJECT_LIMIT})",
        biggest.largest_bytes <= OBJECT_TARGET,
    )

    print("Validate a spec with a custom flux.bursting.hostlist (its own pods + 4 others)")
    timings = list(hostlist_validation(HOSTLIST_SIZES).items())
    print(table(("hosts", "validate ms (min)"), [(str(n + 4), ms(t)) for n, t in timings]))
    print()
    (small, t_small), (large, t_large) = timings
    ratio = t_large / t_small
    targets.check(
        f"custom hostlist validation t({large})/t({small})",
        f"{ratio:.1f}",
        f"<= {HOSTLIST_RATIO_TARGET} (linear: {large // small})",
        ratio <= HOSTLIST_RATIO_TARGET,
    )

    example = str(EXAMPLE.relative_to(ROOT))
    cold_validate, _ = cold_cli(["validate", example])
    cold_render, _ = cold_cli(["render", example])
    modules, heavy = validate_imports()
    print(f"Cold start of the CLI as a new process (median of {COLD_RUNS}), {example}")
    print(
        table(
            ("command", "seconds", "modules loaded", "pulumi modules"),
            [
                ("minicluster validate", f"{cold_validate:.3f}", str(modules), str(heavy)),
                ("minicluster render", f"{cold_render:.3f}", "-", "-"),
            ],
        )
    )
    print(
        "slowest imports of validate (cumulative s): "
        + ", ".join(f"{name} {secs:.3f}" for name, secs in slowest_imports(["validate", example]))
    )
    print()
    targets.check(
        "cold `minicluster validate`",
        f"{cold_validate:.3f} s",
        f"<= {COLD_VALIDATE_TARGET_S} s",
        cold_validate <= COLD_VALIDATE_TARGET_S,
    )
    targets.check("pulumi not imported by validate", f"{heavy} modules", "0", heavy == 0)

    rows = render_stacks()
    print("Offline rendering of each bundled stack (Pulumi mocks, roots first)")
    print(table(("stack", "objects", "seconds"), rows))
    print()
    errors = [r for r in rows if r[2].startswith(("error", "stackrender"))]
    targets.check(
        "bundled stacks render offline",
        f"{len(rows) - len(errors)}/{len(rows)}",
        "all",
        not errors,
    )

    print("Targets")
    print(table(("target", "measured", "limit", "result"), targets.rows, right=False))
    print()
    verdict = "FAIL" if targets.failed else "PASS"
    print(f"{verdict} ({time.perf_counter() - started:.0f} s)")
    return 1 if targets.failed else 0


if __name__ == "__main__":
    sys.exit(main())
