"""A MiniCluster's children registered: each rendered object as its typed resource, in order.

Every object the core rendered is registered once, as the typed pulumi_kubernetes resource that
manages it (``resources``), with the placeholders' Outputs substituted (``deploytime``) and the
options only Pulumi has:

* object names are fixed (hostnames derive from them), so every replacement deletes first, and
  a pod template change replaces the Job deliberately instead of failing on an immutable field;
* the Job comes after every other child; a resize within ``maxSize`` never replaces it:
  pulumi-kubernetes replaces a Job whose ``parallelism``/``completions`` change, so the Job
  ignores those fields after creation and a ``JobPatch`` (``<resource>-size``) owns them, set to
  ``size`` with server-side apply (unless the scaler of an elastic MiniCluster owns them);
* how long ``pulumi up`` waits is said by annotations only Pulumi reads (``awaiting``), and a
  queued MiniCluster waits for its admission through a JobPatch of its own (``queued``);
* every child is parented to the component and depends on what the caller's ``depends_on``
  names, and a burst's children on its checked group;
* Secrets' data are secret Outputs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.render import jobfields
from flux_minicluster.deploy.component import awaiting, outputs, queued, resources
from flux_minicluster.deploy.component.children import MiniClusterResources
from flux_minicluster.deploy.component.deploytime import Resolved
from flux_minicluster.deploy.component.prepared import Prepared

__all__ = ["JOB_IGNORE_CHANGES", "Parent", "job_ignore_changes", "register"]

JOB_IGNORE_CHANGES: Final = tuple(f"spec.{f}" for f in jobfields.SIZE)
"""What the Job leaves to the size JobPatch (or the scaler) where the target release resizes a
live Indexed Job; ``job_ignore_changes`` gives it for a plan."""
R = TypeVar("R", bound=pulumi.CustomResource)


@dataclass(frozen=True)
class Parent:
    """The component every child is parented to, and the caller's dependencies every child has.

    The caller's ``depends_on`` applies to every child: a keygen pod or a Pod must not start
    before, say, the Namespace the caller created for it.
    """

    component: pulumi.ComponentResource
    caller: list[pulumi.Resource]

    @classmethod
    def of(cls, component: pulumi.ComponentResource, opts: pulumi.ResourceOptions | None) -> Parent:
        """``component`` with the caller's ``depends_on`` from ``opts``."""
        return cls(component, _depends_on(opts))

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


def register(
    resource_name: str,
    prepared: Prepared,
    resolved: Resolved,
    parent: Parent,
    keygen: local.Command | None,
) -> MiniClusterResources:
    """Every rendered object as its typed resource, in creation order, then the size patch."""
    plan = prepared.plan
    rendering = prepared.rendering
    before_job: list[pulumi.Resource] = [] if keygen is None else [keygen]

    def child(
        cls: type[R], manifest: Mapping[str, Any], *, secret: bool = False, retain: bool = False
    ) -> R:
        filled = outputs.substitute(awaiting.registered_child(manifest), resolved.replacements)
        resource = resources.register_as(
            cls,
            resource_name,
            _secret_data(filled) if secret else filled,
            parent.opts(resolved.gate, delete_before_replace=True, retain_on_delete=retain or None),
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
    job, size_patch, queue_patch = _job(resource_name, prepared, resolved, parent, before_job)
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
    resolved: Resolved,
    parent: Parent,
    before_job: list[pulumi.Resource],
) -> tuple[k8s.batch.v1.Job, k8s.batch.v1.JobPatch | None, k8s.batch.v1.JobPatch | None]:
    """The Job, after every other child, the JobPatch that owns its size and, for a queued
    MiniCluster, the JobPatch that waits for its admission."""
    plan = prepared.plan
    rendering = prepared.rendering
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
        outputs.substitute(job_registered, resolved.replacements),
        parent.opts(
            resolved.gate,
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
    job_hash = pulumi.Output.from_input(
        outputs.substitute(job_registered, resolved.rank_order)
    ).apply(_job_hash)
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
    parent: Parent,
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
        source="MiniClusterArgs",
    )
