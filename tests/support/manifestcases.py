"""A small MiniCluster and the fixtures' types: shared by the renderer's tests
(tests/core/test_manifests.py) and kubecheck's over the same objects (tests/test_kubecheck.py).
The ``job_pod`` fixture is tests/conftest.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.spec.definition import MiniClusterDefinition


def mini(name: str = "demo", namespace: str = "hpc", **spec: Any) -> MiniClusterDefinition:
    spec.setdefault("containers", [{"image": "ubuntu:24.04", "command": "echo hi"}])
    return parse(spec, name=name, namespace=namespace)


Rendered = Callable[..., list[dict[str, Any]]]
ByKind = Callable[..., dict[str, Any]]
JobPod = Callable[[list[dict[str, Any]]], dict[str, Any]]
