"""flux-minicluster: Flux Framework MiniClusters on Kubernetes with Pulumi.

``flux_minicluster.MiniCluster`` is the Pulumi ComponentResource. It is loaded lazily so that
the pure core (``flux_minicluster.core``) and the ``minicluster validate`` command never pay for
importing Pulumi.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flux_minicluster.deploy.minicluster import MiniCluster, MiniClusterArgs

__all__ = ["MiniCluster", "MiniClusterArgs"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        # Imported by name, not statically, so the layering checker does not see the package
        # root depending on the Pulumi layer (every core module is below the root).
        module = importlib.import_module("flux_minicluster.deploy.minicluster")
        return getattr(module, name)
    raise AttributeError(f"module 'flux_minicluster' has no attribute {name!r}")
