"""Kueue: what a queue does to the rendered Job, to the component's registrations and to policy.

The real controller's side (admission, the quota, what it injects, no diff on a second `up`)
is tests/e2e/test_kueue.py's; here, what we render and register for it.
"""

from __future__ import annotations

import dataclasses
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.core import kubeversion, queueing
from flux_minicluster.core import labels as lbl
from flux_minicluster.core import plan as plans
from flux_minicluster.core.errors import SpecError
from flux_minicluster.core.render.manifests import render
from flux_minicluster.deploy.component import awaiting, queued
from flux_minicluster.deploy.component.minicluster import JOB_IGNORE_CHANGES, MiniCluster
from flux_minicluster.deploy.offline.recorder import (
    ProgramRun,
    RegistrationRecorder,
    plain,
    run_program,
)
from flux_minicluster.deploy.stack import project, stackconfig, stackrender
from flux_minicluster.policy.checker import check
from flux_minicluster.policy.queue_rules import QUEUED_JOB_SUSPENDED

CERT = (
    (Path(__file__).resolve().parents[1] / "golden" / "fixed-curve.cert")
    .read_text()
    .removesuffix("\n")
)
JOB = "kubernetes:batch/v1:Job"
JOBPATCH = "kubernetes:batch/v1:JobPatch"
Build = Callable[..., plans.MiniClusterPlan]
Run = Callable[..., ProgramRun[Any]]


def spec(**fields: Any) -> dict[str, Any]:
    return {"size": 4, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}], **fields}


@pytest.mark.parametrize(
    ("queue", "job_labels"),
    [("team-a", {}), (None, {queueing.QUEUE_NAME_LABEL: "team-a"}),
     ("team-a", {queueing.QUEUE_NAME_LABEL: "team-a"})],
    ids=["argument", "jobLabels", "both-agree"],
)  # fmt: skip
def test_a_queue_labels_the_job_and_creates_it_suspended(
    build: Build, queue: str | None, job_labels: dict[str, str]
) -> None:
    labels = {**job_labels, queueing.PRIORITY_CLASS_LABEL: "high"}
    rendering = render(build(spec(jobLabels=labels)), CERT, queue=queue)
    job = rendering.job
    assert job["metadata"]["labels"][queueing.QUEUE_NAME_LABEL] == "team-a"
    assert job["metadata"]["labels"][queueing.PRIORITY_CLASS_LABEL] == "high"  # passes through
    assert job["spec"]["suspend"] is True
    assert "managedBy" not in job["spec"]
    assert rendering.queue == queueing.QueueSettings("team-a", "high", None)
    assert list(job["spec"])[-1] == "template"


def test_an_unqueued_job_is_what_it_was(build: Build) -> None:
    plan = build(spec())
    assert render(plan, CERT).job == render(plan, CERT, queue=None).job
    assert "suspend" not in render(plan, CERT).job["spec"]
    assert render(plan, CERT).queue is None


def test_managed_by_passes_through_where_the_version_serves_it(build: Build) -> None:
    job = render(build(spec()), CERT, queue="q", managed_by=queueing.KUEUE_MANAGED_BY).job
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    old = dataclasses.replace(build(spec()), kube_version=kubeversion.parse("1.32"))
    with pytest.raises(SpecError) as raised:
        render(old, CERT, queue="q", managed_by=queueing.KUEUE_MANAGED_BY)
    assert "managed_by: Kubernetes 1.32 does not serve the Job's spec.managedBy" in str(
        raised.value
    )
    assert "managedBy" not in render(old, CERT, queue="q").job["spec"]


@pytest.mark.parametrize(
    ("kwargs", "labels", "message"),
    [
        ({"queue": "Team_A"}, {}, "queue: a LocalQueue name must be a DNS-1123 subdomain"),
        ({"queue": "a" * 64}, {}, "queue: a LocalQueue name must be a label value"),
        ({"queue": "b"}, {queueing.QUEUE_NAME_LABEL: "a"},
         "queue: is 'b' but spec.jobLabels['kueue.x-k8s.io/queue-name'] is 'a'"),
        ({}, {queueing.QUEUE_NAME_LABEL: "A.b"},
         "spec.jobLabels['kueue.x-k8s.io/queue-name']: a LocalQueue name must be a DNS-1123"),
        ({"managed_by": "multikueue"}, {}, "managed_by: must be a domain-prefixed path"),
        ({"managed_by": queueing.KUEUE_MANAGED_BY}, {},
         "managed_by: 'kueue.x-k8s.io/multikueue' needs a queue"),
    ],
    ids=["not-a-subdomain", "too-long", "disagree", "bad-label", "bad-managed-by",
         "multikueue-needs-a-queue"],
)  # fmt: skip
def test_bad_queue_input_is_refused_naming_the_field(
    build: Build, kwargs: dict[str, str], labels: dict[str, str], message: str
) -> None:
    plan = build(spec(jobLabels=labels)) if labels else build(spec())
    with pytest.raises(SpecError) as err:
        render(plan, CERT, **kwargs)
    assert message in str(err.value)


# --- the component ---------------------------------------------------------------------------


def deploy(run_pulumi: Run, **args: Any) -> ProgramRun[MiniCluster]:
    def program() -> MiniCluster:
        return MiniCluster("mc", {"spec": spec(), **args})

    return run_pulumi(program, mocks=RegistrationRecorder(command_stdout=CERT))


def awaits(resource: Any) -> dict[str, str]:
    notes = plain(resource.inputs)["metadata"]["annotations"]
    return {k: v for k, v in notes.items() if k.startswith("pulumi.com/") and "patchForce" not in k}


@pytest.mark.parametrize(
    ("wait", "queue_await"),
    [
        ("ready", {lbl.WAIT_FOR_ANNOTATION: "jsonpath={.status.ready}=4",
                   awaiting.TIMEOUT_ANNOTATION: "90"}),
        ("complete", {awaiting.TIMEOUT_ANNOTATION: "90"}),  # the Job await: done or failed
        ("none", None),
    ],
)  # fmt: skip
def test_a_queued_minicluster_waits_through_a_patch_named_for_its_queue(
    run_pulumi: Run, wait: str, queue_await: dict[str, str] | None
) -> None:
    run = deploy(run_pulumi, queue="team-a", wait=wait, wait_timeout=90)
    (job,) = [r for r in run.resources if r.typ == JOB]
    patches = {r.name: r for r in run.resources if r.typ == JOBPATCH}
    assert job.options is not None
    assert job.options.ignore_changes == (*JOB_IGNORE_CHANGES, *queued.QUEUED_IGNORE_CHANGES)
    assert awaits(job) == {
        lbl.SKIP_AWAIT_ANNOTATION: "true",
        awaiting.DELETION_PROPAGATION_ANNOTATION: "background",
    }
    assert plain(job.inputs)["spec"]["suspend"] is True
    assert awaits(patches["mc-size"]) == {lbl.SKIP_AWAIT_ANNOTATION: "true"}
    if queue_await is None:
        assert set(patches) == {"mc-size"}
        return
    waiting = patches["mc-localqueue-team-a"]
    assert awaits(waiting) == queue_await
    assert waiting.options is not None
    assert waiting.options.dependencies == (patches["mc-size"].urn,)
    assert waiting.options.deleted_with == job.urn
    assert "spec" not in plain(waiting.inputs)  # it sets nothing on the Job: it only waits


def test_an_unqueued_minicluster_registers_no_queue_patch(run_pulumi: Run) -> None:
    run = deploy(run_pulumi, wait="ready")
    (job,) = [r for r in run.resources if r.typ == JOB]
    assert [r.name for r in run.resources if r.typ == JOBPATCH] == ["mc-size"]
    assert job.options is not None
    assert job.options.ignore_changes == JOB_IGNORE_CHANGES


def test_wait_timeout_bounds_the_unqueued_wait_too(run_pulumi: Run) -> None:
    ready = deploy(run_pulumi, wait="ready", wait_timeout=60)
    (patch,) = [r for r in ready.resources if r.typ == JOBPATCH]
    assert awaits(patch)[awaiting.TIMEOUT_ANNOTATION] == "60"
    complete = deploy(run_pulumi, wait="complete", wait_timeout=60)
    (job,) = [r for r in complete.resources if r.typ == JOB]
    assert awaits(job)[awaiting.TIMEOUT_ANNOTATION] == "60"
    with pytest.raises(SpecError, match="wait_timeout: must be a positive number of seconds"):
        deploy(run_pulumi, wait_timeout=0)


# --- policy ----------------------------------------------------------------------------------


def test_the_policy_flags_a_queue_label_without_suspend(build: Build) -> None:
    rule = QUEUED_JOB_SUSPENDED
    job = render(build(spec()), CERT, queue="team-a").job
    assert rule.check_resource(job, {}) == []
    job["spec"]["suspend"] = False
    (message,) = rule.check_resource(job, {})
    assert "kueue.x-k8s.io/queue-name: 'team-a'" in message
    assert "spec.suspend: true" in message
    assert rule.level == "mandatory"
    unqueued = render(build(spec()), CERT).job
    assert rule.check_resource(unqueued, {}) == []
    rendering = render(build(spec()), CERT, queue="team-a")
    rendering.job["spec"]["suspend"] = False
    report = check(rendering.objects())  # the offline checker runs it among the pack's rules
    assert [v.policy for v in report.mandatory] == ["queued-job-suspended"]


def test_the_stack_config_keys_reach_the_component() -> None:
    """The stack's minicluster.queue, managedBy and waitTimeout, through the real program."""
    root = Path(__file__).resolve().parents[2]
    config, _ = stackrender.read_stack_config(project.find(root), "local")
    minicluster = config[f"{stackconfig.PROJECT}:minicluster"]
    minicluster.update(queue="team-a", managedBy=queueing.KUEUE_MANAGED_BY, waitTimeout=600)
    config[f"{stackconfig.PROJECT}:keygen"] = {"strategy": "builtin"}
    run = run_program(
        lambda: runpy.run_path(str(root / "__main__.py"), run_name="__main__"),
        mocks=RegistrationRecorder(command_stdout=CERT),
        project=stackconfig.PROJECT,
        stack="local",
        config=config,
    )
    (job,) = [plain(r.inputs) for r in run.resources if r.typ == JOB]
    assert job["metadata"]["labels"][queueing.QUEUE_NAME_LABEL] == "team-a"
    assert job["spec"]["managedBy"] == queueing.KUEUE_MANAGED_BY
    # wait: ready, so the patch that waits for the admitted pods carries the bound
    waits = [plain(r.inputs)["metadata"]["annotations"] for r in run.resources if r.typ == JOBPATCH]
    assert [w.get(awaiting.TIMEOUT_ANNOTATION) for w in waits if lbl.WAIT_FOR_ANNOTATION in w] == [
        "600"
    ]
    with pytest.raises(SpecError, match="waitTimeout"):
        stackconfig.parse_stack_config({"minicluster": {"file": "x.yaml", "waitTimeout": "soon"}})
