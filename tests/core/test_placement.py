"""Where ranks run: a spec that asks Flux to bind ranks in pods that cannot have cores of their
own is warned (validate, render, pulumi preview read the same warnings); one whose pods can
(Guaranteed, whole CPUs) or that leaves binding to the pods is not."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.spec.placement import requested_binding

WHOLE = {"limits": {"cpu": 2, "memory": "2Gi"}}


@pytest.mark.parametrize(
    ("flags", "asked"),
    [
        (None, None),
        ("-ompi=openmpi@5", None),
        ("-o cpu-affinity=per-task", "per-task"),
        ("-ocpu-affinity=map:0;1", "map:0;1"),
        ("--setopt=cpu-affinity", "on"),
        ("-o cpu-affinity=off", None),
        ("-o cpu-affinity=per-task -o cpu-affinity=off", None),  # the last one wins
        ("-o gpu-affinity=per-task", None),
    ],
)
def test_the_binding_a_spec_asks_for(flags: str | None, asked: str | None) -> None:
    assert requested_binding(flags) == asked


def document(flags: str, resources: dict[str, Any] | None, sidecar: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"image": "mpi:1", "command": "lmp -in in.x", "runFlux": True}
    if resources:
        container["resources"] = resources
    containers = [container]
    if sidecar:
        containers.append({"name": "metrics", "image": "exporter:1", "resources": WHOLE})
    spec = {"size": 4, "tasks": 8, "flux": {"optionFlags": flags}, "containers": containers}
    return {"apiVersion": "flux-framework.org/v1alpha2", "kind": "MiniCluster",
            "metadata": {"name": "lammps"}, "spec": spec}  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "resources", "sidecar", "warned"),
    [
        ("-o cpu-affinity=per-task", None, False, True),
        ("-o cpu-affinity=per-task", {"limits": {"cpu": "1500m", "memory": "2Gi"}}, False, True),
        ("-o cpu-affinity=per-task", {**WHOLE, "requests": {"cpu": 1}}, False, True),
        ("-o cpu-affinity=per-task", WHOLE, False, False),
        ("-o cpu-affinity=per-task", WHOLE, True, False),
        ("-o cpu-affinity=off", None, False, False),
        ("", None, False, False),
    ],
    ids=["unset", "fraction", "burstable", "guaranteed", "guaranteed-sidecar", "off", "none"],
)
def test_binding_in_pods_that_share_cores_is_warned(
    flags: str, resources: dict[str, Any] | None, sidecar: bool, warned: bool
) -> None:
    warnings = [
        w
        for w in parse(document(flags, resources, sidecar)).warnings
        if w.path == "spec.flux.optionFlags"
    ]
    assert bool(warnings) is warned
    if warned:
        assert "cores of their own" in warnings[0].message
        assert "static CPU manager" in warnings[0].message
