"""A throwaway Kubernetes control plane for the e2e tests: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok, on 127.0.0.1, in a temporary directory.

    with ControlPlane(bindir) as cp:          # bindir: tests/e2e/toolchain/build.py's last line
        cp.kubectl("get", "nodes")
        cp.kubeconfig                          # a kubeconfig file (CA-verified, admin client cert)

No kubelet: kwok fakes the node(s) and the pods' status. What kwok does here (stages taken from
kwok's own module, shipped beside bin/ by build.py, adjusted in _kwok_stages):
  * a pod bound to a fake node goes Pending -> Running with Ready=True within about a second,
    init containers first, and stays Running: a persistent MiniCluster's brokers never finish;
  * a pod whose metadata carries the annotation COMPLETE_AFTER (e.g. "2s") becomes Succeeded that
    long after it is Running (every container terminated with exit code 0). A Job whose pod
    template carries the annotation therefore completes; one without it keeps running;
  * a deleted pod is removed within a fraction of a second, not at the end of its grace period
    (kwok's pod-delete stage stands in for the kubelet; its wait for the deletionTimestamp is
    dropped), so foreground deletion of a Job and deletion of a namespace finish quickly.
The fake nodes are labelled type=kwok, untainted, and each has ample allocatable (NODE_CPU,
NODE_MEMORY, NODE_PODS, NODE_EPHEMERAL_STORAGE: 16 pods of 1 cpu / 2Gi fit on one).

Every process runs in its own process group; stop() ends each group by its pid (SIGTERM, then
SIGKILL), on success, on an exception, on KeyboardInterrupt, and at interpreter exit for any
instance left running. Ports are free ports chosen at start, so several instances can run at once.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

COMPLETE_AFTER = "e2e.flux-minicluster/complete-after"
NODE_CPU = "64"
NODE_MEMORY = "256Gi"
NODE_PODS = "110"
# Every broker pod requests node disk (the flux-view init container's 1Gi): a node with none
# advertised fits no pod.
NODE_EPHEMERAL_STORAGE = "1Ti"
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.1/16"
LOOPBACK = "127.0.0.1"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")

_LIVE: weakref.WeakSet[ControlPlane] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for cp in live:
        with contextlib.suppress(Exception):
            cp.stop()


class ControlPlaneError(RuntimeError):
    pass


def poll(
    predicate: Callable[[], Any],
    timeout: float,
    interval: float,
    check_alive: Callable[[], None],
    errors: tuple[type[BaseException], ...],
) -> tuple[Any, object]:
    """``predicate``'s first true value within ``timeout`` seconds, polled every ``interval``
    after ``check_alive`` (which raises when a process the wait depends on died), and the last
    of ``errors`` it raised; a false value when the time ran out. The waits of the control plane
    and of the real-node clusters share it."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        check_alive()
        try:
            value = predicate()
        except errors as exc:
            last, value = exc, None
        if value:
            return value, last
        time.sleep(interval)
    return None, last


# Collections of the kinds a MiniCluster renders (and the few the tests create themselves).
PLURALS = {
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "Service": "services",
    "Pod": "pods",
    "Job": "jobs",
    "NetworkPolicy": "networkpolicies",
    "Namespace": "namespaces",
    "ServiceAccount": "serviceaccounts",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "RuntimeClass": "runtimeclasses",
    "PriorityClass": "priorityclasses",
}
CLUSTER_SCOPED = frozenset({"Namespace", "PersistentVolume", "RuntimeClass", "PriorityClass"})


def object_path(kind: str, name: str, namespace: str | None = None, api: str = "v1") -> str:
    """``/api/v1/namespaces/ns/configmaps/name``, ``/apis/batch/v1/namespaces/ns/jobs/name``."""
    base = "/api/v1" if api == "v1" else f"/apis/{api}"
    scope = "" if kind in CLUSTER_SCOPED else f"/namespaces/{namespace or 'default'}"
    return f"{base}{scope}/{PLURALS[kind]}/{name}"


def collection_path(obj: dict[str, Any]) -> str:
    """The collection an object is created in."""
    meta = obj.get("metadata", {})
    path = object_path(obj["kind"], "", meta.get("namespace"), obj["apiVersion"])
    return path.rstrip("/")


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_group(proc: subprocess.Popen[bytes], grace: float = 5) -> None:
    """End the process group ``proc`` leads (started with ``start_new_session``): SIGTERM and
    up to ``grace`` seconds while the leader runs, then SIGKILL to the group whatever happened,
    since it may hold children that outlive the leader."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


class ControlPlane:
    """One control plane. start() returns when /readyz is ok, the controller manager and the
    scheduler are healthy, the default ServiceAccount exists and every fake node is Ready."""

    def __init__(
        self,
        bindir: str | os.PathLike[str],
        *,
        name: str = "e2e",
        nodes: int = 1,
        workdir: str | os.PathLike[str] | None = None,
        start_timeout: float = 120.0,
        keep_workdir: bool = False,
        address: str = LOOPBACK,
    ) -> None:
        self.bindir = Path(bindir)
        # Where the API server listens and what it advertises. The default, loopback, serves
        # kwok's fake nodes. Real nodes (tests/e2e/realnode) give an address their network
        # namespaces reach: then the `kubernetes` Service gets that endpoint (lease reconciler),
        # and the API server reaches each kubelet at its InternalIP with the admin certificate
        # (logs, exec, port-forward go through the kubelet's webhook authorization).
        self.address = address
        self.name = name
        self.nodes = nodes
        self.start_timeout = start_timeout
        self.keep_workdir = keep_workdir
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"cp-{name}-"))
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._args: dict[str, list[str]] = {}
        self.timings: dict[str, float] = {}
        self.startup_seconds: float | None = None
        self.port: int = 0
        self.server = ""
        self.kubeconfig = self.workdir / "kubeconfig"
        self.node_names = [f"kwok-{name}-{i}" for i in range(nodes)]
        self._ssl: ssl.SSLContext | None = None
        missing = [b for b in BINARIES if not (self.bindir / b).is_file()]
        if missing:
            raise ControlPlaneError(f"{self.bindir}: missing {', '.join(missing)}")
        self.stages_dir = self.bindir.parent / "share" / "kwok-stages"

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        with _LIVE_LOCK:
            _LIVE.add(self)
        t0 = time.monotonic()
        try:
            self._start(t0)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """End every process group in reverse start order (kwok first, etcd last: an API server
        whose etcd is gone waits for it instead of exiting), then remove the work directory."""
        for name in reversed(list(self.procs)):
            stop_group(self.procs[name])
        self.procs.clear()
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- helpers for tests -----------------------------------------------------------------

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["KUBECONFIG"] = str(self.kubeconfig)
        return env

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["kubectl", f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
        return proc

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        """A request to the API server as the admin; the decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, context=self._ssl, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> tuple[int, Any]:
        """A request as the admin that never raises on an HTTP error: ``(status, decoded body)``."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Content-Type": content_type, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        try:
            return status, json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode()
        except ValueError:
            return status, raw.decode(errors="replace")

    def get(self, path: str) -> Any:
        """The object at ``path``, or None when the server says 404."""
        status, body = self.request("GET", path)
        if status == 404:
            return None
        if status >= 300:
            raise ControlPlaneError(f"GET {path}: {status} {body}")
        return body

    def items(self, path: str, selector: str | None = None) -> list[Any]:
        """The items of a list (``/api/v1/namespaces/ns/pods``), optionally by label selector."""
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        return list(self.get(path + query)["items"])

    def ensure(self, obj: dict[str, Any]) -> None:
        """Create ``obj`` for real unless an object of that name exists already."""
        status, body = self.request("POST", collection_path(obj), obj)
        if status >= 300 and status != 409:
            raise ControlPlaneError(f"create {obj['kind']} {obj['metadata']['name']}: {body}")

    def dry_run(self, obj: dict[str, Any]) -> tuple[bool, str]:
        """Would the server create ``obj``? A server-side dry run, as `kubectl create
        --dry-run=server` (unknown fields refused, as kubectl's default `--validate=strict`).
        ``(accepted, the server's message when it refuses)``."""
        path = collection_path(obj) + "?dryRun=All&fieldValidation=Strict"
        status, body = self.request("POST", path, obj)
        if status < 300:
            return True, ""
        message = body.get("message", "") if isinstance(body, dict) else str(body)
        return False, f"{status} {message}"

    def add_node(self, name: str) -> None:
        """Another fake node (kwok manages it) after start."""
        self.api("POST", "/api/v1/nodes", self._node(name))
        self.node_names.append(name)
        self.wait_for(f"node {name} Ready", self._nodes_ready)

    def set_unschedulable(self, unschedulable: bool) -> None:
        """Cordon (or uncordon) every fake node: no new pod gets a node while cordoned."""
        for node in self.node_names:
            status, body = self.request(
                "PATCH",
                f"/api/v1/nodes/{node}",
                {"spec": {"unschedulable": unschedulable}},
                content_type="application/merge-patch+json",
            )
            if status >= 300:
                raise ControlPlaneError(f"cordon {node}: {body}")

    def restart(self, component: str, *, down_for: float = 0.0) -> float:
        """Stop one component (SIGTERM, then SIGKILL), wait ``down_for`` seconds, start it again
        with the same flags and data; return the seconds until it is healthy again."""
        proc = self.procs[component]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        time.sleep(down_for)
        t0 = time.monotonic()
        self._spawn(component, self._args[component])
        if component == "kube-apiserver":
            self.wait_for(
                "kube-apiserver /readyz after restart",
                lambda: self.api("GET", "/readyz") == "ok",
                timeout=90,
            )
        return time.monotonic() - t0

    def logs(self, component: str, lines: int = 50) -> str:
        return tail(self.workdir / "logs" / f"{component}.log", lines)

    def wait_for(
        self, what: str, predicate: Any, timeout: float = 60, interval: float = 0.2
    ) -> Any:
        value, last = poll(
            predicate, timeout, interval, self._check_alive, (OSError, ValueError, KeyError)
        )
        if value:
            return value
        raise ControlPlaneError(
            f"{self.name}: timed out after {timeout:.0f}s waiting for {what}"
            f" (last error: {last})\n{self._diagnostics()}"
        )

    # -- internals -------------------------------------------------------------------------

    def _start(self, t0: float) -> None:
        w = self.workdir
        (w / "logs").mkdir(parents=True, exist_ok=True)
        etcd_client, etcd_peer, api_port, kcm_port, sched_port = free_ports(5)
        self.port = api_port
        self.server = f"https://{self.address}:{api_port}"

        self._make_pki()
        self._write_kubeconfig()
        self._ssl = ssl.create_default_context(cafile=str(w / "pki" / "ca.crt"))
        self._ssl.load_cert_chain(str(w / "pki" / "admin.crt"), str(w / "pki" / "admin.key"))
        self._write_kwok_config()
        self.timings["pki"] = time.monotonic() - t0
        pki = w / "pki"

        self._spawn(
            "etcd",
            [
                "--name=default",
                f"--data-dir={w / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=default=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self.wait_for(
            "etcd /health",
            lambda: (
                json.loads(
                    urllib.request.urlopen(
                        f"http://127.0.0.1:{etcd_client}/health", timeout=2
                    ).read()
                ).get("health")
                == "true"
            ),
            timeout=30,
        )
        self.timings["etcd"] = time.monotonic() - t0

        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                f"--secure-port={api_port}",
                *self._address_args(),
                f"--cert-dir={w / 'apiserver-certs'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
            ],
        )
        self.wait_for(
            "kube-apiserver /readyz", lambda: self.api("GET", "/readyz") == "ok", timeout=90
        )
        self.timings["kube-apiserver"] = time.monotonic() - t0

        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        self._spawn(
            "kube-controller-manager",
            [
                kubeconfig,
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--use-service-account-credentials=false",
                "--profiling=false",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                kubeconfig,
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={sched_port}",
                "--profiling=false",
            ],
        )
        self._spawn(
            "kwok",
            [
                kubeconfig,
                f"--config={w / 'kwok.yaml'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-label-selector=type=kwok",
                f"--cidr={POD_CIDR}",
                "--node-ip=10.0.0.2",
                "--node-lease-duration-seconds=40",
            ],
        )
        for node in self.node_names:
            self.api("POST", "/api/v1/nodes", self._node(node))

        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE

        def healthy(port: int) -> bool:
            url = f"https://127.0.0.1:{port}/healthz"
            with urllib.request.urlopen(url, context=insecure, timeout=2) as resp:
                return bool(resp.read() == b"ok")

        self.wait_for("kube-controller-manager /healthz", lambda: healthy(kcm_port))
        self.timings["kube-controller-manager"] = time.monotonic() - t0
        self.wait_for("kube-scheduler /healthz", lambda: healthy(sched_port))
        self.timings["kube-scheduler"] = time.monotonic() - t0
        self.wait_for(
            "ServiceAccount default/default",
            lambda: self.api("GET", "/api/v1/namespaces/default/serviceaccounts/default"),
        )
        self.wait_for("fake nodes Ready", self._nodes_ready)
        self.timings["kwok nodes Ready"] = time.monotonic() - t0

    def _address_args(self) -> list[str]:
        if self.address == LOOPBACK:
            return [
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # the 'kubernetes' Service's endpoints would be 127.0.0.1, which is invalid
                "--endpoint-reconciler-type=none",
            ]
        pki = self.workdir / "pki"
        return [
            f"--bind-address={self.address}",
            f"--advertise-address={self.address}",
            "--endpoint-reconciler-type=lease",
            f"--kubelet-client-certificate={pki / 'admin.crt'}",
            f"--kubelet-client-key={pki / 'admin.key'}",
            # else it resolves node names with the host's resolver (and times out)
            "--kubelet-preferred-address-types=InternalIP",
        ]

    def _spawn(self, name: str, args: list[str]) -> None:
        self._args[name] = args
        logf = (self.workdir / "logs" / f"{name}.log").open("ab")
        try:
            self.procs[name] = subprocess.Popen(
                [str(self.bindir / name), *args],
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                start_new_session=True,
            )
        finally:
            logf.close()

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise ControlPlaneError(
                    f"{self.name}: {name} exited with {proc.returncode}:\n{self.logs(name, 30)}"
                )

    def _diagnostics(self) -> str:
        return "\n".join(f"--- {n} ---\n{self.logs(n, 10)}" for n in self.procs)

    def _nodes_ready(self) -> bool:
        for node in self.node_names:
            obj = self.api("GET", f"/api/v1/nodes/{node}")
            conds = {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions", [])}
            if conds.get("Ready") != "True":
                return False
        return True

    def _node(self, name: str) -> dict[str, Any]:
        resources = {
            "cpu": NODE_CPU,
            "memory": NODE_MEMORY,
            "pods": NODE_PODS,
            "ephemeral-storage": NODE_EPHEMERAL_STORAGE,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
                "labels": {
                    "type": "kwok",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "node-role.kubernetes.io/agent": "",
                },
            },
            "spec": {},
            "status": {"allocatable": resources, "capacity": resources},
        }

    def _make_pki(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl(
            "req",
            "-x509",
            *ec,
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "7",
            "-subj",
            f"/CN=flux-minicluster-e2e-{self.name}-ca",
            cwd=pki,
        )
        sans = ",".join(
            [
                "IP:127.0.0.1",
                "IP:10.96.0.1",
                *([] if self.address == LOOPBACK else [f"IP:{self.address}"]),
                "DNS:localhost",
                "DNS:kubernetes",
                "DNS:kubernetes.default",
                "DNS:kubernetes.default.svc",
                "DNS:kubernetes.default.svc.cluster.local",
            ]
        )
        certs = {
            "apiserver": (
                "/CN=kube-apiserver",
                f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n",
            ),
            "admin": (
                "/O=system:masters/CN=flux-minicluster-e2e-admin",
                "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n",
            ),
        }
        for name, (subj, ext) in certs.items():
            (pki / f"{name}.ext").write_text(ext)
            _openssl(
                "req",
                "-new",
                *ec,
                "-keyout",
                f"{name}.key",
                "-out",
                f"{name}.csr",
                "-subj",
                subj,
                cwd=pki,
            )
            _openssl(
                "x509",
                "-req",
                "-in",
                f"{name}.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                f"{name}.crt",
                "-days",
                "7",
                "-extfile",
                f"{name}.ext",
                cwd=pki,
            )
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=pki)
        _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)

    def _write_kubeconfig(self) -> None:
        pki = self.workdir / "pki"

        def b64(name: str) -> str:
            return base64.b64encode((pki / name).read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": self.name,
                    "cluster": {"server": self.server, "certificate-authority-data": b64("ca.crt")},
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate-data": b64("admin.crt"),
                        "client-key-data": b64("admin.key"),
                    },
                }
            ],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}],
            "current-context": self.name,
        }
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _write_kwok_config(self) -> None:
        docs = _kwok_stages(self.stages_dir)
        (self.workdir / "kwok.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _kwok_stages(stages_dir: Path) -> list[dict[str, Any]]:
    """kwok's own stages (node-initialize, node-heartbeat-with-lease and the 'general' pod
    stages), with short delays, and pod-complete limited to pods annotated COMPLETE_AFTER."""
    if not stages_dir.is_dir():
        raise ControlPlaneError(f"{stages_dir}: kwok stages missing (rebuild the toolchain)")
    docs: list[dict[str, Any]] = []
    for path in sorted(stages_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            spec = doc["spec"]
            delay = spec.get("delay")
            if delay:
                delay["durationMilliseconds"] = min(delay.get("durationMilliseconds", 0), 200)
                if "jitterDurationMilliseconds" in delay:
                    delay["jitterDurationMilliseconds"] = min(
                        delay["jitterDurationMilliseconds"], 400
                    )
            if doc["metadata"]["name"] == "pod-delete" and delay:
                # kwok waits until the deletionTimestamp (the 30s grace period) as a container
                # ignoring SIGTERM would; ours exit at once, so namespaces and Jobs go quickly.
                delay.pop("jitterDurationFrom", None)
            if doc["metadata"]["name"] == "pod-complete":
                exprs = [
                    e
                    for e in spec["selector"]["matchExpressions"]
                    if e["key"] != ".metadata.ownerReferences.[].kind"
                ]
                exprs.append(
                    {"key": f'.metadata.annotations["{COMPLETE_AFTER}"]', "operator": "Exists"}
                )
                spec["selector"]["matchExpressions"] = exprs
                spec["delay"] = {
                    "durationMilliseconds": 0,
                    "durationFrom": {
                        "expressionFrom": f'.metadata.annotations["{COMPLETE_AFTER}"]'
                    },
                }
            docs.append(doc)
    names = {d["metadata"]["name"] for d in docs}
    for needed in ("node-initialize", "pod-ready", "pod-complete", "pod-delete"):
        if needed not in names:
            raise ControlPlaneError(f"{stages_dir}: kwok stage {needed} missing")
    return docs
