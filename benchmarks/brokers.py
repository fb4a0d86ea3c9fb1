"""Real Flux brokers, timed: `pulumi up` of the component until the Job is Complete, beside the
same objects started by `kubectl apply` of the rendered folder and `kubectl wait` for Complete.

The cluster is a real-node cluster of tests/e2e (``fluxnodes.FluxPlane``: two nodes with the real
kubelet, containerd, CoreDNS, kube-proxy and kube-router), whose pods run the images built here:
the entrypoint scripts, broker.toml, the CURVE certificate and the flux view image's Flux (see
tests/e2e/README.md). Two MiniClusters:
examples/hello-world.yaml as it is (4 brokers), and the same with 16 brokers and 16 tasks,
whose ``flux submit -N 16`` on rank 0 can only run once all 16 brokers have joined, so its time
to Complete is the time until every broker joined plus one short job and the shutdown.

The component runs in the local stack's program (certificate from config, ``wait: complete``,
its own namespace) through the Automation API; its figure is the whole `pulumi up` (engine,
provider, program, awaits). Each way takes turns; each figure is a median of ``--repeat`` runs.

    .venv/bin/python benchmarks/brokers.py [--repeat N] [--sizes 4,16]
"""

from __future__ import annotations

import argparse
import os
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
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402
from e2e import hello, nodes_set, toolchain_bin  # noqa: E402
from fluxnodes import FluxPlane, localize  # noqa: E402
from report import machine, table  # noqa: E402
from stackrun import PREFIX, Engine, copy_project, new_certificate  # noqa: E402

TIMEOUT_S = 600
DEADLINE_S = 300  # a broken run fails its Job instead of hanging the benchmark


def timed(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def spec_of(size: int) -> dict[str, Any]:
    doc = localize(hello(size))
    doc["spec"].setdefault("deadlineSeconds", DEADLINE_S)
    return doc


def component(
    engine: Engine, project: Path, plane: FluxPlane, doc: dict[str, Any], ns: str
) -> float:
    cp = plane.cp
    stack = engine.stack(
        project,
        ns,
        like="local",
        kubeconfig=cp.kubeconfig,
        context=cp.name,
        curve_cert=new_certificate(str(doc["metadata"]["name"])),
    )
    stack.set(f"{PREFIX}:cluster.namespace", ns)
    stack.set(f"{PREFIX}:cluster.createNamespace", "true")
    stack.set_object(f"{PREFIX}:minicluster", {"spec": doc, "wait": "complete"})
    seconds = timed(stack.up)
    stack.destroy()
    stack.auto.workspace.remove_stack(stack.name)
    return seconds


def kubectl(plane: FluxPlane, work: Path, doc: dict[str, Any], ns: str) -> float:
    cp = plane.cp
    name = str(doc["metadata"]["name"])
    folder = work / f"objects-{ns}"
    spec = work / f"spec-{ns}.yaml"
    cert = work / f"{ns}.cert"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    cert.write_text(new_certificate(name))
    minicluster = [sys.executable, "-m", "flux_minicluster.cli.main", "render", str(spec)]
    options = ["-n", ns, "--curve-cert", str(cert), "-d", str(folder)]
    subprocess.run([*minicluster, *options], check=True, capture_output=True)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    (folder / "00-namespace.yaml").write_text(yaml.safe_dump(namespace))

    def up() -> None:
        cp.kubectl("apply", "-f", str(folder), timeout=TIMEOUT_S)
        cp.kubectl(
            "wait",
            "--for=condition=Complete",
            f"job/{name}",
            "-n",
            ns,
            f"--timeout={TIMEOUT_S}s",
            timeout=TIMEOUT_S + 20,
        )

    seconds = timed(up)
    cp.kubectl("delete", "-f", str(folder), f"--timeout={TIMEOUT_S}s", timeout=TIMEOUT_S + 20)
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    ap.add_argument(
        "--sizes",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        default=(4, 16),
        help="broker counts, comma-separated (default 4,16)",
    )
    args = ap.parse_args(argv)
    bindir = toolchain_bin()
    nodes = nodes_set()
    t0 = time.perf_counter()
    print("Real Flux brokers: `pulumi up` (wait: complete) against kubectl apply + wait")
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the start")
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-brokers-") as tmp,
        FluxPlane(bindir, nodes, "benchbrokers") as plane,
    ):
        work = Path(tmp)
        engine = Engine.create(bindir, work / "engine")
        project = copy_project(work / "project")
        run = 0
        for size in args.sizes:
            doc = spec_of(size)
            figures: dict[str, list[float]] = {"component": [], "kubectl": []}
            for _ in range(args.repeat):
                run += 1
                figures["component"].append(
                    component(engine, project, plane, doc, f"brokers-c-{size}-{run}")
                )
                figures["kubectl"].append(kubectl(plane, work, doc, f"brokers-k-{size}-{run}"))
                print(
                    f"({size} brokers: component {figures['component'][-1]:.1f} s, kubectl "
                    f"{figures['kubectl'][-1]:.1f} s; load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
            c, k = (statistics.median(figures[w]) for w in ("component", "kubectl"))
            rows.append([f"{size}", f"{c:.1f}", f"{k:.1f}", f"{c / k:.2f}"])
    print()
    print(table(["brokers", "pulumi up until Complete s", "kubectl apply + wait s", "ratio"], rows))
    print(f"\nmedians of {args.repeat}; done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
