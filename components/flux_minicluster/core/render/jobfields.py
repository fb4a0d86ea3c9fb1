"""The Job ``spec`` fields that say how a MiniCluster's Job completes, retries and fails.

What they are and when each is set is decided in the plan (``core.kube.completion``, for the
target release of ``core.kube.kubeversion``); this module only writes the plan's facts as
Kubernetes fields.
"""

from __future__ import annotations

from typing import Any, Final

from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning.plan import MiniClusterPlan

__all__ = [
    "DISRUPTION_TARGET",
    "IMMUTABLE",
    "LEAD_INDEX",
    "SIZE",
    "completion_fields",
    "immutable",
    "resizable",
]

LEAD_INDEX: Final = "0"
"""The index whose success completes the Job: rank 0's pod."""
DISRUPTION_TARGET: Final = "DisruptionTarget"
"""The pod condition the kubelet and the API server set on a pod evicted, preempted or deleted
for a node drain or a taint: not the workload's failure."""
IMMUTABLE: Final = (
    "successPolicy",
    "podFailurePolicy",
    "backoffLimitPerIndex",
    "managedBy",
)
"""The fields of these the API server refuses to change on a live Job (``ValidateJobSpecUpdate``
of k8s.io/kubernetes; podReplacementPolicy and maxFailedIndexes may change): a new target release
or restartPolicy that adds or drops one replaces the Job, as a new pod template does."""
SIZE: Final = ("parallelism", "completions")
"""The fields that hold a MiniCluster's size (``spec.size``: one pod per rank, each to complete)."""


def resizable(version: kubeversion.KubeVersion) -> bool:
    """Whether a live Indexed Job takes a new size on ``version``: ``completions`` changed
    together with ``parallelism`` needs ElasticIndexedJob; before it the API server refuses a new
    ``completions``, so there a new size is a new Job."""
    return kubeversion.serves(version, kubeversion.JobField.ELASTIC_INDEXED)


def immutable(version: kubeversion.KubeVersion) -> tuple[str, ...]:
    """The fields a change of which must replace a live Job on ``version``: ``IMMUTABLE``, and
    ``completions`` where the Job cannot be resized (``resizable``)."""
    return IMMUTABLE if resizable(version) else (*IMMUTABLE, "completions")


def completion_fields(plan: MiniClusterPlan) -> dict[str, Any]:
    """``backoffLimit`` (or the budget per index), then the policies, in the Job's order."""
    job = plan.job
    out: dict[str, Any] = {}
    if job.backoff_limit is not None:
        out["backoffLimit"] = job.backoff_limit
    if job.backoff_limit_per_index is not None:
        out["backoffLimitPerIndex"] = job.backoff_limit_per_index
    if job.max_failed_indexes is not None:
        out["maxFailedIndexes"] = job.max_failed_indexes
    if job.replace_failed_only:
        out["podReplacementPolicy"] = "Failed"
    if job.lead_decides:
        out["successPolicy"] = {"rules": [{"succeededIndexes": LEAD_INDEX}]}
    if job.failure_policy:
        out["podFailurePolicy"] = {"rules": _failure_rules(plan)}
    return out


def _failure_rules(plan: MiniClusterPlan) -> list[dict[str, Any]]:
    """Configuration errors of the Flux and the init container fail the Job, and so does rank 0's
    failed work (``WORK_FAILED``, from the Flux container) where its exit ends the work;
    disruptions are ignored (not counted, the pod is replaced). Rules are tried in order; the
    first match acts."""
    codes = sorted(exitcodes.CONFIGURATION_ERRORS)
    flux_codes = [*codes, exitcodes.WORK_FAILED] if plan.job.work_fails_job else codes
    rules: list[dict[str, Any]] = [
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": container, "operator": "In", "values": values},
        }
        for container, values in (
            (plan.name, flux_codes),
            (plan.spec.flux.container.name, codes),
        )
    ]
    # status "True" is the API server's default, written out: the published schemas require it
    rules.append(
        {"action": "Ignore", "onPodConditions": [{"type": DISRUPTION_TARGET, "status": "True"}]}
    )
    return rules
