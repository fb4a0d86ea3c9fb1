"""Real Flux brokers at scale, timed three ways on the same real nodes in one run: the
component's `pulumi up`, `kubectl apply` of the folder `minicluster render` writes, and the Flux
Operator (built from ../shared/vendor) running its own MiniCluster of the same spec.

The cluster is a real-node cluster of tests/e2e (``fluxnodes.FluxPlane``: the real kubelet,
containerd, CoreDNS, kube-proxy and kube-router, as many nodes as the largest size needs at
``--pods-per-node``), whose pods run the images built here. The spec is
examples/hello-world.yaml with ``size`` brokers and ``size`` tasks, so rank 0's
``flux submit -N size`` runs one task on every broker, and with the brokers' log at
LOG_INFO, so that rank 0 prints its state machine's transitions. For every run:

- **joined**: rank 0 logs ``quorum-full`` (every broker has joined the instance);
- **ran**: rank 0 logs ``run->cleanup`` (the job on every rank has run, the instance shuts down);
- **Complete**: the way's own wait returns (``pulumi up`` with ``wait: complete``, ``kubectl
  wait``, a watch of the operator's Job);
- **gone**: from the start of ``pulumi destroy`` / ``kubectl delete`` until no pod is left.

The first three count from the moment the way starts (``pulumi up`` includes the engine, the
provider and the program). The log times are the container runtime's (``kubectl logs
--timestamps``), on this machine's clock. Each way takes turns; each figure is the median of
``--repeat`` runs. The start-up breakdown (``--breakdown``) tells where the time goes: the
last pod created, scheduled, its flux view copied (init container ended), its Flux container
started, then rank 0's quorum.

    sudo .venv/bin/python benchmarks/brokers.py [--repeat 3] [--sizes 4,16,64] [--ways ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
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

WAYS = ("component", "kubectl", "operator")
DEADLINE_S = 900  # a broken run fails its Job instead of hanging the benchmark
JOINED = "quorum-full"  # rank 0's state machine: every broker is online
RAN = "run->cleanup"  # rank 0's initial program (the job on every rank) has ended
PHASES = ("created", "scheduled", "view copied", "Flux started")


def spec_of(size: int) -> dict[str, Any]:
    """hello-world with ``size`` brokers and tasks, its brokers logging at LOG_INFO, and
    requests a node of two cores can hold ``PODS_PER_NODE`` of (what a user packing brokers
    onto few nodes writes: an idle broker uses a few millicores and 20 to 30 MB)."""
    doc = localize(hello(size))
    spec = doc["spec"]
    spec.setdefault("deadlineSeconds", DEADLINE_S)
    spec["logging"] = {"quiet": False}
    for container in spec["containers"]:
        container["resources"] = {"requests": {"cpu": "10m", "memory": "48Mi"}}
    flux = spec.setdefault("flux", {})
    flux["logLevel"] = 6
    flux["container"]["resources"] = {
        "requests": {"cpu": "10m", "memory": "32Mi", "ephemeral-storage": "96Mi"},
        "limits": {"memory": "256Mi", "ephemeral-storage": "1Gi"},
    }
    return doc


def epoch(stamp: str) -> float:
    """An RFC 3339 time of the API server or the container runtime (nanoseconds cut to
    microseconds) as seconds since the epoch."""
    stamp = stamp.replace("Z", "+00:00")
    head, _, zone = stamp.partition("+")
    if "." in head:
        whole, frac = head.split(".")
        head = f"{whole}.{frac[:6]}"
    return datetime.fromisoformat(f"{head}+{zone or '00:00'}").timestamp()


def log_times(text: str, *marks: str) -> dict[str, float | None]:
    """The time of the first line of a ``kubectl logs --timestamps`` text holding each mark."""
    found: dict[str, float | None] = dict.fromkeys(marks)
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        for mark in marks:
            if found[mark] is None and mark in rest:
                found[mark] = epoch(stamp)
    return found


def pod_phases(pods: list[Any]) -> dict[str, float]:
    """When the last pod reached each start-up phase (epoch seconds; the API's are whole)."""
    last: dict[str, float] = {}

    def note(phase: str, stamp: str | None) -> None:
        if stamp:
            last[phase] = max(last.get(phase, 0.0), epoch(stamp))

    for pod in pods:
        status = pod["status"]
        note("created", pod["metadata"]["creationTimestamp"])
        for cond in status.get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "True":
                note("scheduled", cond["lastTransitionTime"])
        for init in status.get("initContainerStatuses", [])[:1]:
            note("view copied", init.get("state", {}).get("terminated", {}).get("finishedAt"))
        for main in status.get("containerStatuses", [])[:1]:
            state = main.get("state", {})
            note("Flux started", (state.get("running") or state.get("terminated") or {}).get(
                "startedAt"))  # fmt: skip
    return last


class MemoryPeak:
    """The machine's peak memory in use (MemTotal - MemAvailable, tmpfs included) above what was
    in use when it started, sampled every half second in a thread."""

    def __init__(self) -> None:
        self.base = self.used()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def used() -> int:
        info = {}
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info[key] = int(value.split()[0]) * 1024
        return info["MemTotal"] - info["MemAvailable"]

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, self.used())

    @contextmanager
    def watching(self) -> Iterator[MemoryPeak]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()

    @property
    def above_base_mb(self) -> float:
        return (self.peak - self.base) / 2**20


@dataclasses.dataclass
class Run:
    way: str
    size: int
    joined: float | None
    ran: float | None
    complete: float
    gone: float
    phases: dict[str, float]
    memory_mb: float


@dataclasses.dataclass
class Bench:
    plane: FluxPlane
    work: Path
    engine: Engine
    project: Path
    operator: Any = None  # an OperatorPlane, when the operator way is run
    count: int = 0

    def rank0_log(self, ns: str, job: str) -> str:
        pod = self.plane.rank_pod(ns, job, 0)
        assert pod is not None, f"no rank 0 pod of {ns}/{job}"
        container = pod["spec"]["containers"][0]["name"]
        out = self.plane.rc.kubectl(
            "logs", "--timestamps", "-n", ns, pod["metadata"]["name"], "-c", container,
            timeout=60,
        )  # fmt: skip
        return str(out.stdout)

    def wait_complete(self, ns: str, job: str) -> None:
        """`kubectl wait` for the Job's Complete condition (a watch), once the Job exists (the
        operator creates it a moment after its MiniCluster)."""
        deadline = time.monotonic() + DEADLINE_S
        while self.plane.cp.get(f"/apis/batch/v1/namespaces/{ns}/jobs/{job}") is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no Job {ns}/{job} after {DEADLINE_S} s")
            time.sleep(0.1)
        self.plane.cp.kubectl(
            "wait", "--for=condition=Complete", f"job/{job}", "-n", ns,
            f"--timeout={DEADLINE_S}s", timeout=DEADLINE_S + 20,
        )  # fmt: skip

    def wait_gone(self, ns: str, job: str, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while self.plane.pods(ns, job):
            if time.monotonic() > deadline:
                raise TimeoutError(f"pods of {ns}/{job} still there after {timeout} s")
            time.sleep(0.5)

    def run(self, way: str, doc: dict[str, Any]) -> Run:
        self.count += 1
        size = int(doc["spec"]["size"])
        ns = f"b{self.count}-{way[:4]}-{size}"
        job = str(doc["metadata"]["name"])
        start, teardown = getattr(self, f"prepare_{way}")(doc, ns)
        with MemoryPeak().watching() as memory:
            t0 = time.time()
            start()
            complete = time.time() - t0
        marks = log_times(self.rank0_log(ns, job), JOINED, RAN)
        phases = pod_phases(self.plane.pods(ns, job))
        t1 = time.monotonic()
        teardown()
        self.wait_gone(ns, job)
        gone = time.monotonic() - t1

        def since(t: float | None) -> float | None:
            return None if t is None else t - t0

        return Run(
            way, size, since(marks[JOINED]), since(marks[RAN]), complete, gone,
            {k: v - t0 for k, v in phases.items()}, memory.above_base_mb,
        )  # fmt: skip

    # -- the ways: each returns (start until Complete, tear down) -----------------------------
    def prepare_component(
        self, doc: dict[str, Any], ns: str
    ) -> tuple[Callable[[], None], Callable[[], None]]:
        cp = self.plane.cp
        stack = self.engine.stack(
            self.project, ns, like="local", kubeconfig=cp.kubeconfig, context=cp.name,
            curve_cert=new_certificate(str(doc["metadata"]["name"])),
        )  # fmt: skip
        stack.set(f"{PREFIX}:cluster.namespace", ns)
        stack.set(f"{PREFIX}:cluster.createNamespace", "true")
        stack.set_object(f"{PREFIX}:minicluster", {"spec": doc, "wait": "complete"})

        def teardown() -> None:
            stack.destroy()
            stack.auto.workspace.remove_stack(stack.name)

        return stack.up, teardown

    def prepare_kubectl(
        self, doc: dict[str, Any], ns: str
    ) -> tuple[Callable[[], None], Callable[[], None]]:
        name = str(doc["metadata"]["name"])
        folder = self.work / f"objects-{ns}"
        spec = self.work / f"spec-{ns}.yaml"
        cert = self.work / f"{ns}.cert"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        cert.write_text(new_certificate(name))
        minicluster = [sys.executable, "-m", "flux_minicluster.cli.main", "render", str(spec)]
        options = ["-n", ns, "--curve-cert", str(cert), "-d", str(folder)]
        subprocess.run([*minicluster, *options], check=True, capture_output=True)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        (folder / "00-namespace.yaml").write_text(yaml.safe_dump(namespace))
        kubectl = self.plane.cp.kubectl

        def start() -> None:
            kubectl("apply", "-f", str(folder), timeout=DEADLINE_S)
            self.wait_complete(ns, name)

        def teardown() -> None:
            kubectl("delete", "-f", str(folder), f"--timeout={DEADLINE_S}s", timeout=DEADLINE_S)

        return start, teardown

    def prepare_operator(
        self, doc: dict[str, Any], ns: str
    ) -> tuple[Callable[[], None], Callable[[], None]]:
        from operatorplane import operator_spec

        operator = self.operator
        assert operator is not None, "the operator way needs the Flux Operator running"
        name = str(doc["metadata"]["name"])
        spec = operator_spec(doc, ns)
        kubectl = self.plane.cp.kubectl
        kubectl("create", "namespace", ns)

        def start() -> None:
            operator.apply(spec, ns)
            self.wait_complete(ns, name)

        def teardown() -> None:
            operator.delete(name, ns, timeout=DEADLINE_S)
            kubectl("delete", "namespace", ns, "--wait=false")

        return start, teardown


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) == len(values) and known else None


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def report(runs: list[Run], ways: tuple[str, ...], sizes: tuple[int, ...]) -> str:
    fields = ("joined", "ran", "complete", "gone", "memory_mb")
    rows, phase_rows = [], []
    for size in sizes:
        by: dict[str, dict[str, float | None]] = {}
        for way in ways:
            mine = [r for r in runs if r.way == way and r.size == size]
            if mine:
                by[way] = {f: median([getattr(r, f) for r in mine]) for f in fields}
                phase_rows.append([
                    f"{size}", way,
                    *(fmt(median([r.phases.get(p) for r in mine])) for p in PHASES),
                    fmt(by[way]["joined"]),
                ])  # fmt: skip
        for way, got in by.items():
            rows.append([
                f"{size}", way, *(fmt(got[f]) for f in fields[:4]),
                f"{(got['memory_mb'] or 0) / size:.0f}",
                ratio(got["joined"], by.get("kubectl", {}).get("joined")),
                ratio(got["joined"], by.get("operator", {}).get("joined")),
            ])  # fmt: skip
    head = ["brokers", "way", "joined s", "ran s", "Complete s", "gone s", "MB/broker"]
    out = table([*head, "joined / kubectl", "joined / operator"], rows)
    out += "\n\nWhere start-up goes (s from the start, the last pod of each phase):\n"
    out += table(["brokers", "way", *PHASES, "joined"], phase_rows)
    return out


def nodes_for(size: int, per_node: int) -> int:
    return max(2, math.ceil(size / per_node))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    ap.add_argument(
        "--sizes", type=lambda s: tuple(int(x) for x in s.split(",")), default=(4, 16, 64),
        help="broker counts, comma-separated (default 4,16,64)",
    )  # fmt: skip
    ap.add_argument(
        "--ways", type=lambda s: tuple(s.split(",")), default=WAYS,
        help=f"comma-separated, of {','.join(WAYS)} (default all)",
    )  # fmt: skip
    ap.add_argument("--pods-per-node", type=int, default=100, help="(the kubelet's limit is 110)")
    ap.add_argument("--node-disk", default=None, help="the nodes' tmpfs (default: by size)")
    args = ap.parse_args(argv)
    unknown = set(args.ways) - set(WAYS)
    if unknown:
        ap.error(f"--ways: unknown {sorted(unknown)}; allowed: {', '.join(WAYS)}")
    bindir = toolchain_bin()
    nodes = nodes_set()
    largest = max(args.sizes)
    node_count = nodes_for(largest, args.pods_per_node)
    # every pod's emptyDirs (the flux view it copies) live in the nodes' tmpfs
    disk = args.node_disk or f"{max(6, 2 + largest * 200 // 1024)}g"
    t0 = time.perf_counter()
    print("Real Flux brokers: the component, kubectl apply and the Flux Operator, same nodes")
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{node_count} real nodes, their disk a {disk} tmpfs")
    runs: list[Run] = []
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-brokers-")))
        plane = stack.enter_context(
            FluxPlane(bindir, nodes, "benchbrokers", nodes=node_count, node_disk=disk)
        )
        bench = Bench(plane, work, Engine.create(bindir, work / "engine"), copy_project(work / "p"))
        if "operator" in args.ways:
            from operatorplane import OperatorPlane

            bench.operator = stack.enter_context(OperatorPlane(plane, nodes))
        for size in args.sizes:
            doc = spec_of(size)
            for _ in range(args.repeat):
                for way in args.ways:
                    r = bench.run(way, doc)
                    runs.append(r)
                    print(
                        f"({size} {way}: joined {fmt(r.joined)} ran {fmt(r.ran)} Complete "
                        f"{r.complete:.1f} gone {r.gone:.1f} s, {r.memory_mb:.0f} MB; "
                        f"load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
    print()
    print(report(runs, args.ways, args.sizes))
    print(f"\nmedians of {args.repeat}; done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
