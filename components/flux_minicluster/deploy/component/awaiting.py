"""What only Pulumi needs on the objects it registers, said in one place: the deploy annotations.

The pure core renders objects for any client (kubectl, GitOps, Pulumi), and these annotations mean
something to pulumi-kubernetes only, so the component adds them as it registers, and nothing
else does. A stack's rendering of a spec and ``minicluster render FILE`` of the same spec differ
by exactly ``DEPLOY_ANNOTATIONS`` on the Job (a test holds it). This module imports no Pulumi:
``minicluster check`` judges a MiniCluster document as the policy pack would see it registered.

How long ``pulumi up`` waits (the component's ``wait``):

* a persistent cluster never completes, and Pulumi's default Job await waits for completion, so
  it is skipped whatever ``wait`` says;
* ``ready``: wait until every broker pod is Ready (``.status.ready`` counts them), which is when
  the cluster can take work; the Job may run on long after ``pulumi up`` returns;
* ``complete``: pulumi-kubernetes' Job await, which waits for the Job to finish (or fail);
* ``none``: register the Job and move on.

Every wait goes on the size patch (``<resource>-size``, a JobPatch, which pulumi-kubernetes
awaits as the Job it patches), and the Job skips awaiting. The size is the patch's: the Job
ignores its own ``parallelism``/``completions`` after creation, and the engine creates a
replaced Job with an ignored field's old value, the size the Job was first created at. Only the
patch, which runs after the Job, gives a new Job its size, so a wait on the Job itself would wait
for pods that do not exist yet (a Job of 4 ranks started at 2 never completes: rank 0 waits for
the whole instance). Autoscale has no size patch (the scaler owns the size): there the Job
carries a ``complete`` wait itself.

``wait_timeout`` (seconds, the component's argument) bounds whichever of the two waits
(``TIMEOUT_ANNOTATION``; pulumi-kubernetes' default is 10 minutes). A queued MiniCluster moves
the wait to a JobPatch of its own, named for its LocalQueue (``deploy.queued``).

How each object is deleted (pulumi-kubernetes' default is foreground propagation):

* every child but the Job: background. None has dependents that matter (a Service's
  EndpointSlices), but with foreground each waits for the garbage collector to take its deletion
  finalizer off, and on ``pulumi destroy`` the collector is busy deleting the Job's pods (20
  requests a second by default): the objects, then the namespace after them, waited for the pods.
  With background they go at once and the namespace is deleted next (64 brokers: destroy 11 s ->
  9 s; at 256 and 1,024 the namespace controller's own waits dominate either way: the README's
  Performance section);
* a Job that skips awaiting: background too. pulumi-kubernetes then also skips waiting for its
  deletion, so a replacement (delete-before-replace, a fixed name) would apply the new Job to the
  old one while its foreground deletion runs: a field conflict, or a "new" Job that disappears
  with the old one (found by tests/e2e/test_local_stack.py). With background the old Job object
  goes at once and its pods after it;
* a Job that is awaited (an autoscaled one with ``wait: complete``, which has no size patch)
  keeps foreground: its replacement then waits until the old pods are gone, so old and new
  brokers never share a hostname. Every other Job skips (the size patch carries the wait), as
  the queued and ``ready`` ones always did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, get_args

from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning.plan import MiniClusterPlan

__all__ = [
    "DELETION_PROPAGATION_ANNOTATION",
    "DEPLOY_ANNOTATIONS",
    "JOB_HASH_ANNOTATION",
    "PATCH_FORCE_ANNOTATION",
    "TIMEOUT_ANNOTATION",
    "WAIT_MODES",
    "Wait",
    "has_size_patch",
    "job_annotations",
    "patch_await_annotations",
    "registered_child",
    "registered_job",
]

Wait = Literal["none", "ready", "complete"]
WAIT_MODES: Final[tuple[str, ...]] = get_args(Wait)

DELETION_PROPAGATION_ANNOTATION: Final = "pulumi.com/deletionPropagationPolicy"
# On the JobPatch (and so on the live Job): a digest of the Job as registered, without its size.
# It changes exactly when the Job is replaced or updated, which makes the patch apply again to
# the new Job; the patch would otherwise be left unchanged and the new Job keep its first size.
JOB_HASH_ANNOTATION: Final = f"{lbl.DOMAIN}/job-hash"
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"
TIMEOUT_ANNOTATION: Final = "pulumi.com/timeoutSeconds"

DEPLOY_ANNOTATIONS: Final = (
    lbl.SKIP_AWAIT_ANNOTATION,
    lbl.WAIT_FOR_ANNOTATION,
    DELETION_PROPAGATION_ANNOTATION,
    TIMEOUT_ANNOTATION,
)
"""Every annotation the deploy layer adds to a rendered object (the Job; every other object gets
the deletion propagation alone); the size patch, which
the deploy layer alone makes, also carries ``PATCH_FORCE_ANNOTATION`` and
``JOB_HASH_ANNOTATION``."""

_SKIP: Final = {lbl.SKIP_AWAIT_ANNOTATION: "true"}


def _waits_for_ready(plan: MiniClusterPlan, wait: Wait) -> bool:
    if wait not in WAIT_MODES:
        raise ValueError(f"wait must be one of {', '.join(WAIT_MODES)}, got {wait!r}")
    return wait == "ready" and not plan.persistent


def _skips(plan: MiniClusterPlan, wait: Wait) -> bool:
    return plan.persistent or wait == "none"


def _timeout(wait_timeout: int | None) -> dict[str, str]:
    return {} if wait_timeout is None else {TIMEOUT_ANNOTATION: str(wait_timeout)}


def has_size_patch(plan: MiniClusterPlan) -> bool:
    """Whether the Job's size is the size patch's: unless autoscale owns it (the scaler sets the
    Job's parallelism, which Pulumi then ignores)."""
    return plan.autoscale is None


def job_annotations(
    plan: MiniClusterPlan, wait: Wait, wait_timeout: int | None = None
) -> dict[str, str]:
    """The annotations the Job is registered with, beside the rendered ones."""
    if has_size_patch(plan) or _waits_for_ready(plan, wait) or _skips(plan, wait):
        return {**_SKIP, DELETION_PROPAGATION_ANNOTATION: "background"}
    return _timeout(wait_timeout)  # complete, autoscaled: Pulumi's Job await on the Job


def patch_await_annotations(
    plan: MiniClusterPlan, wait: Wait, wait_timeout: int | None = None
) -> dict[str, str]:
    """The await annotations of the size patch."""
    if _waits_for_ready(plan, wait):
        return {
            lbl.WAIT_FOR_ANNOTATION: f"jsonpath={{.status.ready}}={plan.spec.size}",
            **_timeout(wait_timeout),
        }
    if _skips(plan, wait):
        return dict(_SKIP)
    return _timeout(wait_timeout)  # complete: the patched Job's await, done or failed


def _annotated(manifest: Mapping[str, object], added: Mapping[str, str]) -> dict[str, object]:
    """``manifest`` with ``added`` among its annotations: only ``DEPLOY_ANNOTATIONS``, the one
    list of what the deploy layer adds to what the core rendered."""
    unlisted = sorted(set(added) - set(DEPLOY_ANNOTATIONS))
    if unlisted:
        raise ValueError(f"not deploy annotations (awaiting.DEPLOY_ANNOTATIONS): {unlisted}")
    metadata = dict(manifest["metadata"])  # type: ignore[call-overload]
    annotations = {**(metadata.get("annotations") or {}), **added}
    return {**manifest, "metadata": {**metadata, "annotations": annotations}}


def registered_job(
    plan: MiniClusterPlan, job: Mapping[str, object], wait: Wait, wait_timeout: int | None = None
) -> dict[str, object]:
    """The rendered Job with its deploy annotations, as the component registers it."""
    return _annotated(job, job_annotations(plan, wait, wait_timeout))


def registered_child(manifest: Mapping[str, object]) -> dict[str, object]:
    """A rendered object other than the Job as the component registers it: deleted with
    background propagation."""
    return _annotated(manifest, {DELETION_PROPAGATION_ANNOTATION: "background"})
