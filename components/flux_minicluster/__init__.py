"""flux-minicluster: Flux Framework MiniClusters on Kubernetes with Pulumi.

``flux_minicluster.MiniCluster`` is the Pulumi ComponentResource (``MiniClusterResources`` the
frozen record of its typed children, ``cluster.resources``). They are loaded lazily so that
the pure core (``flux_minicluster.core``) and the ``minicluster validate`` command never pay for
importing Pulumi.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flux_minicluster.version import __version__

if TYPE_CHECKING:
    from flux_minicluster.deploy.component.children import MiniClusterResources
    from flux_minicluster.deploy.component.minicluster import MiniCluster, MiniClusterArgs

__all__ = ["MiniCluster", "MiniClusterArgs", "MiniClusterResources", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("MiniCluster", "MiniClusterArgs", "MiniClusterResources"):
        # On first use: the core and `minicluster validate` never import Pulumi. The layering
        # checker sees this import (the package root is on top of the Pulumi layer).
        from flux_minicluster.deploy.component import children, minicluster

        return getattr(children if name == "MiniClusterResources" else minicluster, name)
    raise AttributeError(f"module 'flux_minicluster' has no attribute {name!r}")
