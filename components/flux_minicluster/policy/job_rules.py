"""Rules over the fields that make a MiniCluster's Job a batch workload (``core.kube.completion``).

The renderer never breaks them; a manifest edited by hand, a transformation or another tool can.

* ``burst-no-success-policy``: a burst's index 0 is one of its workers, not the lead (the lead is
  the root's rank 0, in another cluster). A success policy on index 0 would complete the burst's
  Job as soon as that worker exits, and the Job controller would then end its other brokers
  while the instance still runs on them.
* ``failure-policy-needs-never``: the API server refuses a Job with a ``podFailurePolicy`` whose
  pods restart in place (``restartPolicy: OnFailure``): an exit code can only fail a pod, and
  decide the Job's fate, when the container is not restarted. Refused at ``pulumi up``, half-way
  through an update; caught here before.
* ``failed-work-fails-job`` (advisory): where rank 0's exit ends the work (an ephemeral cluster,
  not a burst), the Job fails when the work does: its pods have ``restartPolicy: Never`` and its
  failure policy fails it on ``exitcodes.WORK_FAILED``. Otherwise (``OnFailure``, or a release
  without a pod failure policy) rank 0 exits 0 when its work failed, so that the work is not run
  again, and the Job completes (``core.kube.completion``).
"""

from __future__ import annotations

from typing import Any

from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.kube.completion import NEVER
from flux_minicluster.core.planning.plan import Role
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy.model import Manifest, Rule, Settings
from flux_minicluster.policy.resource_rules import is_minicluster_job

__all__ = ["BURST_NO_SUCCESS_POLICY", "FAILED_WORK_FAILS_JOB", "FAILURE_POLICY_NEEDS_NEVER"]


def check_burst_no_success_policy(m: Manifest, s: Settings) -> list[str]:
    if not is_minicluster_job(m):
        return []
    if mf.annotations_of(m).get(lbl.ROLE_ANNOTATION) != Role.BURST.value:
        return []
    if mf.as_dict(m.get("spec")).get("successPolicy") is None:
        return []
    return [
        "the Job of a bursted cluster has spec.successPolicy: its index 0 is a worker of the "
        "root's instance, not the lead, so the Job would complete when that worker exits and the "
        "Job controller would end the other brokers while the instance still runs on them"
    ]


def check_failure_policy_needs_never(m: Manifest, s: Settings) -> list[str]:
    if mf.kind(m) != "Job":
        return []
    if mf.as_dict(m.get("spec")).get("podFailurePolicy") is None:
        return []
    restart = (mf.pod_spec(m) or {}).get("restartPolicy")
    if restart == NEVER:
        return []
    return [
        f"spec.podFailurePolicy needs spec.template.spec.restartPolicy {NEVER}, not "
        f"{restart!r}: the API server refuses the Job (a container restarted in place never "
        "fails its pod, so no exit code could reach the policy)"
    ]


def _fails_on_work(rule: Any) -> bool:
    """A failure policy rule that fails the Job on ``exitcodes.WORK_FAILED``."""
    rule = mf.as_dict(rule)
    codes = mf.as_dict(rule.get("onExitCodes"))
    return (
        rule.get("action") == "FailJob"
        and codes.get("operator") == "In"
        and exitcodes.WORK_FAILED in mf.as_list(codes.get("values"))
    )


def check_failed_work_fails_job(m: Manifest, s: Settings) -> list[str]:
    if not is_minicluster_job(m):
        return []
    notes = mf.annotations_of(m)
    if notes.get(lbl.LIFECYCLE_ANNOTATION) == "persistent":
        return []
    if notes.get(lbl.ROLE_ANNOTATION) == Role.BURST.value:
        return []
    restart = (mf.pod_spec(m) or {}).get("restartPolicy")
    rules = mf.as_list(mf.as_dict(mf.as_dict(m.get("spec")).get("podFailurePolicy")).get("rules"))
    if restart == NEVER and any(_fails_on_work(rule) for rule in rules):
        return []
    why = (
        f"spec.template.spec.restartPolicy is {restart!r}"
        if restart != NEVER
        else f"spec.podFailurePolicy has no FailJob rule on exit code {exitcodes.WORK_FAILED}"
    )
    return [
        f"{why}: when rank 0's work fails the Job still completes (rank 0 exits 0 so that the "
        "work is not run again; only its termination message and `minicluster status` say it "
        "failed), and `pulumi up` with wait: complete succeeds"
    ]


BURST_NO_SUCCESS_POLICY = Rule(
    id="burst-no-success-policy",
    description="A bursted cluster's Job has no success policy: its index 0 is not the lead.",
    level="mandatory",
    remediation=(
        "Remove spec.successPolicy from the burst's Job: it completes when its brokers exit, "
        "which they do when the root's instance shuts down."
    ),
    resource_check=check_burst_no_success_policy,
)

FAILURE_POLICY_NEEDS_NEVER = Rule(
    id="failure-policy-needs-never",
    description="A Job with a podFailurePolicy runs its pods with restartPolicy Never.",
    level="mandatory",
    remediation=(
        "Set the MiniCluster's spec.pod.restartPolicy to Never (the renderer then adds the "
        "failure policy itself), or remove spec.podFailurePolicy from the Job."
    ),
    resource_check=check_failure_policy_needs_never,
)

FAILED_WORK_FAILS_JOB = Rule(
    id="failed-work-fails-job",
    description="A MiniCluster whose rank 0 runs the work fails its Job when the work fails.",
    level="advisory",
    remediation=(
        "Leave the MiniCluster's spec.pod.restartPolicy unset (Never where the target Kubernetes "
        "release serves a pod failure policy, 1.29 and newer) or set it to Never, and render "
        "for such a release: the renderer then adds the failure policy that fails the Job on "
        f"rank 0's exit code {exitcodes.WORK_FAILED}."
    ),
    resource_check=check_failed_work_fails_job,
)
