"""Real brokers on real nodes: a FluxPlane is a real-node cluster (realnode/cluster.py: the real
kubelet, containerd, CoreDNS, kube-proxy and kube-router) whose nodes hold the images the `flux`
scenarios name (realnode/toolchain.py's flux-images), and what a scenario reads of the pods it
runs, as a user reads it: `kubectl logs`, `kubectl exec`, and, for what only a node's
administrator sees (a pod's iptables counters, its sockets), `nsenter` into a container.

The scenarios' specs name the images as a user names theirs (:func:`localize`): every container's
image is the application image, never pulled (no registry is reachable; the nodes imported it),
and the flux view is the view image the nodes hold.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kube import condition, wait_until
from stackrun import PREFIX, Engine, Stack, new_certificate

E2E = Path(__file__).resolve().parent
PREFIX_ENV = "FLUX_MINICLUSTER_FLUX_PREFIX"
# The images realnode/toolchain.py builds (pyproject's [tool.flux-minicluster.toolchain.nodes]
# flux-app-tags and flux-view-tags) and the archives every node of a FluxPlane imports.
APP_IMAGE = "localhost/flux-app:bookworm"
VIEW_IMAGE = "localhost/flux-view-debian:bookworm"
IMAGES = ("pause.tar", "flux-app.tar", "flux-view.tar")
# A cluster for brokers: each node's disk holds both images twice (content and snapshot) and
# every pod's copies of the Flux tree (its emptyDirs), hence a larger tmpfs than RealCluster's.
FLUX_CLUSTER: dict[str, Any] = {"node_disk": "6g", "images": IMAGES}
# Rank 0's count of brokers that are up, asked of its own instance (its local socket).
UP_BROKERS = (
    "sock=$(find /mnt/flux -maxdepth 5 -type s -name local | head -1); "
    'flux=$(find /mnt/flux -maxdepth 4 -type f -path "*/bin/flux" | head -1); '
    '"$flux" proxy "local://$sock" "$flux" resource list -s up -no {nnodes}'
)
JOB_DEADLINE_S = 180  # what a run may take before its Job fails (they take 10 to 25 s here)


def flux_prefix(bindir: Path) -> Path | None:
    """The Flux prefix: $FLUX_MINICLUSTER_FLUX_PREFIX, else the one bin/flux links into."""
    explicit = os.environ.get(PREFIX_ENV)
    if explicit:
        return Path(explicit)
    link = bindir / "flux"
    if not link.exists():
        return None
    return link.resolve().parent.parent


def localize(doc: dict[str, Any], image: str = APP_IMAGE) -> dict[str, Any]:
    """A MiniCluster spec naming the images the nodes hold: each container runs the application
    image ``image`` (``imagePullPolicy: Never``), the flux view is the view image (``pullAlways:
    false``: IfNotPresent, which never pulls an image the node holds). Nothing else changes."""
    doc = copy.deepcopy(doc)
    spec = doc["spec"]
    for container in spec.get("containers", []):
        container["image"] = image
        container["imagePullPolicy"] = "Never"
    flux = spec.setdefault("flux", {})
    flux["container"] = {**flux.get("container", {}), "image": VIEW_IMAGE, "pullAlways": False}
    return doc


def minicluster(
    name: str, size: int, container: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    """A quiet v1alpha2 MiniCluster of ``size`` brokers whose one container has the fields of
    ``container`` (a command, an environment), the spec's other fields ``spec``, localized."""
    return localize(
        {
            "apiVersion": "flux-framework.org/v1alpha2",
            "kind": "MiniCluster",
            "metadata": {"name": name},
            "spec": {
                "size": size,
                "logging": {"quiet": True},
                "containers": [{"image": "ubuntu:24.04", **(container or {})}],
                **spec,
            },
        }
    )


class FluxPlane:
    """A real-node cluster of ``nodes`` nodes holding the Flux images."""

    def __init__(
        self, bindir: Path, nodes_set: Path, name: str, nodes: int = 2, **cluster: Any
    ) -> None:
        from realnode.cluster import RealCluster

        # ``cluster``: RealCluster's other options (its DNS, say)
        options = {**FLUX_CLUSTER, **cluster}  # ``images``: other archives than the Flux ones
        self.rc = RealCluster(bindir, nodes_set, nodes=nodes, name=name, **options)
        self.name = name

    @property
    def cp(self) -> ControlPlane:
        assert self.rc.cp is not None
        return self.rc.cp

    @property
    def pod_cidr(self) -> str:
        """Every pod address of this cluster (its nodes' ranges)."""
        return self.rc.pod_cidr

    def start(self) -> FluxPlane:
        self.rc.start()
        return self

    def stop(self) -> None:
        self.rc.stop()

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
        return self.container_log(namespace, pod["metadata"]["name"], job)

    def container_log(self, namespace: str, pod: str, container: str) -> str:
        """What a container printed: the instance before the last one (``kubectl logs
        --previous``, when it restarted and a newer one exists), then the last one (``kubectl
        logs``; while a container waits to restart, that is the one that ended). The kubelet
        keeps no older instance."""
        live = self.cp.get(f"/api/v1/namespaces/{namespace}/pods/{pod}") or {}
        statuses = live.get("status", {})
        status = next(
            (
                c
                for c in statuses.get("initContainerStatuses", [])
                + statuses.get("containerStatuses", [])
                if c["name"] == container
            ),
            {},
        )
        before = status.get("lastState", {}).get("terminated", {}).get("containerID")
        calls = [["--previous"], []] if before and before != status.get("containerID") else [[]]
        out = []
        for extra in calls:
            res = self.rc.kubectl(
                "logs", "-n", namespace, pod, "-c", container, *extra, check=False, timeout=30
            )
            if res.returncode == 0:
                out.append(res.stdout)
        return "".join(out)

    def exec(self, namespace: str, pod: str, container: str, script: str) -> str:
        """``kubectl exec POD -c CONTAINER -- sh -c SCRIPT`` (as the container's user): its
        output; an AssertionError when it fails."""
        res = self.rc.kubectl(
            "exec", "-n", namespace, pod, "-c", container, "--", "sh", "-c", script,
            check=False, timeout=60,
        )  # fmt: skip
        assert res.returncode == 0, f"exec in {pod}: {res.returncode} {res.stdout}{res.stderr}"
        return res.stdout

    def in_pod_network(self, namespace: str, pod: str, container: str, *args: str) -> str:
        """``args`` run with the node's tools in the pod's network namespace only (what a node
        administrator sees of a pod's network: ``iptables``, ``ss``). Its output."""
        live = self.cp.get(f"/api/v1/namespaces/{namespace}/pods/{pod}")
        assert live is not None, f"no pod {namespace}/{pod}"
        pid = self.rc.container_pid(live, container)
        proc = subprocess.run(
            ["nsenter", "-n", "-t", str(pid), *args], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, f"in {pod}'s network: {proc.stdout}{proc.stderr}"
        return proc.stdout

    def diagnostics(self, namespace: str, job: str) -> str:
        """The pods' phases and nodes, the logs of each container, then the cluster's own."""
        out = []
        for p in self.pods(namespace, job):
            name = p["metadata"]["name"]
            statuses = p["status"].get("initContainerStatuses", []) + p["status"].get(
                "containerStatuses", []
            )
            out.append(
                f"--- pod {name} on {p['spec'].get('nodeName')}: {p['status'].get('phase')} "
                f"{json.dumps(statuses)[:800]}"
            )
            for c in p["spec"].get("initContainers", []) + p["spec"]["containers"]:
                text = self.container_log(namespace, name, c["name"])
                out.append(f"----- {c['name']}:\n" + "\n".join(text.splitlines()[-25:]))
        out.append(self.rc.diagnostics(8))
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
    image: str = APP_IMAGE,
    as_given: bool = False,
) -> Stack:
    """A stack of ``spec`` on ``plane``: its certificate from config, or, given a ``keygen``
    strategy, from the keygen Command (the real command provider); rendered for
    ``kube_version`` (``cluster.kubernetesVersion``) when one is given; every container runs
    ``image`` (one the plane's nodes imported). ``as_given``: ``spec`` is deployed as it is (it
    names images the nodes hold; no pull policy, image or deadline is added)."""
    cp = plane.cp
    if not as_given:
        spec = localize(spec, image)
    if not as_given and not spec["spec"].get("interactive"):
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
