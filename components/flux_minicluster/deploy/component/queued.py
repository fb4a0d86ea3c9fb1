"""A queued MiniCluster under Pulumi: ``pulumi up`` that waits for Kueue and never fights it.

The renderer creates a queued Job suspended with its LocalQueue's label (``core.kube.queueing``).
Kueue then owns three things on the live Job: ``spec.suspend`` (false once admitted, true again
when it preempts), and the node selectors and tolerations of the admitted flavor in the pod
template. So the Job registers with those three paths in ``ignoreChanges``:

* a second ``up`` shows no diff for them (the engine keeps the old inputs for ignored paths);
* an update for another reason (a resize's JobPatch, a new annotation) does not send them back:
  pulumi-kubernetes' server-side apply drops an ignored field that another field manager owns
  (Kueue's job controller, after an Update) and sends the live value of one it owns itself, so an
  admitted Job is never re-suspended, and a suspended one is never admitted by Pulumi;
* the injected selectors do not count as a pod template change (which replaces the Job).

Waiting: the Job is created without an await (it is suspended, nothing would progress), and the
size patch only sizes it. The wait the MiniCluster asked for (``ready``: every broker Ready;
``complete``: the Job done) is carried by a JobPatch of its own named after the queue,
``<resource>-localqueue-<queue>``, registered after the size patch. While it waits the engine
says so (``waits for admission by LocalQueue <queue>``), and on a timeout the engine's error
names that resource, and so the queue. ``wait_timeout`` (seconds) bounds it
(``pulumi.com/timeoutSeconds``; pulumi-kubernetes' default is 10 minutes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.kube.queueing import QueueSettings
from flux_minicluster.deploy.component.awaiting import (
    DELETION_PROPAGATION_ANNOTATION,
    TIMEOUT_ANNOTATION,
)

__all__ = [
    "QUEUED_IGNORE_CHANGES",
    "admission_message",
    "await_resource_name",
    "split_awaits",
]

QUEUED_IGNORE_CHANGES: Final = (
    "spec.suspend",
    "spec.template.spec.nodeSelector",
    "spec.template.spec.tolerations",
)


def await_resource_name(resource_name: str, queue: QueueSettings) -> str:
    """The JobPatch that carries a queued MiniCluster's wait: it names the LocalQueue."""
    return f"{resource_name}-localqueue-{queue.queue}"


def admission_message(job: str, queue: QueueSettings, waits_for: str) -> str:
    return (
        f"MiniCluster {job}: waits for admission by LocalQueue {queue.queue!r} (Kueue), "
        f"then {waits_for}; a timeout here means the queue did not admit it in time "
        f"(`minicluster status` shows the Workload's reason)"
    )


def split_awaits(
    job: Mapping[str, Any], size_patch_await: Mapping[str, str], wait_timeout: int | None
) -> tuple[dict[str, Any], dict[str, str], dict[str, str] | None, str]:
    """For a queued Job: the Job to register, the size patch's and the queue patch's awaits.

    ``job`` and ``size_patch_await`` are what ``deploy.awaiting`` gives for the rendered Job
    (``registered_job``, ``patch_await_annotations``). The Job skips awaiting (and is deleted
    with background propagation, like every Job that skips); the size patch skips too; the queue
    patch, after it, carries the size patch's wait: its ``waitFor``, or none at all for
    ``complete`` (pulumi-kubernetes then judges the patched Job by its Job await: done, or
    failed). ``None`` for the queue patch when nothing is waited for. The last item says what is
    awaited, for the message.
    """
    metadata = dict(job["metadata"])
    annotations = dict(metadata.get("annotations") or {})
    wait_for = size_patch_await.get(lbl.WAIT_FOR_ANNOTATION)
    queue_await: dict[str, str] | None
    if wait_for is not None:
        queue_await, waits_for = {lbl.WAIT_FOR_ANNOTATION: wait_for}, f"for {wait_for}"
    elif size_patch_await.get(lbl.SKIP_AWAIT_ANNOTATION) != "true":
        queue_await, waits_for = {}, "for the Job to complete"
    else:
        queue_await, waits_for = None, "nothing (no wait)"
    if queue_await is not None and wait_timeout is not None:
        queue_await[TIMEOUT_ANNOTATION] = str(wait_timeout)
    annotations.pop(TIMEOUT_ANNOTATION, None)  # the queue patch carries the wait
    annotations[lbl.SKIP_AWAIT_ANNOTATION] = "true"
    annotations[DELETION_PROPAGATION_ANNOTATION] = "background"
    metadata["annotations"] = annotations
    return (
        {**job, "metadata": metadata},
        {lbl.SKIP_AWAIT_ANNOTATION: "true"},
        queue_await,
        waits_for,
    )
