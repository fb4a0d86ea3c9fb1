"""How a MiniCluster's Job completes, retries and fails: facts the plan holds, decided here once.

The Flux Operator's Job completes when every index has succeeded and retries any failure up to a
Job-wide ``backoffLimit`` (100). Newer releases let the Job say what a MiniCluster means, and each
field below is set only where the target release serves it (``core.kube.kubeversion``):

* **rank 0 decides** (``successPolicy``, ``succeededIndexes: "0"``): rank 0's success ends the
  instance for good (its work is done, or a person ran ``flux shutdown`` in a persistent or
  interactive cluster), so the Job completes when index 0 succeeds and the Job controller ends
  the workers still running. Rank 0 stopped by a signal fails instead (128 + the signal), and its
  new pod starts the instance again: a persistent or interactive cluster's workers, whose brokers
  exit 0 whenever the instance shuts down, start theirs again and rejoin it, since only the Job
  controller can tell them it is over (``core.render.scripts``: where rank 0 runs the work, they
  end with the instance, and keep their pods and logs).
  Not for a burst, whose index 0 is not the lead: its brokers exit 0 when the root's instance
  shuts down, so its Job completes when every one of them has (no policy);
* **one pod per rank** (``podReplacementPolicy: Failed``): a rank's new pod is created only once
  the old one has failed or gone, never while it terminates: two brokers of one rank must never
  meet the overlay;
* **a retry budget per rank** (``backoffLimitPerIndex``, ``maxFailedIndexes: 0``) with
  ``restartPolicy: Never``: each rank may fail the operator's ``backoffLimit`` times (its value,
  or 100), and a rank that used its budget fails the Job, since an instance missing a rank cannot
  run. With ``restartPolicy: OnFailure`` a rank's container restarts in place, which only the
  Job-wide count sees, so the operator's ``backoffLimit`` stays as it is;
* **failures that mean something** (``podFailurePolicy``, ``restartPolicy: Never`` only: the API
  server refuses it otherwise): an exit code of ``core.base.exitcodes.CONFIGURATION_ERRORS``
  from the Flux or the init container fails the Job at once, and so does rank 0's
  ``WORK_FAILED`` (its work exited non-zero) where rank 0's exit ends the work; a disruption (a
  pod evicted, preempted or deleted by a drain: condition ``DisruptionTarget``) is not counted
  against the budget.

**The pods' restartPolicy** (``restart_policy``): the spec's when it sets one; else ``Never``
where the target release renders a pod failure policy, so that failed work fails the Job at once
(``work_fails_job``), and the operator's ``OnFailure`` where it does not. Under ``OnFailure``
(the user's choice, or an older release) rank 0 exits 0 when its work failed, as the operator's
does: a non-zero exit would restart it in place and run finished work again, up to
``backoffLimit`` times, while the workers that already ended never come back. The Job then
completes, and only rank 0's termination message (``exitcodes.work_message``) and
``minicluster status`` tell that the work failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from flux_minicluster.core.kube.kubeversion import JOB_FIELDS, JobField, KubeVersion, serves

__all__ = [
    "NEVER",
    "ON_FAILURE",
    "JobBehaviour",
    "behaviour",
    "failed_work_advisory",
    "restart_policy",
]

NEVER: Final = "Never"
"""The restartPolicy a pod failure policy and a per-index budget need."""
ON_FAILURE: Final = "OnFailure"
"""The Flux Operator's restartPolicy: a failed container restarts in its pod."""


@dataclass(frozen=True)
class JobBehaviour:
    """The Job fields that say how it completes and fails, each None (or False) where unset, and
    the pods' restartPolicy they go with."""

    restart_policy: str
    """The broker pods' restartPolicy (``restart_policy``)."""
    work_at_lead: bool
    """Rank 0's initial program is the work, and its exit ends it: its entrypoint tells how the
    work ended in its termination message."""
    work_fails_job: bool
    """Rank 0's entrypoint exits ``exitcodes.WORK_FAILED`` when its work failed, and the failure
    policy fails the Job on it; else (``OnFailure``, or no failure policy) it exits 0."""
    lead_decides: bool
    """successPolicy: the Job completes when index 0 (rank 0) succeeds."""
    replace_failed_only: bool
    """podReplacementPolicy: Failed."""
    backoff_limit: int | None
    """The Job-wide backoffLimit (None when the budget is per index)."""
    backoff_limit_per_index: int | None
    max_failed_indexes: int | None
    failure_policy: bool
    """podFailurePolicy: configuration errors (and failed work, ``work_fails_job``) fail the
    Job, disruptions are not counted."""


def restart_policy(version: KubeVersion, requested: str | None) -> str:
    """The broker pods' restartPolicy on ``version``: ``requested`` (the spec's) when given;
    else ``Never`` where the release renders a pod failure policy, ``OnFailure`` (the
    operator's) where it does not (see the module). The one place this is decided."""
    if requested is not None:
        return requested
    return NEVER if serves(version, JobField.POD_FAILURE_POLICY) else ON_FAILURE


def behaviour(
    version: KubeVersion,
    *,
    lead_is_index_0: bool,
    work_at_lead: bool,
    requested_restart: str | None,
    backoff_limit: int,
) -> JobBehaviour:
    """The Job's behaviour for ``version``.

    ``lead_is_index_0``: rank 0 is this Job's index 0, whose success ends the instance (every
    MiniCluster but a burst); ``work_at_lead``: besides, rank 0's initial program is the work
    (not a persistent or interactive cluster); ``backoff_limit``: the operator's (already
    defaulted); ``requested_restart``: the spec's restartPolicy (None: unset, ``restart_policy``
    decides).
    """
    restart = restart_policy(version, requested_restart)
    never = restart == NEVER
    per_index = never and serves(version, JobField.BACKOFF_LIMIT_PER_INDEX)
    failure_policy = never and serves(version, JobField.POD_FAILURE_POLICY)
    return JobBehaviour(
        restart_policy=restart,
        work_at_lead=work_at_lead,
        work_fails_job=work_at_lead and failure_policy,
        lead_decides=lead_is_index_0 and serves(version, JobField.SUCCESS_POLICY),
        replace_failed_only=serves(version, JobField.POD_REPLACEMENT_POLICY),
        backoff_limit=None if per_index else backoff_limit,
        backoff_limit_per_index=backoff_limit if per_index else None,
        max_failed_indexes=0 if per_index else None,
        failure_policy=failure_policy,
    )


def failed_work_advisory(version: KubeVersion, job: JobBehaviour) -> str | None:
    """What a person must know when rank 0's failed work will leave a Complete Job on
    ``version`` (``restartPolicy: OnFailure``, or a release without a pod failure policy);
    None when failed work fails the Job, or rank 0 runs no work."""
    if not job.work_at_lead or job.work_fails_job:
        return None
    first = JOB_FIELDS[JobField.POD_FAILURE_POLICY].rendered_from
    if job.restart_policy == NEVER:
        why = f"Kubernetes {version} gets no pod failure policy (rendered from {first})"
        fix = f"target Kubernetes {first} or newer to fail the Job at once"
    else:
        why = f"with restartPolicy {job.restart_policy}"
        fix = (
            f"set restartPolicy {NEVER} (or leave it unset, on Kubernetes {first} or newer) "
            "to fail the Job at once"
        )
    return (
        f"{why}, failed work leaves a Complete Job: rank 0 exits 0 when its work failed, so "
        "that the work is not run again, and only its termination message and `minicluster "
        f"status` say it failed; {fix}"
    )
