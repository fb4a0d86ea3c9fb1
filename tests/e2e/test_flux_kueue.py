"""Queued MiniClusters of real Flux brokers: the real Kueue admits, the real Job controller runs
the pods on real nodes (fluxnodes.FluxPlane), and `pulumi up` waits through both.

A ClusterQueue with quota for 2 pods, a ResourceFlavor whose node label is the real nodes'
(``type: real``, which Kueue injects as the pod template's node selector) and one LocalQueue.
Two MiniClusters of 2 brokers (examples/hello-world.yaml's command) in that queue: the second
is queued while the first's brokers run, is admitted once it completes, and completes too; both
rank 0s exit 0 and print the job's two lines (one task per broker).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Toolchain, real_planes
from fluxnodes import FluxPlane, localize
from kube import condition, job
from kueueplane import (
    Kueue,
    Watcher,
    cluster_queue,
    local_queue,
    queued_stack,
    resource_flavor,
    status,
)
from stackrun import Engine, copy_project

pytestmark = [pytest.mark.flux, pytest.mark.needs("kueue")]

REPO = Path(__file__).resolve().parents[2]
HELLO = yaml.safe_load((REPO / "examples" / "hello-world.yaml").read_text())
NAMESPACE = "queued-brokers"
QUEUE = "hpc"


@pytest.fixture(scope="module")
def plane_with_kueue(toolchain: Toolchain, nodes_set: Path) -> Iterator[tuple[FluxPlane, Kueue]]:
    with (
        real_planes(toolchain, nodes_set, {"fluxq": "fluxq"}) as planes,
        Kueue(toolchain.bin, planes["fluxq"].cp) as k,
    ):
        plane = planes["fluxq"]
        plane.cp.kubectl("create", "namespace", NAMESPACE)
        k.apply(
            resource_flavor("real-nodes", {"type": "real"}, "e2e.flux-minicluster/queued"),
            cluster_queue("two-brokers", "real-nodes", 2),
            local_queue(QUEUE, NAMESPACE, "two-brokers"),
        )
        path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/localqueues/{QUEUE}"
        plane.cp.wait_for(
            f"LocalQueue {QUEUE} Active",
            lambda: condition(plane.cp.get(path) or {}, "Active") == "True",
            timeout=60,
        )
        yield plane, k


def hello(name: str, command: str = "echo hello world") -> dict[str, Any]:
    doc = copy.deepcopy(HELLO)
    doc["metadata"] = {"name": name}
    doc["spec"].update(size=2, tasks=2, deadlineSeconds=240)
    doc["spec"]["containers"][0]["command"] = command
    return localize(doc)


def test_two_queued_miniclusters_of_real_brokers_run_one_after_the_other(
    plane_with_kueue: tuple[FluxPlane, Kueue],
    engine: Engine,
    tmp_path: Path,
    e2e_report: Callable[[str], None],
) -> None:
    plane, _ = plane_with_kueue
    cp = plane.cp
    project = copy_project(tmp_path / "project")
    first = queued_stack(
        engine, project, cp, NAMESPACE, QUEUE, "brokers-first",
        # runs 30 s once its brokers are up: long enough to see the second one queued
        {"spec": hello("flux-first", 'sh -c "sleep 30; echo hello world"'), "wait": "ready",
         "waitTimeout": 240},
    )  # fmt: skip
    first.up()  # returns once Kueue admitted it and both brokers joined
    assert job(cp, NAMESPACE, "flux-first")["spec"]["suspend"] is False
    second = queued_stack(
        engine, project, cp, NAMESPACE, QUEUE, "brokers-second",
        {"spec": hello("flux-second"), "wait": "complete", "waitTimeout": 400},
    )  # fmt: skip
    with Watcher(cp, NAMESPACE, "flux-second") as watched:
        second.up()
    phases = watched.phases()
    assert "queued" in phases, phases
    assert phases[-1] == "succeeded", phases
    first_job = job(cp, NAMESPACE, "flux-first")
    assert condition(first_job, "Complete") == "True", first_job["status"]
    # Kueue resumed the second only once the first had completed and released its quota (the
    # Job controller stamps startTime when a suspended Job is resumed; RFC 3339, UTC).
    second_job = job(cp, NAMESPACE, "flux-second")
    finished, started = first_job["status"]["completionTime"], second_job["status"]["startTime"]
    assert started >= finished, (finished, started)
    for name in ("flux-first", "flux-second"):
        found = status(cp, NAMESPACE, name)
        assert found["phase"] == "succeeded", found
        assert found["exit_code"] == 0, found
        assert found["admission"]["cluster_queue"] == "two-brokers", found
        log = plane.rank_log(NAMESPACE, name)
        assert log.count("hello world") >= 2, log[-2000:]
    e2e_report(
        f"real brokers, quota 2 pods: the second MiniCluster of 2 was {' -> '.join(phases)}; "
        f"the first completed at {finished}, the second was resumed at {started}; both "
        "completed with rank 0 exit code 0"
    )
    second.destroy()
    first.destroy()
