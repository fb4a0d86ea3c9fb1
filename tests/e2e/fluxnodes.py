"""Control planes whose pods run for real: a ControlPlane without kwok nodes, plus the node agent
(nodeagent/agent.py, a stand-in kubelet) on a Node of its own. What the agent runs is the Flux
prefix the toolchain built (bin/flux links into it), as every pod's flux view.

``FluxPlane`` starts both and stops both (the agent removes its network namespaces, veths and
processes; ``agent.py --cleanup K`` runs after it in any case, so a crashed agent leaves nothing).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kube import condition, wait_until
from stackrun import PREFIX, Engine, Stack, new_certificate

E2E = Path(__file__).resolve().parent
AGENT = E2E / "nodeagent" / "agent.py"
RUN_DIR = Path("/run/flux-minicluster-agent")
PREFIX_ENV = "FLUX_MINICLUSTER_FLUX_PREFIX"
# Rank 0's count of brokers that are up, asked of its own instance (its local socket).
UP_BROKERS = (
    "sock=$(find /mnt/flux -maxdepth 5 -type s -name local | head -1); "
    'flux=$(find /mnt/flux -maxdepth 4 -type f -path "*/bin/flux" | head -1); '
    '"$flux" proxy "local://$sock" "$flux" resource list -s up -no {nnodes}'
)
JOB_DEADLINE_S = 180  # what a run may take before its Job fails (they take 10 to 25 s here)
# every namespace of the target, its root and working directory; the target's pid follows
NSENTER = ["nsenter", "-m", "-u", "-i", "-n", "-p", "-r", "-w", "-t"]


def flux_prefix(bindir: Path) -> Path | None:
    """The Flux prefix: $FLUX_MINICLUSTER_FLUX_PREFIX, else the one bin/flux links into."""
    explicit = os.environ.get(PREFIX_ENV)
    if explicit:
        return Path(explicit)
    link = bindir / "flux"
    if not link.exists():
        return None
    return link.resolve().parent.parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_index() -> int:
    """A free agent number (its pod subnet 10.253.K.0/24); a dead agent's leftovers are removed."""
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    with (RUN_DIR / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for k in range(1, 200):
            rec = RUN_DIR / f"agent-{k}.json"
            claim = RUN_DIR / f"agent-{k}.claim"
            if claim.exists():
                try:
                    pid = int(claim.read_text())
                except ValueError:
                    pid = 0
                if pid and _alive(pid):
                    continue
                subprocess.run([sys.executable, str(AGENT), "--cleanup", str(k)], check=False)
                claim.unlink(missing_ok=True)
            elif rec.exists():
                subprocess.run([sys.executable, str(AGENT), "--cleanup", str(k)], check=False)
            claim.write_text(str(os.getpid()))
            return k
    raise RuntimeError("no free node agent number")


class NodeAgent:
    def __init__(self, cp: ControlPlane, prefix: Path, name: str) -> None:
        self.cp = cp
        self.prefix = prefix
        self.node = name
        self.index = claim_index()
        self.state = cp.workdir / "agent"
        self.proc: subprocess.Popen[bytes] | None = None
        self.logfile = cp.workdir / "logs" / "agent.log"

    def start(self, timeout: float = 60) -> NodeAgent:
        pki = self.cp.workdir / "pki"
        self.state.mkdir(parents=True, exist_ok=True)
        with self.logfile.open("ab") as logf:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    str(AGENT),
                    f"--server={self.cp.server}",
                    f"--ca={pki / 'ca.crt'}",
                    f"--cert={pki / 'admin.crt'}",
                    f"--key={pki / 'admin.key'}",
                    f"--node={self.node}",
                    f"--index={self.index}",
                    f"--flux-prefix={self.prefix}",
                    f"--state={self.state}",
                ],
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"node agent exited {self.proc.returncode}:\n{self.log()}")
            node = self.cp.get(f"/api/v1/nodes/{self.node}")
            return (
                bool(node) and condition(node, "Ready") == "True" and not node["spec"].get("taints")
            )

        wait_until(f"node {self.node} Ready and untainted", ready, timeout=timeout)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        subprocess.run(
            [sys.executable, str(AGENT), "--cleanup", str(self.index)], check=False, timeout=120
        )
        (RUN_DIR / f"agent-{self.index}.claim").unlink(missing_ok=True)

    def log(self, lines: int = 60) -> str:
        try:
            text = self.logfile.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def container_log(self, namespace: str, pod: str, container: str) -> str:
        """What a container printed, across its restarts (``kubectl logs`` has no kubelet API
        here: the agent keeps the logs under its state directory)."""
        path = self.state / "logs" / f"{namespace}_{pod}" / f"{container}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def exec(self, namespace: str, pod: str, container: str, script: str) -> str:
        """``sh -c script`` inside a running container (its namespaces and root), as root: what
        ``kubectl exec`` would do. Its output; an AssertionError when it fails."""
        return self._enter(namespace, pod, container, NSENTER, ["/bin/sh", "-c", script])

    def in_pod_network(self, namespace: str, pod: str, container: str, *args: str) -> str:
        """``args`` run with the host's tools in the pod's network namespace only (what a node
        administrator sees of a pod's network: ``iptables``, ``ip``). Its output."""
        return self._enter(namespace, pod, container, ["nsenter", "-n", "-t"], list(args))

    def _enter(
        self, namespace: str, pod: str, container: str, nsenter: list[str], args: list[str]
    ) -> str:
        pidfile = self.state / "logs" / f"{namespace}_{pod}" / f"{container}.pid"
        assert pidfile.exists(), f"container {container} of {pod} has not started"
        unshare = int(pidfile.read_text())
        children = Path(f"/proc/{unshare}/task/{unshare}/children").read_text().split()
        assert children, f"container {container} of {pod} is not running"
        proc = subprocess.run(
            [*nsenter, children[0], *args], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, f"exec in {pod}: {proc.stdout}{proc.stderr}"
        return proc.stdout


class FluxPlane:
    """A control plane with no kwok node and one node agent."""

    def __init__(self, bindir: Path, prefix: Path, name: str) -> None:
        self.cp = ControlPlane(bindir, name=name, nodes=0)
        self.prefix = prefix
        self.name = name
        self.agent: NodeAgent | None = None

    def start(self) -> FluxPlane:
        try:
            self.cp.start()
            self.agent = NodeAgent(self.cp, self.prefix, f"agent-{self.name}").start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.stop()
        self.cp.stop()

    def __enter__(self) -> FluxPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- reading what ran ----------------------------------------------------------------
    def pods(self, namespace: str, job: str) -> list[Any]:
        return self.cp.items(f"/api/v1/namespaces/{namespace}/pods", f"job-name={job}")

    def rank_pod(self, namespace: str, job: str, index: int = 0, phase: str | None = None) -> Any:
        pods = [
            p
            for p in self.pods(namespace, job)
            if p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index") == str(index)
            and (phase is None or p["status"].get("phase") == phase)
        ]
        return pods[-1] if pods else None

    def rank_log(self, namespace: str, job: str, index: int = 0) -> str:
        pod = self.rank_pod(namespace, job, index, "Succeeded") or self.rank_pod(
            namespace, job, index
        )
        assert pod is not None, f"no pod of index {index} of Job {namespace}/{job}"
        assert self.agent is not None
        return self.agent.container_log(namespace, pod["metadata"]["name"], job)

    def diagnostics(self, namespace: str, job: str) -> str:
        """The pods' phases and the logs of each container: what a failed scenario shows."""
        assert self.agent is not None
        out = []
        for p in self.pods(namespace, job):
            name = p["metadata"]["name"]
            statuses = p["status"].get("initContainerStatuses", []) + p["status"].get(
                "containerStatuses", []
            )
            out.append(f"--- pod {name}: {p['status'].get('phase')} {json.dumps(statuses)[:800]}")
            for c in p["spec"].get("initContainers", []) + p["spec"]["containers"]:
                text = self.agent.container_log(namespace, name, c["name"])
                out.append(f"----- {c['name']}:\n" + "\n".join(text.splitlines()[-25:]))
        out.append(f"--- agent:\n{self.agent.log(40)}")
        return "\n".join(out)


def expand_hostlist(hostlist: str) -> list[str]:
    """The hosts of a Flux hostlist (``flux-root-[0-1],eks-burst-[0-1]``), as Flux prints it."""
    hosts = []
    for term in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist.strip()):
        match = re.fullmatch(r"([^\[]*)\[([\d,-]+)\]", term)
        if match is None:
            hosts.append(term)
            continue
        prefix, ranges = match.groups()
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            hosts += [f"{prefix}{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return hosts


def wait_job_complete(plane: FluxPlane, namespace: str, job: str, timeout: float = 180) -> Any:
    def done() -> Any:
        live = plane.cp.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{job}")
        if live and condition(live, "Failed") == "True":
            raise AssertionError(
                f"Job {job} failed: {live['status']}\n{plane.diagnostics(namespace, job)}"
            )
        return live if live and condition(live, "Complete") == "True" else None

    t0 = time.monotonic()
    try:
        return wait_until(f"Job {namespace}/{job} Complete", done, timeout=timeout)
    except AssertionError as e:
        if time.monotonic() - t0 >= timeout:
            raise AssertionError(f"{e}\n{plane.diagnostics(namespace, job)}") from None
        raise


def deploy(
    engine: Engine,
    project: Path,
    plane: FluxPlane,
    stack_name: str,
    namespace: str,
    spec: dict[str, Any],
    wait: str,
    *,
    create_namespace: bool = True,
    keygen: str | None = None,
    kube_version: str | None = None,
) -> Stack:
    """A stack of ``spec`` on ``plane``: its certificate from config, or, given a ``keygen``
    strategy, from the keygen Command (the real command provider); rendered for
    ``kube_version`` (``cluster.kubernetesVersion``) when one is given."""
    cp = plane.cp
    if not spec["spec"].get("interactive"):
        # a bound on a broken run: the Job fails (DeadlineExceeded) and `up` with it
        spec = {**spec, "spec": {"deadlineSeconds": JOB_DEADLINE_S, **spec["spec"]}}
    stack = engine.stack(
        project,
        stack_name,
        like="local",
        kubeconfig=cp.kubeconfig,
        context=cp.name,
        curve_cert=None if keygen else new_certificate(spec["metadata"]["name"]),
    )
    if keygen:
        stack.set(f"{PREFIX}:keygen.strategy", keygen)
    if kube_version:
        stack.set(f"{PREFIX}:cluster.kubernetesVersion", kube_version)
    stack.set(f"{PREFIX}:cluster.namespace", namespace)
    stack.set(f"{PREFIX}:cluster.createNamespace", "true" if create_namespace else "false")
    stack.set_object(f"{PREFIX}:minicluster", {"spec": spec, "wait": wait})
    return stack
