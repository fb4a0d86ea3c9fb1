"""A MiniCluster as the component has decided it before it registers anything.

``minicluster.prepare`` validates the arguments, plans and renders the cluster and chooses where
its certificate comes from; everything after (``deploytime``, ``registration``, ``published``)
reads this record, so nothing is decided twice and an invalid input leaves no trace in the stack.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render.manifests import Rendering
from flux_minicluster.deploy.component.awaiting import Wait
from flux_minicluster.deploy.component.burstgroup import BurstGroupArgs
from flux_minicluster.deploy.component.keygen import KeygenSettings

__all__ = ["Prepared"]


@dataclass(frozen=True)
class Prepared:
    """Everything decided before a single resource is registered."""

    plan: MiniClusterPlan
    rendering: Rendering
    keygen: KeygenSettings
    wait: Wait
    certificate: pulumi.Input[str] | None  # None: the keygen Command makes one
    certificate_source: str
    lead_broker: pulumi.Input[str] | None
    burst_group: pulumi.Input[BurstGroupArgs] | None
    wait_timeout: int | None = None
