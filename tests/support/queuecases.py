"""A MiniCluster for Kueue and the certificate it is rendered with: shared by the core's queueing
tests (tests/core/test_queueing.py), the component's (tests/deploy/test_component_queueing.py) and
the queue policy's (tests/policy/test_queueing_policy.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flux_minicluster.core.planning import plan as plans

CERT = (
    (Path(__file__).resolve().parents[1] / "golden" / "fixed-curve.cert")
    .read_text()
    .removesuffix("\n")
)
Build = Callable[..., plans.MiniClusterPlan]


def spec(**fields: Any) -> dict[str, Any]:
    return {"size": 4, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}], **fields}
