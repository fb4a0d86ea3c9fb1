"""v1alpha1 documents: shared by the core's v1alpha1 tests (tests/core/test_v1alpha1.py), the
component's (tests/deploy/test_v1alpha1_deploy.py) and the CLI renderer's
(tests/cli/test_cli_v1alpha1.py)."""

from __future__ import annotations

from typing import Any

Manifest = dict[str, Any]


def v1(spec: dict[str, Any], name: str = "mc") -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha1",
        "kind": "MiniCluster",
        "metadata": {"name": name, "namespace": "hpc"},
        "spec": spec,
    }


APP = {"image": "ghcr.io/rse-ops/lammps:flux-sched-focal"}


def by(objects: list[Manifest], kind: str) -> list[Manifest]:
    return [o for o in objects if o["kind"] == kind]
