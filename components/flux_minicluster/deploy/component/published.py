"""What every MiniCluster publishes: its outputs, declared once for both faces of the component.

The Python class (``deploy.minicluster``) and the face other languages reach through the
component provider (``deploy.multilanguage``) both derive from ``MiniClusterOutputs``. Pulumi's
component analyzer makes the schema's outputs of these annotations (it walks the class's bases),
and ``OUTPUTS`` is their order, the order ``publish`` registers them in and a stack exports them.
``publish`` is the last step of ``minicluster.expand``: each output from the children, the
resolved placeholders and the plan, the ``status`` from the Job the last await left
(``core.deployed.status``).

No ``from __future__ import annotations`` here: the analyzer reads the annotations as objects.
"""

from collections.abc import Mapping
from typing import Any, Final

import pulumi

from flux_minicluster.core.base import placeholders
from flux_minicluster.core.deployed import status as live_status
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.deploy.component.children import MiniClusterResources
from flux_minicluster.deploy.component.deploytime import Resolved
from flux_minicluster.deploy.component.prepared import Prepared

__all__ = ["OUTPUTS", "MiniClusterOutputs", "publish"]


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


def publish(
    component: pulumi.ComponentResource,
    prepared: Prepared,
    children: MiniClusterResources,
    resolved: Resolved,
) -> None:
    """Set and register every output of ``OUTPUTS`` on ``component``."""
    plan, rendering, replacements = prepared.plan, prepared.rendering, resolved.replacements
    size = plan.spec.size
    published: dict[str, pulumi.Output[Any]] = {
        # Tied to the resources, so that a consumer of these names waits for the objects.
        "job_name": children.job.metadata.apply(lambda meta: str(meta.name)),
        "service_name": children.headless_service.metadata.apply(lambda meta: str(meta.name)),
        "namespace": pulumi.Output.from_input(plan.namespace),
        "lead_broker_host": pulumi.Output.from_input(resolved.lead_host),
        "hostlist": pulumi.Output.from_input(resolved.hostlist),
        "size": pulumi.Output.from_input(size),
        "max_size": pulumi.Output.from_input(plan.spec.max_size),
        # The Job's size as Pulumi last read it: the scaler's, for an elastic MiniCluster.
        "live_size": children.job.spec.apply(
            lambda spec: int(spec.parallelism) if spec and spec.parallelism is not None else size
        ),
        "curve_public_key": replacements[placeholders.CURVE_PUBLIC_KEY],
        "curve_cert": replacements[placeholders.CURVE_CERT],
        **_restful_outputs(plan, replacements),
        "queue": pulumi.Output.from_input(
            rendering.queue.queue if rendering.queue is not None else None
        ),
        # The Job as the last await left it (the patches' outputs are the live Job).
        "status": pulumi.Output.all(
            children.awaited.metadata.apply(_plain),
            children.awaited.spec.apply(
                lambda spec: _plain({k: v for k, v in dict.items(spec or {}) if k != "template"})
            ),
            children.awaited.status.apply(_plain),
        ).apply(lambda live: _live_status(plan, rendering.job, *live)),
    }
    for name, value in published.items():
        setattr(component, name, value)
    component.register_outputs(published)


def _plain(value: Any) -> Any:
    """An output value as plain JSON data. The SDK's output types are dicts whose properties
    shadow dict methods (a selector requirement's ``values``), which Output.all cannot lift."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in dict.items(value)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _live_status(
    plan: MiniClusterPlan,
    rendered_job: Mapping[str, Any],
    metadata: Any,
    spec: Any,
    status: Any,
) -> dict[str, Any]:
    """``core.deployed.status`` of the live Job a JobPatch returned (its outputs are dicts keyed as
    the API spells them); the rendered Job fills in what a patch's outputs may lack."""
    labels = {
        **rendered_job["metadata"].get("labels", {}),
        **((metadata or {}).get("labels") or {}),
    }
    job = {
        "metadata": {**(metadata or {}), "labels": labels},
        "spec": {**rendered_job["spec"], **(spec or {})},
        "status": dict(status or {}),
    }
    return live_status.interpret(plan.name, plan.namespace, job).to_json()


def _restful_outputs(
    plan: MiniClusterPlan, replacements: Mapping[str, pulumi.Output[str]]
) -> dict[str, pulumi.Output[str | None]]:
    """The RESTful server's URL and user, and its token and secret key (secret); None without
    the server. A client needs all four (flux-restful-client: FLUX_USER, FLUX_TOKEN and
    FLUX_SECRET_KEY, which signs the request for an access token)."""
    restful = plan.restful
    names = ("restful_url", "restful_user", "restful_token", "restful_secret_key")
    if restful is None:
        return {name: pulumi.Output.from_input(None) for name in names}
    url = f"http://{plan.names.restful_service}.{plan.namespace}.svc.cluster.local:{restful.port}"
    token: pulumi.Input[str] = (
        restful.token if restful.token is not None else replacements[placeholders.RESTFUL_TOKEN]
    )
    secret_key: pulumi.Input[str] = (
        restful.secret_key
        if restful.secret_key is not None
        else replacements[placeholders.RESTFUL_SECRET_KEY]
    )
    return {
        "restful_url": pulumi.Output.from_input(url),
        "restful_user": pulumi.Output.from_input(plan.restful_user),
        "restful_token": pulumi.Output.secret(token),
        "restful_secret_key": pulumi.Output.secret(secret_key),
    }
