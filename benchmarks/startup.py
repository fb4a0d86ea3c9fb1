"""Start-up costs a user pays on every run, as new processes: what the package adds to a
`pulumi up`, and `minicluster validate` against the bare interpreter.

* **Own import cost of a `pulumi up`.** The local stack's program (``__main__.py`` ->
  ``flux_minicluster.deploy.stack.program``) and the hand-written pulumi-kubernetes program with the
  same objects (``benchmarks/handwritten.py``) each run in a new process under Pulumi's mock
  engine, after importing ``pulumi`` as the language host does before it runs a program. With
  ``python -X importtime``, the package's own import cost is the time of every module the
  component's run imports and the hand-written run does not (flux_minicluster, pydantic,
  jinja2...): the modules both import (pulumi, the pulumi_kubernetes kinds, yaml) are the
  price of pulumi-kubernetes, not ours. The CPU time of each whole run (imports, program,
  registrations) is given too, median of paired runs.
* **`minicluster validate`**: CPU time (user + system) of one spec, against ``python -c pass``
  of the same interpreter, paired runs; and one call over the operator's corpus
  (``../shared/compat``: its v1alpha1 and v1alpha2 MiniClusters), wall and CPU.

Runs use the byte-code cache, as a user's installed package does (the first run of each writes
it). ``make bench`` runs this after ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import table

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "hello-world.yaml"
COMPAT = ROOT.parent / "shared" / "compat"
OWN_IMPORT_TARGET_S = 0.1
VALIDATE_RATIO_TARGET = 8.0
CORPUS_TARGET_S = 0.5
# The libraries validation is written in (the spec models, the templates, the YAML reader),
# imported and nothing else: the floor under `validate` while it runs the one implementation.
LIBRARIES = "from pydantic import BaseModel; import jinja2, yaml"
# Its own import time is the building of the spec's pydantic models (class creation, schemas).
SPEC_MODULE = "flux_minicluster.core.spec.models"
PROJECT = "flux-minicluster"
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def env() -> dict[str, str]:
    """The user's environment: byte-code cached, no pydantic plugin switched off."""
    out = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out["PYTHONPATH"] = str(ROOT / "components")
    return out


def cpu_of(argv: Sequence[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """CPU seconds (user + system) of one child process, and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(), cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, proc


def paired(commands: dict[str, Sequence[str]], runs: int) -> dict[str, list[float]]:
    """CPU seconds of each command, run in turns so that load affects them alike."""
    for argv in commands.values():  # warm the byte-code cache
        _, proc = cpu_of(argv)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed:\n{proc.stdout}{proc.stderr[-3000:]}")
    out: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            out[name].append(cpu_of(argv)[0])
    return out


def import_times(stderr: str) -> dict[str, int]:
    """Module -> its own import time in microseconds, from ``-X importtime``."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        m = IMPORT_LINE.match(line)
        if m:
            out[m[4]] = out.get(m[4], 0) + int(m[1])
    return out


# --- the child: one program under Pulumi's mocks ---------------------------------------------


def child(which: str, config_file: str) -> None:
    import pulumi  # what the language host has imported before it runs the program
    import pulumi.runtime

    settings = json.loads(Path(config_file).read_text())

    class Mocks(pulumi.runtime.Mocks):  # type: ignore[misc]
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            return f"{args.name}-id", dict(args.inputs)

        def call(self, args: Any) -> dict[str, Any]:
            return {}

    pulumi.runtime.set_mocks(Mocks(), project=settings["project"], stack="bench", preview=False)
    pulumi.runtime.set_all_config(settings["config"], settings["secret"])

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> None:
        if which == "component":
            from flux_minicluster.deploy.stack.program import main

            main(ROOT)
        else:
            sys.path.insert(0, str(BENCH))
            import handwritten

            handwritten.main()

    run()


def stack_config(cert: str) -> dict[str, Any]:
    """The local stack's config as the engine hands it to the program, and a certificate."""
    import yaml

    raw = yaml.safe_load((ROOT / "stacks" / "Pulumi.local.yaml").read_text())["config"]
    config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    config[f"{PROJECT}:curveCert"] = cert
    return {"project": PROJECT, "config": config, "secret": [f"{PROJECT}:curveCert"]}


def handwritten_config(objects: Path) -> dict[str, Any]:
    return {
        "project": "handwritten",
        "config": {
            "handwritten:objects": str(objects),
            "handwritten:namespace": "flux-local",
            "handwritten:kubeconfig": "unused-under-mocks",
        },
        "secret": [],
    }


def own_import_cost(work: Path, runs: int) -> dict[str, Any]:
    cert_file = work / "hello.cert"
    objects = work / "objects"
    render = [
        sys.executable,
        "-m",
        "flux_minicluster.cli.main",
        "render",
        str(EXAMPLE),
        "--curve-cert",
        str(cert_file),
        "-d",
        str(objects),
    ]
    proc = subprocess.run(render, capture_output=True, text=True, env=env(), cwd=ROOT)
    if proc.returncode != 0:
        sys.exit(f"render failed: {proc.stderr}")
    configs = {
        "component": stack_config(cert_file.read_text()),
        "handwritten": handwritten_config(objects),
    }
    commands: dict[str, list[str]] = {}
    for name, settings in configs.items():
        path = work / f"{name}.json"
        path.write_text(json.dumps(settings))
        commands[name] = [sys.executable, str(Path(__file__)), "--child", name, str(path)]
    cpu = paired(commands, runs)
    # importtime: per module, the median of its own time over the runs
    per_run: dict[str, list[dict[str, int]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            _, proc = cpu_of([argv[0], "-X", "importtime", *argv[1:]])
            per_run[name].append(import_times(proc.stderr))
    hand_modules = set().union(*per_run["handwritten"])
    own_totals = []
    models: list[float] = []
    by_top: dict[str, list[float]] = {}
    for times in per_run["component"]:
        own = {m: t for m, t in times.items() if m not in hand_modules}
        own_totals.append(sum(own.values()) / 1e6)
        models.append(own.get(SPEC_MODULE, 0) / 1e6)
        tops: dict[str, float] = {}
        for module, t in own.items():
            top = module.split(".")[0]
            tops[top] = tops.get(top, 0.0) + t / 1e6
        for top, t in tops.items():
            by_top.setdefault(top, []).append(t)
    return {
        "cpu": {name: statistics.median(v) for name, v in cpu.items()},
        "own_import": statistics.median(own_totals),
        "models": statistics.median(models),
        "own_modules": len(set(per_run["component"][0]) - hand_modules),
        "by_top": sorted(
            ((top, statistics.median(v)) for top, v in by_top.items()), key=lambda kv: -kv[1]
        ),
    }


def corpus() -> list[Path]:
    return sorted(COMPAT.rglob("*minicluster*.yaml")) if COMPAT.is_dir() else []


def validate_costs(runs: int) -> dict[str, Any]:
    minicluster = [sys.executable, "-m", "flux_minicluster.cli.main", "validate"]
    cpu = paired(
        {
            "bare": [sys.executable, "-c", "pass"],
            "libraries": [sys.executable, "-c", LIBRARIES],
            "validate": [*minicluster, str(EXAMPLE)],
        },
        runs,
    )
    ratios = [v / b for v, b in zip(cpu["validate"], cpu["bare"], strict=True)]
    floors = [v / b for v, b in zip(cpu["libraries"], cpu["bare"], strict=True)]
    files = corpus()
    walls, cpus = [], []
    for _ in range(max(3, runs // 3)):
        t0 = time.perf_counter()
        used, proc = cpu_of([*minicluster, *map(str, files)])
        walls.append(time.perf_counter() - t0)
        cpus.append(used)
        if proc.returncode != 0:
            sys.exit(f"validating the corpus failed:\n{proc.stderr[-3000:]}")
    _, proc = cpu_of([minicluster[0], "-X", "importtime", *minicluster[1:], str(EXAMPLE)])
    times = import_times(proc.stderr)
    return {
        "bare": statistics.median(cpu["bare"]),
        "validate": statistics.median(cpu["validate"]),
        "ratio": statistics.median(ratios),
        "libraries": statistics.median(cpu["libraries"]),
        "floor": statistics.median(floors),
        "files": len(files),
        "corpus_wall": statistics.median(walls),
        "corpus_cpu": statistics.median(cpus),
        "modules": len(times),
        "pydantic": sum(t for m, t in times.items() if m.split(".")[0].startswith("pydantic"))
        / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9, help="paired runs per figure (median)")
    ap.add_argument("--child", nargs=2, metavar=("PROGRAM", "CONFIG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    print(f"Start-up costs, new processes, medians of {args.runs} paired runs (load {load:.1f})")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        imports = own_import_cost(Path(tmp), args.runs)
    print()
    print("A `pulumi up` of the local stack (hello-world) under Pulumi's mocks, per run")
    cpu = imports["cpu"]
    print(
        table(
            ["program", "CPU s"],
            [
                ["hand-written pulumi-kubernetes", f"{cpu['handwritten']:.3f}"],
                ["the stack's program (the component)", f"{cpu['component']:.3f}"],
                ["difference", f"{cpu['component'] - cpu['handwritten']:.3f}"],
            ],
        )
    )
    print(
        f"own imports (modules only the component's run imports: {imports['own_modules']}): "
        f"{imports['own_import']:.3f} s; by package: "
        + ", ".join(f"{top} {t:.3f}" for top, t in imports["by_top"][:8])
        + f"; of flux_minicluster's, building the spec models ({SPEC_MODULE}) "
        f"{imports['models']:.3f}"
    )
    validate = validate_costs(args.runs)
    print()
    print("`minicluster validate`, CPU (user + system)")
    print(
        table(
            ["command", "CPU s", "x python -c pass"],
            [
                ["python -c pass", f"{validate['bare']:.4f}", "1.0"],
                [
                    f'python -c "{LIBRARIES}"',
                    f"{validate['libraries']:.4f}",
                    f"{validate['floor']:.1f}",
                ],
                [
                    "minicluster validate examples/hello-world.yaml",
                    f"{validate['validate']:.4f}",
                    f"{validate['ratio']:.1f}",
                ],
            ],
        )
    )
    print(
        f"{validate['modules']} modules imported, pydantic's imports "
        f"{validate['pydantic']:.3f} s (-X importtime, wall)"
    )
    print(
        f"the compat corpus ({validate['files']} MiniClusters) in one call: "
        f"{validate['corpus_wall']:.3f} s wall, {validate['corpus_cpu']:.3f} s CPU"
    )
    results = [
        (
            "own import cost of a pulumi up",
            f"{imports['own_import']:.3f} s",
            f"<= {OWN_IMPORT_TARGET_S} s",
            imports["own_import"] <= OWN_IMPORT_TARGET_S,
        ),
        (
            "validate CPU / python -c pass",
            f"{validate['ratio']:.1f}",
            f"<= {VALIDATE_RATIO_TARGET:.0f}",
            validate["ratio"] <= VALIDATE_RATIO_TARGET,
        ),
        (
            "validate the corpus, wall",
            f"{validate['corpus_wall']:.3f} s",
            f"< {CORPUS_TARGET_S} s",
            validate["files"] > 0 and validate["corpus_wall"] < CORPUS_TARGET_S,
        ),
    ]
    print()
    print(
        table(
            ["target", "measured", "limit", "result"],
            [[n, m, lim, "PASS" if ok else "FAIL"] for n, m, lim, ok in results],
        )
    )
    failed = not all(ok for *_, ok in results)
    print(f"\n{'FAIL' if failed else 'PASS'} ({time.perf_counter() - t0:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
