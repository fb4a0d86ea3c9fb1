"""Bursting with real brokers: three real-node clusters (fluxnodes.FluxPlane, one node each) on
one fabric that routes every cluster's pod range (as VPC-native pod networks and peered VPCs
do). ``gke-root`` exposes its lead broker by a LoadBalancer Service, which the fabric's load
balancer (realnode/loadbalancer.py) addresses and routes to the lead's node, keeping the
client's source, as GKE's passthrough load balancer does; kube-proxy there applies the
Service's ``loadBalancerSourceRanges`` and forwards to rank 0. ``eks-burst`` and ``aks-burst``
read the root through real StackReferences, and their brokers join the root's instance through
that address: six brokers in one Flux instance.

Then a burst holding a stale certificate: the root's certificate is rotated, a burst pod restarts
with the old one, and its broker gives up with the join-timeout message (the timeout shortened
through the pod's environment) instead of hanging. Its pods run with ``restartPolicy: Never``, so
the Job carries the pod failure policy: the join timeout's exit code (78, a configuration error
no retry can fix) fails the whole Job at once, by that policy, instead of spending the retry
budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Toolchain, real_planes
from fluxnodes import FluxPlane, expand_hostlist, minicluster, wait_job_complete
from kube import job, wait_until
from stackrun import PREFIX, Engine, Stack, copy_project, new_certificate

pytestmark = pytest.mark.flux

NAMESPACE = "flux"
ROOT, BURSTS = "gke-root", ("eks-burst", "aks-burst")
JOIN_TIMEOUT_S = 20
# Rank 0 waits for the six brokers, then prints the instance's nodes (and the job runs on all).
ROOT_COMMAND = (
    "bash -c 'for i in $(seq 300); do "
    '[ "$(flux resource list -s up -no {nnodes})" = 6 ] && break; sleep 1; done; '
    'flux resource list -s up -no "{nnodes} {nodelist}"\''
)


@dataclass
class Trio:
    planes: dict[str, FluxPlane]
    stacks: dict[str, Stack]
    engine: Engine
    project: Path


@pytest.fixture(scope="module")
def trio(
    toolchain: Toolchain,
    nodes_set: Path,
    module_engine: Engine,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Trio]:
    names = {stack: stack.split("-")[0] for stack in (ROOT, *BURSTS)}
    with real_planes(toolchain, nodes_set, names, nodes=1) as planes:
        project = copy_project(tmp_path_factory.mktemp("flux-bursting") / "project")
        stacks = {}
        for name, plane in planes.items():
            stacks[name] = module_engine.stack(
                project,
                name,
                kubeconfig=plane.cp.kubeconfig,
                context=plane.cp.name,
                curve_cert=new_certificate("flux-root") if name == ROOT else None,
            )
        root = stacks[ROOT]
        # the bursts' pods come from their own pod ranges, not from the example's NAT ranges
        ranges = [planes[burst].pod_cidr for burst in BURSTS]
        root.set_object(f"{PREFIX}:bursting.sourceRanges", ranges)
        root.set_object(
            f"{PREFIX}:minicluster",
            {"wait": "none", "spec": minicluster("flux-root", 2, {"command": ROOT_COMMAND})},
        )
        for burst in BURSTS:
            env = {"FLUX_MINICLUSTER_JOIN_TIMEOUT": str(JOIN_TIMEOUT_S)}
            stacks[burst].set_object(
                f"{PREFIX}:minicluster",
                {"wait": "none", "spec": minicluster(burst, 2, {"environment": env})},
            )
        yield Trio(planes, stacks, module_engine, project)


def test_six_brokers_of_three_clusters_form_one_instance(
    trio: Trio, e2e_report: Callable[[str], None]
) -> None:
    root_plane = trio.planes[ROOT]
    trio.stacks[ROOT].up()
    lead = root_plane.cp.get(f"/api/v1/namespaces/{NAMESPACE}/services/flux-root-lead")
    address = lead["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert trio.stacks[ROOT].outputs()["leadBrokerAddress"] == address
    for burst in BURSTS:
        trio.stacks[burst].up()
    wait_job_complete(root_plane, NAMESPACE, "flux-root", timeout=300)
    lines = root_plane.rank_log(NAMESPACE, "flux-root").strip().splitlines()
    assert lines, root_plane.diagnostics(NAMESPACE, "flux-root")
    count, nodelist = lines[-1].split(maxsplit=1)
    assert count == "6", lines
    assert sorted(expand_hostlist(nodelist)) == sorted(
        [f"{n}-{i}" for n in ("flux-root", *BURSTS) for i in (0, 1)]
    ), nodelist
    for burst in BURSTS:
        wait_job_complete(trio.planes[burst], NAMESPACE, burst, timeout=120)
    e2e_report(f"bursting: rank 0 at {address} saw {lines[-1]}")


def test_a_burst_with_a_stale_certificate_gives_up_with_the_join_timeout_message(
    trio: Trio, e2e_report: Callable[[str], None]
) -> None:
    root, burst = trio.stacks[ROOT], trio.stacks["eks-burst"]
    plane = trio.planes["eks-burst"]
    # A persistent root; then a new burst Job that takes the root's certificate, held Pending
    # (its node cordoned) while the root's certificate is rotated: its brokers start stale.
    persistent = minicluster("flux-root", 2)
    persistent["spec"]["interactive"] = True
    root.set_object(f"{PREFIX}:minicluster", {"wait": "none", "spec": persistent})
    root.up()
    plane.cp.kubectl("cordon", *plane.rc.node_names)
    env = {"FLUX_MINICLUSTER_JOIN_TIMEOUT": str(JOIN_TIMEOUT_S), "ROUND": "stale"}
    stale = minicluster("eks-burst", 2, {"environment": env})
    stale["spec"]["pod"] = {"restartPolicy": "Never"}  # the Job gets its pod failure policy
    burst.set_object(f"{PREFIX}:minicluster", {"wait": "none", "spec": stale})
    burst.up()
    root.set(f"{PREFIX}:curveCert", new_certificate("flux-root"), secret=True, path=False)
    root.up()
    plane.cp.kubectl("uncordon", *plane.rc.node_names)
    message = "did not join the instance through"

    def gave_up() -> str | None:
        for pod in plane.pods(NAMESPACE, "eks-burst"):
            text = plane.container_log(NAMESPACE, pod["metadata"]["name"], "eks-burst")
            line = next((x for x in text.splitlines() if message in x), None)
            if line:
                return line
        return None

    line = wait_until(
        "the stale burst's join-timeout message", gave_up, timeout=JOIN_TIMEOUT_S + 90
    )
    assert f"within {JOIN_TIMEOUT_S}s" in line
    assert "re-run `pulumi up` on this burst stack" in line
    gave_up_at = time.monotonic()

    def failed() -> Any:
        live = job(plane.cp, NAMESPACE, "eks-burst") or {}
        conditions = (live.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if (c["type"], c["status"]) == ("Failed", "True")), None)

    verdict = wait_until("the burst's Job Failed", failed, timeout=90)
    took = time.monotonic() - gave_up_at
    assert verdict["reason"] == "PodFailurePolicy", verdict
    assert "failed with exit code 78 matching FailJob rule" in verdict["message"], verdict
    live = job(plane.cp, NAMESPACE, "eks-burst")
    assert not live["status"].get("active"), live["status"]
    e2e_report(
        f"stale burst: {line[:200]}; the Job Failed {took:.1f}s later: {verdict['reason']}: "
        f"{verdict['message']}"
    )
