"""What every MiniCluster publishes: its outputs, declared once for both faces of the component.

The Python class (``deploy.minicluster``) and the face other languages reach through the
component provider (``deploy.multilanguage``) both derive from ``MiniClusterOutputs``. Pulumi's
component analyzer makes the schema's outputs of these annotations (it walks the class's bases),
and ``OUTPUTS`` is their order, the order ``expand`` registers them in and a stack exports them.

No ``from __future__ import annotations`` here: the analyzer reads the annotations as objects.
"""

from typing import Any, Final

import pulumi

__all__ = ["OUTPUTS", "MiniClusterOutputs"]


class MiniClusterOutputs(pulumi.ComponentResource):
    """The outputs of a MiniCluster component (a base class: it registers nothing itself)."""

    job_name: pulumi.Output[str]
    """Name of the Indexed Job (and the prefix of every broker's hostname)."""
    service_name: pulumi.Output[str]
    """Name of the headless Service the brokers resolve each other through."""
    namespace: pulumi.Output[str]
    """The namespace of every object."""
    lead_broker_host: pulumi.Output[str]
    """The lead broker: rank 0's fully qualified name inside the cluster, or, for a bursted
    cluster, the address of the lead it joins."""
    hostlist: pulumi.Output[str]
    """Every broker host in rank order (the ``hostlist`` file), bursted clusters included."""
    size: pulumi.Output[int]
    """How many brokers run now."""
    max_size: pulumi.Output[int]
    """How many brokers the cluster can grow to without replacing its Job."""
    live_size: pulumi.Output[int]
    """The Job's parallelism as Pulumi last read it: ``size`` after an ``up``, and, with
    autoscale, the size the scaler set once ``pulumi refresh`` (or ``up --refresh``) read it."""
    curve_public_key: pulumi.Output[str]
    """The certificate's public key (not secret): compare certificates across clusters with it."""
    curve_cert: pulumi.Output[str]
    """The whole curve certificate, secret: hand it to the clusters this one bursts to."""
    restful_url: pulumi.Output[str | None]
    """v1alpha1 without a command: the Flux RESTful API inside the cluster (unset otherwise)."""
    restful_user: pulumi.Output[str | None]
    """The RESTful API's user (unset without the server)."""
    restful_token: pulumi.Output[str | None]
    """The RESTful API's token, secret (unset without the server)."""
    restful_secret_key: pulumi.Output[str | None]
    """The key a RESTful client signs its token requests with, secret (unset without the
    server)."""
    queue: pulumi.Output[str | None]
    """The Kueue LocalQueue that admits the Job (unset when it is not queued)."""
    status: pulumi.Output[dict[str, Any]]
    """What the Job said when ``pulumi up`` finished waiting for it, as ``minicluster status -o
    json`` says it (``phase``, ``created``, ``joined`` of ``size``, ``running``, ``succeeded``,
    ``failed``, ``admission``); ``minicluster status`` reads it live."""


# The outputs in the order they are registered; ``curve_cert``, ``restful_token`` and
# ``restful_secret_key`` are secret.
OUTPUTS: Final[tuple[str, ...]] = tuple(MiniClusterOutputs.__annotations__)
