"""A v1alpha1 MiniCluster on the real engine: its munge key stays, its kept volume stays.

The stack is the bundled local stack with a v1alpha1 spec that has users (so a munge key Secret,
derived from the certificate) and two operator volumes, one with ``delete: false``. What a user
of the older API relies on, checked against a real API server:

* a second ``pulumi up`` leaves the munge key Secret as it was (same key, same object);
* ``pulumi destroy`` deletes the MiniCluster but leaves the kept volume's PersistentVolume and
  claim on the API server, and deletes the other volume's.

The namespace is created beforehand, not by the stack: a stack that creates its namespace deletes
it on destroy, and the namespace takes every claim in it (the README says so).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from stackrun import PREFIX, Engine, new_certificate

NAMESPACE = "legacy"
NAME = "flux-legacy"
SPEC: dict[str, Any] = {
    "apiVersion": "flux-framework.org/v1alpha1",
    "kind": "MiniCluster",
    "metadata": {"name": NAME},
    "spec": {
        "size": 2,
        "users": [{"name": "peenut"}],
        "volumes": {
            "keep": {"path": "/tmp/keep", "capacity": "1Gi", "delete": False},
            "scratch": {"path": "/tmp/scratch", "capacity": "1Gi"},
        },
        "containers": [
            {
                "image": "ghcr.io/rse-ops/lammps:flux-sched-focal-v0.24.0",
                "command": "ls /keep",
                "volumes": {"keep": {"path": "/keep"}, "scratch": {"path": "/scratch"}},
            }
        ],
    },
}


def test_v1alpha1_munge_key_and_kept_volume(
    module_control_plane: ControlPlane,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    cp.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    stack = engine.stack(
        project,
        "legacy",
        like="local",
        kubeconfig=cp.kubeconfig,
        context=cp.name,
        curve_cert=new_certificate(NAME),
    )
    stack.set(f"{PREFIX}:cluster.namespace", NAMESPACE)
    stack.set(f"{PREFIX}:cluster.createNamespace", "false")
    stack.set_object(f"{PREFIX}:minicluster", {"spec": SPEC, "wait": "none"})

    stack.up()
    munge_path = f"/api/v1/namespaces/{NAMESPACE}/secrets/{NAME}-munge"
    first = cp.get(munge_path)
    assert first is not None, "no munge key Secret"
    key = base64.b64decode(first["data"]["munge.key"])
    assert len(key) >= 32

    stack.up()
    again = cp.get(munge_path)
    assert again is not None
    same = (again["metadata"]["uid"], again["data"]) == (first["metadata"]["uid"], first["data"])
    assert same, "the munge key Secret changed on the second up"
    assert stack.last().changes.get("update", 0) == 0, stack.last().changes

    volumes = {
        name: (
            f"/api/v1/persistentvolumes/{NAMESPACE}-{NAME}-{name}",
            f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/{NAME}-{name}",
        )
        for name in ("keep", "scratch")
    }
    for paths in volumes.values():
        assert all(cp.get(path) is not None for path in paths), paths

    stack.destroy()
    assert cp.get(munge_path) is None
    assert cp.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{NAME}") is None
    pv, pvc = volumes["keep"]
    kept = cp.get(pv)
    assert kept is not None, "delete: false did not keep the PersistentVolume"
    assert cp.get(pvc) is not None, "delete: false did not keep the claim"
    assert kept["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    for path in volumes["scratch"]:
        assert _gone(cp, path), f"{path} outlived destroy"
    e2e_report(
        "v1alpha1: munge key unchanged across two ups; after destroy the kept volume and "
        "claim remain (Retain), the other volume is gone"
    )


def _gone(cp: ControlPlane, path: str) -> bool:
    """Deleted, or only waiting for its finalizer (kube-controller-manager's pvc-protection)."""
    found = cp.get(path)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))
