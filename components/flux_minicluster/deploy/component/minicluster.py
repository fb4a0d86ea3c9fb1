"""The MiniCluster ComponentResource: a Flux MiniCluster on Kubernetes, without the operator.

The component validates the spec, plans and renders it with the pure core (the single source of
truth for what lands in the cluster) and registers each rendered object as its typed
pulumi_kubernetes resource, under one component, with the certificate and a bursted cluster's
lead filled in from Outputs. It adds lifecycle rules only Pulumi can express:

* validation happens before anything is registered: an invalid spec raises ``SpecError`` with the
  field path and leaves no trace in the stack, not even the component;
* object names are fixed (hostnames derive from them), so every replacement deletes first, and
  a pod template change replaces the Job deliberately instead of failing on an immutable field;
* a resize within ``maxSize`` never replaces the Job. pulumi-kubernetes replaces a Job whose
  ``parallelism``/``completions`` change, so the Job ignores those fields after creation and a
  ``JobPatch`` (``<resource>-size``) owns them: it sets both to ``size`` with server-side apply;
* how long ``pulumi up`` waits is said by annotations only Pulumi reads, which the core does not
  render: ``deploy.awaiting`` adds them here, the only place;
* the curve certificate is a secret from end to end: it is never a component input, and the
  Secret's data is a secret Output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, TypedDict, TypeVar

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from flux_minicluster.core.base import placeholders
from flux_minicluster.core.base.errors import Problem, SpecError, bounded, unknown_key
from flux_minicluster.core.deployed import status as live_status
from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning import autoscale as autoscaling
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading import documents
from flux_minicluster.core.reading.loading import (
    has_deferred_group,
    parse,
    revalidate,
    with_deferred_group,
    with_lead_address,
)
from flux_minicluster.core.render import credentials, jobfields
from flux_minicluster.core.render.manifests import Rendering, render
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import MiniClusterSpec
from flux_minicluster.deploy.component import awaiting, burstgroup, outputs, queued, resources
from flux_minicluster.deploy.component.awaiting import WAIT_MODES, Wait
from flux_minicluster.deploy.component.burstgroup import BurstGroupArgs
from flux_minicluster.deploy.component.children import MiniClusterResources
from flux_minicluster.deploy.component.keygen import (
    KeygenArgs,
    KeygenSettings,
    keygen_command,
    settings_from_args,
)
from flux_minicluster.deploy.component.published import OUTPUTS, MiniClusterOutputs
from flux_minicluster.deploy.component.usererror import as_run_error

__all__ = [
    "JOB_IGNORE_CHANGES",
    "OUTPUTS",
    "TYPE",
    "MiniCluster",
    "MiniClusterArgs",
    "MiniClusterResources",
    "Prepared",
    "expand",
    "prepare",
]

TYPE: Final = "minicluster:index:MiniCluster"
JOB_IGNORE_CHANGES: Final = tuple(f"spec.{f}" for f in jobfields.SIZE)
"""What the Job leaves to the size JobPatch (or the scaler) where the target release resizes a
live Indexed Job; ``job_ignore_changes`` gives it for a plan."""
_SOURCE: Final = "MiniClusterArgs"
R = TypeVar("R", bound=pulumi.CustomResource)


class MiniClusterArgs(TypedDict, total=False):
    """Arguments of a MiniCluster; only ``spec`` is required."""

    spec: Mapping[str, Any] | str | Path | MiniClusterSpec | MiniClusterDefinition
    """The MiniCluster as the Flux Operator takes it: a whole ``flux-framework.org/v1alpha2``
    document or a bare spec (a dict, as from ``pulumi.Config().require_object``), the path of a
    YAML file holding one, a ``MiniClusterSpec`` model, or an already validated
    ``MiniClusterDefinition`` (whose name and namespace are then used as they are)."""

    namespace: str
    """Namespace of every object (default: the document's metadata.namespace, else default)."""

    name: str
    """MiniCluster name, overriding metadata.name; the Job, hostnames and Services derive from
    it. Default: metadata.name, else the component's resource name."""

    keygen: KeygenArgs
    """How the curve certificate is generated when neither ``curve_cert`` nor the spec's
    ``flux.curveCert`` gives one."""

    curve_cert: pulumi.Input[str]
    """The curve certificate to use (e.g. a root cluster's, from a StackReference); it wins over
    ``spec.flux.curveCert`` and keygen. It is checked with Flux's rules before it is deployed."""

    wait: Wait
    """How long ``pulumi up`` waits: ``ready`` (default) until every broker pod of an ephemeral
    cluster is Ready, ``complete`` until its Job completes, ``none`` not at all. A persistent
    cluster never completes and is never waited for."""

    lead_broker: pulumi.Input[str]
    """A bursted cluster's lead broker address (DNS name or IPv4), e.g. a root stack's output;
    it overrides ``spec.flux.bursting.leadBroker.address``. Without ``burst_group`` the spec must
    still declare ``leadBroker`` with the lead's ``name`` and ``size``, which shape the hostlist."""

    burst_group: pulumi.Input[BurstGroupArgs]
    """The bursting group this cluster joins, as its root publishes it (``lead_name``,
    ``lead_size``, ``lead_port``, ``clusters``), e.g. from a StackReference; needs
    ``lead_broker``. The rank order (broker.toml, the hostlist) is filled in from it once known,
    and the objects do not wait for it: a preview shows every one."""

    network_policy: bool
    """Whether to create the NetworkPolicies around the MiniCluster's pods (default true; a
    cluster whose CNI does not enforce them ignores them)."""

    lead_source_ranges: list[str]
    """A bursting root's: the addresses (CIDRs) its rank 0 admits the bursts from; every address
    when empty. Give the same ranges as the lead Service's loadBalancerSourceRanges."""

    # The docstring is the published schema's description (components/schema.json), kept as it
    # was: ``core.kubeversion`` is the module ``core.kube.kubeversion``.
    kube_version: str
    """The Kubernetes release of the cluster (``"1.33"``, as ``helm template --kube-version``):
    the Job carries only the fields that release serves (``core.kubeversion``: the success
    policy, the pod replacement and failure policies, the retry budget per index). Default 1.34
    (``core.kubeversion.DEFAULT``); releases older than 1.25 are refused."""

    queue: str
    """The Kueue LocalQueue (in the MiniCluster's namespace) that admits the Job: it is created
    suspended with the label ``kueue.x-k8s.io/queue-name``, and ``wait`` waits for admission
    first. The spec's ``jobLabels`` may name the queue instead."""

    managed_by: str
    """The Job's ``spec.managedBy`` (``kueue.x-k8s.io/multikueue`` for MultiKueue)."""

    wait_timeout: int
    """Seconds ``wait`` may take before ``pulumi up`` fails (default: pulumi-kubernetes' 10
    minutes); for a queued MiniCluster, admission included."""

    autoscale: bool | Mapping[str, int]
    """An elastic MiniCluster: ``True`` or ``{"interval_seconds": 10, "idle_seconds": 60}``
    (camelCase accepted). Rank 0 then grows and shrinks its own Job between ``minSize`` (else
    ``size``) and ``maxSize`` from its Flux queue; Pulumi creates the Job at ``size`` and leaves
    its size to the scaler. It wins over the document's autoscale annotation."""


class MiniCluster(MiniClusterOutputs):
    """A Flux MiniCluster: an Indexed Job of brokers and every object it needs, as
    ``core.render.manifests`` renders them, registered as typed children (``resources``, one field
    each), with the JobPatches that own its size and wait and, when the certificate is generated,
    the keygen Command.

    Its outputs are declared on ``MiniClusterOutputs`` (``deploy.published``).
    """

    plan: plans.MiniClusterPlan
    """The validated MiniCluster and every fact derived from it (plain Python)."""
    rendering: Rendering
    """The rendered objects, with placeholder tokens where the certificate and a lead go (never
    the secret itself)."""
    keygen: local.Command | None
    """The keygen Command, when the certificate is generated (also ``resources.keygen``)."""
    resources: MiniClusterResources
    """The children as typed resources (``cluster.resources.job``), to depend on or export
    from; see ``deploy.component.children``."""

    def __init__(
        self,
        resource_name: str,
        args: MiniClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        try:  # raises before anything is registered
            prepared = prepare(resource_name, args)
        except SpecError as err:  # printed by `pulumi up` as its lines, without a traceback
            raise as_run_error(err) from None
        super().__init__(TYPE, resource_name, {}, opts)
        self.plan = prepared.plan
        self.rendering = prepared.rendering
        self.resources = expand(self, resource_name, prepared, opts)
        self.keygen = self.resources.keygen


@dataclass(frozen=True)
class Prepared:
    """Everything decided before a single resource is registered."""

    plan: plans.MiniClusterPlan
    rendering: Rendering
    keygen: KeygenSettings
    wait: Wait
    certificate: pulumi.Input[str] | None  # None: the keygen Command makes one
    certificate_source: str
    lead_broker: pulumi.Input[str] | None
    burst_group: pulumi.Input[BurstGroupArgs] | None
    wait_timeout: int | None = None


def expand(
    component: pulumi.ComponentResource,
    resource_name: str,
    prepared: Prepared,
    opts: pulumi.ResourceOptions | None,
) -> MiniClusterResources:
    """Register a prepared MiniCluster's children under ``component`` and publish its outputs.

    Both faces of the component call this: the Python class and the one other languages reach
    through the component provider (``deploy.multilanguage``). It sets every name of ``OUTPUTS``
    on ``component`` and registers them; it returns the children it registered.
    """
    parent = _Parent(component, _depends_on(opts))
    keygen = _keygen(resource_name, prepared, parent)
    secrets = _secret_values(prepared, keygen)
    for warning in bounded(prepared.plan.definition.warnings, "warnings"):
        pulumi.log.warn(str(warning), resource=component)
    lead = _lead(prepared, secrets)
    replacements = {**secrets, **lead.replacements}
    children = _register(resource_name, prepared, lead, replacements, parent, keygen)
    _publish(component, prepared.plan, prepared.rendering, children, lead, replacements)
    return children


@dataclass(frozen=True)
class _Parent:
    """The component every child is parented to, and the caller's dependencies every child has.

    The caller's ``depends_on`` applies to every child: a keygen pod or a Pod must not start
    before, say, the Namespace the caller created for it.
    """

    component: pulumi.ComponentResource
    caller: list[pulumi.Resource]

    def opts(
        self,
        gate: pulumi.Output[Any] | None = None,
        *,
        after: Sequence[pulumi.Resource] = (),
        **options: Any,
    ) -> pulumi.ResourceOptions:
        """A child's options: after the caller's dependencies, ``after`` and the ``gate``, an
        Output every child waits for (a burst's checked group), so nothing is created when it
        fails."""
        depends: list[pulumi.Resource] = [*self.caller, *after]
        depends_on: pulumi.Input[list[pulumi.Resource]] = depends
        if gate is not None:
            depends_on = gate.apply(lambda _: depends)
        return pulumi.ResourceOptions(parent=self.component, depends_on=depends_on, **options)


def _keygen(resource_name: str, prepared: Prepared, parent: _Parent) -> local.Command | None:
    """The Command that makes the certificate, when none was given."""
    if prepared.certificate is not None:
        return None
    return keygen_command(resource_name, prepared.keygen, opts=parent.opts())


def _secret_values(
    prepared: Prepared, keygen: local.Command | None
) -> dict[str, pulumi.Output[str]]:
    """The certificate (checked), its public key and v1alpha1's credentials derived from it, by
    the placeholder each replaces; all but the public key are secret Outputs."""
    raw: pulumi.Input[str | None] = keygen.stdout if keygen is not None else prepared.certificate
    certificate = outputs.checked_certificate(raw, prepared.certificate_source)
    values = {
        placeholders.CURVE_CERT: certificate,
        placeholders.CURVE_PUBLIC_KEY: outputs.public_key_of(certificate),
    }
    # v1alpha1's generated secrets (munge key, passwords, RESTful token): computed only once the
    # certificate is known.
    for token, derive in credentials.derivations(prepared.plan).items():
        values[token] = pulumi.Output.secret(certificate.apply(derive))
    return values


@dataclass(frozen=True)
class _Lead:
    """Where a cluster's lead is: its own rank 0, or the lead broker a bursted cluster joins."""

    hostlist: pulumi.Input[str]
    host: pulumi.Input[str]
    gate: pulumi.Output[Any] | None
    """A burst's checked group: no object may be created for a cluster its root does not
    declare."""
    replacements: dict[str, pulumi.Output[str]]
    """The lead's placeholders (its address and name) and a deferred group's rank order, and
    their values."""
    rank_order: dict[str, pulumi.Output[str]]
    """A deferred group's rank-order placeholders (``placeholders.RANK_ORDER``) and their values:
    the Job's hash covers them, as it covers a known rank order."""


def _lead(prepared: Prepared, secrets: Mapping[str, pulumi.Output[str]]) -> _Lead:
    """The lead substituted: ``lead_broker``'s address and, with ``burst_group``, the group."""
    plan = prepared.plan
    if prepared.lead_broker is None:
        return _Lead(plan.hostlist, plan.names.lead_fqdn, None, {}, {})
    address = outputs.check_lead_address(prepared.lead_broker, "lead_broker")
    replacements = {placeholders.LEAD_ADDRESS: address}
    if prepared.burst_group is None:
        hostlist = outputs.substitute(plan.hostlist, {**secrets, **replacements})
        return _Lead(hostlist, address, None, replacements, {})
    group = burstgroup.resolve(plan, prepared.burst_group, address)
    rank_order = {token: group[token] for token in placeholders.RANK_ORDER}
    hostlist = group[placeholders.RANK_ORDER_HOSTLIST]
    return _Lead(hostlist, address, hostlist, {**replacements, **group}, rank_order)


def _register(
    resource_name: str,
    prepared: Prepared,
    lead: _Lead,
    replacements: Mapping[str, pulumi.Output[str]],
    parent: _Parent,
    keygen: local.Command | None,
) -> MiniClusterResources:
    """Every rendered object as its typed resource, in creation order, then the size patch."""
    plan = prepared.plan
    rendering = prepared.rendering
    before_job: list[pulumi.Resource] = [] if keygen is None else [keygen]

    def child(
        cls: type[R], manifest: Mapping[str, Any], *, secret: bool = False, retain: bool = False
    ) -> R:
        filled = outputs.substitute(awaiting.registered_child(manifest), replacements)
        resource = resources.register_as(
            cls,
            resource_name,
            _secret_data(filled) if secret else filled,
            parent.opts(lead.gate, delete_before_replace=True, retain_on_delete=retain or None),
        )
        before_job.append(resource)
        return resource

    def maybe(
        cls: type[R], manifest: Mapping[str, Any] | None, *, secret: bool = False
    ) -> R | None:
        return None if manifest is None else child(cls, manifest, secret=secret)

    entrypoint = child(k8s.core.v1.ConfigMap, rendering.entrypoint)
    curve_secret = maybe(k8s.core.v1.Secret, rendering.curve_secret, secret=True)
    secrets = tuple(child(k8s.core.v1.Secret, m, secret=True) for m in rendering.credentials)
    volumes: list[k8s.core.v1.PersistentVolume | k8s.core.v1.PersistentVolumeClaim] = []
    # Each operator volume renders as its PersistentVolume, then its claim. v1alpha1's
    # `delete: false`: both outlive `pulumi destroy`.
    for item, volume, claim in zip(
        plan.operator_volumes, rendering.volumes[0::2], rendering.volumes[1::2], strict=True
    ):
        retain = not item.volume.delete
        volumes.append(child(k8s.core.v1.PersistentVolume, volume, retain=retain))
        volumes.append(child(k8s.core.v1.PersistentVolumeClaim, claim, retain=retain))
    policies = tuple(child(k8s.networking.v1.NetworkPolicy, m) for m in rendering.network_policies)
    # An elastic MiniCluster's ServiceAccount, Role and RoleBinding: before the pods that use them.
    autoscaler = tuple(child(pulumi.CustomResource, m) for m in rendering.autoscaler)
    services_pod = maybe(k8s.core.v1.Pod, rendering.services_pod)
    headless_service = child(k8s.core.v1.Service, rendering.headless_service)
    services_service = maybe(k8s.core.v1.Service, rendering.services_service)
    sidecars = tuple(child(k8s.core.v1.Service, m) for m in rendering.sidecar_services)
    restful_service = maybe(k8s.core.v1.Service, rendering.restful_service)
    job, size_patch, queue_patch = _job(
        resource_name, prepared, rendering, replacements, parent, lead, before_job
    )
    return MiniClusterResources(
        job=job,
        headless_service=headless_service,
        entrypoint=entrypoint,
        curve_secret=curve_secret,
        network_policies=policies,
        size_patch=size_patch,
        keygen=keygen,
        credentials=secrets,
        volumes=tuple(volumes),
        services_pod=services_pod,
        services_service=services_service,
        sidecar_services=sidecars,
        restful_service=restful_service,
        queue_patch=queue_patch,
        autoscaler=autoscaler,
    )


def _job(
    resource_name: str,
    prepared: Prepared,
    rendering: Rendering,
    replacements: Mapping[str, pulumi.Output[str]],
    parent: _Parent,
    lead: _Lead,
    before_job: list[pulumi.Resource],
) -> tuple[k8s.batch.v1.Job, k8s.batch.v1.JobPatch | None, k8s.batch.v1.JobPatch | None]:
    """The Job, after every other child, the JobPatch that owns its size and, for a queued
    MiniCluster, the JobPatch that waits for its admission."""
    plan = prepared.plan
    job_registered = awaiting.registered_job(
        plan, rendering.job, prepared.wait, prepared.wait_timeout
    )
    patch_await = awaiting.patch_await_annotations(plan, prepared.wait, prepared.wait_timeout)
    queue_await: dict[str, str] | None = None
    ignore_changes = job_ignore_changes(plan)
    if rendering.queue is not None:
        job_registered, patch_await, queue_await, waits_for = queued.split_awaits(
            job_registered, patch_await, prepared.wait_timeout
        )
        ignore_changes += queued.QUEUED_IGNORE_CHANGES
        pulumi.log.info(
            queued.admission_message(plan.name, rendering.queue, waits_for),
            resource=parent.component,
        )
    job = resources.register_as(
        k8s.batch.v1.Job,
        resource_name,
        outputs.substitute(job_registered, replacements),
        parent.opts(
            lead.gate,
            after=before_job,
            delete_before_replace=True,
            replace_on_changes=[
                "spec.template",
                *(f"spec.{f}" for f in jobfields.immutable(plan.kube_version)),
            ],
            ignore_changes=ignore_changes,
        ),
    )
    # An Output: a burst's Job holds text that is known once its root's is.
    job_hash = pulumi.Output.from_input(outputs.substitute(job_registered, lead.rank_order)).apply(
        _job_hash
    )
    patch: k8s.batch.v1.JobPatch | None = None
    if awaiting.has_size_patch(plan):
        # Unless autoscale owns the size: then the Job is created at ``size`` and its ignored
        # parallelism/completions are the scaler's, so neither a later ``up`` nor a refresh
        # resets them. Turning autoscale off brings the patch back, and with it ``size``.
        patch = _size_patch(resource_name, plan, job, job_hash, patch_await, parent)
    if rendering.queue is None or queue_await is None:
        return job, patch, None
    # The wait of a queued MiniCluster, after the size patch, named after its LocalQueue.
    queue_patch = k8s.batch.v1.JobPatch(
        queued.await_resource_name(resource_name, rendering.queue),
        metadata=_patch_metadata(plan, job_hash, queue_await),
        opts=parent.opts(None, after=[patch if patch is not None else job], deleted_with=job),
    )
    return job, patch, queue_patch


def job_ignore_changes(plan: plans.MiniClusterPlan) -> list[str]:
    """What the Job's own diff leaves to the size JobPatch (or the scaler): its size, where the
    target release resizes a live Job. Elsewhere the size stays in the Job's diff, where a new
    one replaces the Job (``jobfields.immutable``) and the new Job is created at the new size:
    the engine creates a replacement with an ignored field's old value."""
    return list(JOB_IGNORE_CHANGES) if jobfields.resizable(plan.kube_version) else []


def _patch_metadata(
    plan: plans.MiniClusterPlan, job_hash: pulumi.Output[str], awaits: Mapping[str, str]
) -> dict[str, Any]:
    """The metadata of a JobPatch of the MiniCluster's Job: it names the Job, forces its
    field ownership, carries the Job's hash (a replaced Job is patched again) and its wait."""
    return {
        "name": plan.names.cluster,
        "namespace": plan.namespace,
        "annotations": {
            awaiting.PATCH_FORCE_ANNOTATION: "true",
            awaiting.JOB_HASH_ANNOTATION: job_hash,
            **awaits,
        },
    }


def _size_patch(
    resource_name: str,
    plan: plans.MiniClusterPlan,
    job: k8s.batch.v1.Job,
    job_hash: pulumi.Output[str],
    patch_await: Mapping[str, str],
    parent: _Parent,
) -> k8s.batch.v1.JobPatch:
    """``<resource>-size``: the JobPatch that owns the Job's parallelism and completions."""
    size = plan.spec.size
    return k8s.batch.v1.JobPatch(
        f"{resource_name}-size",
        metadata=_patch_metadata(plan, job_hash, patch_await),
        spec={"parallelism": size, "completions": size},
        # deleted_with: on destroy the Job goes anyway. Deleting the patch first would
        # relinquish parallelism/completions, and an Indexed Job without completions is
        # refused by the API server, failing the destroy.
        opts=parent.opts(None, after=[job], deleted_with=job),
    )


def _publish(
    component: pulumi.ComponentResource,
    plan: plans.MiniClusterPlan,
    rendering: Rendering,
    children: MiniClusterResources,
    lead: _Lead,
    replacements: Mapping[str, pulumi.Output[str]],
) -> None:
    """Set and register every output of ``OUTPUTS`` on ``component``."""
    size = plan.spec.size
    published: dict[str, pulumi.Output[Any]] = {
        # Tied to the resources, so that a consumer of these names waits for the objects.
        "job_name": children.job.metadata.apply(lambda meta: str(meta.name)),
        "service_name": children.headless_service.metadata.apply(lambda meta: str(meta.name)),
        "namespace": pulumi.Output.from_input(plan.namespace),
        "lead_broker_host": pulumi.Output.from_input(lead.host),
        "hostlist": pulumi.Output.from_input(lead.hostlist),
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
    plan: plans.MiniClusterPlan,
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


def _depends_on(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    """The caller's ``depends_on`` as a list (it may be one resource, a list, or nothing)."""
    value = opts.depends_on if opts is not None else None
    if value is None:
        return []
    if isinstance(value, pulumi.Resource):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, pulumi.Resource)]
    raise SpecError(
        Problem("opts.depends_on", "must be a resource or a list of resources, not an Output"),
        source=_SOURCE,
    )


def _restful_outputs(
    plan: plans.MiniClusterPlan, replacements: Mapping[str, pulumi.Output[str]]
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


def _job_hash(job: Mapping[str, Any]) -> str:
    spec = {k: v for k, v in job["spec"].items() if k not in ("parallelism", "completions")}
    canonical = json.dumps({**job, "spec": spec}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _secret_data(manifest: dict[str, Any]) -> dict[str, Any]:
    """A Secret's data as a secret Output, whatever it holds."""
    return {
        key: pulumi.Output.secret(value) if key in ("data", "stringData") else value
        for key, value in manifest.items()
    }


# --- validation, before anything is registered ---------------------------------------------


def prepare(resource_name: str, args: MiniClusterArgs) -> Prepared:  # noqa: C901
    """The validated, planned and rendered MiniCluster; raises ``SpecError`` on bad input."""
    if not isinstance(args, Mapping):
        raise SpecError(
            Problem("", f"must be a MiniClusterArgs mapping, got {type(args).__name__}")
        )
    problems = [
        Problem(str(key), unknown_key(str(key), _ARG_KEYS, "argument"))
        for key in args
        if key not in _ARG_KEYS
    ]
    if "spec" not in args:
        problems.append(Problem("spec", "required: the MiniCluster spec, a file path or a model"))
    wait = args.get("wait", "ready")
    if wait not in WAIT_MODES:
        problems.append(Problem("wait", f"must be one of {', '.join(WAIT_MODES)}, got {wait!r}"))
    for key in ("namespace", "name"):
        value = args.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(Problem(key, f"must be a string, got {type(value).__name__}"))
    wait_timeout = args.get("wait_timeout")
    if wait_timeout is not None and (
        not isinstance(wait_timeout, int) or isinstance(wait_timeout, bool) or wait_timeout < 1
    ):
        problems.append(
            Problem("wait_timeout", f"must be a positive number of seconds, got {wait_timeout!r}")
        )
    lead_broker = args.get("lead_broker")
    if isinstance(lead_broker, str) and (problem := outputs.lead_address_problem(lead_broker)):
        problems.append(Problem("lead_broker", problem))
    burst_group = args.get("burst_group")
    if burst_group is not None and lead_broker is None:
        problems.append(
            Problem("burst_group", "needs lead_broker: the address of the lead the group joins")
        )
    curve_cert = args.get("curve_cert")
    if isinstance(curve_cert, str):
        try:
            certificates.parse(outputs.normalize_certificate(curve_cert))
        except certificates.CertificateError as err:
            problems.append(Problem("curve_cert", str(err)))
    if problems:
        raise SpecError(problems, source=_SOURCE)

    # With burst_group the whole group, address included, comes from the outputs; with only
    # lead_broker, the address stands in as a placeholder until the Output resolves.
    lead_placeholder = (
        placeholders.LEAD_ADDRESS if lead_broker is not None and burst_group is None else None
    )
    # With burst_group the group is deferred to it before the cross-field rules run (once).
    settle = _defer_group if burst_group is not None else None
    definition = _definition(resource_name, args["spec"], args, lead_placeholder, settle)
    if burst_group is None and has_deferred_group(definition.spec):
        raise SpecError(
            Problem("burst_group", "required: the spec defers its group to its root's outputs"),
            source=_SOURCE,
        )
    if "autoscale" in args:
        definition = _with_autoscale(definition, args["autoscale"])
    try:
        kube_version = kubeversion.parse(args.get("kube_version", kubeversion.DEFAULT))
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    plan = plans.build(definition, kube_version)
    if curve_cert is None and (
        message := plan.mounted_certificate_problem("curve_cert (stack config curveCert)")
    ):
        raise SpecError(Problem("curve_cert", message), source=_SOURCE)
    try:  # an object the API server would find too large is refused here, before any is created
        rendering = render(
            plan,
            None,
            network_policy=bool(args.get("network_policy", True)),
            lead_source_ranges=list(args.get("lead_source_ranges") or ()),
            queue=args.get("queue"),
            managed_by=args.get("managed_by"),
        )
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    keygen = settings_from_args(args.get("keygen"), plan)
    choice: tuple[pulumi.Input[str] | None, certificates.CertificateSource] = certificates.choose(
        curve_cert, definition.spec.flux.curve_cert
    )
    certificate, chosen = choice
    source = {
        certificates.CertificateSource.GIVEN: "the curve_cert argument",
        certificates.CertificateSource.SPEC: "spec.flux.curveCert",
        certificates.CertificateSource.NEW: f"the keygen Command (strategy {keygen.strategy!r})",
    }[chosen]
    return Prepared(
        plan=plan,
        rendering=rendering,
        keygen=keygen,
        wait=wait,
        certificate=certificate,
        certificate_source=source,
        lead_broker=lead_broker,
        burst_group=burst_group,
        wait_timeout=wait_timeout,
    )


_ARG_KEYS: Final = MiniClusterArgs.__optional_keys__


def _with_autoscale(definition: MiniClusterDefinition, value: Any) -> MiniClusterDefinition:
    """The definition with the ``autoscale`` argument in place of its document's annotation
    (the one place the plan reads it)."""
    try:
        chosen = autoscaling.settings(value, "autoscale")
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    text = "false" if chosen is None else autoscaling.annotation_value(chosen)
    return replace(
        definition,
        annotations={**definition.annotations, lbl.AUTOSCALE_ANNOTATION: text},
    )


def _defer_group(spec: MiniClusterSpec, name: str) -> MiniClusterSpec:
    """``loading.with_deferred_group``, once: a stack program's definition may have it already."""
    return spec if has_deferred_group(spec) else with_deferred_group(spec, name)


def _definition(
    resource_name: str,
    spec: Any,
    args: Mapping[str, Any],
    lead_address: str | None,
    settle: Callable[[MiniClusterSpec, str], MiniClusterSpec] | None,
) -> MiniClusterDefinition:
    """The validated MiniCluster, parsed exactly once from whatever form ``spec`` takes, with
    ``settle`` (a burst's deferred group) made before the cross-field rules run."""
    name, namespace = args.get("name"), args.get("namespace")
    if isinstance(spec, MiniClusterDefinition):
        given: MiniClusterDefinition = spec
        changed = given.spec
        if lead_address is not None:
            changed = with_lead_address(changed, lead_address)
        if settle is not None:
            try:
                changed = settle(changed, given.name)
            except SpecError as err:
                raise err.with_source(_SOURCE) from None
        if changed is not given.spec:  # validated already, unless changed here
            given = revalidate(given.with_spec(changed), source=_SOURCE)
        if name is not None or namespace is not None:
            raise SpecError(
                Problem(
                    "spec",
                    "a MiniClusterDefinition carries its name and namespace; pass name and "
                    "namespace only with a document or a spec",
                ),
                source=_SOURCE,
            )
        return given
    if isinstance(spec, MiniClusterSpec):
        return parse(
            spec,
            name=name or resource_name,
            namespace=namespace,
            lead_address=lead_address,
            settle=settle,
        )
    source = ""
    if isinstance(spec, str) and "\n" in spec:
        raise SpecError(
            Problem("spec", "a string is a file path, and this looks like YAML text: pass a dict"),
            source=_SOURCE,
        )
    if isinstance(spec, str | Path):
        source = str(spec)
        found = documents.read_file(spec)
        if len(found) != 1:
            raise SpecError(
                Problem("", f"expected one MiniCluster, found {len(found)} documents"),
                source=source,
            )
        spec = found[0]
    if not isinstance(spec, Mapping):
        raise SpecError(
            Problem("spec", f"must be a mapping, a file path or a MiniClusterSpec, got {spec!r}"),
            source=_SOURCE,
        )
    metadata = spec.get("metadata") if documents.is_document(spec) else None
    # Not a mapping: parse names the problem at metadata.
    has_name = isinstance(metadata, Mapping) and bool(metadata.get("name"))
    definition = parse(
        spec,
        name=name or (None if has_name else resource_name),
        namespace=namespace,
        source=source,
        lead_address=lead_address,
        settle=settle,
    )
    written = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    if namespace is not None and written not in (None, namespace):
        # The argument wins (the deployer's choice), but not silently: kubectl's -n refuses.
        said = Problem(
            "metadata.namespace",
            f"is {written!r} but the namespace argument is {namespace!r}, which wins: the "
            f"objects go to {namespace!r}",
        )
        definition = replace(definition, warnings=(*definition.warnings, said))
    return definition
