"""What every command says on stderr about a MiniCluster it accepted: its warnings.

A v1alpha1 document's unknown fields (the operator's API server dropped them silently) and fields
that do nothing without the operator are warnings, not errors. ``validate``, ``render`` and
``check`` print them here, one line each, as the Pulumi component logs them on ``pulumi up``.
"""

from __future__ import annotations

import sys

from flux_minicluster.core.definition import MiniClusterDefinition


def warn(source: str, definition: MiniClusterDefinition) -> None:
    """``SOURCE: warning: field.path: message`` on stderr for each warning of ``definition``."""
    for problem in definition.warnings:
        print(f"{source}: warning: {problem}", file=sys.stderr)
