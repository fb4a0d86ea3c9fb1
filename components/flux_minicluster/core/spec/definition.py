"""A MiniCluster as the rest of the product receives it: name, namespace, spec, and its names.

This is a plain value with no behaviour beyond naming: ``loading`` builds one from a document and
validates it, ``plan`` derives every other fact from it once. The object names live here, not in
the plan, because validation needs them too (a sidecar must not take the headless Service's name),
and they are computed once per definition.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from flux_minicluster.core.base.errors import Problem
from flux_minicluster.core.spec.models import MiniClusterSpec

__all__ = ["DEFAULT_NAMESPACE", "MiniClusterDefinition", "ObjectNames", "claim_name"]

DEFAULT_NAMESPACE = "default"


def claim_name(cluster: str, volume: str) -> str:
    """The claim of an operator-made volume (``spec.volumes.<volume>``).

    The operator named it ``<volume>-claim``, and its PersistentVolume ``<volume>``, which
    collide between two MiniClusters (and the volume, cluster-scoped, across namespaces).
    """
    return f"{cluster}-{volume}"


@dataclass(frozen=True)
class ObjectNames:
    """The name of every object and host a MiniCluster has; hostnames derive from them."""

    cluster: str
    """The MiniCluster's name: the Job, the Flux container and each broker's hostname prefix."""
    namespace: str
    headless_service: str
    """The headless Service the brokers resolve each other through (``network.headlessName``)."""
    entrypoint: str
    """The ConfigMap with the scripts, broker.toml and the hostlist, and its pod volume."""
    curve_secret: str
    services_pod: str
    """The bare Pod that runs ``spec.services`` (and, with minimalService, its own Service)."""
    lead_service: str
    """A bursting root's Service that exposes rank 0 to the clusters that join it (and the
    NetworkPolicy that lets the bursts in)."""
    network_policy: str
    """The NetworkPolicy around the MiniCluster's pods."""
    lead_host: str
    """Rank 0's short hostname, which the entrypoint compares with ``hostname``."""
    domain: str
    """The DNS suffix under which every broker of this cluster resolves."""

    @classmethod
    def of(cls, name: str, namespace: str, headless_name: str | None) -> ObjectNames:
        headless = headless_name or name
        return cls(
            cluster=name,
            namespace=namespace,
            headless_service=headless,
            entrypoint=f"{name}-entrypoint",
            curve_secret=f"{name}-curve",
            services_pod=f"{name}-services",
            lead_service=f"{name}-lead",
            network_policy=f"{name}-mesh",
            lead_host=f"{name}-0",
            domain=f"{headless}.{namespace}.svc.cluster.local",
        )

    @property
    def lead_fqdn(self) -> str:
        """Rank 0's fully qualified name inside its cluster."""
        return f"{self.lead_host}.{self.domain}"

    def host(self, index: int) -> str:
        """The short hostname of broker ``index`` (the Job controller's ``<name>-<index>``)."""
        return f"{self.cluster}-{index}"

    def claim(self, volume: str) -> str:
        return claim_name(self.cluster, volume)

    def persistent_volume(self, volume: str) -> str:
        """Cluster-scoped, so the namespace is part of the name."""
        return f"{self.namespace}-{self.cluster}-{volume}"

    @property
    def restful_service(self) -> str:
        return f"{self.cluster}-restful"

    @property
    def restful_secret(self) -> str:
        return f"{self.cluster}-restful"

    @property
    def munge_secret(self) -> str:
        return f"{self.cluster}-munge"

    @property
    def users_secret(self) -> str:
        return f"{self.cluster}-users"


@dataclass(frozen=True)
class MiniClusterDefinition:
    """A MiniCluster spec with the name and namespace it will be deployed under."""

    name: str
    namespace: str
    spec: MiniClusterSpec
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[Problem, ...] = ()
    """What is accepted but deserves a word: a v1alpha1 field in a v1alpha2 document, a field
    the v1alpha1 API ignored. The CLI prints them; the component logs them."""

    @functools.cached_property
    def names(self) -> ObjectNames:
        return ObjectNames.of(self.name, self.namespace, self.spec.network.headless_name)

    def with_spec(self, spec: MiniClusterSpec) -> MiniClusterDefinition:
        """The same MiniCluster with another spec (e.g. a model_copy); validate it again.

        The names carry over when the spec keeps the headless Service's name, so a derived
        definition does not compute them again.
        """
        derived = replace(self, spec=spec)
        if "names" in self.__dict__ and (
            spec.network.headless_name == self.spec.network.headless_name
        ):
            derived.__dict__["names"] = self.names
        return derived
