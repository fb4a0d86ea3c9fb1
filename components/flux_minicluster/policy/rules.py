"""The catalogue of MiniCluster policy rules: one list that both runners iterate.

The CrossGuard pack (``policies/``) and the offline checker (``checker.py``) both take their
rules from ``ALL_RULES``, so adding a rule here adds it to ``pulumi preview --policy-pack`` and to
``minicluster check`` at once.

Rule ids and their options (defaults in brackets):

* ``curve-cert-in-secret`` (mandatory): no ConfigMap holds a CURVE secret key.
* ``pinned-images`` (advisory): images carry a version tag other than ``latest``, or a digest.
* ``no-privileged`` (mandatory): no privileged containers, hostPID, hostIPC, hostPath volumes;
  ``allowPrivileged``, ``allowHostPath``, ``allowHostPID``, ``allowHostIPC`` [[]]: MiniCluster
  names (or ``"*"``) exempted.
* ``flux-container-resources`` (advisory): the Flux container requests CPU and memory.
* ``job-bounds`` (advisory): ``maxActiveDeadlineSeconds`` [31536000], ``maxBackoffLimit`` [100].
* ``persistent-no-hang`` (mandatory): a persistent Job has skipAwait or waitFor.
* ``persistent-keeps-its-queue`` (advisory): a persistent Job (not a burst's) names its archive.
* ``headless-publishes-not-ready`` (advisory): the headless Service publishes not-ready pods.
* ``hostlist-covers-max-size`` (mandatory, stack): broker.toml hosts cover the Job's hostnames.
* ``burst-group-consistent`` (mandatory, stack): one certificate and rank order per burst group,
  checked against the root stack's outputs when its StackReference is in the set (see
  ``stackref``), else among the group's objects.
* ``namespace-not-default`` (advisory): ``forbiddenNamespaces`` [default, kube-system].
* ``queued-job-suspended`` (mandatory): a Job labelled for a Kueue LocalQueue is created with
  ``spec.suspend: true`` (``queue_rules``).
* ``lead-open-to-all`` (advisory): a bursting root's lead Service (LoadBalancer or NodePort on
  rank 0) is not open to every address; ``allowOpen`` [[]]: MiniCluster names (or ``"*"``)
  exempted.
* ``burst-no-success-policy`` (mandatory): a bursted cluster's Job has no success policy.
* ``failure-policy-needs-never`` (mandatory): a Job with a podFailurePolicy has restartPolicy
  Never.
* ``failed-work-fails-job`` (advisory): a MiniCluster whose rank 0 runs the work fails its Job
  when the work fails (restartPolicy Never and a failure policy rule on the entrypoint's code).
"""

from __future__ import annotations

from flux_minicluster.policy.job_rules import (
    BURST_NO_SUCCESS_POLICY,
    FAILED_WORK_FAILS_JOB,
    FAILURE_POLICY_NEEDS_NEVER,
)
from flux_minicluster.policy.model import Level, Manifest, Option, Rule, Settings
from flux_minicluster.policy.queue_rules import QUEUED_JOB_SUSPENDED
from flux_minicluster.policy.resource_rules import (
    CURVE_CERT_IN_SECRET,
    FLUX_CONTAINER_RESOURCES,
    HEADLESS_PUBLISHES_NOT_READY,
    JOB_BOUNDS,
    LEAD_OPEN_TO_ALL,
    NAMESPACE_NOT_DEFAULT,
    NO_PRIVILEGED,
    PERSISTENT_KEEPS_ITS_QUEUE,
    PERSISTENT_NO_HANG,
    PINNED_IMAGES,
)
from flux_minicluster.policy.stack_rules import BURST_GROUP_CONSISTENT, HOSTLIST_COVERS_MAX_SIZE

__all__ = [
    "ALL_RULES",
    "BURST_GROUP_CONSISTENT",
    "BURST_NO_SUCCESS_POLICY",
    "CURVE_CERT_IN_SECRET",
    "FAILED_WORK_FAILS_JOB",
    "FAILURE_POLICY_NEEDS_NEVER",
    "FLUX_CONTAINER_RESOURCES",
    "HEADLESS_PUBLISHES_NOT_READY",
    "HOSTLIST_COVERS_MAX_SIZE",
    "JOB_BOUNDS",
    "LEAD_OPEN_TO_ALL",
    "NAMESPACE_NOT_DEFAULT",
    "NO_PRIVILEGED",
    "PERSISTENT_KEEPS_ITS_QUEUE",
    "PERSISTENT_NO_HANG",
    "PINNED_IMAGES",
    "QUEUED_JOB_SUSPENDED",
    "Level",
    "Manifest",
    "Option",
    "Rule",
    "Settings",
]

ALL_RULES: tuple[Rule, ...] = (
    CURVE_CERT_IN_SECRET,
    PINNED_IMAGES,
    NO_PRIVILEGED,
    FLUX_CONTAINER_RESOURCES,
    JOB_BOUNDS,
    PERSISTENT_NO_HANG,
    PERSISTENT_KEEPS_ITS_QUEUE,
    HEADLESS_PUBLISHES_NOT_READY,
    HOSTLIST_COVERS_MAX_SIZE,
    BURST_GROUP_CONSISTENT,
    NAMESPACE_NOT_DEFAULT,
    LEAD_OPEN_TO_ALL,
    BURST_NO_SUCCESS_POLICY,
    FAILURE_POLICY_NEEDS_NEVER,
    FAILED_WORK_FAILS_JOB,
    QUEUED_JOB_SUSPENDED,
)

if len({rule.id for rule in ALL_RULES}) != len(
    ALL_RULES
):  # pragma: no cover - a programming error caught at import
    raise RuntimeError("two policy rules share an id")
