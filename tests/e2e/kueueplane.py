"""The real Kueue controller manager against an e2e control plane, outside the cluster.

``Kueue(bindir, control_plane)`` installs the CRDs of the release the toolchain built (the
``kueue`` piece keeps them beside the binary, ``toolchain/kueue.py``) with ``kubectl apply
--server-side`` (they are too large for the client-side annotation), waits until they are
Established, and starts ``bin/kueue`` as a process of this machine with the control plane's
admin kubeconfig (``KUEUE``'s rights are the admin's: no RBAC to install).

What is not as in a cluster, deliberately:

* **webhooks off**: no Mutating/ValidatingWebhookConfiguration is installed, so the API server
  never calls Kueue. Kueue still starts its webhook server (controller-runtime does), on
  127.0.0.1 with a throwaway self-signed certificate; nothing connects to it. So a queued Job is
  suspended because we create it so, not because a webhook did (which is the point of the
  ``queued-job-suspended`` policy);
* internal certificate management, leader election, the metrics endpoint and the visibility
  API server (an aggregated API) are off; the health endpoint is on a free 127.0.0.1 port and
  ``start()`` returns once ``/readyz`` answers;
* only the ``batch/job`` integration is on.

Everything Kueue does to Jobs and Workloads (creating the Workload, quota, admission, resuming
the Job with the flavor's node selectors and tolerations, marking it finished) is the real
controller's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane, ControlPlaneError
from stackrun import PREFIX, Engine, Stack, new_certificate, venv_prefix

from flux_minicluster.cli.status import EXIT_NOT_FOUND

NAMESPACE = "kueue-system"
API = "kueue.x-k8s.io/v1beta2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _self_signed(folder: Path) -> None:
    """A throwaway certificate for localhost, as tls.crt and tls.key in ``folder``."""
    folder.mkdir(parents=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-keyout", str(folder / "tls.key"),
         "-out", str(folder / "tls.crt")],
        check=True, capture_output=True,
    )  # fmt: skip


def _established(cp: ControlPlane, path: str) -> bool:
    for c in (cp.get(path) or {}).get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Established":
            return bool(c.get("status") == "True")
    return False


def crd_dir(bindir: Path) -> Path:
    """The CRDs beside the binary the toolchain's ``kueue`` symlink points to."""
    return (bindir / "kueue").resolve().parent.parent / "crds"


class Kueue:
    def __init__(self, bindir: Path, cp: ControlPlane, *, start_timeout: float = 180.0) -> None:
        self.binary = bindir / "kueue"
        self.crds = crd_dir(bindir)
        self.cp = cp
        self.start_timeout = start_timeout
        self.workdir = Path(tempfile.mkdtemp(prefix="kueue-", dir=cp.workdir))
        self.log = self.workdir / "kueue.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.health_port = _free_port()
        self.startup_seconds: float | None = None
        self.version = "unknown"

    def __enter__(self) -> Kueue:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Kueue:
        t0 = time.monotonic()
        self.cp.kubectl("apply", "--server-side", "-f", str(self.crds), timeout=120)
        for crd in sorted(self.crds.glob("*.yaml")):
            name = yaml.safe_load(crd.read_text())["metadata"]["name"]
            path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            self.cp.wait_for(f"CRD {name} Established", lambda p=path: _established(self.cp, p))
        self.cp.kubectl("create", "namespace", NAMESPACE)
        certs = self.workdir / "certs"
        _self_signed(certs)
        # Without internal certificate management Kueue reads its metrics server's certificate
        # from the fixed path /etc/kueue/metrics/certs (even with metrics off). It gets one in a
        # mount namespace of its own: /etc as a read-only overlay with kueue/ added on top, so
        # nothing is written to the machine's /etc.
        extra = self.workdir / "etc"
        _self_signed(extra / "kueue" / "metrics" / "certs")
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"port": _free_port(), "host": "127.0.0.1", "certDir": str(certs)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "integrations": {"frameworks": ["batch/job"]},
        }
        config_file = self.workdir / "config.yaml"
        config_file.write_text(yaml.safe_dump(config))
        env = {**os.environ, "KUBECONFIG": str(self.cp.kubeconfig)}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                 f'mount -t overlay overlay -o "lowerdir={extra}:/etc" /etc && exec "$@"', "sh",
                 str(self.binary), f"--config={config_file}",
                 "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=2"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ControlPlaneError(f"kueue exited {self.proc.returncode}:\n{self.tail()}")
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{self.health_port}/readyz"
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        self.startup_seconds = time.monotonic() - t0
                        self.version = self._logged_version()
                        return self
            time.sleep(0.5)
        raise ControlPlaneError(f"kueue not ready in {self.start_timeout:.0f}s:\n{self.tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def _logged_version(self) -> str:
        """The gitVersion Kueue logged when it started (its "Initializing" line)."""
        for line in self.log.read_text(errors="replace").splitlines():
            if '"msg":"Initializing"' in line:
                return str(json.loads(line).get("gitVersion"))
        return "unknown"

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- objects -------------------------------------------------------------------------------

    def apply(self, *objects: dict[str, Any]) -> None:
        self.cp.kubectl(
            "apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(list(objects))
        )

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        path = f"/apis/{API}/namespaces/{namespace}/workloads"
        return list(self.cp.get(path).get("items", []))


def queued_stack(
    engine: Engine,
    project: Path,
    cp: ControlPlane,
    namespace: str,
    queue: str,
    name: str,
    settings: dict[str, Any],
) -> Stack:
    """A copy of the bundled local stack in ``namespace`` (which exists) with
    ``minicluster.queue`` set to ``queue`` and the rest of ``minicluster`` from ``settings``."""
    stack = engine.stack(
        project,
        name,
        like="local",
        kubeconfig=cp.kubeconfig,
        context=cp.name,
        curve_cert=new_certificate(name),
    )
    stack.set(f"{PREFIX}:cluster.namespace", namespace)
    stack.set(f"{PREFIX}:cluster.createNamespace", "false")
    stack.set_object(f"{PREFIX}:minicluster", {"queue": queue, **settings})
    return stack


def status(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    """`minicluster status NAME -n NAMESPACE -o json` against the control plane: its document
    (phase ``absent``, exit EXIT_NOT_FOUND, before the Job exists, as `kubectl get` fails)."""
    proc = subprocess.run(
        [str(venv_prefix() / "bin" / "minicluster"), "status", name, "-n", namespace,
         "--kubeconfig", str(cp.kubeconfig), "-o", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode in (0, EXIT_NOT_FOUND), proc.stderr
    return dict(json.loads(proc.stdout))


class Watcher:
    """``minicluster status`` of one MiniCluster every second, in a thread, while `up` runs."""

    def __init__(self, cp: ControlPlane, namespace: str, name: str) -> None:
        self.cp, self.namespace, self.name = cp, namespace, name
        self.seen: list[tuple[float, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=90)
        # the state the block ended in (what a user sees when `up` returns), not only the last
        # one-second sample before it
        self.seen.append((time.monotonic(), status(self.cp, self.namespace, self.name)))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append((time.monotonic(), status(self.cp, self.namespace, self.name)))
            self._stop.wait(1.0)

    def phases(self) -> list[str]:
        out: list[str] = []
        for _, st in self.seen:
            if not out or out[-1] != st["phase"]:
                out.append(st["phase"])
        return out


def resource_flavor(name: str, node_labels: dict[str, str], toleration_key: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {
            "nodeLabels": node_labels,
            "tolerations": [{"key": toleration_key, "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def cluster_queue(name: str, flavor: str, pods: int) -> dict[str, Any]:
    """Quota for ``pods`` pods (one broker each); CPU, memory and node disk (the flux-view init
    container requests 1Gi) plentiful but covered (Kueue refuses a Workload that requests a
    resource its ClusterQueue does not cover)."""
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "ephemeral-storage", "pods"],
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": "cpu", "nominalQuota": "1000"},
                                {"name": "memory", "nominalQuota": "10000Gi"},
                                {"name": "ephemeral-storage", "nominalQuota": "100Ti"},
                                {"name": "pods", "nominalQuota": pods},
                            ],
                        }
                    ],
                }
            ],
        },
    }


def local_queue(name: str, namespace: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }
