"""Kueue: a MiniCluster's Job as a queued batch workload.

Kueue admits a Job that carries the label ``kueue.x-k8s.io/queue-name`` (the LocalQueue) once
the queue's ClusterQueue has quota for all of its pods, by setting ``spec.suspend`` to false and
injecting the admitted flavor's node selectors and tolerations into the pod template. Its
webhook suspends such a Job at creation; without the webhook (or before it runs) a Job created
running would start its pods around the queue, so a queued Job is always created suspended.

The queue comes from the deployer (the component's ``queue``, the stack's
``flux-minicluster:minicluster.queue``, ``render --queue``) or from the operator spec's
``jobLabels``; both may name it only if they agree. A priority class
(``kueue.x-k8s.io/priority-class`` in ``jobLabels``) passes through untouched, as every job
label does. ``spec.managedBy`` (MultiKueue: ``kueue.x-k8s.io/multikueue`` hands the Job to a
worker cluster) passes through; whether the target Kubernetes serves the field is the version
table's to say (``core.kube.kubeversion``), which the renderer asks before it calls ``queued_job``.

Pure: no Pulumi here. The Pulumi layer reads ``QueueSettings`` from the rendering to keep
``pulumi up`` from fighting Kueue (see ``deploy.queued``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from flux_minicluster.core.base.errors import Problem, SpecError, key_path
from flux_minicluster.core.kube import names

__all__ = [
    "KUEUE_MANAGED_BY",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "QueueSettings",
    "queued_job",
    "settings",
]

QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
KUEUE_MANAGED_BY: Final = "kueue.x-k8s.io/multikueue"
_MANAGED_BY_MAX: Final = 63
_DOMAIN_PREFIXED_PATH: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
)


@dataclass(frozen=True)
class QueueSettings:
    """A queued MiniCluster: its LocalQueue, priority class and the controller that owns it."""

    queue: str
    """The LocalQueue (in the MiniCluster's namespace) that admits the Job."""
    priority_class: str | None
    """The Kueue WorkloadPriorityClass named in ``jobLabels``, if any."""
    managed_by: str | None
    """``spec.managedBy`` of the Job (MultiKueue), if any."""


def settings(
    job_labels: Mapping[str, str],
    queue: str | None = None,
    managed_by: str | None = None,
    *,
    queue_field: str = "queue",
    managed_by_field: str = "managed_by",
) -> QueueSettings | None:
    """The queue of a MiniCluster, or None when it is not queued; ``SpecError`` on bad input.

    ``queue_field`` and ``managed_by_field`` name the deployer's inputs in messages (the
    component's argument, the stack's config key, the CLI's flag).
    """
    problems: list[Problem] = []
    labelled = job_labels.get(QUEUE_NAME_LABEL)
    label_path = key_path("spec.jobLabels", QUEUE_NAME_LABEL)
    if queue is not None:
        if not isinstance(queue, str) or not queue:
            problems.append(Problem(queue_field, "must be a LocalQueue name (a non-empty string)"))
        elif message := _queue_name_problem(queue):
            problems.append(Problem(queue_field, message))
        elif labelled is not None and labelled != queue:
            problems.append(
                Problem(
                    queue_field,
                    f"is {queue!r} but {label_path} is {labelled!r}: name the LocalQueue once, "
                    "or the same in both",
                )
            )
    elif labelled is not None and (message := _queue_name_problem(labelled)):
        problems.append(Problem(label_path, message))
    name = queue if queue is not None else labelled
    if managed_by is not None:
        if message := _managed_by_problem(managed_by):
            problems.append(Problem(managed_by_field, message))
        elif name is None and managed_by == KUEUE_MANAGED_BY:
            problems.append(
                Problem(
                    managed_by_field,
                    f"{KUEUE_MANAGED_BY!r} needs a queue: MultiKueue dispatches the Workload "
                    f"of a queued Job (set {queue_field} or {label_path})",
                )
            )
    if problems:
        raise SpecError(problems)
    if name is None:
        return None
    return QueueSettings(
        queue=name,
        priority_class=job_labels.get(PRIORITY_CLASS_LABEL),
        managed_by=managed_by,
    )


def _queue_name_problem(name: str) -> str | None:
    # The label's value, and the name of a LocalQueue object (a DNS-1123 subdomain).
    if message := names.label_value(name):
        return f"a LocalQueue name {message}"
    if message := names.dns1123_subdomain(name):
        return f"a LocalQueue name {message}"
    return None


def _managed_by_problem(value: str) -> str | None:
    if not isinstance(value, str) or not value:
        return "must be a controller name, e.g. 'kueue.x-k8s.io/multikueue'"
    if len(value) > _MANAGED_BY_MAX:
        return f"must be at most {_MANAGED_BY_MAX} characters, got {len(value)}"
    if not _DOMAIN_PREFIXED_PATH.fullmatch(value):
        return (
            f"must be a domain-prefixed path such as {KUEUE_MANAGED_BY!r} (the Job API's "
            f"rule), got {value!r}"
        )
    return None


def queued_job(job: Mapping[str, Any], queue: QueueSettings | None) -> dict[str, Any]:
    """The rendered Job, labelled for its LocalQueue and created suspended.

    ``spec.suspend: true`` (and ``spec.managedBy``, which the caller has checked the target
    serves) go before the pod template, after the spec's other fields. ``job`` is not changed:
    a queued Job is a new mapping sharing its pod template; an unqueued one is ``job`` itself.
    """
    if queue is None:
        return dict(job)
    metadata = dict(job["metadata"])
    metadata["labels"] = {**metadata.get("labels", {}), QUEUE_NAME_LABEL: queue.queue}
    spec = {k: v for k, v in dict(job["spec"]).items() if k != "template"}
    spec["suspend"] = True
    if queue.managed_by is not None:
        spec["managedBy"] = queue.managed_by
    spec["template"] = job["spec"]["template"]
    return {**job, "metadata": metadata, "spec": spec}
