"""Kueue: the policy that a queued Job is created suspended (what a queue does to the rendered Job
is tests/core/test_queueing.py's)."""

from __future__ import annotations

from support.queuecases import CERT, Build, spec

from flux_minicluster.core.render.manifests import render
from flux_minicluster.policy.checker import check
from flux_minicluster.policy.queue_rules import QUEUED_JOB_SUSPENDED


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
