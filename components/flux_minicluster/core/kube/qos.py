"""Kubernetes' Guaranteed QoS class, as far as where a MiniCluster's ranks run depends on it.

The kubelet's static CPU manager gives a container cores of its own only in a Guaranteed pod:
every container, init containers included, with cpu and memory limits equal to its requests
(a request left unset is the limit), and to a container whose cpu is a whole number. Anywhere
else a pod's processes may run on every core of the node that the pod shares with the node's
other pods, and binding ranks to cores stacks the ranks of pods that share the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from flux_minicluster.core.kube.quantity import parse_quantity

__all__ = ["QOS_RESOURCES", "guaranteed", "whole_cpus"]

QOS_RESOURCES: Final = ("cpu", "memory")

Amounts = Mapping[str, str | int | float]


def guaranteed(limits: Amounts, requests: Amounts) -> bool:
    """Whether a container's resources keep its pod Guaranteed: cpu and memory limits, each
    request equal to its limit or unset (the API server then requests the limit)."""
    for name in QOS_RESOURCES:
        if name not in limits:
            return False
        request = requests.get(name)
        if request is not None and parse_quantity(request) != parse_quantity(limits[name]):
            return False
    return True


def whole_cpus(limits: Amounts) -> bool:
    """Whether the cpu limit is a whole number of CPUs, the static CPU manager's condition for
    giving the container cores of its own."""
    return "cpu" in limits and parse_quantity(limits["cpu"]) % 1 == 0
