"""Benchmarks on the real engine, side by side with what a user would pick instead: the real
Pulumi CLI and Kubernetes provider against a real kube-apiserver whose nodes and pods kwok fakes
(pods are Ready about a second after they are scheduled; see tests/e2e/README.md).

For the local stack and for MiniClusters of 4, 64, 256 and 1,024 brokers (hello-world, one
broker per pod; the control plane gets enough fake nodes for the pods), three ways to run the
same objects (a ConfigMap, a Secret, a NetworkPolicy, a headless Service, an Indexed Job, in a
namespace of their own):

* **component**: the ``MiniCluster`` component, in the local stack's own program
  (``flux_minicluster.deploy.stack.program``) for the local stack, and in a user's program (an
  explicit provider, a Namespace, one ``MiniCluster``) for the sizes;
* **hand-written**: ``benchmarks/handwritten.py``, the same objects declared as typed
  pulumi-kubernetes resources with the same await, as a user would write them;
* **kubectl**: ``minicluster render`` into a folder (with a Namespace object), then
  ``kubectl diff`` (preview), ``kubectl apply`` + ``kubectl wait`` (up), ``kubectl delete``
  (destroy); and for destroy only, **kubectl, objects only**: the same apply and wait (not
  timed), then ``kubectl delete`` of the folder without its Namespace until the pods are gone
  (the Namespace is deleted afterwards, not timed): what a user who keeps the namespace waits.

Operations: preview of a new stack; up until every broker pod is Ready; destroy until the
namespace's pods are gone (and, for the engine, the operation has returned). Ratios are against
the hand-written program. Then how one program grows with the number of MiniClusters: 1, 4, 16
and 64 hello-worlds, cost per cluster, beside the hand-written program with all their objects
(``--counts``; ``--sizes ''`` and ``--no-local`` run this part alone).

Programs run through the Automation API (the Python language host is not available from the
module proxy; see tests/e2e/README.md), certificates come from config. Each figure is the median
of ``--repeat`` runs (``--large-repeat`` for 256 pods or more, whose runs take minutes) of a
whole operation, wall clock (CLI start, plugins, the program, the API
calls, the waits), the three ways taking turns so that load affects them alike.

    make bench-e2e          # .venv/bin/python benchmarks/e2e.py
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import handwritten  # noqa: E402
import yaml  # noqa: E402
from controlplane import NODE_PODS, ControlPlane  # noqa: E402
from report import machine, table  # noqa: E402
from stackrun import Engine, Stack, copy_project, new_certificate  # noqa: E402

HELLO = ROOT / "examples" / "hello-world.yaml"
SIZES = (4, 64, 256, 1024)
COUNTS = (1, 4, 16, 64)
OPERATIONS = ("preview", "up", "destroy")
WAYS = ("component", "hand-written", "kubectl", "kubectl objects")
POD_GONE_TIMEOUT = 600.0
LARGE = 256  # pods from which a figure is the median of --large-repeat runs


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


def nodes_set() -> Path:
    """What real nodes run (tests/e2e/realnode/toolchain.py's set), built or reused;
    FLUX_MINICLUSTER_NODES_DIR names one built before."""
    explicit = os.environ.get("FLUX_MINICLUSTER_NODES_DIR")
    if explicit:
        return Path(explicit)
    builder = ROOT / "tests" / "e2e" / "realnode" / "toolchain.py"
    proc = subprocess.run([sys.executable, str(builder)], capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        sys.exit(f"the real-node pieces did not build:\n{proc.stderr[-3000:]}")
    return Path(lines[-1])


def hello(size: int) -> dict[str, Any]:
    """examples/hello-world.yaml with ``size`` brokers (one task each), no namespace of its own."""
    doc = yaml.safe_load(HELLO.read_text())
    doc["metadata"].pop("namespace", None)
    doc["spec"].update({"size": size, "tasks": size})
    return dict(doc)


@dataclass
class Bench:
    bindir: Path
    cp: ControlPlane
    work: Path
    repeat: int
    large_repeat: int
    engine: Engine = field(init=False)
    project: Path = field(init=False)
    hand_project: Path = field(init=False)
    runs: int = 0

    def __post_init__(self) -> None:
        self.engine = Engine.create(self.bindir, self.work / "engine")
        self.project = copy_project(self.work / "project")
        self.hand_project = self.work / "handwritten"
        self.hand_project.mkdir()
        (self.hand_project / "Pulumi.yaml").write_text(
            "name: handwritten\nruntime: python\n"
            "description: the hand-written program of benchmarks/handwritten.py\n"
        )

    def repeats(self, pods: int) -> int:
        return self.repeat if pods < LARGE else self.large_repeat

    def namespace(self, way: str, label: str) -> str:
        self.runs += 1
        short = {"component": "c", "hand-written": "h", "kubectl": "k", "kubectl objects": "o"}[way]
        return f"bench-{short}-{label}-{self.runs}"

    # -- what every way shares -----------------------------------------------------------------

    def render(
        self, doc: dict[str, Any], namespace: str, cert: Path, folder: Path | None = None
    ) -> Path:
        """The objects of ``doc`` in ``namespace`` as ``minicluster render -d`` writes them,
        with the Namespace itself first."""
        folder = folder or self.work / f"objects-{namespace}"
        spec = folder.with_name(f"spec-{folder.name}.yaml")
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        minicluster = [sys.executable, "-m", "flux_minicluster.cli.main"]
        options = ["-n", namespace, "--curve-cert", str(cert), "-d", str(folder)]
        subprocess.run(
            [*minicluster, "render", str(spec), *options],
            check=True,
            capture_output=True,
        )
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        (folder / "00-namespace.yaml").write_text(yaml.safe_dump(ns))
        return folder

    def pods_gone(self, namespace: str) -> None:
        deadline = time.monotonic() + POD_GONE_TIMEOUT
        while self.cp.items(f"/api/v1/namespaces/{namespace}/pods"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"pods of {namespace} still there after {POD_GONE_TIMEOUT} s")
            time.sleep(0.1)

    def engine_run(self, stack: Stack, namespace: str) -> dict[str, float]:
        out = {}
        out["preview"] = timed(stack.preview)
        out["up"] = timed(stack.up)
        out["destroy"] = self.destroy(stack, namespace)
        return out

    def destroy(self, stack: Stack, namespace: str) -> float:
        """Seconds until ``pulumi destroy`` has returned and the namespace's pods are gone."""
        seconds = timed(lambda: (stack.destroy(), self.pods_gone(namespace)))
        stack.auto.workspace.remove_stack(stack.name)
        return seconds

    # -- the three ways -------------------------------------------------------------------------

    def component(self, doc: dict[str, Any], namespace: str, cert: Path, local: bool) -> Any:
        certificate = cert.read_text()
        if local:
            stack = self.engine.stack(
                self.project,
                namespace,
                like="local",
                kubeconfig=self.cp.kubeconfig,
                context=self.cp.name,
                curve_cert=certificate,
            )
            stack.set("flux-minicluster:cluster.namespace", namespace)
        else:
            program = many_program([doc], self.cp.kubeconfig, self.cp.name, namespace, [cert])
            stack = self.engine.stack(self.project, namespace, program=program)
        return self.engine_run(stack, namespace)

    def hand_written(self, objects: Path, namespace: str) -> dict[str, float]:
        stack = self.engine.stack(self.hand_project, namespace, program=handwritten.main)
        for key, value in (
            ("objects", str(objects)),
            ("namespace", namespace),
            ("kubeconfig", str(self.cp.kubeconfig)),
            ("context", self.cp.name),
        ):
            stack.set(f"handwritten:{key}", value, path=False)
        return self.engine_run(stack, namespace)

    def kubectl(self, objects: Path, namespace: str, size: int, name: str) -> dict[str, float]:
        out = {}
        out["preview"] = timed(lambda: self.cp.kubectl("diff", "-f", str(objects), check=False))
        ready = f"--for=jsonpath={{.status.ready}}={size}"
        out["up"] = timed(
            lambda: (
                self.cp.kubectl("apply", "-f", str(objects), timeout=600),
                self.cp.kubectl(
                    "wait", ready, f"job/{name}", "-n", namespace, "--timeout=600s", timeout=620
                ),
            )
        )
        out["destroy"] = timed(
            lambda: (
                self.cp.kubectl("delete", "-f", str(objects), "--timeout=600s", timeout=620),
                self.pods_gone(namespace),
            )
        )
        return out

    def kubectl_objects(
        self, objects: Path, namespace: str, size: int, name: str
    ) -> dict[str, float]:
        """Destroy only: ``kubectl delete -f`` of the objects without their Namespace."""
        ready = f"--for=jsonpath={{.status.ready}}={size}"
        self.cp.kubectl("apply", "-f", str(objects), timeout=600)
        self.cp.kubectl(
            "wait", ready, f"job/{name}", "-n", namespace, "--timeout=600s", timeout=620
        )
        (objects / "00-namespace.yaml").unlink()

        def delete() -> None:
            self.cp.kubectl("delete", "-f", str(objects), "--timeout=600s", timeout=620)
            self.pods_gone(namespace)

        seconds = timed(delete)
        self.cp.kubectl("delete", "namespace", namespace, "--timeout=600s", timeout=620)
        return {"destroy": seconds}

    def side_by_side(self, label: str, size: int, local: bool) -> dict[str, dict[str, list[float]]]:
        doc = yaml.safe_load(HELLO.read_text()) if local else hello(size)
        if local:
            doc["metadata"].pop("namespace", None)
        name = str(doc["metadata"]["name"])
        figures: dict[str, dict[str, list[float]]] = {w: {} for w in WAYS}
        cert = self.work / f"{label}.cert"
        cert.write_text(new_certificate(name))
        for _ in range(self.repeats(size)):
            for way in WAYS:
                namespace = self.namespace(way, label)
                if way == "component":
                    got = self.component(doc, namespace, cert, local)
                else:
                    objects = self.render(doc, namespace, cert)
                    if way == "hand-written":
                        got = self.hand_written(objects, namespace)
                    elif way == "kubectl":
                        got = self.kubectl(objects, namespace, size, name)
                    else:
                        got = self.kubectl_objects(objects, namespace, size, name)
                for op, seconds in got.items():
                    figures[way].setdefault(op, []).append(seconds)
        return figures

    def growth(self, counts: Sequence[int]) -> list[list[str]]:
        """Per count of MiniClusters of 4 brokers, the component's program beside the
        hand-written one with the same objects (every cluster's rendered folder in one), taking
        turns: so a cost that grows with the count is seen to be the component's or not."""
        rows = []
        doc = hello(4)
        for count in counts:
            figures: dict[str, dict[str, list[float]]] = {"component": {}, "hand-written": {}}
            resources = 0
            for _ in range(self.repeats(4 * count)):
                for way in figures:
                    namespace = self.namespace(way, f"many{count}")
                    docs = [{**doc, "metadata": {"name": f"hello-{i}"}} for i in range(count)]
                    certs = []
                    for i in range(count):
                        cert = self.work / f"{namespace}-{i}.cert"
                        cert.write_text(new_certificate(f"hello-{i}"))
                        certs.append(cert)
                    if way == "component":
                        program = many_program(
                            docs, self.cp.kubeconfig, self.cp.name, namespace, certs
                        )
                        stack = self.engine.stack(self.project, namespace, program=program)
                        t0 = time.perf_counter()
                        preview = stack.preview()
                        got = {"preview": time.perf_counter() - t0}
                        resources = preview.change_summary.get("create", 0)
                        got["up"] = timed(stack.up)
                        got["destroy"] = self.destroy(stack, namespace)
                    else:
                        got = self.hand_written(self.render_all(docs, namespace, certs), namespace)
                    for op, seconds in got.items():
                        figures[way].setdefault(op, []).append(seconds)
            med = {
                way: {op: statistics.median(v) for op, v in ops.items()}
                for way, ops in figures.items()
            }
            print(
                f"({count} MiniClusters: "
                + "; ".join(
                    f"{way} " + ", ".join(f"{op} {t:.2f} s" for op, t in ops.items())
                    for way, ops in med.items()
                )
                + f"; load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            row = [str(count), str(resources), str(4 * count)]
            for op in OPERATIONS:
                c, h = med["component"][op], med["hand-written"][op]
                row += [f"{c:.2f}", f"{c / count:.3f}", f"{h / count:.3f}", f"{c / h:.2f}"]
            rows.append(row)
        return rows

    def render_all(
        self, docs: Sequence[dict[str, Any]], namespace: str, certs: Sequence[Path]
    ) -> Path:
        """Every document's objects in one folder (each rendered with its own certificate)."""
        folder = self.work / f"objects-{namespace}"
        folder.mkdir()
        for doc, cert in zip(docs, certs, strict=True):
            name = doc["metadata"]["name"]
            one = self.render(doc, namespace, cert, folder=self.work / f"one-{namespace}-{name}")
            for path in one.glob("*.yaml"):
                target = folder / path.name
                if path.name != "00-namespace.yaml" or not target.exists():
                    target.write_text(path.read_text())
        return folder


def warm_up() -> None:
    """Programs run inline, in this process: import what every one of them imports first, so
    that no way pays the process's one-time imports for the others (a real `pulumi up` pays its
    imports every run: benchmarks/startup.py measures those)."""
    import pulumi_kubernetes as k8s

    import flux_minicluster.deploy.stack.program  # noqa: F401

    for kind in (k8s.core.v1.Namespace, k8s.batch.v1.Job, k8s.networking.v1.NetworkPolicy):
        assert kind is not None


def timed(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def many_program(
    docs: Sequence[dict[str, Any]],
    kubeconfig: Path,
    context: str,
    namespace: str,
    certs: Sequence[Path],
) -> Callable[[], None]:
    """A user's program: one explicit provider, a Namespace, one MiniCluster per document."""
    certificates = [c.read_text() for c in certs]

    def program() -> None:
        import pulumi
        import pulumi_kubernetes as k8s

        from flux_minicluster import MiniCluster

        provider = k8s.Provider("bench", kubeconfig=str(kubeconfig), context=context)
        ns = k8s.core.v1.Namespace(
            "bench", metadata={"name": namespace}, opts=pulumi.ResourceOptions(provider=provider)
        )
        for doc, certificate in zip(docs, certificates, strict=True):
            name = str(doc["metadata"]["name"])
            MiniCluster(
                name,
                {"spec": doc, "namespace": namespace, "curve_cert": certificate, "wait": "ready"},
                opts=pulumi.ResourceOptions(providers=[provider], depends_on=[ns]),
            )

    return program


def side_by_side_rows(label: str, figures: dict[str, dict[str, list[float]]]) -> list[list[str]]:
    rows = []
    for op in OPERATIONS:
        med = {w: statistics.median(figures[w][op]) for w in WAYS if op in figures[w]}
        hand = med["hand-written"]
        objects_only = med.get("kubectl objects")
        rows.append(
            [
                label,
                op,
                f"{med['component']:.2f}",
                f"{hand:.2f}",
                f"{med['kubectl']:.2f}",
                "-" if objects_only is None else f"{objects_only:.2f}",
                f"{med['component'] / hand:.2f}",
                f"{med['kubectl'] / hand:.2f}",
                f"{med['component'] / med['kubectl']:.2f}",
                "-" if objects_only is None else f"{med['component'] / objects_only:.2f}",
            ]
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    ap.add_argument(
        "--large-repeat", type=int, default=1, help=f"runs per figure from {LARGE} pods on"
    )
    ap.add_argument(
        "--sizes",
        type=lambda s: tuple(int(x) for x in s.split(",")) if s else (),
        default=SIZES,
        help="broker counts, comma-separated (default 4,64,256,1024; '' to skip)",
    )
    ap.add_argument(
        "--counts",
        type=lambda s: tuple(int(x) for x in s.split(",")) if s else (),
        default=COUNTS,
        help="MiniClusters per program, comma-separated (default 1,4,16,64; '' to skip)",
    )
    ap.add_argument("--no-local", action="store_true", help="skip the local stack")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    warm_up()
    bindir = toolchain_bin()
    versions = subprocess.run(
        [str(bindir / "pulumi"), "version"], capture_output=True, text=True
    ).stdout.strip()
    print("flux-minicluster on the real engine, side by side")
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"pulumi {versions}, pulumi-resource-kubernetes and kube-apiserver of the e2e toolchain")
    pods = max([*args.sizes, *(4 * c for c in args.counts), 4])
    nodes = math.ceil(pods / int(NODE_PODS)) + 1
    rows: list[list[str]] = []
    headers = [
        "MiniCluster",
        "operation",
        "component s",
        "hand-written s",
        "kubectl s",
        "kubectl objects s",
        "component/hand",
        "kubectl/hand",
        "component/kubectl",
        "component/objects",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp,
        ControlPlane(bindir, name="bench", nodes=nodes) as cp,
    ):
        bench = Bench(bindir, cp, Path(tmp), args.repeat, args.large_repeat)
        print(
            f"control plane started in {cp.startup_seconds:.1f} s, {nodes} fake nodes of "
            f"{NODE_PODS} pods; medians of {args.repeat} runs ({args.large_repeat} from "
            f"{LARGE} pods on)"
        )
        cases = [] if args.no_local else [("local stack", 4, True)]
        cases += [(f"{n} brokers", n, False) for n in args.sizes]
        for label, size, local in cases:
            slug = "local" if local else str(size)
            try:
                figures = bench.side_by_side(slug, size, local)
            except Exception as err:  # print what completed, then say what did not
                print(f"\n{label}: did not complete: {type(err).__name__}: {err}"[:2000])
                break
            rows += side_by_side_rows(label, figures)
            done, load = time.perf_counter() - t0, os.getloadavg()[0]
            print(f"\n{label} done at {done:.0f} s (load {load:.1f}):", flush=True)
            print(table(headers, side_by_side_rows(label, figures)), flush=True)
        print()
        print(
            "preview: a new stack (kubectl diff); up: until every broker pod is Ready "
            "(kubectl apply + kubectl wait); destroy: until the pods are gone"
        )
        if rows:
            print(table(headers, rows), flush=True)
        if args.counts:
            print()
            print(
                "MiniClusters of 4 brokers in one program: the component (wait: ready) and the "
                "hand-written program with every cluster's objects, medians as above; per "
                "cluster: seconds / MiniClusters"
            )
            try:
                growth = bench.growth(args.counts)
            except Exception as err:
                print(f"did not complete: {type(err).__name__}: {err}"[:2000])
            else:
                print(
                    table(
                        [
                            "MiniClusters",
                            "resources",
                            "pods",
                            *(
                                heading
                                for op in OPERATIONS
                                for heading in (
                                    f"{op} s",
                                    "per cluster",
                                    "hand-written",
                                    "component/hand",
                                )
                            ),
                        ],
                        growth,
                    )
                )
    print()
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} at the end; done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
