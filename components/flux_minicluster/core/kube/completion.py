"""How a MiniCluster's Job completes, retries and fails: facts the plan holds, decided here once.

The Flux Operator's Job completes when every index has succeeded and retries any failure up to a
Job-wide ``backoffLimit`` (100). Newer releases let the Job say what a MiniCluster means, and each
field below is set only where the target release serves it (``core.kube.kubeversion``):

* **rank 0 decides** (``successPolicy``, ``succeededIndexes: "0"``): rank 0's success ends the
  instance for good (its work is done, or a person ran ``flux shutdown`` in a persistent or
  interactive cluster), so the Job completes when index 0 succeeds and the Job controller ends
  the workers still running. Rank 0 stopped by a signal fails instead (128 + the signal), and its
  new pod starts the instance again: the workers, whose brokers exit 0 whenever the instance shuts
  down, start theirs again and rejoin it, since only the Job controller can tell them it is over.
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
  from the Flux or the init container fails the Job at once, and a disruption (a pod evicted,
  preempted or deleted by a drain: condition ``DisruptionTarget``) is not counted against the
  budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from flux_minicluster.core.kube.kubeversion import JobField, KubeVersion, serves

__all__ = ["NEVER", "JobBehaviour", "behaviour"]

NEVER: Final = "Never"
"""The restartPolicy a pod failure policy and a per-index budget need."""


@dataclass(frozen=True)
class JobBehaviour:
    """The Job fields that say how it completes and fails, each None (or False) where unset."""

    lead_decides: bool
    """successPolicy: the Job completes when index 0 (rank 0) succeeds."""
    replace_failed_only: bool
    """podReplacementPolicy: Failed."""
    backoff_limit: int | None
    """The Job-wide backoffLimit (None when the budget is per index)."""
    backoff_limit_per_index: int | None
    max_failed_indexes: int | None
    failure_policy: bool
    """podFailurePolicy: configuration errors fail the Job, disruptions are not counted."""


def behaviour(
    version: KubeVersion,
    *,
    lead_completes_work: bool,
    restart_policy: str,
    backoff_limit: int,
) -> JobBehaviour:
    """The Job's behaviour for ``version``.

    ``lead_completes_work``: rank 0 is this Job's index 0, whose success ends the instance (see
    the module); ``backoff_limit``: the operator's (already defaulted); ``restart_policy``: the
    pods'.
    """
    never = restart_policy == NEVER
    per_index = never and serves(version, JobField.BACKOFF_LIMIT_PER_INDEX)
    return JobBehaviour(
        lead_decides=lead_completes_work and serves(version, JobField.SUCCESS_POLICY),
        replace_failed_only=serves(version, JobField.POD_REPLACEMENT_POLICY),
        backoff_limit=None if per_index else backoff_limit,
        backoff_limit_per_index=backoff_limit if per_index else None,
        max_failed_indexes=0 if per_index else None,
        failure_policy=never and serves(version, JobField.POD_FAILURE_POLICY),
    )
