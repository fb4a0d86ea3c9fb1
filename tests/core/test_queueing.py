"""Kueue: what a queue does to the rendered Job.

The real controller's side (admission, the quota, what it injects, no diff on a second `up`)
is tests/e2e/test_kueue.py's; here, what we render for it. What the component registers for it
is tests/deploy/test_component_queueing.py's; the queue policy,
tests/policy/test_queueing_policy.py's.
"""

from __future__ import annotations

import dataclasses

import pytest
from support.queuecases import CERT, Build, spec

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube import kubeversion, queueing
from flux_minicluster.core.render.manifests import render


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
