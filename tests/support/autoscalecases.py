"""An elastic MiniCluster's document: shared by the core's autoscale tests
(tests/core/test_autoscale.py) and the component's (tests/deploy/test_component_autoscale.py), so
the two judge the same MiniCluster."""

from __future__ import annotations

from typing import Any

from flux_minicluster.core.kube.labels import AUTOSCALE_ANNOTATION


def document(annotation: str | None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "size": 2,
        "maxSize": 4,
        "interactive": True,
        "flux": {"scheduler": {"simple": True}},
        "containers": [{"image": "ubuntu:24.04"}],
        **spec,
    }
    metadata: dict[str, Any] = {"name": "elastic", "namespace": "hpc"}
    if annotation is not None:
        metadata["annotations"] = {AUTOSCALE_ANNOTATION: annotation}
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": metadata,
        "spec": body,
    }
