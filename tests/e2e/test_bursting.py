"""Bursting for real: three control planes stand for three clouds. ``gke-root`` goes up first,
then ``eks-burst`` and ``aks-burst`` read it through real StackReferences
(``organization/flux-minicluster/gke-root``, one file:// backend, one passphrase).

The bundled stack files are used as they are, except what only a real cloud has: each stack's
kubeconfig and context point at its control plane, and the root exposes its lead by NodePort on
127.0.0.1 (``expose: NodePort``, ``leadAddress``, ``nodePort``: a LoadBalancer never gets an
address on these control planes). The root's certificate comes from config (no keygen Command).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Toolchain
from controlplane import ControlPlane
from kube import managed_objects
from stackrun import PREFIX, Engine, Stack, StackError, copy_project, new_certificate

from flux_minicluster.core.flux import certificate as certificates

ROOT_STACK = "organization/flux-minicluster/gke-root"
NODE_PORT = 30850
ROOT_HOSTS = "flux-root-[0-1],eks-burst-[0-1],aks-burst-[0-1]"
BURST_HOSTS = "127.0.0.1,flux-root-[1],eks-burst-[0-1],aks-burst-[0-1]"


@dataclass
class Trio:
    planes: dict[str, ControlPlane]
    stacks: dict[str, Stack]
    engine: Engine
    project: Path
    certificate: str


@pytest.fixture(scope="module")
def trio(
    toolchain: Toolchain, module_engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Trio]:
    reason = toolchain.missing("etcd", "kube-apiserver", "kwok")
    if reason:
        pytest.skip(reason)
    planes: dict[str, ControlPlane] = {}
    try:
        for name in ("gke-root", "eks-burst", "aks-burst"):
            planes[name] = ControlPlane(toolchain.bin, name=name.split("-")[0]).start()
        project = copy_project(tmp_path_factory.mktemp("bursting") / "project")
        cert = new_certificate("flux-root")
        stacks = {}
        for name, cp in planes.items():
            stacks[name] = module_engine.stack(
                project,
                name,
                kubeconfig=cp.kubeconfig,
                context=cp.name,
                curve_cert=cert if name == "gke-root" else None,
            )
        root = stacks["gke-root"]
        root.set(f"{PREFIX}:bursting.expose", "NodePort")
        root.set(f"{PREFIX}:bursting.leadAddress", "127.0.0.1")
        root.set(f"{PREFIX}:bursting.nodePort", str(NODE_PORT))
        for name in ("gke-root", "eks-burst", "aks-burst"):
            stacks[name].up()
        yield Trio(planes, stacks, module_engine, project, cert)
    finally:
        for cp in planes.values():
            cp.stop()


def expand(hostlist: str) -> list[str]:
    """The hosts of a hostlist of the forms rendered here (``name-[a-b]``, plain hosts)."""
    hosts = []
    for term in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist.strip()):
        match = re.fullmatch(r"([^\[]*)\[(\d+)(?:-(\d+))?\]", term)
        if match is None:
            hosts.append(term)
            continue
        prefix, lo, hi = match.groups()
        hosts += [f"{prefix}{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return hosts


def entrypoint(cp: ControlPlane, name: str) -> dict[str, str]:
    cm = cp.get(f"/api/v1/namespaces/flux/configmaps/{name}-entrypoint")
    return dict(cm["data"])


def certificate_of(cp: ControlPlane, name: str) -> str:
    secret = cp.get(f"/api/v1/namespaces/flux/secrets/{name}-curve")
    return base64.b64decode(secret["data"]["curve.cert"]).decode()


def template_public_key(cp: ControlPlane, name: str) -> str:
    job = cp.get(f"/apis/batch/v1/namespaces/flux/jobs/{name}")
    notes = job["spec"]["template"]["metadata"]["annotations"]
    return str(notes["minicluster.flux-framework.org/curve-public-key"])


def test_the_root_publishes_its_lead_for_the_bursts(trio: Trio) -> None:
    outputs = trio.stacks["gke-root"].outputs()
    assert outputs["leadBrokerAddress"] == "127.0.0.1"
    assert outputs["leadBrokerPort"] == NODE_PORT
    assert outputs["leadName"] == "flux-root"
    assert outputs["leadSize"] == 2
    assert outputs["hostlist"] == ROOT_HOSTS
    lead = trio.planes["gke-root"].get("/api/v1/namespaces/flux/services/flux-root-lead")
    assert lead["spec"]["type"] == "NodePort"
    assert lead["spec"]["ports"][0]["nodePort"] == NODE_PORT
    assert lead["spec"]["selector"]["batch.kubernetes.io/job-completion-index"] == "0"


@pytest.mark.parametrize("burst", ["eks-burst", "aks-burst"])
def test_a_burst_holds_the_roots_hostlist_and_certificate(
    trio: Trio, burst: str, e2e_report: Callable[[str], None]
) -> None:
    root_cp, cp = trio.planes["gke-root"], trio.planes[burst]
    root_files, burst_files = entrypoint(root_cp, "flux-root"), entrypoint(cp, burst)
    assert root_files["hostlist"].strip() == ROOT_HOSTS
    assert burst_files["hostlist"].strip() == BURST_HOSTS
    # the same ranks in the same order, rank 0 reached through the lead's address
    root_ranks, burst_ranks = expand(root_files["hostlist"]), expand(burst_files["hostlist"])
    assert len(root_ranks) == len(burst_ranks) == 6
    assert burst_ranks == ["127.0.0.1", *root_ranks[1:]]
    assert trio.stacks[burst].outputs()["hostlist"] == BURST_HOSTS
    assert "tcp://127.0.0.1:" + str(NODE_PORT) in burst_files["broker.toml"]

    root_cert, burst_cert = certificate_of(root_cp, "flux-root"), certificate_of(cp, burst)
    assert burst_cert == root_cert == trio.certificate
    key = certificates.parse(root_cert).public_key
    assert template_public_key(cp, burst) == template_public_key(root_cp, "flux-root") == key
    assert trio.stacks[burst].outputs()["curvePublicKey"] == key
    assert "curveCert" not in trio.stacks[burst].outputs()  # the root publishes it, not a burst
    e2e_report(f"{burst}: hostlist {burst_files['hostlist'].strip()}, public key {key[:8]}...")


@pytest.mark.parametrize(
    ("name", "size", "message"),
    [
        ("gcp-burst", 2, "must list this bursted cluster ('gcp-burst')"),
        ("eks-burst", 3, "spec.maxSize 3 is larger than the 2 hosts"),
    ],
    ids=["undeclared", "wrong-size"],
)
def test_a_burst_the_root_did_not_declare_creates_nothing(
    trio: Trio, toolchain: Toolchain, name: str, size: int, message: str
) -> None:
    with ControlPlane(toolchain.bin, name="rogue") as cp:
        before = cp.items("/api/v1/namespaces")
        stack = trio.engine.stack(
            trio.project,
            f"rogue-{name}-{size}",
            like="eks-burst",
            kubeconfig=cp.kubeconfig,
            context=cp.name,
        )
        stack.set(f"{PREFIX}:minicluster.spec.metadata.name", name)
        stack.set(f"{PREFIX}:minicluster.spec.spec.size", str(size))
        with pytest.raises(StackError) as refused:
            stack.up()
        assert message in refused.value.error
        assert ROOT_STACK in refused.value.error
        assert f"{PREFIX}:minicluster" in refused.value.error
        assert cp.items("/api/v1/namespaces") == before  # not even its namespace
        assert managed_objects(cp) == []
        assert cp.items("/apis/batch/v1/jobs") == []
