"""The metadata every object of a MiniCluster carries: its name, namespace and labels.

There is no MiniCluster object in the cluster to carry the user's labels, so its children do:
the MiniCluster's own metadata labels first, then ours, which win (the policy rules and
``kubectl get -l`` find a MiniCluster's objects through them).
"""

from __future__ import annotations

from typing import Any

from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning.plan import MiniClusterPlan

__all__ = ["labels", "metadata"]


def labels(plan: MiniClusterPlan) -> dict[str, str]:
    """Labels on every object of the MiniCluster."""
    return {
        **plan.definition.labels,
        lbl.NAME_LABEL: plan.name,
        lbl.MANAGED_BY_LABEL: lbl.MANAGED_BY,
        lbl.CLUSTER_LABEL: plan.name,
    }


def metadata(
    plan: MiniClusterPlan,
    name: str,
    object_labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    *,
    namespaced: bool = True,
) -> dict[str, Any]:
    """``metadata`` of one object (its labels default to the MiniCluster's)."""
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = plan.namespace
    meta["labels"] = labels(plan) if object_labels is None else object_labels
    if annotations:
        meta["annotations"] = annotations
    return meta
