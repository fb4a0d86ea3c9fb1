"""The Flux Operator itself on a FluxPlane: its CRD applied to the plane's control plane and its
manager (realnode/toolchain.py's piece flux-operator, built from ../shared/vendor) run as a host
process against it, so that the operator's own MiniClusters run on the same real nodes and images
as the component's, to be compared with them.

    with FluxPlane(bindir, nodes_set, "op") as plane, OperatorPlane(plane, nodes_set) as op:
        run = op.run(operator_spec(doc), "ns")      # kubectl apply .. Job Complete, timed
        plane.rank_log("ns", run.name)              # what rank 0 printed
        op.delete(run.name, "ns")                   # seconds until it and its pods are gone

The manager runs outside the cluster, as upstream's `make run` does: the plane's admin kubeconfig,
no metrics, its health probe on a free loopback port, no leader election; its log is
``<cluster workdir>/flux-operator/manager.log``. It is ready when /readyz answers ``ok`` and it
logged ``Starting workers``; it is stopped (its process group) when the block ends, however.
"""

from __future__ import annotations

import atexit
import dataclasses
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from controlplane import free_ports, stop_group, tail
from fluxnodes import APP_IMAGE, UP_BROKERS, FluxPlane, localize, wait_job_complete
from kube import condition, job

GROUP = "flux-framework.org"
VERSION = "v1alpha2"
READY_TIMEOUT_S = 120
STOP_GRACE_S = 10


def operator_spec(
    doc: dict[str, Any], namespace: str | None = None, image: str = APP_IMAGE
) -> dict[str, Any]:
    """An operator MiniCluster that runs on a FluxPlane's images: fluxnodes.localize's (every
    container ``image`` with ``imagePullPolicy: Never``, ``spec.flux.container.image`` the flux
    view image, not pulled), in ``namespace`` when one is given. Nothing else changes."""
    out = localize(doc, image)
    if namespace:
        out["metadata"] = {**out.get("metadata", {}), "namespace": namespace}
    return out


class OperatorError(RuntimeError):
    pass


@dataclasses.dataclass
class Run:
    """A MiniCluster run to Job Complete by OperatorPlane.run: seconds from its `kubectl apply`
    until rank 0's instance had all ``size`` brokers up (None: it ended between two polls) and
    until its Job was Complete."""

    name: str
    namespace: str
    size: int
    joined: float | None
    complete: float


class OperatorPlane:
    """The Flux Operator's manager and CRD on ``plane`` (a started FluxPlane); ``set_dir``: the
    real-node set holding bin/manager and crd/ (realnode/toolchain.py's flux-operator)."""

    def __init__(self, plane: FluxPlane, set_dir: Path, ready_timeout: float = READY_TIMEOUT_S):
        self.plane = plane
        self.manager = Path(set_dir) / "bin" / "manager"
        self.crd_dir = Path(set_dir) / "crd"
        self.ready_timeout = ready_timeout
        self.workdir = plane.rc.workdir / "flux-operator"
        self.log = self.workdir / "manager.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_seconds = 0.0  # CRD applied and established, manager started and ready

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> OperatorPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> OperatorPlane:
        for path in (self.manager, self.crd_dir):
            if not path.exists():
                raise OperatorError(f"{path} is missing: build realnode/toolchain.py's set")
        t0 = time.monotonic()
        self.plane.rc.kubectl("apply", "--server-side", "-f", str(self.crd_dir))
        # polled, not `kubectl wait`: that fails on a CRD whose status has no conditions yet
        crd = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/miniclusters.{GROUP}"
        self.plane.rc.wait_for(
            "the MiniCluster CRD Established",
            lambda: condition(self.plane.cp.get(crd) or {}, "Established") == "True",
            timeout=60,
        )
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.port,) = free_ports(1)
        argv = [
            str(self.manager),
            f"--kubeconfig={self.plane.cp.kubeconfig}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{self.port}",
            "--leader-elect=false",
        ]
        with self.log.open("ab") as fh:
            self.proc = subprocess.Popen(
                argv,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                start_new_session=True,  # its own process group, killed as one
            )
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """SIGTERM to the manager's process group, SIGKILL after STOP_GRACE_S; idempotent."""
        proc, self.proc = self.proc, None
        atexit.unregister(self.stop)
        if proc is not None:
            stop_group(proc, STOP_GRACE_S)

    def _ready(self) -> bool:
        url = f"http://127.0.0.1:{self.port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                body = resp.read().decode().strip()
        except (OSError, urllib.error.URLError):
            return False
        return body == "ok" and "Starting workers" in self.log.read_text(errors="replace")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while not self._ready():
            self.check_alive()
            if time.monotonic() > deadline:
                raise OperatorError(
                    f"the manager was not ready in {self.ready_timeout:.0f}s\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def check_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            code = None if self.proc is None else self.proc.returncode
            raise OperatorError(f"the manager is not running (exit {code})\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        return f"--- {self.log} ---\n{tail(self.log, lines)}"

    # -- MiniClusters ------------------------------------------------------------------------
    def path(self, namespace: str, name: str = "") -> str:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/miniclusters/{name}".rstrip("/")

    def apply(self, spec: dict[str, Any], namespace: str) -> None:
        """``kubectl apply`` of the MiniCluster ``spec`` in ``namespace`` (created if missing)."""
        self.check_alive()
        self.plane.cp.ensure(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        doc = {**spec, "metadata": {**spec.get("metadata", {}), "namespace": namespace}}
        self.plane.rc.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc))

    def get(self, name: str, namespace: str) -> Any:
        """The live MiniCluster, or None."""
        return self.plane.cp.get(self.path(namespace, name))

    def wait_complete(self, name: str, namespace: str, timeout: float = 240) -> Any:
        """The MiniCluster's Job (named as it) once Complete; an AssertionError with the pods'
        logs and the manager's when it fails or the time runs out."""
        try:
            return wait_job_complete(self.plane, namespace, name, timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log_tail()}") from None

    def run(self, spec: dict[str, Any], namespace: str, timeout: float = 240) -> Run:
        """``apply`` the MiniCluster ``spec`` and wait for its Job to be Complete, asking rank 0's
        instance meanwhile (``kubectl exec`` of fluxnodes.UP_BROKERS in its Flux container,
        named as the MiniCluster) how many brokers are up: when each happened, from the apply.
        An AssertionError with the pods' logs and the manager's when the Job fails or the time
        runs out."""
        name, size = spec["metadata"]["name"], int(spec["spec"].get("size", 1))
        t0 = time.monotonic()
        self.apply(spec, namespace)
        joined = None
        while True:
            live = job(self.plane.cp, namespace, name)
            failed = live is not None and condition(live, "Failed") == "True"
            late = time.monotonic() - t0 > timeout
            if failed or late:
                what = f"failed: {live['status']}" if failed else f"not Complete in {timeout:.0f}s"
                raise AssertionError(
                    f"Job {namespace}/{name} {what}\n"
                    f"{self.plane.diagnostics(namespace, name)}\n{self.log_tail()}"
                )
            if live is not None and condition(live, "Complete") == "True":
                return Run(name, namespace, size, joined, time.monotonic() - t0)
            self.check_alive()
            rank0 = self.plane.rank_pod(namespace, name, 0, "Running")
            if joined is None and rank0 is not None:
                try:
                    up = self.plane.exec(namespace, rank0["metadata"]["name"], name, UP_BROKERS)
                except AssertionError:  # no instance yet, or no longer
                    up = ""
                if up.strip() == str(size):
                    joined = time.monotonic() - t0
                    continue
            time.sleep(0.2)

    def delete(self, name: str, namespace: str, timeout: float = 120) -> float:
        """Delete the MiniCluster (background propagation, as ``kubectl delete`` does) and wait
        until it, its Job (named as it) and the Job's pods are gone: the seconds that took."""
        t0 = time.monotonic()
        self.plane.rc.kubectl(
            "delete", "-n", namespace, f"miniclusters.{GROUP}", name, "--wait=false"
        )

        def gone() -> bool:
            self.check_alive()
            return (
                self.get(name, namespace) is None
                and job(self.plane.cp, namespace, name) is None
                and not self.plane.pods(namespace, name)
            )

        self.plane.rc.wait_for(f"MiniCluster {namespace}/{name} and its pods gone", gone, timeout)
        return time.monotonic() - t0
