"""The policies over a target release's Jobs, hand-edited (the release and the Job fields it
serves are tests/core/test_kube_version.py's)."""

from __future__ import annotations

import copy
from pathlib import Path

from support.kubeversioncases import job_of

from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import load_file
from flux_minicluster.core.render.manifests import render
from flux_minicluster.policy import checker
from flux_minicluster.policy.rules import BURST_NO_SUCCESS_POLICY, FAILURE_POLICY_NEEDS_NEVER

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def test_a_success_policy_on_a_burst_is_a_violation() -> None:
    objects = render(plans.build(load_file(str(EXAMPLES / "bursting-child.yaml"))[0]), None)
    job = copy.deepcopy(objects.job)
    assert BURST_NO_SUCCESS_POLICY.resource_check is not None
    assert BURST_NO_SUCCESS_POLICY.resource_check(job, {}) == []
    job["spec"]["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    assert "index 0 is a worker" in BURST_NO_SUCCESS_POLICY.resource_check(job, {})[0]
    report = checker.check([job], {})
    assert any(v.policy == "burst-no-success-policy" for v in report.violations)


def test_a_failure_policy_with_restart_on_failure_is_a_violation() -> None:
    job = job_of(EXAMPLES / "batch.yaml", "1.33", restartPolicy="Never")
    check = FAILURE_POLICY_NEEDS_NEVER.resource_check
    assert check is not None
    assert check(job, {}) == []
    job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert "needs spec.template.spec.restartPolicy Never" in check(job, {})[0]
    report = checker.check([job], {})
    assert any(v.policy == "failure-policy-needs-never" for v in report.violations)
