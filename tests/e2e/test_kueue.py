"""Queued MiniClusters under the real Kueue controller (``kueue`` piece), through `pulumi up`.

One control plane (kwok nodes: pods run and, with ``COMPLETE_AFTER``, complete) and the real
Kueue controller manager beside it (``kueueplane.py``: webhooks off, so a queued Job is
suspended because the component creates it so). Kueue is given a ResourceFlavor whose node
labels and toleration it injects into every Job it admits, and a ClusterQueue with quota for 4
pods, one broker each; the MiniClusters' namespace has one LocalQueue, ``team-a``. Each stack
is a copy of the bundled local stack whose ``flux-minicluster:minicluster.queue`` is ``team-a``.

What must hold:

* two MiniClusters of 4 in the one LocalQueue: the second stays queued (its Job suspended, its
  Workload without quota; ``minicluster status`` says so with Kueue's reason) until the first
  completes, then is admitted and completes; `up` of the second said it waits for admission by
  LocalQueue team-a;
* an admitted, running MiniCluster (Kueue resumed its Job and injected the flavor's node
  selector and toleration): a second `up` shows no changes, and an `up` that updates the Job for
  another reason (a new job label) neither re-suspends it nor removes what Kueue injected;
* a MiniCluster larger than the quota stays pending, and `up` fails when ``waitTimeout``
  passes, naming the LocalQueue; ``minicluster status`` says queued, with Kueue's reason.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import COMPLETE_AFTER, ControlPlane
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
from stackrun import PREFIX, Engine, StackError, changes_of

from flux_minicluster.core.kube.queueing import QUEUE_NAME_LABEL

pytestmark = pytest.mark.needs("kueue")

REPO = Path(__file__).resolve().parents[2]
HELLO = yaml.safe_load((REPO / "examples" / "hello-world.yaml").read_text())
NAMESPACE = "queued"
QUEUE = "team-a"
FLAVOR = "kwok-nodes"
TOLERATION = "e2e.flux-minicluster/queued"
QUOTA_PODS = 4


def minicluster(name: str, size: int, **spec: Any) -> dict[str, Any]:
    doc = copy.deepcopy(HELLO)
    doc["metadata"]["name"] = name
    doc["metadata"].pop("namespace", None)
    doc["spec"].update(size=size, **spec)
    return doc


@pytest.fixture(scope="module")
def kueue(module_control_plane: ControlPlane, toolchain_bin: Path) -> Iterator[Kueue]:
    cp = module_control_plane
    with Kueue(toolchain_bin, cp) as k:
        pins = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["flux-minicluster"]
        assert k.version == pins["toolchain"]["kueue"]["version"], k.tail()
        cp.kubectl("create", "namespace", NAMESPACE)
        k.apply(
            resource_flavor(FLAVOR, {"type": "kwok"}, TOLERATION),
            cluster_queue("brokers", FLAVOR, QUOTA_PODS),
            local_queue(QUEUE, NAMESPACE, "brokers"),
        )
        path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/localqueues/{QUEUE}"
        cp.wait_for(
            "LocalQueue team-a Active",
            lambda: condition(cp.get(path) or {}, "Active") == "True",
            timeout=60,
        )
        yield k


def test_two_miniclusters_share_a_queue(
    module_control_plane: ControlPlane,
    kueue: Kueue,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    # Both stacks are configured first (each config call is a CLI run: slow on a loaded
    # machine), so that the second's `up` follows the first's at once. The first runs 45 s
    # once admitted and its `up` returns at once (wait: none).
    first = queued_stack(
        engine, project, cp, NAMESPACE, QUEUE, "queue-first",
        {"spec": minicluster("flux-first", 4, pod={"annotations": {COMPLETE_AFTER: "45s"}}),
         "wait": "none"},
    )  # fmt: skip
    # The second asks for the same 4 pods of quota and waits until it completes.
    second = queued_stack(
        engine, project, cp, NAMESPACE, QUEUE, "queue-second",
        {"spec": minicluster("flux-second", 4, pod={"annotations": {COMPLETE_AFTER: "3s"}}),
         "wait": "complete", "waitTimeout": 300},
    )  # fmt: skip
    first.up()
    cp.wait_for(
        "flux-first admitted",
        lambda: job(cp, NAMESPACE, "flux-first")["spec"].get("suspend") is False,
        timeout=90,
    )
    with Watcher(cp, NAMESPACE, "flux-second") as watched:
        second.up()
    output = second.last().output
    assert f"waits for admission by LocalQueue {QUEUE!r}" in output, output[-2000:]

    first_job, second_job = job(cp, NAMESPACE, "flux-first"), job(cp, NAMESPACE, "flux-second")
    assert condition(first_job, "Complete") == "True"
    assert condition(second_job, "Complete") == "True"
    assert second_job["metadata"]["labels"][QUEUE_NAME_LABEL] == QUEUE
    # The second was queued while the first ran, and admitted only after it completed.
    phases = watched.phases()
    assert "queued" in phases, phases
    assert phases[-1] == "succeeded", phases
    queued_seen = [st for _, st in watched.seen if st["phase"] == "queued"]
    reason = queued_seen[0]["admission"]["message"]
    assert "quota" in reason.lower(), reason
    first_done = _condition_time(first_job, "Complete")
    second_admitted = _condition_time(_workload(kueue, second_job), "Admitted")
    assert second_admitted >= first_done, (first_done, second_admitted)
    final = status(cp, NAMESPACE, "flux-second")
    assert final["phase"] == "succeeded", final
    assert final["exit_code"] == 0, final
    assert final["admission"]["admitted"]
    assert final["admission"]["cluster_queue"] == "brokers"
    e2e_report(
        f"two MiniClusters of 4 in LocalQueue {QUEUE} (quota 4 pods): the second was "
        f"{' -> '.join(phases)}; admitted at {second_admitted}, after the first completed at "
        f"{first_done}; Kueue said while queued: {reason!r}"
    )
    second.destroy()
    first.destroy()


def test_an_admitted_minicluster_has_no_diff(
    module_control_plane: ControlPlane,
    kueue: Kueue,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    stack = queued_stack(
        engine, project, cp, NAMESPACE, QUEUE, "queue-running",
        {"spec": minicluster("flux-running", 2, jobLabels={"kueue.x-k8s.io/priority-class": "p1"}),
         "wait": "ready", "waitTimeout": 180},
    )  # fmt: skip
    # The priority class the label names: Kueue does not admit a Workload naming a missing one.
    kueue.apply(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
         "metadata": {"name": "p1"}, "value": 100}
    )  # fmt: skip
    stack.up()
    live = job(cp, NAMESPACE, "flux-running")
    template = live["spec"]["template"]["spec"]
    assert live["spec"]["suspend"] is False
    assert live["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "p1"
    # What Kueue injected on admission: the flavor's node labels and toleration.
    assert template.get("nodeSelector", {}).get("type") == "kwok", template.get("nodeSelector")
    assert any(t.get("key") == TOLERATION for t in template.get("tolerations", [])), template
    assert status(cp, NAMESPACE, "flux-running")["phase"] == "ready"
    assert stack.outputs()["status"]["phase"] == "ready"
    assert stack.outputs()["queue"] == QUEUE

    # A second up: nothing to do, and Kueue's fields stay.
    again = stack.up()
    assert set(changes_of(again)) == {"same"}, changes_of(again)
    stack.preview(expect_no_changes=True)
    # An update for another reason (a job label) neither re-suspends nor strips the injection.
    settings = stack.config(f"{PREFIX}:minicluster")
    settings["spec"]["spec"]["jobLabels"]["e2e"] = "two"
    stack.set_object(f"{PREFIX}:minicluster", settings)
    updated = stack.up()
    assert changes_of(updated).get("update", 0) >= 1, changes_of(updated)
    assert "replace" not in changes_of(updated), changes_of(updated)
    after = job(cp, NAMESPACE, "flux-running")
    assert after["metadata"]["uid"] == live["metadata"]["uid"]
    assert after["metadata"]["labels"]["e2e"] == "two"
    assert after["spec"]["suspend"] is False
    assert after["spec"]["template"]["spec"].get("nodeSelector", {}).get("type") == "kwok"
    assert condition(_workload(kueue, after), "Admitted") == "True"
    stack.preview(expect_no_changes=True)
    e2e_report(
        "admitted MiniCluster: second up changes nothing; an update (a job label) keeps "
        f"suspend=false and Kueue's nodeSelector/tolerations; live Job managers: "
        f"{sorted({m['manager'] for m in after['metadata'].get('managedFields', [])})}"
    )
    stack.destroy()


def test_a_minicluster_larger_than_the_quota_times_out_naming_the_queue(
    module_control_plane: ControlPlane,
    kueue: Kueue,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    stack = queued_stack(
        engine, project, cp, NAMESPACE, QUEUE, "queue-too-large",
        {"spec": minicluster("flux-too-large", QUOTA_PODS + 1), "wait": "ready",
         "waitTimeout": 25},
    )  # fmt: skip
    with pytest.raises(StackError) as failed:
        stack.up()
    message = f"{failed.value}"
    assert f"localqueue-{QUEUE}" in message, message[-3000:]
    live = job(cp, NAMESPACE, "flux-too-large")
    assert live["spec"]["suspend"] is True
    found = status(cp, NAMESPACE, "flux-too-large")
    assert found["phase"] == "queued", found
    assert found["admission"]["queue"] == QUEUE
    assert not found["admission"]["admitted"]
    assert "quota" in found["admission"]["message"].lower(), found
    lines = [" ".join(line.split()) for line in message.splitlines() if "timed out" in line]
    e2e_report(
        f"5 brokers against a quota of 4: up failed after waitTimeout 25 s: {lines[:2]}; "
        f"status: {found['admission']['message']!r}"
    )
    stack.destroy()


def _workload(kueue: Kueue, owner: dict[str, Any]) -> dict[str, Any]:
    uid = owner["metadata"]["uid"]
    for workload in kueue.workloads(NAMESPACE):
        if any(o.get("uid") == uid for o in workload["metadata"].get("ownerReferences", [])):
            return workload
    raise AssertionError(f"no Workload owned by Job {owner['metadata']['name']}")


def _condition_time(obj: dict[str, Any], kind: str) -> str:
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == kind:
            return str(c["lastTransitionTime"])
    raise AssertionError(f"{obj['metadata']['name']} has no condition {kind}")
