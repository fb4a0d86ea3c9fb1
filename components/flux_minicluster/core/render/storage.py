"""v1alpha1's operator-made volumes: a PersistentVolume and a claim per ``spec.volumes`` entry.

``storageClass: hostpath`` makes a hostPath volume (a directory on the node); any other class a
CSI volume (``driver``, ``volumeHandle``, defaulting to the class as the operator did,
``attributes``, and ``secret`` as the driver's node-publish, controller-publish and node-stage
secret). Each claim binds its own volume by name (the operator left binding to chance: class,
size and access mode). Deliberate differences from the operator:

* names: the operator named the volume ``<volume>`` and the claim ``<volume>-claim``, which
  collide between two MiniClusters (the volume, cluster-scoped, even across namespaces); here the
  claim is ``<name>-<volume>`` and the volume ``<namespace>-<name>-<volume>``;
* reclaim: ``delete: true`` (the default) asks Kubernetes to delete the storage with the claim
  (``Delete``; for a hostPath or a static CSI volume no deleter exists, so the data stays and the
  volume is marked Failed); ``delete: false`` keeps it (``Retain``), and the Pulumi component also
  keeps both objects when the stack is destroyed.
"""

from __future__ import annotations

from typing import Any

from flux_minicluster.core.planning.plan import MiniClusterPlan, OperatorVolumePlan
from flux_minicluster.core.render import meta

__all__ = ["claim", "persistent_volume"]

ACCESS_MODES = ["ReadWriteMany"]


def persistent_volume(plan: MiniClusterPlan, item: OperatorVolumePlan) -> dict[str, Any]:
    volume = item.volume
    metadata = meta.metadata(
        plan,
        item.persistent_volume,
        {**volume.labels, **meta.labels(plan)},
        dict(volume.annotations),
        namespaced=False,
    )
    spec: dict[str, Any] = {
        "storageClassName": volume.storage_class,
        "accessModes": list(ACCESS_MODES),
        "capacity": {"storage": volume.capacity},
        "persistentVolumeReclaimPolicy": "Delete" if volume.delete else "Retain",
        # Only this MiniCluster's claim may bind it.
        "claimRef": {"namespace": plan.namespace, "name": item.claim},
    }
    if volume.host_path:
        spec["hostPath"] = {"path": volume.path}
    else:
        csi: dict[str, Any] = {
            "driver": volume.driver,
            "volumeHandle": volume.volume_handle or volume.storage_class,
        }
        if volume.attributes:
            csi["volumeAttributes"] = dict(volume.attributes)
        if volume.secret:
            ref = {"name": volume.secret, "namespace": volume.secret_namespace}
            csi["nodePublishSecretRef"] = dict(ref)
            csi["controllerPublishSecretRef"] = dict(ref)
            csi["nodeStageSecretRef"] = dict(ref)
        spec["csi"] = csi
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata,
        "spec": spec,
    }


def claim(plan: MiniClusterPlan, item: OperatorVolumePlan) -> dict[str, Any]:
    volume = item.volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta.metadata(plan, item.claim, None, dict(volume.claim_annotations)),
        "spec": {
            "storageClassName": volume.storage_class,
            "accessModes": list(ACCESS_MODES),
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": volume.capacity}},
            "volumeName": item.persistent_volume,
        },
    }
