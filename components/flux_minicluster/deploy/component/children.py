"""A MiniCluster's children as typed Pulumi resources a program can hold.

``MiniCluster.resources`` is one of these: each rendered object (``core.render.manifests.
Rendering`` names them) as the typed pulumi_kubernetes resource that manages it, plus the size
patch and the keygen Command. A program can depend on one (``depends_on=[cluster.resources.job]``)
or export from it (``cluster.resources.job.metadata.uid``). What a MiniCluster may not have is
``None`` (or an empty tuple where there may be several).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

__all__ = ["MiniClusterResources"]


@dataclass(frozen=True)
class MiniClusterResources:
    """The children of one MiniCluster, by what each one is."""

    job: k8s.batch.v1.Job
    """The Indexed Job of the brokers (``<name>``)."""
    headless_service: k8s.core.v1.Service
    """The headless Service the brokers resolve each other through."""
    entrypoint: k8s.core.v1.ConfigMap
    """ConfigMap ``<name>-entrypoint``: the scripts, broker.toml and the hostlist."""
    curve_secret: k8s.core.v1.Secret | None
    """The curve certificate's Secret; None when the spec mounts its own (``curveCertSecret``)."""
    network_policies: tuple[k8s.networking.v1.NetworkPolicy, ...]
    """The mesh's NetworkPolicy and a bursting root's lead policy; empty when turned off."""
    size_patch: k8s.batch.v1.JobPatch | None
    """``<resource>-size``: owns the Job's parallelism and completions (a resize in place); None
    for an elastic MiniCluster, whose scaler owns them."""
    keygen: local.Command | None
    """The Command that made the certificate; None when one was given."""
    credentials: tuple[k8s.core.v1.Secret, ...] = ()
    """v1alpha1: the RESTful server's, the users' and the munge key's Secrets."""
    volumes: tuple[k8s.core.v1.PersistentVolume | k8s.core.v1.PersistentVolumeClaim, ...] = ()
    """v1alpha1's operator-made volumes: each PersistentVolume, then its claim."""
    services_pod: k8s.core.v1.Pod | None = None
    """The Pod of ``spec.services``, when there are any."""
    services_service: k8s.core.v1.Service | None = None
    """With ``minimalService`` and services: the headless Service that names the services Pod."""
    sidecar_services: tuple[k8s.core.v1.Service, ...] = ()
    """A ClusterIP Service per sidecar container with ports."""
    restful_service: k8s.core.v1.Service | None = None
    """v1alpha1: the Service to rank 0's RESTful API server."""
    autoscaler: tuple[pulumi.CustomResource, ...] = ()
    """An elastic MiniCluster's ServiceAccount, Role and RoleBinding (in that order)."""
    queue_patch: k8s.batch.v1.JobPatch | None = None
    """A queued MiniCluster's ``<resource>-localqueue-<queue>``: carries the wait (admission by
    the LocalQueue, then ``wait``) after the size patch (``deploy.queued``)."""

    @property
    def awaited(self) -> k8s.batch.v1.Job | k8s.batch.v1.JobPatch:
        """The resource whose outputs are the live Job as the last await left it."""
        if self.queue_patch is not None:
            return self.queue_patch
        return self.size_patch if self.size_patch is not None else self.job
