"""The NetworkPolicies around a MiniCluster: its pods take traffic from each other, on the ports
its spec declares, and (a bursting root's rank 0) from the clusters that join it.

A MiniCluster is a mesh of brokers that trust one certificate; nothing else needs to reach them.
So, for ingress (egress stays open: images, data and a burst's lead are outside):

* ``<name>-mesh`` selects every pod of the MiniCluster (the broker pods and the services Pod
  carry the cluster label) and admits traffic from those same pods on every port. Every port,
  not only the broker's 8050: MPI between broker pods opens its own TCP connections on ephemeral
  ports, and sidecars and the services Pod are the MiniCluster's own;
* the same policy admits anyone on the ports the spec declares for its sidecars and services
  (``containers[].ports``, ``services[].ports``): declaring a port is asking for it to be reached;
* ``<name>-lead``, for a bursting root only, admits the broker port on rank 0 from the root's
  ``sourceRanges`` (every address when there are none): that is how the bursts join.

Policies add up, so each rule stays one readable block. A cluster whose CNI does not enforce
NetworkPolicy ignores them; a MiniCluster can opt out (``network-policy: "false"`` annotation on
its metadata), and so can a stack or a component caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flux_minicluster.core.base import layout
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import meta

__all__ = ["lead_policy", "mesh_policy"]


def _members(plan: MiniClusterPlan) -> dict[str, Any]:
    return {"matchLabels": {lbl.CLUSTER_LABEL: plan.name}}


def declared_ports(plan: MiniClusterPlan) -> list[int]:
    """Every port the spec declares on a container that is not the Flux container, in order,
    and v1alpha1's RESTful server's (the point of running it is to be reached)."""
    containers = [*plan.spec.containers, *plan.spec.services]
    ports = [p for c in containers if not c.run_flux for p in c.ports]
    if plan.restful is not None:
        ports.append(plan.restful.port)
    return list(dict.fromkeys(ports))


def mesh_policy(plan: MiniClusterPlan) -> dict[str, Any]:
    ingress: list[dict[str, Any]] = [{"from": [{"podSelector": _members(plan)}]}]
    if ports := declared_ports(plan):
        ingress.append({"ports": [{"port": p, "protocol": "TCP"} for p in ports]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta.metadata(plan, plan.names.network_policy),
        "spec": {
            "podSelector": _members(plan),
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def lead_policy(plan: MiniClusterPlan, source_ranges: Sequence[str]) -> dict[str, Any]:
    """Rank 0's broker port, from ``source_ranges`` (every address when empty)."""
    rule: dict[str, Any] = {"ports": [{"port": layout.BROKER_PORT, "protocol": "TCP"}]}
    if source_ranges:
        rule["from"] = [{"ipBlock": {"cidr": cidr}} for cidr in source_ranges]
    selector = {lbl.CLUSTER_LABEL: plan.name, lbl.COMPLETION_INDEX_LABEL: "0"}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta.metadata(plan, plan.names.lead_service),
        "spec": {
            "podSelector": {"matchLabels": selector},
            "policyTypes": ["Ingress"],
            "ingress": [rule],
        },
    }
