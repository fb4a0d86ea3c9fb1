"""Benchmarks on the real engine: the real Pulumi CLI and Kubernetes provider against a real
kube-apiserver (kwok fakes the nodes and pods), as tests/e2e sets them up.

What a user waits for:

* the local stack (examples/hello-world.yaml, 4 brokers): `pulumi preview` of a new stack, `up`
  with ``wait: ready`` (it returns once every broker pod is Ready, which kwok makes them within
  about a second), a second `preview` with nothing to do, `refresh`, `destroy` (namespace
  included);
* how `preview` and `up` grow with the number of MiniClusters in one program: 1, 4 and 16
  hello-world MiniClusters (each its own ConfigMap, Secret, NetworkPolicy, Services, Job and size
  patch) in one namespace, each up waiting for its pods.

Programs run through the Automation API (the Python language host is not available from the
module proxy; see tests/e2e/README.md), certificates come from config. Each figure is the median
of ``--repeat`` runs (default 3) of a whole engine operation, wall clock, as the Automation API
sees it (CLI start, plugin start, the program, the API calls, the waits).

    make bench-e2e          # .venv/bin/python benchmarks/e2e.py
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import yaml  # noqa: E402
from controlplane import ControlPlane  # noqa: E402
from stackrun import Engine, copy_project, new_certificate  # noqa: E402

HELLO = ROOT / "examples" / "hello-world.yaml"
COUNTS = (1, 4, 16)


def toolchain_bin() -> Path:
    explicit = os.environ.get("FLUX_MINICLUSTER_E2E_BIN")
    if explicit:
        return Path(explicit)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "e2e" / "toolchain" / "build.py")],
        capture_output=True,
        text=True,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        sys.exit(f"the e2e toolchain is not built:\n{proc.stderr[-3000:]}")
    return Path(lines[-1])


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = call()
    return time.perf_counter() - t0, result


def count_changes(summary: dict[str, int]) -> int:
    return sum(v for k, v in summary.items() if k != "same")


def bench_local(bindir: Path, cp: ControlPlane, work: Path, repeat: int) -> list[list[str]]:
    seconds: dict[str, list[float]] = {}
    resources: dict[str, int] = {}

    def measure(name: str, call: Callable[[], Any], changes: Callable[[Any], int] | None) -> None:
        took, result = timed(call)
        seconds.setdefault(name, []).append(took)
        if changes is not None:
            resources[name] = changes(result)

    engine = Engine.create(bindir, work / "engine-local")
    project = copy_project(work / "project-local")
    for i in range(repeat):
        stack = engine.stack(
            project,
            f"local-{i}",
            like="local",
            kubeconfig=cp.kubeconfig,
            context=cp.name,
            curve_cert=new_certificate("flux-hello"),
        )
        stack.set("flux-minicluster:cluster.namespace", f"bench-local-{i}")
        measure("preview (new stack)", stack.preview, lambda r: r.change_summary.get("create", 0))
        measure(
            "up, wait: ready (until every pod is Ready)",
            stack.up,
            lambda r: count_changes(r.summary.resource_changes or {}),
        )
        measure("preview (nothing to do)", stack.preview, None)
        measure("refresh", stack.refresh, None)
        measure(
            "destroy (namespace included)",
            stack.destroy,
            lambda r: count_changes(r.summary.resource_changes or {}),
        )
    return [
        [
            name,
            f"{statistics.median(values):.2f}",
            f"{max(values):.2f}",
            str(resources[name]) if name in resources else "",
        ]
        for name, values in seconds.items()
    ]


def many_program(count: int, kubeconfig: Path, context: str, namespace: str) -> Any:
    """A program with ``count`` hello-world MiniClusters (the component, as a user's program
    declares it) and one explicit provider."""
    doc = yaml.safe_load(HELLO.read_text())
    certs = [new_certificate(f"hello-{i}") for i in range(count)]

    def program() -> None:
        import pulumi
        import pulumi_kubernetes as k8s

        from flux_minicluster import MiniCluster

        provider = k8s.Provider("bench", kubeconfig=str(kubeconfig), context=context)
        ns = k8s.core.v1.Namespace(
            "bench", metadata={"name": namespace}, opts=pulumi.ResourceOptions(provider=provider)
        )
        for i in range(count):
            spec = {**doc, "metadata": {"name": f"hello-{i}"}}
            MiniCluster(
                f"hello-{i}",
                {"spec": spec, "namespace": namespace, "curve_cert": certs[i], "wait": "ready"},
                opts=pulumi.ResourceOptions(providers=[provider], depends_on=[ns]),
            )

    return program


def bench_growth(bindir: Path, cp: ControlPlane, work: Path, repeat: int) -> list[list[str]]:
    table = []
    for count in COUNTS:
        previews, ups, destroys = [], [], []
        resources = 0
        for i in range(repeat):
            namespace = f"bench-{count}-{i}"
            engine = Engine.create(bindir, work / f"engine-{count}-{i}")
            project = copy_project(work / f"project-{count}-{i}")
            program = many_program(count, cp.kubeconfig, cp.name, namespace)
            stack = engine.stack(project, f"many-{count}", program=program)
            seconds, preview = timed(stack.preview)
            previews.append(seconds)
            resources = preview.change_summary.get("create", 0)
            seconds, _ = timed(stack.up)
            ups.append(seconds)
            seconds, _ = timed(stack.destroy)
            destroys.append(seconds)
        table.append(
            [
                str(count),
                str(resources),
                f"{statistics.median(previews):.2f}",
                f"{statistics.median(ups):.2f}",
                f"{statistics.median(ups) / count:.2f}",
                f"{statistics.median(destroys):.2f}",
            ]
        )
    return table


def render(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        out = [cells[0].ljust(widths[0])]
        out += [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    bindir = toolchain_bin()
    versions = subprocess.run(
        [str(bindir / "pulumi"), "version"], capture_output=True, text=True
    ).stdout.strip()
    print("flux-minicluster benchmarks on the real engine")
    print(f"machine: {machine()}")
    print(f"pulumi {versions}, pulumi-resource-kubernetes and kube-apiserver of the e2e toolchain")
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        work = Path(tmp)
        with ControlPlane(bindir, name="bench") as cp:
            print(f"control plane started in {cp.startup_seconds:.1f} s (etcd to Ready nodes)")
            print()
            print(
                f"The local stack (examples/hello-world.yaml, 4 brokers), median of {args.repeat}"
            )
            print(
                render(
                    ["operation", "seconds", "max", "resources"],
                    bench_local(bindir, cp, work, args.repeat),
                )
            )
            print()
            print(
                f"MiniClusters in one program (hello-world, wait: ready), median of {args.repeat}"
            )
            print(
                render(
                    [
                        "MiniClusters",
                        "resources",
                        "preview s",
                        "up s",
                        "up s / cluster",
                        "destroy s",
                    ],
                    bench_growth(bindir, cp, work, args.repeat),
                )
            )
    print()
    print(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
