"""Rules for queued MiniClusters (Kueue).

``queued-job-suspended`` (mandatory): a Job labelled for a Kueue LocalQueue is created with
``spec.suspend: true``. Kueue admits a Job by resuming it; its admission webhook suspends a
queued Job at creation, but a cluster where the webhook is off, fails open, or is not installed
yet starts such a Job's pods at once, around the queue and its quota, and Kueue then stops them
again: brokers that start and die. The renderer always suspends a queued Job
(``core.kube.queueing``); this catches a Job edited by hand, a transformation, or another tool.
"""

from __future__ import annotations

from flux_minicluster.core.kube.queueing import QUEUE_NAME_LABEL
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy.model import Manifest, Rule, Settings

__all__ = ["QUEUED_JOB_SUSPENDED", "check_queued_job_suspended"]


def check_queued_job_suspended(m: Manifest, s: Settings) -> list[str]:
    if mf.kind(m) != "Job":
        return []
    queue = mf.labels_of(m).get(QUEUE_NAME_LABEL)
    if queue is None:
        return []
    if mf.dig(m, "spec", "suspend") is True:
        return []
    return [
        f"the Job is labelled {QUEUE_NAME_LABEL}: {queue!r} but is not created with "
        "spec.suspend: true: unless Kueue's webhook suspends it first, its pods start before "
        f"LocalQueue {queue!r} admits it, around the queue's quota"
    ]


QUEUED_JOB_SUSPENDED = Rule(
    id="queued-job-suspended",
    description="A Job labelled for a Kueue LocalQueue is created suspended.",
    level="mandatory",
    remediation=(
        "Set spec.suspend: true on the Job (the renderer does for a MiniCluster with a queue: "
        "the stack's minicluster.queue, the component's queue, or the queue-name label in "
        "jobLabels); Kueue resumes it when the queue admits it."
    ),
    resource_check=check_queued_job_suspended,
)
