"""Real Kubernetes nodes for e2e: a control plane (tests/e2e/controlplane.py) with N nodes that
each run Debian's containerd and runc, the CNI bridge, the real kubelet, kube-proxy (iptables)
and kube-router's NetworkPolicy controller, with CoreDNS serving the cluster's DNS.

    with RealCluster(toolchain_bin, nodes_set, nodes=1) as rc:
        rc.kubectl("apply", "-f", "-", input=manifest)
        rc.kubectl("logs", "pod/x")

Layout of cluster number K (claimed under RUN_DIR, so several clusters, and several runs, can
live at once; a claim whose owner died is cleaned up by the next claim):

    host        bridge fmrnK, 10.250.K.1/24: the API server listens there (the control plane
                runs on the host, as a cloud's control plane runs beside its nodes)
    node I      network namespace fmrnKnI (its veth fmrnKvI on the bridge, eth0 10.250.K.(10+I)),
                containerd (own socket, root, state), kubelet (cgroupRoot /fmrn-K-I, created
                in every cgroup v1 hierarchy), kube-proxy, kube-router; pods on cni0,
                10.(100+K).I.0/24, routes to the other nodes' pod ranges via their eth0
    CoreDNS     a process in node 1's namespace on its eth0, behind the kube-dns Service
                (10.96.0.10, an EndpointSlice to that address)

What this machine needs, measured in the trial of ../shared/reference/real-node: cgroupfs on
cgroup v1 (`failCgroupV1: false`); no CAP_SYS_RESOURCE, so containerd must
`restrict_oom_score_adj` and kubelet and kube-proxy run at `oomScoreAdj: 0`; `nsenter --net`
(never `ip netns exec`, which remounts /sys and hides the cgroups). The kubelet sets
vm.overcommit_memory, vm.panic_on_oom, kernel.panic, kernel.panic_on_oops and the root key
quotas on the host, as it does on any node (`protectKernelDefaults: false`); their values are
saved before the first cluster and restored after the last.

stop() (and the cleanup of a dead owner's claim) removes everything: the pods through the
kubelet (CNI DEL), then every process it started and every process left in its cgroups, the
mounts under its directories, its cgroups, namespaces, the bridge, the control plane and the
work directory. Each step is best-effort and the next one runs whatever happened.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

E2E = Path(__file__).resolve().parents[1]
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from controlplane import (  # noqa: E402
    SERVICE_CIDR,
    ControlPlane,
    ControlPlaneError,
    _openssl,
    poll,
)

from realnode import loadbalancer  # noqa: E402

RUN_DIR = Path("/run/flux-minicluster-realnode")
CLUSTER_DNS = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"
KUBELET_PORT = 10250
KUBELET_HEALTHZ_PORT = 10248
COREDNS_READY_PORT = 8181
# The host's sysctls a kubelet sets (pkg/kubelet/cm/container_manager_linux.go), and the one the
# fabric sets: the host routes between the clusters' bridges (see RealCluster).
HOST_SYSCTLS = (
    "net/ipv4/ip_forward",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
MAX_CLUSTERS = 40
# How CoreDNS caches the cluster's own names: kubeadm's Corefile since Kubernetes 1.32 never
# does (kubernetes#128359); before, and in many managed clusters still, `cache 30` in front of
# the kubernetes plugin kept every answer, NXDOMAIN included, for the plugin's TTL (kubeadm's
# `ttl 30`; EKS's Corefile leaves the default, 5 s).
DNS_CACHES = {
    "kubeadm-1.32": (
        "ttl 30",
        f"disable success {CLUSTER_DOMAIN}\n        disable denial {CLUSTER_DOMAIN}",
    ),
    "kubeadm-1.31": ("ttl 30", ""),
    "eks": ("", ""),
}


class RealNodeError(RuntimeError):
    pass


def _run(*cmd: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RealNodeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc


def _start_time(pid: int) -> str | None:
    """The kernel's start time of a process (field 22 of /proc/PID/stat): with the pid, it names
    one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, started: str | None = None) -> bool:
    """Is the process running (a zombie is not) and still the one recorded?"""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and (started is None or fields[19] == started)


def _kill_all(procs: list[tuple[int, str | None]], grace: float) -> None:
    """SIGTERM every process still the one recorded, SIGKILL those left after ``grace`` s."""
    live = [(p, s) for p, s in procs if _alive(p, s)]
    for pid, _ in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p, s) for p, s in live):
        time.sleep(0.05)
    for pid, started in live:
        if _alive(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _v1_hierarchies() -> list[Path]:
    root = Path("/sys/fs/cgroup")
    return [h for h in sorted(root.iterdir()) if h.is_dir() and h.name != "unified"]


def _cgroup_dirs(name: str) -> list[Path]:
    """Every cgroup directory of a kubelet's cgroupRoot, in v1 and v2, deepest first."""
    found = []
    for h in sorted(Path("/sys/fs/cgroup").iterdir()):
        top = h / name
        if top.is_dir():
            found += [Path(d) for d, _, _ in os.walk(top)]
    return sorted(found, key=lambda p: -len(p.parts))


# -- claims: a cluster number per live cluster, its record for the cleanup -------------------------


def claim(owner: int) -> int:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    with (RUN_DIR / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # every cluster whose owner died goes first (a killed test run leaves them)
        for rec in sorted(RUN_DIR.glob("cluster-*.json")):
            record = json.loads(rec.read_text() or "{}")
            if not _alive(record.get("owner", 0), record.get("owner_started")):
                cleanup({**record, "k": int(rec.stem.split("-")[1])}, locked=True)
        for k in range(1, MAX_CLUSTERS + 1):
            rec = RUN_DIR / f"cluster-{k}.json"
            if rec.exists():
                continue
            _save_sysctls()  # the host's values before any kubelet (kept if saved before)
            rec.write_text(
                json.dumps({"k": k, "owner": owner, "owner_started": _start_time(owner)})
            )
            return k
    raise RealNodeError(f"no free real-node cluster number in {RUN_DIR}")


def _save_sysctls() -> None:
    saved = RUN_DIR / "sysctls.json"
    if not saved.exists():
        values = {k: Path("/proc/sys", k).read_text().strip() for k in HOST_SYSCTLS}
        saved.write_text(json.dumps(values))


def _restore_sysctls_if_last() -> None:
    saved = RUN_DIR / "sysctls.json"
    if any(RUN_DIR.glob("cluster-*.json")) or not saved.exists():
        return
    for key, value in json.loads(saved.read_text()).items():
        with contextlib.suppress(OSError):
            Path("/proc/sys", key).write_text(value)
    saved.unlink()


def cleanup(record: dict[str, Any], *, locked: bool = False) -> dict[str, float]:
    """Remove all that the record of a cluster whose owner died names (nothing else is known of
    it then): its nodes, its control plane's process groups, its files and its claim (``locked``:
    the caller holds the claims' lock)."""
    steps = teardown_nodes(record)
    if record.get("k"):
        loadbalancer.remove(int(record["k"]))
    for pid, started in record.get("procs", {}).get("control-plane", []):
        if _alive(pid, started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
    release(record, locked=locked)
    return steps


def release(record: dict[str, Any], *, locked: bool = False) -> None:
    """The files of a cluster, its claim, and the host's sysctls when it was the last, under
    the claims' lock (taken unless ``locked``): a cluster claimed meanwhile keeps the fabric's
    values."""
    for n in record.get("nodes", []):
        shutil.rmtree(n["run"], ignore_errors=True)
    if record.get("workdir"):
        shutil.rmtree(record["workdir"], ignore_errors=True)
    with contextlib.ExitStack() as held:
        if not locked:
            RUN_DIR.mkdir(parents=True, exist_ok=True)
            lock = held.enter_context((RUN_DIR / ".lock").open("a"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        if record.get("k"):
            (RUN_DIR / f"cluster-{record['k']}.json").unlink(missing_ok=True)
        _restore_sysctls_if_last()


def teardown_nodes(record: dict[str, Any]) -> dict[str, float]:
    """Stop a cluster's nodes and remove what they made: processes, what is left in their
    cgroups, mounts, cgroups, network namespaces and the bridge. Seconds at each step's end."""
    t0 = time.monotonic()
    steps: dict[str, float] = {}
    procs = record.get("procs", {})
    # the kubelets first (a kubelet left running would restart what we stop), the addons,
    # then containerd; then whatever is left in the nodes' cgroups (containers, shims)
    waves: list[list[tuple[int, str | None]]] = [[], [], []]
    for name, entry in procs.items():
        if name != "control-plane":
            wave = 0 if "kubelet" in name else 2 if "containerd" in name else 1
            waves[wave].append((entry[0], entry[1]))
    for wave in waves:
        _kill_all(wave, grace=3)
    steps["processes"] = time.monotonic() - t0
    for node in record.get("nodes", []):
        for _ in range(3):
            dirs = _cgroup_dirs(node["cgroup"])
            pids = set()
            for d in dirs:
                with contextlib.suppress(OSError):
                    pids |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            # the shims sit outside the pods' cgroups: found by the socket they were given
            pids |= _shims(node["run"])
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
    steps["leftovers"] = time.monotonic() - t0
    prefixes = [n["run"] for n in record.get("nodes", [])]
    if record.get("workdir"):
        prefixes.append(record["workdir"])
    _unmount_under(prefixes)
    steps["mounts"] = time.monotonic() - t0
    for node in record.get("nodes", []):
        for d in _cgroup_dirs(node["cgroup"]):
            with contextlib.suppress(OSError):
                d.rmdir()
    steps["cgroups"] = time.monotonic() - t0
    for ns in record.get("netns", []):
        _run("ip", "netns", "del", ns, check=False)
    if record.get("bridge"):
        _run("ip", "link", "del", record["bridge"], check=False)
    steps["network"] = time.monotonic() - t0
    return steps


def _shims(run: str) -> set[int]:
    """containerd-shim processes serving the containerd whose socket is under ``run``."""
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"containerd-shim-runc-v2")
            and any(a.startswith(run.encode()) for a in argv)
        ):
            found.add(int(proc.name))
    return found


def _unmount_under(prefixes: list[str]) -> None:
    for _ in range(3):
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].encode().decode("unicode_escape")
            if any(point == p or point.startswith(p.rstrip("/") + "/") for p in prefixes):
                mounts.append(point)
        if not mounts:
            return
        for point in sorted(set(mounts), key=lambda p: -len(p)):
            if _run("umount", point, check=False).returncode != 0:
                _run("umount", "-l", point, check=False)


# -- the cluster ---------------------------------------------------------------------------------


class RealCluster:
    """A control plane and ``nodes`` real nodes; see the module's docstring."""

    def __init__(
        self,
        bindir: Path,
        nodes_dir: Path,
        *,
        nodes: int = 1,
        name: str = "rn",
        workdir: Path | None = None,
        node_disk: str = "3g",
        images: tuple[str, ...] = ("pause.tar", "debian.tar"),
        dns_cache: str = "kubeadm-1.32",
        dns_log: bool = False,
        reserved_cpus: str | None = None,
    ) -> None:
        self.bindir = Path(bindir)  # the toolchain: control plane
        self.nodes_dir = Path(nodes_dir)  # realnode/toolchain.py's set: bin/, images/
        self.n = nodes
        self.name = name
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"realnode-{name}-"))
        self.k = 0
        self.cp: ControlPlane | None = None
        self.record: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self.started_at = 0.0  # time.monotonic() when start() began
        self.teardown_steps: dict[str, float] = {}
        self.node_names: list[str] = []
        self.node_disk = node_disk
        self.images = images  # the archives of nodes_dir/images each node imports
        if dns_cache not in DNS_CACHES:
            raise ValueError(f"dns_cache must be one of {sorted(DNS_CACHES)}, not {dns_cache!r}")
        self.dns_cache = dns_cache
        self.dns_log = dns_log  # CoreDNS logs every query of the cluster's zone
        # the kubelets run the static CPU manager, keeping these cores for the system: a
        # Guaranteed pod asking for whole CPUs gets cores of its own (a cpuset) from the rest
        self.reserved_cpus = reserved_cpus
        self._popen: dict[str, subprocess.Popen[bytes]] = {}
        self.load_balancers: loadbalancer.LoadBalancers | None = None

    # addresses of cluster k
    @property
    def gateway(self) -> str:
        return f"10.250.{self.k}.1"

    def node_ip(self, i: int) -> str:
        return f"10.250.{self.k}.{10 + i}"

    @property
    def pod_cidr(self) -> str:
        return f"10.{100 + self.k}.0.0/16"

    def node_pod_subnet(self, i: int) -> str:
        return f"10.{100 + self.k}.{i}"

    def __enter__(self) -> RealCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- start ---------------------------------------------------------------------------------

    def start(self) -> RealCluster:
        t0 = self.started_at = time.monotonic()
        self.k = claim(os.getpid())
        self.record = {
            "k": self.k,
            "owner": os.getpid(),
            "owner_started": _start_time(os.getpid()),
            "workdir": str(self.workdir),
            "bridge": f"fmrn{self.k}",
            "netns": [],
            "nodes": [],
            "procs": {},
        }
        _LIVE.append(self)
        try:
            self._save()
            self._start(t0)
        except BaseException:
            self.stop()
            raise
        return self

    def _save(self) -> None:
        (RUN_DIR / f"cluster-{self.k}.json").write_text(json.dumps(self.record))

    def _start(self, t0: float) -> None:
        br = self.record["bridge"]
        _run("ip", "link", "add", br, "type", "bridge")
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", br)
        _run("ip", "link", "set", br, "up")
        # the fabric: the host routes between the clusters' bridges and to every pod range
        Path("/proc/sys/net/ipv4/ip_forward").write_text("1")
        self.cp = ControlPlane(
            self.bindir,
            name=f"{self.name}{self.k}",
            nodes=0,
            workdir=self.workdir / "cp",
            address=self.gateway,
        )
        self.cp.start()
        self.record["procs"]["control-plane"] = [
            [p.pid, _start_time(p.pid)] for p in self.cp.procs.values()
        ]
        self._save()
        self.timings["control plane"] = time.monotonic() - t0
        # The nodes' disks (containerd's content and snapshots, the kubelet's pods) in memory of
        # their own: an image imports without writing the VM's disk, and the teardown frees it
        # at once (one unmount) instead of deleting tens of thousands of files.
        disk = self.workdir / "nodes"
        disk.mkdir(parents=True, exist_ok=True)
        _run("mount", "-t", "tmpfs", "-o", f"size={self.node_disk},mode=0755", "tmpfs", str(disk))
        for i in range(1, self.n + 1):
            self._start_node(i)
        self.timings["nodes started"] = time.monotonic() - t0
        self._start_coredns()
        self.wait_for(
            "every node Ready",
            lambda: all(self._node_ready(n) for n in self.node_names),
            timeout=90,
        )
        self.timings["nodes Ready"] = time.monotonic() - t0
        # kube-router rewrites the whole filter table (save, change, restore): started while
        # kube-proxy makes its first rules, it can drop the chain kube-proxy is about to jump to,
        # and kube-proxy's retry then meets the next restore. So each node's kube-proxy has the
        # cluster DNS Service's rules first, and kube-router's periodic sync runs out of phase
        # with kube-proxy's (policies are enforced on their own events either way).
        self.wait_for(
            "kube-proxy's rules for the cluster DNS Service on every node",
            lambda: all(self._proxies_dns(node) for node in self.record["nodes"]),
            timeout=60,
        )
        self.timings["Services proxied"] = time.monotonic() - t0
        # kube-router finds its node by name at start: only once the kubelet registered it
        for node in self.record["nodes"]:
            self._start_kube_router(self.workdir / "nodes" / node["name"], node)
        self.wait_for("CoreDNS ready", self._coredns_ready, timeout=60)
        self.wait_for(
            "kube-proxy's rules kept beside kube-router's",
            lambda: all(self._proxies_dns(node) for node in self.record["nodes"]),
            timeout=60,
        )
        self.timings["CoreDNS ready"] = time.monotonic() - t0
        self.load_balancers = loadbalancer.LoadBalancers(self).start()
        self.wait_for(
            "ServiceAccount default/default",
            lambda: self.cp and self.cp.get("/api/v1/namespaces/default/serviceaccounts/default"),
        )

    def _spawn(self, key: str, netns: str, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as fh:
            proc = subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{netns}", *argv],
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        # nsenter without --fork execs the program: the pid is the program's
        self.record["procs"][key] = [proc.pid, _start_time(proc.pid)]
        self._save()
        self._popen[key] = proc
        return proc

    def _start_node(self, i: int) -> None:
        name = f"rn{self.k}-n{i}"
        ns = f"fmrn{self.k}n{i}"
        veth = f"fmrn{self.k}v{i}"
        ip = self.node_ip(i)
        nd = self.workdir / "nodes" / name
        run = Path(f"/run/fmrn-{self.k}-{i}")
        node = {
            "name": name,
            "netns": ns,
            "ip": ip,
            "run": str(run),
            "cgroup": f"fmrn-{self.k}-{i}",
        }
        self.record["netns"].append(ns)
        self.record["nodes"].append(node)
        self._save()
        self.node_names.append(name)
        # the machine: a namespace, its eth0 on the cluster's bridge, routes to the others' pods
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _run("ip", "link", "set", veth, "master", self.record["bridge"], "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "route", "add", "default", "via", self.gateway)
        for j in range(1, self.n + 1):
            if j != i:
                sub = f"{self.node_pod_subnet(j)}.0/24"
                _run("ip", "-n", ns, "route", "add", sub, "via", self.node_ip(j))
        _run("nsenter", f"--net=/run/netns/{ns}", "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # the fabric's route to the node's pods (a VPC's route to a node's pod range)
        _run("ip", "route", "replace", f"{self.node_pod_subnet(i)}.0/24", "via", ip)
        for d in ("containerd", "cni/net.d", "kubelet", "logs", "addons"):
            (nd / d).mkdir(parents=True, exist_ok=True)
        run.mkdir(parents=True, exist_ok=True)
        sock = run / "containerd.sock"
        self._write_containerd(nd, run, sock)
        self._write_cni(nd, i)
        t = time.monotonic()
        self._spawn(
            f"{name}/containerd",
            ns,
            ["/usr/bin/containerd", "--config", str(nd / "containerd" / "config.toml")],
            nd / "logs" / "containerd.log",
        )
        self.wait_for(
            f"{name}: containerd",
            lambda: _run("ctr", "-a", str(sock), "version", check=False).returncode == 0,
            timeout=30,
            interval=0.05,
        )
        self.timings[f"{name}: containerd up"] = time.monotonic() - t
        t = time.monotonic()
        for image in self.images:
            _run(
                "ctr", "-a", str(sock), "-n", "k8s.io", "images", "import",
                str(self.nodes_dir / "images" / image), timeout=300,
            )  # fmt: skip
        self.timings[f"{name}: images imported"] = time.monotonic() - t
        for h in _v1_hierarchies():
            (h / node["cgroup"]).mkdir(exist_ok=True)
        self._write_kubelet(nd, node, sock)
        self._spawn(
            f"{name}/kubelet",
            ns,
            [
                str(self.nodes_dir / "bin" / "kubelet"),
                f"--config={nd / 'kubelet' / 'config.yaml'}",
                f"--kubeconfig={nd / 'kubelet' / 'kubeconfig'}",
                f"--root-dir={nd / 'kubelet' / 'root'}",
                f"--cert-dir={nd / 'kubelet' / 'pki'}",
                f"--hostname-override={name}",
                f"--node-ip={ip}",
                f"--node-labels=type=real,realnode.flux-minicluster/cluster={self.k}",
                "--v=2",
            ],
            nd / "logs" / "kubelet.log",
        )
        self._start_kube_proxy(nd, node)

    # -- configuration files -------------------------------------------------------------------

    def _write_containerd(self, nd: Path, run: Path, sock: Path) -> None:
        (nd / "containerd" / "config.toml").write_text(
            f"""version = 2
root = "{nd / "containerd" / "root"}"
state = "{run / "state"}"
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "{nd / "containerd" / "opt"}"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "{self._pause_tag()}"
    disable_apparmor = true
    # this machine drops CAP_SYS_RESOURCE: a sandbox's negative oom_score_adj is refused
    restrict_oom_score_adj = true
    # pods' network namespaces under the state directory, not /run/netns: removed with it
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "{nd / "cni" / "net.d"}"
      max_conf_num = 1
"""
        )

    def _pause_tag(self) -> str:
        manifest = _archive_manifest(self.nodes_dir / "images" / "pause.tar")
        return str(manifest[0]["RepoTags"][0])

    def _write_cni(self, nd: Path, i: int) -> None:
        sub = self.node_pod_subnet(i)
        conf = {
            "cniVersion": "1.0.0",
            "name": "realnode",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(nd / "cni" / "ipam"),
                        "ranges": [[{"subnet": f"{sub}.0/24", "gateway": f"{sub}.1"}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        (nd / "cni" / "net.d" / "10-realnode.conflist").write_text(json.dumps(conf, indent=2))

    def _node_kubeconfig(self, nd: Path, name: str) -> Path:
        """A client certificate system:node:NAME (group system:nodes) from the cluster's CA: the
        Node authorizer and NodeRestriction see a kubelet as they would anywhere."""
        assert self.cp is not None
        pki = self.cp.workdir / "pki"
        kd = nd / "kubelet"
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        subj = f"/O=system:nodes/CN=system:node:{name}"
        _openssl(
            "req", "-new", *ec, "-keyout", "node.key", "-out", "node.csr", "-subj", subj, cwd=kd
        )
        (kd / "node.ext").write_text("extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n")
        _openssl(
            "x509", "-req", "-in", "node.csr", "-CA", str(pki / "ca.crt"), "-CAkey",
            str(pki / "ca.key"), "-CAcreateserial", "-out", "node.crt", "-days", "7",
            "-extfile", "node.ext", cwd=kd,
        )  # fmt: skip
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "c",
                    "cluster": {
                        "server": self.cp.server,
                        "certificate-authority": str(pki / "ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": "node",
                    "user": {
                        "client-certificate": str(kd / "node.crt"),
                        "client-key": str(kd / "node.key"),
                    },
                }
            ],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "node"}}],
            "current-context": "c",
        }
        path = kd / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def _write_kubelet(self, nd: Path, node: dict[str, str], sock: Path) -> None:
        assert self.cp is not None
        kd = nd / "kubelet"
        self._node_kubeconfig(nd, node["name"])
        # pods with dnsPolicy Default get this, never the host's resolver
        (kd / "resolv.conf").write_text(f"nameserver {CLUSTER_DNS}\n")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"/{node['cgroup']}",
            "failSwapOn": False,
            "oomScoreAdj": 0,
            "containerRuntimeEndpoint": f"unix://{sock}",
            "address": node["ip"],
            "port": KUBELET_PORT,
            "readOnlyPort": 0,
            "healthzBindAddress": node["ip"],
            "healthzPort": KUBELET_HEALTHZ_PORT,
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.cp.workdir / "pki" / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "clusterDomain": CLUSTER_DOMAIN,
            "clusterDNS": [CLUSTER_DNS],
            "resolvConf": str(kd / "resolv.conf"),
            "staticPodPath": "",
            # its own, or each kubelet garbage-collects the others' pods' logs
            "podLogsDir": str(nd / "pod-logs"),
            "serializeImagePulls": False,
            # the images were imported, none can be pulled again: never collect them
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "maxPods": 110,
            "podPidsLimit": -1,
            "protectKernelDefaults": False,
            "rotateCertificates": False,
            "serverTLSBootstrap": False,
            "nodeStatusUpdateFrequency": "10s",
            "syncFrequency": "10s",
        }
        if self.reserved_cpus is not None:
            config["cpuManagerPolicy"] = "static"
            config["reservedSystemCPUs"] = self.reserved_cpus
        (kd / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    def _start_kube_proxy(self, nd: Path, node: dict[str, str]) -> None:
        assert self.cp is not None
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "iptables",
            "clientConnection": {"kubeconfig": str(self.cp.kubeconfig)},
            "hostnameOverride": node["name"],
            "bindAddress": "0.0.0.0",
            "clusterCIDR": self.pod_cidr,
            "healthzBindAddress": f"{node['ip']}:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            "oomScoreAdj": 0,
            # leave the conntrack sysctls alone (host-wide ones are not ours to set)
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
            "iptables": {"syncPeriod": "10s", "minSyncPeriod": "0s"},
        }
        # written once: kube-proxy exits when its config file changes under it
        path = nd / "addons" / "kube-proxy.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        self._spawn(
            f"{node['name']}/kube-proxy",
            node["netns"],
            [str(self.nodes_dir / "bin" / "kube-proxy"), f"--config={path}", "--v=2"],
            nd / "logs" / "kube-proxy.log",
        )

    def _start_kube_router(self, nd: Path, node: dict[str, str]) -> None:
        """kube-router's firewall controller only: it enforces the NetworkPolicies of the pods
        of the node it is named after, with iptables and ipset in the node's namespace."""
        assert self.cp is not None
        self._spawn(
            f"{node['name']}/kube-router",
            node["netns"],
            [
                str(self.nodes_dir / "bin" / "kube-router"),
                f"--kubeconfig={self.cp.kubeconfig}",
                f"--hostname-override={node['name']}",
                "--run-firewall=true",
                "--run-router=false",
                "--run-service-proxy=false",
                "--enable-cni=false",
                "--enable-ipv6=false",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--health-port=0",
                # out of phase with kube-proxy's 10 s (see start)
                "--iptables-sync-period=47s",
                "--v=2",
            ],
            nd / "logs" / "kube-router.log",
        )

    def _start_coredns(self) -> None:
        assert self.cp is not None
        node = self.record["nodes"][0]
        ad = self.workdir / "coredns"
        ad.mkdir(parents=True, exist_ok=True)
        context = yaml.safe_load(self.cp.kubeconfig.read_text())["current-context"]
        # kubeadm's Corefile, less what needs the outside (forward) or a second process (reload)
        ttl, cache = DNS_CACHES[self.dns_cache]
        log = "log" if self.dns_log else ""
        corefile = f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    errors
    {log}
    ready {node["ip"]}:{COREDNS_READY_PORT}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self.cp.kubeconfig} {context}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        {ttl}
    }}
    cache 30 {{
        {cache}
    }}
}}
.:53 {{
    errors
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""
        (ad / "Corefile").write_text(corefile)
        self._spawn(
            "coredns",
            node["netns"],
            [
                str(self.nodes_dir / "bin" / "coredns"),
                "-conf",
                str(ad / "Corefile"),
                "-dns.port",
                "53",
                # one JSON object per line, with its time (the log plugin's queries included)
                *(["-log-format", "json"] if self.dns_log else []),
            ],
            ad / "coredns.log",
        )
        docs = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kube-dns",
                    "namespace": "kube-system",
                    "labels": {"k8s-app": "kube-dns"},
                },
                "spec": {
                    "clusterIP": CLUSTER_DNS,
                    "ports": [
                        {"name": "dns", "port": 53, "protocol": "UDP"},
                        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                    ],
                },
            },
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "kube-dns-coredns",
                    "namespace": "kube-system",
                    "labels": {"kubernetes.io/service-name": "kube-dns"},
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": [node["ip"]], "conditions": {"ready": True}}],
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                ],
            },
        ]
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))

    # -- helpers -------------------------------------------------------------------------------

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """The built kubectl (the cluster's own version) as the admin."""
        assert self.cp is not None
        proc = subprocess.run(
            [str(self.nodes_dir / "bin" / "kubectl"), f"--kubeconfig={self.cp.kubeconfig}", *args],
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise RealNodeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
        return proc

    def wait_for(
        self, what: str, predicate: Any, timeout: float = 60, interval: float = 0.1
    ) -> Any:
        errors = (OSError, ValueError, KeyError, ControlPlaneError, RealNodeError)
        value, last = poll(predicate, timeout, interval, self._check_alive, errors)
        if value:
            return value
        raise RealNodeError(
            f"timed out after {timeout:.0f}s waiting for {what} (last: {last})\n"
            + self.diagnostics()
        )

    def _check_alive(self) -> None:
        for key, proc in self._popen.items():
            if proc.poll() is not None:
                raise RealNodeError(f"{key} exited with {proc.returncode}\n{self.diagnostics()}")

    def log_paths(self) -> dict[str, Path]:
        paths = {}
        for node in self.record.get("nodes", []):
            for p in sorted((self.workdir / "nodes" / node["name"] / "logs").glob("*.log")):
                paths[f"{node['name']}/{p.stem}"] = p
        paths["coredns"] = self.workdir / "coredns" / "coredns.log"
        return paths

    def diagnostics(self, lines: int = 12) -> str:
        out = []
        if self.load_balancers is not None and self.load_balancers.errors:
            out.append("--- load balancer ---\n" + "\n".join(self.load_balancers.errors))
        for key, path in self.log_paths().items():
            with contextlib.suppress(OSError):
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {key} ---\n" + "\n".join(tail))
        return "\n".join(out)

    # -- what the load balancer and the tests read ---------------------------------------------

    def node_ips(self) -> dict[str, str]:
        return {node["name"]: node["ip"] for node in self.record.get("nodes", [])}

    def api_items(self, path: str, selector: str | None = None) -> list[Any]:
        assert self.cp is not None
        return self.cp.items(path, selector)

    def patch_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        assert self.cp is not None
        status, answer = self.cp.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/services/{name}/status",
            body,
            content_type="application/merge-patch+json",
        )
        if status >= 300:
            raise RealNodeError(f"status of Service {namespace}/{name}: {status} {answer}")

    def in_node_network(self, node: str, *args: str) -> str:
        """``args`` run in node ``node``'s network namespace (its iptables, its routes)."""
        netns = next(n["netns"] for n in self.record["nodes"] if n["name"] == node)
        return _run("nsenter", f"--net=/run/netns/{netns}", *args).stdout

    def container_pid(self, pod: dict[str, Any], container: str) -> int:
        """A process of a running container of ``pod`` (a live pod object), found in its node's
        cgroups by the container's id: what a node administrator enters with ``nsenter``."""
        status = next(
            (c for c in pod["status"].get("containerStatuses", []) if c["name"] == container),
            None,
        )
        if status is None or not status.get("containerID") or "running" not in status["state"]:
            raise RealNodeError(f"container {container} of {pod['metadata']['name']} not running")
        cid = status["containerID"].split("://", 1)[1]
        node = next(n for n in self.record["nodes"] if n["name"] == pod["spec"]["nodeName"])
        for d in _cgroup_dirs(node["cgroup"]):  # every hierarchy of the node's cgroupRoot
            if d.name == cid:
                with contextlib.suppress(OSError):
                    pids = (d / "cgroup.procs").read_text().split()
                    if pids:
                        return int(pids[0])
        raise RealNodeError(f"no process of container {container} ({cid[:12]}) on {node['name']}")

    def _node_ready(self, name: str) -> bool:
        assert self.cp is not None
        node = self.cp.get(f"/api/v1/nodes/{name}")
        if not node:
            return False
        conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True"

    def _proxies_dns(self, node: dict[str, str]) -> bool:
        """Whether the node's kube-proxy has programmed the cluster DNS Service's address."""
        rules = _run(
            "nsenter", f"--net=/run/netns/{node['netns']}", "iptables", "-t", "nat", "-S",
            "KUBE-SERVICES", check=False,
        ).stdout  # fmt: skip
        return f"-d {CLUSTER_DNS}/32" in rules

    def _coredns_ready(self) -> bool:
        ip = self.record["nodes"][0]["ip"]
        with urllib.request.urlopen(f"http://{ip}:{COREDNS_READY_PORT}/ready", timeout=2) as r:
            return bool(r.status == 200)

    def memory(self) -> dict[str, float]:
        """Resident MB of every process the cluster started, the control plane's included;
        the containerd shims summed per node."""
        mb: dict[str, float] = {}
        for key, entry in self.record.get("procs", {}).items():
            pid, started = entry if key != "control-plane" else (0, None)
            if pid and _alive(pid, started):
                mb[key] = round(_rss_mb(pid), 1)
        if self.cp is not None:
            for comp, p in self.cp.procs.items():
                mb[comp] = round(_rss_mb(p.pid), 1)
        for node in self.record.get("nodes", []):
            shims = _shims(node["run"])
            mb[f"{node['name']}/shims x{len(shims)}"] = round(sum(_rss_mb(p) for p in shims), 1)
        with contextlib.suppress(OSError):
            disk = os.statvfs(self.workdir / "nodes")
            mb["nodes' disk (tmpfs)"] = round(
                (disk.f_blocks - disk.f_bfree) * disk.f_frsize / 2**20
            )
        return mb

    # -- stop ----------------------------------------------------------------------------------

    def stop(self) -> None:
        t0 = time.monotonic()
        if self.load_balancers is not None:
            self.load_balancers.stop()
        if self.cp is not None and self.cp.procs and self.record.get("nodes"):
            # the pods first, through their kubelets: containers stopped, CNI DEL, mounts gone
            with contextlib.suppress(Exception):
                self.kubectl(
                    "delete", "pods", "--all", "-A", "--grace-period=0", "--force", "--wait=false",
                    check=False, timeout=20,
                )  # fmt: skip
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and self._running_tasks():
                    time.sleep(0.2)
        self.teardown_steps["pods"] = time.monotonic() - t0
        steps = teardown_nodes(self.record)
        for proc in self._popen.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)  # reap them
        self.teardown_steps.update({k: v + self.teardown_steps["pods"] for k, v in steps.items()})
        if self.cp is not None:
            self.cp.stop()
        self.teardown_steps["control plane"] = time.monotonic() - t0
        if self.record:
            release(self.record)
        self.teardown_steps["files"] = time.monotonic() - t0
        self.teardown_steps["total"] = time.monotonic() - t0
        with contextlib.suppress(ValueError):
            _LIVE.remove(self)

    def _running_tasks(self) -> int:
        count = 0
        for node in self.record.get("nodes", []):
            sock = Path(node["run"]) / "containerd.sock"
            out = _run("ctr", "-a", str(sock), "-n", "k8s.io", "tasks", "ls", "-q", check=False)
            count += len(out.stdout.split())
        return count


def _archive_manifest(path: Path) -> list[dict[str, Any]]:
    import tarfile

    with tarfile.open(path) as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None
        return list(json.loads(member.read()))


_LIVE: list[RealCluster] = []


@atexit.register
def _stop_all() -> None:
    for rc in list(_LIVE):
        with contextlib.suppress(Exception):
            rc.stop()


def main(argv: list[str]) -> int:
    """``python3 tests/e2e/realnode/cluster.py --cleanup [K ...]``: remove the clusters whose
    owner is gone (or the numbers given, whoever owns them)."""
    if argv[:1] != ["--cleanup"]:
        print(main.__doc__, file=sys.stderr)
        return 2
    wanted = {int(a) for a in argv[1:]}
    for rec in sorted(RUN_DIR.glob("cluster-*.json")):
        record = json.loads(rec.read_text() or "{}")
        mine = record.get("k") in wanted
        if mine or (not wanted and not _alive(record.get("owner", 0), record.get("owner_started"))):
            print(f"cleaning up cluster {record.get('k')}: {cleanup(record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
