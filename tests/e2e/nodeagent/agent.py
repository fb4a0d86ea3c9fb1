#!/usr/bin/env python3
"""A stand-in kubelet for the e2e control plane: it runs the pods bound to its Node as real
processes (the host root serves as every image), so real Flux brokers run under the real Job
controller. Stdlib only; it talks to the API server with urllib and the control plane's admin
client certificate. Adapted from ../shared/tools/podsim.py (written for this project).

    python3 agent.py --server URL --ca CA --cert CRT --key KEY --node NAME --index K \\
        --flux-prefix PREFIX --state DIR
    python3 agent.py --cleanup K      # undo what a crashed agent K left behind

What it does (tests/e2e/README.md has the table of what is real and what is imitated):

- registers Node NAME (labels ``type=agent``), renews its Lease in kube-node-lease and its Ready
  condition every few seconds;
- every pod bound to NAME (kube-scheduler binds them) gets a network namespace ``fa<K>p<n>`` with
  eth0 = 10.253.K.n/16 on the bridge ``fabr0`` that every agent of the machine shares (one L2
  network for every cluster, as routable pod networks are), its volumes, then its init containers
  in order (a native sidecar keeps running), then its containers, each in its own mount, UTS,
  IPC and PID namespaces (container.py), with the securityContext applied as runc does;
- reports status as a kubelet does: podIP, phase, conditions, container states with exit codes and
  restart counts, Ready from exec readiness probes; restarts per restartPolicy with back-off;
  on delete, SIGTERM, the grace period, SIGKILL, then the final delete;
- DNS as the cluster DNS answers it, in each pod's hosts file (bind-mounted as /etc/hosts and
  rewritten in place): records of pods with hostname/subdomain that a headless Service of that
  name selects (when Ready, or at once with publishNotReadyAddresses), reachable through the
  pod's search path (``h.sub``, ``h.sub.ns``, ``h.sub.ns.svc``, the FQDN: a bare ``h`` never
  resolves), and Service names (ClusterIP, or the endpoints of a headless Service);
- ClusterIP Services: a DNAT in every pod's netns to an endpoint; a LoadBalancer Service gets a
  status address 10.253.K.(200+m) on the shared network, added to the endpoint pod's eth0 and
  DNATed to the pod IP, so pods of other agents (other clusters) reach it: a load balancer that
  keeps the client's address. With the annotation ``e2e.flux-minicluster.dev/load-balancer-source:
  rewrite`` the address lives instead in a hop of its own (netns ``fa<K>lb``, 10.253.K.254) that
  DNATs to the pod and SNATs the source to the load balancer's address, as an AWS NLB with IP
  targets and client IP preservation off does: the pod sees the load balancer, not the client;
- NetworkPolicy: iptables filter rules in each pod's netns (podsim's compiler), refreshed as pods
  come and go;
- the API server from a pod: KUBERNETES_SERVICE_HOST/PORT (10.96.0.1:443) in every container,
  relayed by the agent to the API server on the host (``ApiProxy``), the only way out of a pod.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from volumes import API_SERVICE_ENV, CLEAN_PATH, PodError, Preparer  # noqa: E402

CONTAINER = os.path.join(HERE, "container.py")
BRIDGE = "fabr0"
NET = "10.253"
RUN_DIR = "/run/flux-minicluster-agent"
HOSTS_MARKER = "# managed by the e2e node agent"
SEARCH = "svc.cluster.local cluster.local"
LB_FIRST = 200
LB_HOP = 254  # the rewriting load balancer's own address (10.253.K.254); LB addresses stay below
LB_SOURCE_ANNOTATION = "e2e.flux-minicluster.dev/load-balancer-source"
VIEW_IMAGE = re.compile(r"flux-view")
START_ERROR = 128
HEARTBEAT_S = 5.0
SYNC_S = 0.3
BACKOFF_BASE_S = 2.0  # the kubelet's is 10 s doubling to 300 s; shorter here, same shape
BACKOFF_MAX_S = 40.0
OPEN_FILTER = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(msg: str) -> None:
    print(f"[agent {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(args: list[str], check: bool = True, input: str | None = None) -> str:
    r = subprocess.run(args, input=input, capture_output=True, text=True, env={"PATH": CLEAN_PATH})
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(args)}` failed: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def write_sys(path: str, value: str) -> None:
    with contextlib.suppress(OSError), open(path, "w") as f:
        f.write(value)


# -- the API server -------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


class Api:
    def __init__(self, server: str, ca: str, cert: str, key: str) -> None:
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        ctype: str = "application/json",
        timeout: float = 15,
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Content-Type": ctype, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise ApiError(err.code, err.read().decode(errors="replace")) from None
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        try:
            return self.call("GET", path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def merge(self, path: str, patch: Any) -> Any:
        return self.call("PATCH", path, patch, "application/merge-patch+json")

    def strategic(self, path: str, patch: Any) -> Any:
        """A strategic merge patch: lists with a merge key (a pod's conditions, by type) are
        merged, not replaced, so conditions others set (DisruptionTarget) are kept."""
        return self.call("PATCH", path, patch, "application/strategic-merge-patch+json")


KIND_PATHS = {"ConfigMap": "configmaps", "Secret": "secrets"}


# -- selectors, NetworkPolicy ---------------------------------------------------------------


def selector_matches(sel: dict[str, Any], labels: dict[str, str]) -> bool:
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(str(k)) != str(v):
            return False
    for e in sel.get("matchExpressions") or []:
        key, op = str(e.get("key")), e.get("operator")
        vals = [str(x) for x in e.get("values") or []]
        ok = {
            "In": key in labels and labels[key] in vals,
            "NotIn": key not in labels or labels[key] not in vals,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(str(op), False)
        if not ok:
            return False
    return True


def policy_types(pol: dict[str, Any]) -> list[str]:
    spec = pol.get("spec") or {}
    if spec.get("policyTypes"):
        return [str(t) for t in spec["policyTypes"]]
    return ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def compile_policies(
    target: PodRun,
    pods: list[PodRun],
    policies: list[dict[str, Any]],
    ns_labels: dict[str, dict[str, str]],
) -> str | None:
    """iptables-restore input (filter table) for one pod, or None when no policy selects it.
    podsim's semantics: the union of the selecting policies' rules; replies and loopback pass;
    peers are this cluster's pod IPs (podSelector/namespaceSelector) or ipBlocks."""
    ns = target.ns
    selected = [
        p
        for p in policies
        if p["metadata"]["namespace"] == ns
        and selector_matches((p.get("spec") or {}).get("podSelector") or {}, target.labels)
    ]
    lines: list[str] = []
    chains: list[str] = []
    any_dir = False
    for direction, ptype, main, hook, addr, iface, key in (
        ("ingress", "Ingress", "FA-IN", "INPUT", "-s", "-i", "from"),
        ("egress", "Egress", "FA-OUT", "OUTPUT", "-d", "-o", "to"),
    ):
        pols = [p for p in selected if ptype in policy_types(p)]
        if not pols:
            continue
        any_dir = True
        chains.append(main)
        lines += [
            f"-A {hook} -j {main}",
            f"-A {main} {iface} lo -j ACCEPT",
            f"-A {main} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
        ]
        nb = 0
        for pol in pols:
            pns = pol["metadata"]["namespace"]
            for rule in (pol.get("spec") or {}).get(direction) or []:
                ports = _port_matches((rule or {}).get("ports"))
                peers = (rule or {}).get(key)
                if not peers:
                    lines += [f"-A {main} {pm} -j ACCEPT" for pm in ports]
                    continue
                for peer in peers:
                    block = peer.get("ipBlock")
                    if block is not None:
                        nb += 1
                        chain = f"{main}-B{nb}"
                        chains.append(chain)
                        lines.append(f"-A {main} {addr} {block['cidr']} -j {chain}")
                        lines += [
                            f"-A {chain} {addr} {x} -j RETURN" for x in block.get("except") or []
                        ]
                        lines += [f"-A {chain} {pm} -j ACCEPT" for pm in ports]
                        continue
                    ps, nss = peer.get("podSelector"), peer.get("namespaceSelector")
                    for q in pods:
                        if q.ip is None:
                            continue
                        if nss is None:
                            in_ns = q.ns == pns
                        else:
                            labels = dict(ns_labels.get(q.ns, {}))
                            labels["kubernetes.io/metadata.name"] = q.ns
                            in_ns = selector_matches(nss, labels)
                        if in_ns and (ps is None or selector_matches(ps, q.labels)):
                            lines += [f"-A {main} {addr} {q.ip}/32 {pm} -j ACCEPT" for pm in ports]
        lines.append(f'-A {main} -m comment --comment "agent-default-deny" -j DROP')
    if not any_dir:
        return None
    head = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]"]
    head += [f":{c} - [0:0]" for c in chains]
    return "\n".join(head + [" ".join(x.split()) for x in lines] + ["COMMIT", ""])


def _port_matches(ports: Any) -> list[str]:
    if not ports:
        return [""]
    out = []
    for pt in ports:
        pr = str(pt.get("protocol") or "TCP").lower()
        port, end = pt.get("port"), pt.get("endPort")
        if port is None:
            out.append(f"-p {pr}")
        elif isinstance(port, str) and not port.isdigit():
            out.append(f"-p {pr}")  # a named port: every port of the protocol (lenient)
        elif end is not None:
            out.append(f"-p {pr} -m {pr} --dport {int(port)}:{int(end)}")
        else:
            out.append(f"-p {pr} -m {pr} --dport {int(port)}")
    return list(dict.fromkeys(out))


# -- containers -------------------------------------------------------------------------------


class Ctr:
    """One container of a pod, across its restarts."""

    def __init__(self, spec: dict[str, Any], kind: str) -> None:
        self.spec = spec
        self.name = spec["name"]
        self.kind = kind  # init | sidecar | app
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.state: dict[str, Any] = {"waiting": {"reason": "PodInitializing"}}
        self.last: dict[str, Any] = {}
        self.ready = False
        self.started_at = ""
        self.exit_code: int | None = None
        self.cid = ""

    def status(self, image: str) -> dict[str, Any]:
        st: dict[str, Any] = {
            "name": self.name,
            "image": image,
            "imageID": "",
            "ready": self.ready,
            "restartCount": self.restarts,
            "state": self.state,
            "lastState": self.last,
            "started": "running" in self.state,
        }
        if self.cid:
            st["containerID"] = f"agent://{self.cid}"
        return st


def container_pid1(unshare_pid: int) -> int | None:
    """The container's PID 1: the child of its ``unshare``."""
    try:
        with open(f"/proc/{unshare_pid}/task/{unshare_pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return None
    return kids[0] if kids else None


class PodRun:
    """One pod on this node, from its sandbox to its final delete, in a thread of its own."""

    def __init__(self, agent: Agent, pod: dict[str, Any]) -> None:
        self.agent = agent
        self.pod = pod
        self.meta = pod["metadata"]
        self.spec = pod["spec"]
        self.ns = self.meta["namespace"]
        self.name = self.meta["name"]
        self.uid = self.meta["uid"]
        self.labels: dict[str, str] = dict(self.meta.get("labels") or {})
        self.hostname = self.spec.get("hostname") or self.name
        sub = self.spec.get("subdomain")
        self.fqdn = f"{self.hostname}.{sub}.{self.ns}.svc.cluster.local" if sub else None
        self.kernel_hostname = (
            self.fqdn if (self.spec.get("setHostnameAsFQDN") and self.fqdn) else self.hostname
        )
        self.ip: str | None = None
        self.slot: int | None = None
        self.netns = ""
        self.veth = ""
        self.state = os.path.join(agent.state, "pods", f"{self.ns}_{self.name}_{self.uid[:8]}")
        self.logdir = os.path.join(agent.state, "logs", f"{self.ns}_{self.name}")
        self.inits = [
            Ctr(c, "sidecar" if c.get("restartPolicy") == "Always" else "init")
            for c in self.spec.get("initContainers") or []
        ]
        self.apps = [Ctr(c, "app") for c in self.spec["containers"]]
        self.images = {c.name: str(c.spec.get("image", "")) for c in self.inits + self.apps}
        self.phase = "Pending"
        self.reason = ""
        self.message = ""
        self.initialized = False
        self.ready = False
        self.started = now()
        self.deleting = threading.Event()
        self.terminated = threading.Event()
        self.gone = threading.Event()  # the pod vanished from the API (force delete)
        self.grace = 30.0
        self.lock = threading.Lock()
        self.prep: Preparer | None = None
        self.thread = threading.Thread(target=self.main, name=f"pod-{self.name}", daemon=True)
        self.done = threading.Event()
        self.sent: str = ""

    # -- status ---------------------------------------------------------------------------
    def push(self) -> None:
        conds = [
            {"type": "PodReadyToStartContainers", "status": "True" if self.ip else "False"},
            {"type": "Initialized", "status": "True" if self.initialized else "False"},
            {"type": "ContainersReady", "status": "True" if self.ready else "False"},
            {"type": "Ready", "status": "True" if self.ready else "False"},
            {"type": "PodScheduled", "status": "True"},
        ]
        status: dict[str, Any] = {
            "phase": self.phase,
            "hostIP": self.agent.node_ip,
            "hostIPs": [{"ip": self.agent.node_ip}],
            "startTime": self.started,
            "conditions": conds,
            "initContainerStatuses": [c.status(self.images[c.name]) for c in self.inits],
            "containerStatuses": [c.status(self.images[c.name]) for c in self.apps],
        }
        if self.ip:
            status["podIP"] = self.ip
            status["podIPs"] = [{"ip": self.ip}]
        if self.reason:
            status["reason"] = self.reason
            status["message"] = self.message
        key = json.dumps(status, sort_keys=True)
        if key == self.sent:
            return
        stamp = now()
        for c in conds:
            c["lastTransitionTime"] = stamp
            c["lastProbeTime"] = None
        try:
            # As the kubelet does: its own conditions by type, and others' (the API server's
            # DisruptionTarget on an evicted pod, which a pod failure policy reads) kept.
            self.agent.api.strategic(
                f"/api/v1/namespaces/{self.ns}/pods/{self.name}/status",
                {"metadata": {"uid": self.uid}, "status": status},
            )
            self.sent = key
        except (ApiError, OSError) as e:
            if not (isinstance(e, ApiError) and e.status in (404, 409)):
                log(f"{self.ns}/{self.name}: status update failed: {e}")

    # -- lifecycle ------------------------------------------------------------------------
    def main(self) -> None:
        try:
            self._main()
        except Exception as e:
            log(f"{self.ns}/{self.name}: {e!r}")
            self.phase = "Failed"
            self.reason = "AgentError"
            self.message = str(e)[:500]
            self.push()
        finally:
            if self.deleting.is_set() and not self.gone.is_set():
                # graceful termination runs in its own thread: let it have its grace period
                self.terminated.wait(self.grace + 20)
            self.kill_all()
            self.ready = False
            self.agent.release(self)
            self.done.set()
        # The kubelet's final delete, once every container is gone. Before it, as the kubelet
        # does, the pod gets its terminal phase: a Job whose podReplacementPolicy is Failed (or
        # that has a podFailurePolicy) counts a deleted pod, and removes its tracking finalizer,
        # only once the pod is Failed; a pod left Running would never go.
        if self.deleting.is_set() and not self.gone.is_set():
            if self.phase not in ("Succeeded", "Failed"):
                codes = [c.exit_code for c in self.apps]
                self.phase = "Succeeded" if codes and all(x == 0 for x in codes) else "Failed"
                with contextlib.suppress(ApiError, OSError):
                    self.push()
            with contextlib.suppress(ApiError, OSError):
                self.agent.api.call(
                    "DELETE",
                    f"/api/v1/namespaces/{self.ns}/pods/{self.name}",
                    {"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}},
                )

    def _main(self) -> None:
        os.makedirs(self.state, exist_ok=True)
        os.makedirs(self.logdir, exist_ok=True)
        self.agent.sandbox(self)
        self.push()
        self.prep = Preparer(
            self.pod,
            self.ip or "",
            self.agent.node,
            self.state,
            os.path.join(self.agent.state, "pvc"),
            self.agent.get_object,
            self.agent.token,
        )
        try:
            self.prep.prepare_volumes()
        except (PodError, ApiError, OSError) as e:
            self.reason, self.message = "ContainerCreating", str(e)
            for c in self.inits + self.apps:
                c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(e)}}
            self.push()
            # The kubelet retries; a missing ConfigMap may still come.
            while not self.deleting.wait(2.0):
                with contextlib.suppress(PodError, ApiError, OSError):
                    self.prep.prepare_volumes()
                    self.reason = self.message = ""
                    break
            if self.deleting.is_set():
                return
        policy = self.spec.get("restartPolicy") or "Always"
        sidecars: list[Ctr] = []
        for c in self.inits:
            if self.deleting.is_set():
                return
            if c.kind == "sidecar":
                self.start(c)
                sidecars.append(c)
                self.push()
                continue
            backoff = BACKOFF_BASE_S
            while True:
                code = self.run_to_end(c)
                if code == 0 or self.deleting.is_set():
                    break
                if policy == "Never":
                    self.phase = "Failed"
                    self.push()
                    return
                c.state = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off {backoff:.0f}s restarting failed container",
                    }
                }
                self.push()
                if self.deleting.wait(backoff):
                    return
                backoff = min(backoff * 2, BACKOFF_MAX_S)
            if self.deleting.is_set():
                return
        self.initialized = True
        for c in self.apps:
            c.state = {"waiting": {"reason": "ContainerCreating"}}
        self.phase = "Running"
        for c in self.apps:
            self.start(c)
        self.push()
        self.supervise(policy, sidecars)

    def supervise(self, policy: str, sidecars: list[Ctr]) -> None:
        backoff: dict[str, float] = {}
        restart_at: dict[str, float] = {}
        next_probe = 0.0
        while True:
            if self.deleting.is_set():
                return
            t = time.monotonic()
            for c in self.apps + sidecars:
                if c.proc is not None and c.proc.poll() is not None:
                    self.finished(c)
                    again = c.kind == "sidecar" or policy == "Always"
                    again = again or (policy == "OnFailure" and c.exit_code != 0)
                    if again:
                        wait = backoff.get(c.name, BACKOFF_BASE_S)
                        restart_at[c.name] = t + wait
                        backoff[c.name] = min(wait * 2, BACKOFF_MAX_S)
                        c.last = c.state
                        c.state = {
                            "waiting": {
                                "reason": "CrashLoopBackOff",
                                "message": f"back-off {wait:.0f}s restarting failed container",
                            }
                        }
                if c.name in restart_at and t >= restart_at[c.name]:
                    del restart_at[c.name]
                    c.restarts += 1
                    self.start(c)
            if t >= next_probe:
                next_probe = t + 1.0
                for c in self.apps:
                    c.ready = self.probe(c)
                self.ready = all(c.ready for c in self.apps)
            running = [c for c in self.apps if c.proc is not None or c.name in restart_at]
            if not running:
                codes = [c.exit_code for c in self.apps]
                self.phase = "Succeeded" if all(x == 0 for x in codes) else "Failed"
                self.ready = False
                for s in sidecars:
                    self.stop(s, 0.0)
                self.push()
                return
            self.push()
            self.deleting.wait(0.2)

    def probe(self, c: Ctr) -> bool:
        if c.proc is None or c.proc.poll() is not None:
            return False
        rp = c.spec.get("readinessProbe")
        if not rp:
            return True
        cmd = (rp.get("exec") or {}).get("command")
        if not cmd:
            return (
                True  # httpGet/tcpSocket/grpc probes: not imitated, the container counts as ready
            )
        pid = container_pid1(c.proc.pid)
        if pid is None:
            return False
        try:
            r = subprocess.run(
                ["nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p", "-r", "-w", *cmd],
                capture_output=True,
                timeout=float(rp.get("timeoutSeconds", 1)) + 1,
                env={"PATH": CLEAN_PATH},
            )
        except subprocess.TimeoutExpired:
            return False
        return r.returncode == 0

    def start(self, c: Ctr) -> None:
        assert self.prep is not None
        tmp = os.path.join(self.state, "tmp", c.name)
        os.makedirs(tmp, exist_ok=True)
        os.chmod(tmp, 0o1777)
        etc = f"/etc/netns/{self.netns}"
        hostname_file = os.path.join(self.state, "hostname")
        with open(hostname_file, "w") as f:
            f.write(self.kernel_hostname + "\n")
        view = c.kind != "app" and bool(VIEW_IMAGE.search(str(c.spec.get("image", ""))))
        try:
            doc = self.prep.container_spec(
                c.spec,
                hostname=self.kernel_hostname,
                etc=etc,
                hostname_file=hostname_file,
                prefix=self.agent.prefix,
                view=view,
                tmp=tmp,
                scratch=self.agent.scratch,
            )
        except (PodError, ApiError) as e:
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(e)}}
            c.proc = None
            c.exit_code = START_ERROR
            return
        c.cid = hashlib.sha1(f"{self.uid}/{c.name}/{c.restarts}".encode()).hexdigest()[:16]
        spec_path = os.path.join(self.state, f"{c.name}-{c.restarts}.json")
        fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        cmd = [
            "setpriv", "--pdeathsig", "KILL", "--",
            "ip", "netns", "exec", self.netns,
            "unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--kill-child",
            "--propagation", "private", "--",
            sys.executable, "-I", "-S", CONTAINER, "--container", spec_path,
        ]  # fmt: skip
        with open(os.path.join(self.logdir, f"{c.name}.log"), "ab") as logf:
            c.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env={"PATH": CLEAN_PATH},
                cwd="/",
                start_new_session=True,
            )
        self.agent.record_proc(c.proc.pid)
        with open(os.path.join(self.logdir, f"{c.name}.pid"), "w") as f:
            f.write(f"{c.proc.pid}\n")
        c.started_at = now()
        c.exit_code = None
        c.state = {"running": {"startedAt": c.started_at}}

    def finished(self, c: Ctr) -> None:
        assert c.proc is not None
        rc = c.proc.returncode
        code = 128 - rc if rc < 0 else rc
        c.exit_code = code
        c.proc = None
        c.ready = False
        c.state = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": c.started_at,
                "finishedAt": now(),
                "containerID": f"agent://{c.cid}",
            }
        }

    def run_to_end(self, c: Ctr) -> int:
        self.start(c)
        self.push()
        if c.proc is None:
            return c.exit_code or START_ERROR
        while c.proc.poll() is None:
            if self.deleting.wait(0.2):
                self.stop(c, self.grace)
        self.finished(c)
        self.push()
        return c.exit_code or 0

    def stop(self, c: Ctr, grace: float) -> None:
        """SIGTERM to the container's PID 1, SIGKILL after the grace period."""
        proc = c.proc
        if proc is None or proc.poll() is not None:
            return
        pid = container_pid1(proc.pid)
        if pid is not None and grace > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while proc.poll() is None and time.monotonic() < deadline and not self.gone.is_set():
                time.sleep(0.1)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def terminate(self) -> None:
        """Graceful termination: every running container gets SIGTERM, then SIGKILL."""
        threads = []
        for c in self.apps + self.inits:
            if c.proc is not None and c.proc.poll() is None:
                th = threading.Thread(target=self.stop, args=(c, self.grace), daemon=True)
                th.start()
                threads.append(th)
        for th in threads:
            th.join(self.grace + 15)
        self.terminated.set()

    def kill_all(self) -> None:
        for c in self.apps + self.inits:
            self.stop(c, 0.0)
            if c.proc is not None and c.proc.poll() is not None and "running" in c.state:
                self.finished(c)


# -- the agent -------------------------------------------------------------------------------


# -- the API server from inside a pod --------------------------------------------------------

# The `kubernetes` Service's ClusterIP (the first of the service range) and port, which every
# container finds in KUBERNETES_SERVICE_HOST/PORT (volumes.py).
API_SERVICE_IP = API_SERVICE_ENV["KUBERNETES_SERVICE_HOST"]
API_SERVICE_PORT = int(API_SERVICE_ENV["KUBERNETES_SERVICE_PORT"])
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _in_netns(netns: str, make: Callable[[], socket.socket]) -> socket.socket:
    """``make()`` run in the network namespace ``netns`` (a thread of its own, since setns
    moves only the calling thread); the socket it returns stays in that namespace."""
    out: list[socket.socket] = []
    errors: list[BaseException] = []

    def enter() -> None:
        try:
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns {netns}: {os.strerror(err)}")
            finally:
                os.close(fd)
            out.append(make())
        except BaseException as e:  # re-raised in the caller
            errors.append(e)

    thread = threading.Thread(target=enter, name=f"netns-{netns}")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return out[0]


class ApiProxy:
    """A route out to the API server for a pod: kube-proxy's old userspace mode, for the one
    Service a pod may need outside its cluster network. The API server listens on the host's
    127.0.0.1, which no pod network namespace reaches; so the agent listens inside the pod's
    namespace on the Service address (added to the pod's lo) and relays each connection,
    byte for byte (TLS end to end), to the API server from the host's namespace. The pod sees
    the API server's own certificate (its SANs include 10.96.0.1) and authenticates as itself."""

    def __init__(self, server: str) -> None:
        parsed = urllib.parse.urlsplit(server)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 443)
        self.listeners: dict[str, socket.socket] = {}
        self.lock = threading.Lock()

    def open(self, netns: str) -> None:
        run(["ip", "-n", netns, "addr", "add", f"{API_SERVICE_IP}/32", "dev", "lo"], check=False)

        def listen() -> socket.socket:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((API_SERVICE_IP, API_SERVICE_PORT))
            sock.listen(16)
            return sock

        sock = _in_netns(netns, listen)
        with self.lock:
            self.listeners[netns] = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def close(self, netns: str) -> None:
        with self.lock:
            sock = self.listeners.pop(netns, None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed with its pod
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError as e:
                log(f"api proxy: cannot reach the API server: {e}")
                conn.close()
                continue
            upstream.settimeout(None)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
            with contextlib.suppress(OSError):
                src.close()


class Agent:
    def __init__(self, args: argparse.Namespace) -> None:
        self.api = Api(args.server, args.ca, args.cert, args.key)
        self.api_proxy = ApiProxy(args.server)
        self.node = args.node
        self.index = args.index
        self.prefix = args.flux_prefix
        self.state = os.path.abspath(args.state)
        self.scratch = os.path.join(self.state, "scratch")
        self.node_ip = f"{NET}.{self.index}.1"
        self.pods: dict[str, PodRun] = {}
        self.lock = threading.Lock()
        self.free = list(range(10, LB_FIRST))
        self.stop = threading.Event()
        self.record_path = os.path.join(RUN_DIR, f"agent-{self.index}.json")
        self.record: dict[str, Any] = {"pid": os.getpid(), "netns": [], "veths": [], "procs": []}
        self.cache: dict[tuple[str, str, str], tuple[float, Any]] = {}
        self.lbs: dict[str, str] = {}  # service ns/name -> address
        self.applied_filter: dict[str, str] = {}
        self.applied_nat: dict[str, str] = {}
        self.hosts_written: dict[str, str] = {}
        self.services: list[dict[str, Any]] = []
        self.policies: list[dict[str, Any]] = []
        self.ns_labels: dict[str, dict[str, str]] = {}
        self.net_lock = threading.RLock()
        self.lb_hop_netns: str | None = None

    # -- bookkeeping for --cleanup ----------------------------------------------------------
    def save(self) -> None:
        os.makedirs(RUN_DIR, exist_ok=True)
        tmp = self.record_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.record, f)
        os.replace(tmp, self.record_path)

    def record_proc(self, pid: int) -> None:
        with self.lock:
            self.record["procs"].append(pid)
            self.save()

    # -- API helpers ----------------------------------------------------------------------
    def get_object(self, kind: str, ns: str, name: str) -> dict[str, Any] | None:
        obj = self.api.get(f"/api/v1/namespaces/{ns}/{KIND_PATHS[kind]}/{name}")
        return dict(obj) if obj else None

    def token(self, ns: str, sa: str, audience: str | None, seconds: int) -> str:
        body: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": max(seconds, 600)},
        }
        if audience:
            body["spec"]["audiences"] = [audience]
        out = self.api.call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token", body)
        return str(out["status"]["token"])

    # -- node ------------------------------------------------------------------------------
    def register(self) -> None:
        res = {"cpu": "32", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node,
                "labels": {
                    "type": "agent",
                    "kubernetes.io/hostname": self.node,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                },
            },
            "spec": {},
        }
        with contextlib.suppress(ApiError):
            self.api.call("POST", "/api/v1/nodes", node)
        self.api.merge(
            f"/api/v1/nodes/{self.node}/status",
            {"status": {"capacity": res, "allocatable": res, **self.node_status()}},
        )

    def node_status(self) -> dict[str, Any]:
        stamp = now()
        return {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "e2e node agent is posting ready status",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": self.node_ip},
                {"type": "Hostname", "address": self.node},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.36.3-agent",
                "containerRuntimeVersion": "agent://1",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "kernelVersion": os.uname().release,
                "osImage": "host root",
                "kubeProxyVersion": "",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }

    def heartbeat(self) -> None:
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node}"
        while not self.stop.wait(HEARTBEAT_S):
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            try:
                if self.api.get(lease_path) is None:
                    self.api.call(
                        "POST",
                        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                        {
                            "apiVersion": "coordination.k8s.io/v1",
                            "kind": "Lease",
                            "metadata": {"name": self.node},
                            "spec": {
                                "holderIdentity": self.node,
                                "leaseDurationSeconds": 40,
                                "renewTime": stamp,
                            },
                        },
                    )
                else:
                    self.api.merge(lease_path, {"spec": {"renewTime": stamp}})
                self.api.merge(
                    f"/api/v1/nodes/{self.node}/status",
                    {"status": {"conditions": self.node_status()["conditions"]}},
                )
            except (ApiError, OSError) as e:
                log(f"heartbeat failed: {e}")

    # -- network ---------------------------------------------------------------------------
    def setup_bridge(self) -> None:
        links = run(["ip", "-o", "link"], check=False)
        if not re.search(rf"^\d+: {BRIDGE}[:@]", links, re.M):
            subprocess.run(
                ["ip", "link", "add", BRIDGE, "type", "bridge"],
                capture_output=True,
                env={"PATH": CLEAN_PATH},
            )
            write_sys(f"/proc/sys/net/ipv6/conf/{BRIDGE}/disable_ipv6", "1")
        run(["ip", "link", "set", BRIDGE, "up"])

    def sandbox(self, p: PodRun) -> None:
        with self.lock:
            if not self.free:
                raise RuntimeError("no free pod address on this node")
            p.slot = self.free.pop(0)
            p.netns = f"fa{self.index}p{p.slot}"
            p.veth = f"fav{self.index}p{p.slot}"
            ip = f"{NET}.{self.index}.{p.slot}"
            self.record["netns"].append(p.netns)
            self.record["veths"].append(p.veth)
            self.save()
        ns, veth = p.netns, p.veth
        run(["ip", "netns", "add", ns])
        etc = f"/etc/netns/{ns}"
        os.makedirs(etc, exist_ok=True)
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        write_sys(f"/proc/sys/net/ipv6/conf/{veth}/disable_ipv6", "1")
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1"])
        run(["ip", "link", "set", veth, "master", BRIDGE])
        run(["ip", "link", "set", veth, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{ip}/16", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # Service IPs leave through eth0 (a DNAT in the pod's netns picks the endpoint).
        run(["ip", "-n", ns, "route", "add", self.service_cidr, "dev", "eth0"], check=False)
        # The API server, through the agent (ApiProxy): pods have no other route out.
        self.api_proxy.open(ns)
        with open(f"{etc}/resolv.conf", "w") as f:
            f.write(
                "# e2e node agent: no DNS server; names resolve through /etc/hosts only.\n"
                f"search {p.ns}.{SEARCH}\nnameserver 127.0.0.1\n"
                "options ndots:5 timeout:1 attempts:1\n"
            )
        with open(f"{etc}/hosts", "w") as f:
            f.write(HOSTS_MARKER + "\n")
        p.ip = ip  # the sandbox is complete: from now on the network sync includes the pod
        with self.net_lock:
            self.refresh_services()
            self.sync_network()

    def release(self, p: PodRun) -> None:
        if not p.netns:
            return
        with self.net_lock:
            for key in [k for k in self.applied_filter if k.startswith(p.netns + "/")]:
                del self.applied_filter[key]
            self.applied_filter.pop(p.netns, None)
            self.applied_nat.pop(p.netns, None)
            self.hosts_written.pop(p.netns, None)
            ip = p.ip
            p.ip = None
            self.api_proxy.close(p.netns)
            teardown([p.netns], [p.veth])
        with self.lock:
            if p.slot is not None:
                self.free.append(p.slot)
            with contextlib.suppress(ValueError):
                self.record["netns"].remove(p.netns)
                self.record["veths"].remove(p.veth)
            self.save()
        log(f"{p.ns}/{p.name}: sandbox {p.netns} ({ip}) removed")

    @property
    def service_cidr(self) -> str:
        return "10.96.0.0/16"

    def refresh_services(self) -> None:
        try:
            self.services = list(self.api.call("GET", "/api/v1/services")["items"])
            self.policies = list(
                self.api.call("GET", "/apis/networking.k8s.io/v1/networkpolicies")["items"]
            )
            self.ns_labels = {
                n["metadata"]["name"]: dict(n["metadata"].get("labels") or {})
                for n in self.api.call("GET", "/api/v1/namespaces")["items"]
            }
        except (ApiError, OSError) as e:
            log(f"listing services/policies failed: {e}")

    def live(self) -> list[PodRun]:
        with self.lock:
            return [p for p in self.pods.values() if p.ip]

    def endpoints(self, svc: dict[str, Any], pods: list[PodRun]) -> list[PodRun]:
        spec = svc.get("spec") or {}
        sel = spec.get("selector")
        if not sel:
            return []
        out = []
        for p in pods:
            if p.ns != svc["metadata"]["namespace"] or p.deleting.is_set():
                continue
            if all(p.labels.get(k) == str(v) for k, v in sel.items()) and (
                p.ready or spec.get("publishNotReadyAddresses")
            ):
                out.append(p)
        return sorted(out, key=lambda q: q.name)

    def sync_network(self) -> None:  # noqa: C901
        """DNS files, Service DNATs, LoadBalancer addresses and NetworkPolicy, for every pod."""
        pods = self.live()
        records: dict[str, list[tuple[str, list[str]]]] = {}  # namespace of the record -> lines
        for p in pods:
            sub = p.spec.get("subdomain")
            if not sub or not p.fqdn:
                continue
            svc = next(
                (
                    s
                    for s in self.services
                    if s["metadata"]["namespace"] == p.ns
                    and s["metadata"]["name"] == sub
                    and (s.get("spec") or {}).get("clusterIP") == "None"
                ),
                None,
            )
            if svc is None or p not in self.endpoints(svc, pods):
                continue
            h = p.hostname
            records.setdefault(p.ns, []).append(
                (p.ip or "", [p.fqdn, f"{h}.{sub}", f"{h}.{sub}.{p.ns}", f"{h}.{sub}.{p.ns}.svc"])
            )
        svc_names: dict[str, list[tuple[str, list[str]]]] = {}
        nat: dict[str, list[str]] = {p.netns: [] for p in pods}
        for s in self.services:
            ns, name = s["metadata"]["namespace"], s["metadata"]["name"]
            spec = s.get("spec") or {}
            names = [f"{name}.{ns}.svc.cluster.local", name, f"{name}.{ns}", f"{name}.{ns}.svc"]
            eps = self.endpoints(s, pods)
            cip = spec.get("clusterIP")
            if cip == "None":
                for q in eps:
                    svc_names.setdefault(ns, []).append((q.ip or "", names))
                continue
            if cip:
                svc_names.setdefault(ns, []).append((cip, names))
                if eps:
                    for port in spec.get("ports") or []:
                        tp = port.get("targetPort", port["port"])
                        tp = tp if isinstance(tp, int) else port["port"]
                        pr = str(port.get("protocol", "TCP")).lower()
                        for p in pods:
                            nat[p.netns].append(
                                f"-A OUTPUT -d {cip}/32 -p {pr} -m {pr} --dport {port['port']} "
                                f"-j DNAT --to-destination {eps[0].ip}:{tp}"
                            )
            if spec.get("type") == "LoadBalancer":
                addr = self.lb_address(s)
                annotations = s["metadata"].get("annotations") or {}
                rewrite = annotations.get(LB_SOURCE_ANNOTATION) == "rewrite"
                if eps and addr:
                    # keeping the source: the pod holds the address; rewriting it: the hop does
                    where = self.lb_hop() if rewrite else eps[0].netns
                    for port in spec.get("ports") or []:
                        tp = port.get("targetPort", port["port"])
                        tp = tp if isinstance(tp, int) else port["port"]
                        pr = str(port.get("protocol", "TCP")).lower()
                        nat.setdefault(where, []).append(
                            f"-A PREROUTING -d {addr}/32 -p {pr} -m {pr} --dport {port['port']} "
                            f"-j DNAT --to-destination {eps[0].ip}:{tp}"
                        )
                        nat[where].append(
                            f"-A POSTROUTING -d {eps[0].ip}/32 -p {pr} -m {pr} --dport {tp} "
                            f"-m conntrack --ctorigdst {addr} -j SNAT --to-source {addr}"
                            if rewrite
                            else f"-A OUTPUT -d {addr}/32 -p {pr} -m {pr} --dport {port['port']} "
                            f"-j DNAT --to-destination {eps[0].ip}:{tp}"
                        )
                    nat[where].append(f"# alias {addr}")
        for p in pods:
            self.write_hosts(p, records, svc_names)
            self.apply_nat(p.netns, nat[p.netns])
            rules = compile_policies(p, pods, self.policies, self.ns_labels)
            text = rules or OPEN_FILTER
            if self.applied_filter.get(p.netns) != text:
                run(["ip", "netns", "exec", p.netns, "iptables-restore"], input=text)
                self.applied_filter[p.netns] = text
        if self.lb_hop_netns is not None:
            self.apply_nat(self.lb_hop_netns, nat.get(self.lb_hop_netns, []))

    def lb_hop(self) -> str:
        """The netns of the load balancer that rewrites the source, made on first use: on the
        shared network at 10.253.K.254, forwarding between clients and the endpoint pods."""
        if self.lb_hop_netns is not None:
            return self.lb_hop_netns
        ns, veth = f"fa{self.index}lb", f"fav{self.index}lb"
        with self.lock:
            self.record["netns"].append(ns)
            self.record["veths"].append(veth)
            self.save()
        run(["ip", "netns", "add", ns])
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        write_sys(f"/proc/sys/net/ipv6/conf/{veth}/disable_ipv6", "1")
        run(["ip", "link", "set", veth, "master", BRIDGE])
        run(["ip", "link", "set", veth, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{NET}.{self.index}.{LB_HOP}/16", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        # a hop that forwards back out of eth0 must not tell clients to go round it
        for conf in ("all", "eth0"):
            run(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    f"net.ipv4.conf.{conf}.send_redirects=0",
                ]
            )
        log(f"load balancer hop {ns} ({NET}.{self.index}.{LB_HOP}): rewrites the source")
        self.lb_hop_netns = ns
        return ns

    def apply_nat(self, netns: str, lines: list[str]) -> None:
        aliases = [x.split()[-1] for x in lines if x.startswith("# alias")]
        rules = [x for x in lines if not x.startswith("#")]
        text = "\n".join(
            ["*nat", ":PREROUTING ACCEPT [0:0]", ":INPUT ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]",
             ":POSTROUTING ACCEPT [0:0]", *rules, "COMMIT", ""]
        )  # fmt: skip
        key = text + "|" + ",".join(aliases)
        if self.applied_nat.get(netns) == key:
            return
        old = self.applied_nat.get(netns, "")
        old_aliases = old.split("|", 1)[1].split(",") if "|" in old else []
        for a in old_aliases:
            if a and a not in aliases:
                run(["ip", "-n", netns, "addr", "del", f"{a}/32", "dev", "eth0"], check=False)
        for a in aliases:
            if a not in old_aliases:
                run(["ip", "-n", netns, "addr", "add", f"{a}/32", "dev", "eth0"], check=False)
        run(["ip", "netns", "exec", netns, "iptables-restore"], input=text)
        self.applied_nat[netns] = key

    def lb_address(self, s: dict[str, Any]) -> str | None:
        key = f"{s['metadata']['namespace']}/{s['metadata']['name']}"
        ingress = ((s.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        have = ingress[0].get("ip") if ingress else None
        if have and have.startswith(f"{NET}.{self.index}."):
            self.lbs[key] = have
            return str(have)
        if key not in self.lbs:
            used = set(self.lbs.values())
            m = next(m for m in range(LB_FIRST, LB_HOP) if f"{NET}.{self.index}.{m}" not in used)
            self.lbs[key] = f"{NET}.{self.index}.{m}"
        addr = self.lbs[key]
        try:
            self.api.merge(
                f"/api/v1/namespaces/{s['metadata']['namespace']}/services/"
                f"{s['metadata']['name']}/status",
                {"status": {"loadBalancer": {"ingress": [{"ip": addr}]}}},
            )
            log(f"LoadBalancer {key}: {addr}")
        except (ApiError, OSError) as e:
            log(f"LoadBalancer {key}: status update failed: {e}")
        return addr

    def write_hosts(
        self,
        p: PodRun,
        records: dict[str, list[tuple[str, list[str]]]],
        services: dict[str, list[tuple[str, list[str]]]],
    ) -> None:
        own = [p.fqdn, p.hostname] if p.fqdn and p.kernel_hostname == p.hostname else None
        own = own or ([p.fqdn] if p.fqdn else [p.hostname])
        lines = [
            f"{HOSTS_MARKER} for pod {p.ns}/{p.name}",
            "127.0.0.1\tlocalhost",
            "::1\tlocalhost ip6-localhost ip6-loopback",
            f"{p.ip}\t{' '.join(own)}",
        ]
        for a in p.spec.get("hostAliases") or []:
            if a.get("ip") and a.get("hostnames"):
                lines.append(f"{a['ip']}\t{' '.join(a['hostnames'])}")
        # Names through the search path: the short forms only from the record's own namespace.
        for table in (records, services):
            for ns, entries in sorted(table.items()):
                for ip, names in entries:
                    if ip == p.ip and names[0] == p.fqdn:
                        continue
                    shown = names if ns == p.ns else [names[0]]
                    lines.append(f"{ip}\t{' '.join(shown)}")
        text = "\n".join(lines) + "\n"
        if self.hosts_written.get(p.netns) == text:
            return
        # In place (the same inode): the containers' bind mounts see the change.
        with open(f"/etc/netns/{p.netns}/hosts", "r+") as f:
            f.write(text)
            f.truncate()
        self.hosts_written[p.netns] = text

    # -- the loop --------------------------------------------------------------------------
    def sync_pods(self) -> None:
        sel = urllib.parse.quote(f"spec.nodeName={self.node}")
        items = self.api.call("GET", f"/api/v1/pods?fieldSelector={sel}")["items"]
        seen = set()
        for pod in items:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            with self.lock:
                run_ = self.pods.get(uid)
            phase = (pod.get("status") or {}).get("phase")
            if run_ is None:
                if phase in ("Succeeded", "Failed"):
                    continue
                if pod["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(ApiError, OSError):
                        self.api.call(
                            "DELETE",
                            f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods/"
                            f"{pod['metadata']['name']}",
                            {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
                        )
                    continue
                run_ = PodRun(self, pod)
                with self.lock:
                    self.pods[uid] = run_
                log(f"{run_.ns}/{run_.name}: starting")
                run_.thread.start()
            elif pod["metadata"].get("deletionTimestamp") and not run_.deleting.is_set():
                grace = pod["metadata"].get("deletionGracePeriodSeconds")
                run_.grace = float(30 if grace is None else grace)
                log(f"{run_.ns}/{run_.name}: deleted, terminating (grace {run_.grace:g}s)")
                threading.Thread(target=self._terminate, args=(run_,), daemon=True).start()
            elif run_.done.is_set() and pod["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(ApiError, OSError):
                    self.api.call(
                        "DELETE",
                        f"/api/v1/namespaces/{run_.ns}/pods/{run_.name}",
                        {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
                    )
        with self.lock:
            vanished = [r for u, r in self.pods.items() if u not in seen]
            for r in vanished:
                if r.done.is_set():
                    del self.pods[r.uid]
        for r in vanished:
            if not r.done.is_set() and not r.gone.is_set():
                log(f"{r.ns}/{r.name}: gone from the API server, killing")
                r.gone.set()
                r.deleting.set()

    def _terminate(self, r: PodRun) -> None:
        r.deleting.set()
        r.terminate()

    def run(self) -> int:
        os.makedirs(self.scratch, exist_ok=True)
        self.save()
        self.setup_bridge()
        self.register()
        threading.Thread(target=self.heartbeat, daemon=True).start()
        log(f"node {self.node} registered; pods on {NET}.{self.index}.0/24")
        last_net = 0.0
        while not self.stop.is_set():
            try:
                self.sync_pods()
                if time.monotonic() - last_net > 1.0:
                    with self.net_lock:
                        self.refresh_services()
                        self.sync_network()
                    last_net = time.monotonic()
                else:
                    with self.net_lock:
                        self.sync_network()
            except (ApiError, OSError, RuntimeError) as e:
                log(f"sync failed: {e}")
            self.stop.wait(SYNC_S)
        return 0

    def shutdown(self) -> None:
        self.stop.set()
        with self.lock:
            runs = list(self.pods.values())
        for r in runs:
            r.gone.set()
            r.deleting.set()
        for r in runs:
            r.done.wait(15)
        cleanup_record(self.record_path)


def teardown(netns: list[str], veths: list[str]) -> None:
    for ns in netns:
        for _ in range(50):
            pids = [int(x) for x in run(["ip", "netns", "pids", ns], check=False).split()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
    for v in veths:
        run(["ip", "link", "del", v], check=False)
    for ns in netns:
        run(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)


def cleanup_record(path: str) -> None:
    """Undo what the agent recorded: processes, netns, veths; the bridge when no agent is left."""
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        rec = {}
    for pid in rec.get("procs", []):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    teardown(rec.get("netns", []), rec.get("veths", []))
    with contextlib.suppress(OSError):
        os.unlink(path)
    others = (
        [f for f in os.listdir(RUN_DIR) if f.endswith(".json")] if os.path.isdir(RUN_DIR) else []
    )
    if not others:
        brif = f"/sys/class/net/{BRIDGE}/brif"
        if os.path.isdir(brif) and not os.listdir(brif):
            run(["ip", "link", "del", BRIDGE], check=False)
        with contextlib.suppress(OSError):
            os.rmdir("/etc/netns")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--server")
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--node")
    ap.add_argument("--index", type=int)
    ap.add_argument("--flux-prefix")
    ap.add_argument("--state")
    ap.add_argument("--cleanup", type=int, metavar="K")
    args = ap.parse_args(argv)
    if args.cleanup is not None:
        cleanup_record(os.path.join(RUN_DIR, f"agent-{args.cleanup}.json"))
        return 0
    agent = Agent(args)

    def on_signal(signum: int, _frame: Any) -> None:
        agent.stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        return agent.run()
    finally:
        agent.shutdown()


if __name__ == "__main__":
    sys.exit(main())
