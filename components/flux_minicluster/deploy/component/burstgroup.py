"""A bursted cluster whose rank order comes from its root's outputs, known only at deploy time.

A burst stack reads its root's lead name and size, the lead's port and the list of clusters the
root bursts to through a StackReference: Outputs. They change text inside the burst's objects
(broker.toml's hosts, the ``hostlist`` file, the broker-config digest on the pod template, the
burst-group label), never which objects exist: those follow from the burst's own name and size.
So the core plans the burst with its group deferred (``loading.with_deferred_group``): the
rendering carries a placeholder wherever the group's text goes, and every object is registered
(a preview shows them all). ``deploytime`` resolves the group's Outputs, and the core checks
them and writes each placeholder's text (``render.fillins.group_values``), which the component
substitutes like any other placeholder. This module declares the group's shape.

A cluster the root does not declare, or whose maxSize is larger than the size the root declares
for it (``crossfield.burst_membership_problem``, the one rule), fails before any object is
created: every object waits for the checked group.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["BurstClusterArgs", "BurstGroupArgs"]


class BurstClusterArgs(TypedDict):
    name: str
    size: int


class BurstGroupArgs(TypedDict):
    """The bursting group as a root publishes it (its stack outputs)."""

    lead_name: str
    """The root MiniCluster's name: its ranks other than 0 are ``<lead_name>-[1-...]``."""
    lead_size: int
    """The root's maxSize: how many ranks it holds before the burst clusters."""
    lead_port: int
    """The port the lead's rank 0 is reached on from outside its cluster."""
    clusters: list[BurstClusterArgs]
    """Every cluster the root bursts to, in rank order; this one must be among them."""
