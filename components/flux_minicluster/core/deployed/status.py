"""What a deployed MiniCluster is doing, read from the API server's objects (plain JSON).

The Flux Operator gives a MiniCluster five conditions, of which it sets one (objects created).
Here there is no custom resource: the Job, its pods and, for a queued MiniCluster, Kueue's
Workload already say all of it, and this module says it once, for ``minicluster status`` and
the component's ``status`` output alike:

* **created**: the Job exists (the component creates it last, after every object it mounts);
* **queue**: for a Job labelled ``kueue.x-k8s.io/queue-name``, admitted or queued: the
  Workload Kueue made for it (owned by the Job) and its ``QuotaReserved``/``Admitted``
  conditions; the reason Kueue gives while it waits (not enough quota, an inactive queue);
* **joined**: brokers joined, n of N: the Job's ``status.ready`` (the broker containers' readiness
  probe passes once a broker has joined the instance) against ``spec.parallelism``;
* **running**: pods are active and the Job is neither suspended nor finished;
* **finished**: the Job's ``Complete`` or ``Failed`` condition (with its reason), the exit code
  of rank 0's Flux container (the container named after the MiniCluster in the pod of
  completion index 0) and the work's own exit code, which that container's termination message
  tells (``exitcodes.work_message``: the entrypoint writes it once rank 0's work has ended). Work
  that failed is a failed MiniCluster even where its Job completed: under ``restartPolicy:
  OnFailure`` rank 0 exits 0 when its work failed, as the operator's does, so that the work is
  not run again (``core.kube.completion``).

The component's ``status`` output reads the Job alone (a Pulumi program cannot list pods or
Workloads): admission is then what the Job shows (a queued Job stays suspended until Kueue
admits it), and rank 0's exit code is known when the Job failed on it through its pod failure
policy (the Job controller's ``Failed`` message names the pod and the exit code): failed work
(``exitcodes.WORK_FAILED``) is then known to have failed, its own code is not.

Once the instance is up (rank 0's pod Running and Ready), ``minicluster status`` also reads the
instance itself, through the API server's exec with the user's own credentials
(``rankzero.INSTANCE_SCRIPT``), and ``read_instance`` says what Flux printed:

* **jobs**: job-list's counts (``flux job stats``, exact and cheap: no job is listed): pending
  (depend, priority, sched), running (run, cleanup), and the inactive ones by outcome,
  completed (exit 0), failed (a non-zero exit, or an exception other than a cancel or a
  timeout), cancelled and timeout (``flux jobs --stats`` counts those two as failed too);
* **archive**: when the Flux archive (``spec.archive.path``, else the one the broker was started
  with) was last written, or never (no such file yet).

``phase`` sums it up in one word: ``absent``, ``queued`` (waiting for Kueue's admission),
``suspended`` (an unqueued Job someone suspended), ``starting``, ``ready`` (every broker
joined), ``succeeded`` or ``failed``. Pure: the caller fetches the JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.deployed import rankzero
from flux_minicluster.core.deployed.rankzero import owned_pods
from flux_minicluster.core.kube.queueing import QUEUE_NAME_LABEL

__all__ = [
    "Admission",
    "Archive",
    "FluxJobs",
    "MiniClusterStatus",
    "Phase",
    "failure_policy_exit_code",
    "indexed_pod_prefix",
    "interpret",
    "owned_pods",
    "rank0_exit_code",
    "rank0_termination",
    "read_instance",
    "workload_of",
]

Phase = Literal["absent", "queued", "suspended", "starting", "ready", "succeeded", "failed"]


@dataclass(frozen=True)
class Admission:
    """A queued MiniCluster's place in Kueue."""

    queue: str
    """The LocalQueue the Job is labelled for."""
    admitted: bool
    workload: str | None
    """The Workload Kueue made for the Job (None: not yet, or Kueue is not running)."""
    cluster_queue: str | None
    """The ClusterQueue that reserved quota, once it did."""
    message: str
    """What Kueue says: why it waits, or that it admitted."""


@dataclass(frozen=True)
class FluxJobs:
    """The instance's jobs by state and, once inactive, by outcome (``flux job stats``)."""

    pending: int
    running: int
    completed: int
    failed: int
    cancelled: int
    timeout: int

    def line(self) -> str:
        return ", ".join(f"{value} {key}" for key, value in asdict(self).items())


@dataclass(frozen=True)
class Archive:
    """The instance's Flux archive file in rank 0's pod."""

    path: str
    written: str | None
    """When it was last written (UTC, ISO 8601); None: never (there is no such file)."""
    bytes: int | None

    def line(self) -> str:
        if self.written is None:
            return f"{self.path}: never written"
        return f"{self.path}: written {self.written} ({self.bytes} bytes)"


_INSTANCE_FIELDS: Final = ("jobs", "jobs_unread", "archive", "problems")


@dataclass(frozen=True)
class MiniClusterStatus:
    name: str
    namespace: str
    phase: Phase
    created: bool
    size: int
    """Brokers the Job runs (``spec.parallelism``); 0 when there is no Job."""
    joined: int
    """Brokers that joined the instance (the Job's ``status.ready``)."""
    running: bool
    succeeded: bool
    failed: bool
    reason: str | None
    """The Job's ``Failed`` (or ``Complete``) condition: reason and message; for failed work
    under a Complete Job, what the work exited with first."""
    exit_code: int | None
    """Rank 0's Flux container's exit code, once it exited."""
    admission: Admission | None
    """None when the MiniCluster is not queued."""
    work_exit_code: int | None = None
    """The work's own exit code, as rank 0's termination message tells it (None: not ended, not
    read, or a MiniCluster whose rank 0 runs no work)."""
    work_failed: bool = False
    """Rank 0's work failed (``work_exit_code`` not 0, or rank 0 exited
    ``exitcodes.WORK_FAILED``): ``failed`` and phase ``failed``, whatever the Job says."""
    jobs: FluxJobs | None = None
    """The instance's jobs, when they were read (``with_instance``)."""
    jobs_unread: str | None = None
    """Why ``jobs`` is None: the instance is not up, or reading it failed."""
    archive: Archive | None = None
    """The Flux archive, when the instance has one and it was read."""
    problems: tuple[dict[str, str], ...] = ()
    """What failed while reading the instance (``path``, ``message``, as ``-o json`` lists
    every command's problems): the rest of the status stands."""

    def to_json(self, *, instance: bool = False) -> dict[str, Any]:
        """The status as one JSON object; ``instance``: with what the instance said (the jobs,
        the archive, the problems reading them), which only ``minicluster status`` reads (the
        component's ``status`` output is the Job's alone)."""
        out = asdict(self)
        if not instance:
            return {k: v for k, v in out.items() if k not in _INSTANCE_FIELDS}
        out["problems"] = list(self.problems)
        return out

    def with_instance(
        self,
        jobs: FluxJobs | None,
        archive: Archive | None = None,
        unread: str | None = None,
        problem: str | None = None,
    ) -> MiniClusterStatus:
        """This status with what the instance said (``read_instance``), or why it said
        nothing: ``unread`` for a person, ``problem`` when reading it failed."""
        problems = self.problems + (({"path": "jobs", "message": problem},) if problem else ())
        return replace(
            self,
            jobs=jobs,
            jobs_unread=None if jobs is not None else unread or problem,
            archive=archive,
            problems=problems,
        )

    def lines(self) -> list[str]:
        """The status as a person reads it, one fact a line."""
        head = f"MiniCluster {self.namespace}/{self.name}: {self.phase}"
        if not self.created:
            return [head, "  created   no: there is no Job of that name in the namespace"]
        out = [head, f"  created   yes (Job {self.name})"]
        if self.admission is not None:
            a = self.admission
            state = "admitted" if a.admitted else "queued"
            where = f" (ClusterQueue {a.cluster_queue})" if a.cluster_queue else ""
            out.append(f"  queue     {state} by LocalQueue {a.queue}{where}: {a.message}")
        out.append(f"  joined    {self.joined} of {self.size} brokers")
        out.append(f"  running   {'yes' if self.running else 'no'}")
        if self.succeeded or self.failed:
            code = "" if self.exit_code is None else f", rank 0 exited {self.exit_code}"
            if self.work_exit_code is not None:
                code = f", the work exited {self.work_exit_code}{code}"
            word = "succeeded" if self.succeeded else "failed"
            because = f": {self.reason}" if self.reason and self.failed else ""
            out.append(f"  finished  {word}{code}{because}")
        else:
            out.append("  finished  no")
        if self.jobs is not None:
            out.append(f"  jobs      {self.jobs.line()}")
        elif self.jobs_unread:
            out.append(f"  jobs      not read: {self.jobs_unread}")
        if self.archive is not None:
            out.append(f"  archive   {self.archive.line()}")
        return out


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = obj.get("status") or {}
    return {str(c.get("type")): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}


def _true(conditions: Mapping[str, Mapping[str, Any]], kind: str) -> bool:
    return str(conditions.get(kind, {}).get("status")) == "True"


def _first_true(
    conditions: Mapping[str, Mapping[str, Any]], *kinds: str
) -> Mapping[str, Any] | None:
    """The first of ``kinds`` whose condition is True, or None."""
    return next((conditions[k] for k in kinds if _true(conditions, k)), None)


def _said(condition: Mapping[str, Any] | None) -> str | None:
    if not condition:
        return None
    parts = [str(condition[k]) for k in ("reason", "message") if condition.get(k)]
    return ": ".join(parts) or None


def workload_of(
    job: Mapping[str, Any], workloads: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The Workload Kueue made for ``job``: the one it owns (by the Job's uid)."""
    uid = (job.get("metadata") or {}).get("uid")
    for workload in workloads:
        for owner in (workload.get("metadata") or {}).get("ownerReferences") or []:
            if owner.get("kind") == "Job" and owner.get("uid") == uid:
                return workload
    return None


def rank0_termination(name: str, pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """How rank 0's Flux container (named ``name``) last ended (``exitCode``, ``message``...),
    from the newest rank 0 pod where it did (its current state, else the last one of a
    restarted container); None while it never has."""
    for pod in reversed(rankzero.rank0_pods(pods)):
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            if container.get("name") != name:
                continue
            for state in ("state", "lastState"):
                terminated = (container.get(state) or {}).get("terminated")
                if terminated and "exitCode" in terminated:
                    return dict(terminated)
    return None


def rank0_exit_code(name: str, pods: Sequence[Mapping[str, Any]]) -> int | None:
    """The exit code of rank 0's Flux container (``rank0_termination``)."""
    terminated = rank0_termination(name, pods)
    return None if terminated is None else int(terminated["exitCode"])


_FAILED_ON_EXIT: Final = re.compile(
    r"Container (?P<container>\S+) for pod \S+/(?P<pod>\S+) failed with exit code (?P<code>\d+)"
)


# The Job controller's longest generateName prefix of a pod (63 less 5 random characters).
_MAX_GENERATED_PREFIX: Final = 58


def indexed_pod_prefix(job_name: str, index: int) -> str:
    """The generateName prefix the Job controller gives the pods of ``index``: ``<job>-<i>-``,
    with the Job's name cut so that the prefix fits 58 characters (``podGenerateNameWithIndex``)."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > _MAX_GENERATED_PREFIX:
        prefix = job_name[: _MAX_GENERATED_PREFIX - len(suffix)] + suffix
    return prefix


def failure_policy_exit_code(name: str, failed: Mapping[str, Any] | None) -> int | None:
    """Rank 0's exit code as the Job's failure condition (``FailureTarget``, then ``Failed``)
    says it, when a pod failure policy rule matched rank 0's Flux container (``Container <c> for
    pod <ns>/<job>-0-<x> failed with exit code <n> matching FailJob rule at index <i>``); None
    otherwise."""
    found = _FAILED_ON_EXIT.search(str((failed or {}).get("message") or ""))
    if found is None or found["container"] != name:
        return None
    if not found["pod"].startswith(indexed_pod_prefix(name, 0)):
        return None
    return int(found["code"])


def _admission(queue: str, suspended: bool, workload: Mapping[str, Any] | None) -> Admission:
    if workload is None:
        admitted = not suspended
        message = (
            "the Job runs (no Workload found)"
            if admitted
            else "no Workload yet: is Kueue running, and does it manage batch/job?"
        )
        return Admission(queue, admitted, None, None, message)
    conditions = _conditions(workload)
    name = str((workload.get("metadata") or {}).get("name"))
    admission = (workload.get("status") or {}).get("admission") or {}
    cluster_queue = admission.get("clusterQueue")
    if _true(conditions, "Admitted"):
        return Admission(queue, True, name, cluster_queue, _said(conditions["Admitted"]) or "")
    waiting = conditions.get("QuotaReserved") or conditions.get("Admitted")
    if _true(conditions, "Finished"):
        # A finished Workload releases its quota; the Job's own conditions tell the outcome.
        return Admission(queue, True, name, cluster_queue, _said(conditions["Finished"]) or "")
    message = _said(waiting) or "pending: Kueue has not reported on it yet"
    return Admission(queue, False, name, cluster_queue, message)


def _admission_from_job(queue: str, suspended: bool) -> Admission:
    if suspended:
        message = (
            f"waiting for admission by LocalQueue {queue} (the Job is suspended until Kueue "
            "admits it; `minicluster status` reads Kueue's reason)"
        )
        return Admission(queue, False, None, None, message)
    return Admission(queue, True, None, None, "admitted: Kueue resumed the Job")


def interpret(
    name: str,
    namespace: str,
    job: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]] | None = None,
    workloads: Sequence[Mapping[str, Any]] | None = None,
) -> MiniClusterStatus:
    """The status of MiniCluster ``name`` from its Job, the Job's pods and the namespace's
    Workloads (each as ``kubectl get -o json`` prints it; ``job`` None when there is none).
    ``pods`` or ``workloads`` None: not read (the component's output), the Job says what it
    can."""
    if job is None:
        return MiniClusterStatus(
            name, namespace, "absent", False, 0, 0, False, False, False, None, None, None
        )
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    conditions = _conditions(job)
    size = int(spec.get("parallelism") or spec.get("completions") or 0)
    joined = int(status.get("ready") or 0)
    suspended = spec.get("suspend") is True
    # From 1.31 the Job controller first sets SuccessCriteriaMet or FailureTarget, and Complete
    # or Failed only once every pod has terminated (which a pod on a lost node can hold up for
    # long): the outcome is decided at the first.
    success = _first_true(conditions, "Complete", "SuccessCriteriaMet")
    failure = _first_true(conditions, "Failed", "FailureTarget")
    if pods is not None:
        terminated = rank0_termination(name, owned_pods(job, pods)) or {}
        exit_code = int(terminated["exitCode"]) if "exitCode" in terminated else None
        work_exit_code = exitcodes.work_code(terminated.get("message"))
    else:
        exit_code = failure_policy_exit_code(name, failure)
        work_exit_code = None
    work_failed = (work_exit_code or 0) != 0 or exit_code == exitcodes.WORK_FAILED
    failed = failure is not None or (success is not None and work_failed)
    succeeded = success is not None and not failed
    finished = succeeded or failed
    running = int(status.get("active") or 0) > 0 and not suspended and not finished
    queue = ((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)
    admission = (
        None
        if queue is None
        else _admission_from_job(queue, suspended)
        if workloads is None
        else _admission(queue, suspended, workload_of(job, workloads))
    )
    phase: Phase
    if succeeded:
        phase = "succeeded"
    elif failed:
        phase = "failed"
    elif suspended and admission is not None:
        # Admitted but not resumed yet: Kueue resumes it next.
        phase = "starting" if admission.admitted else "queued"
    elif suspended:
        phase = "suspended"
    elif size and joined >= size:
        phase = "ready"
    else:
        phase = "starting"
    reason = _said(failure if failure is not None else success)
    if failure is None and failed:
        # a Complete Job (restartPolicy OnFailure: rank 0 exits 0 so that its work is not run
        # again) whose work failed
        said = exitcodes.work_message("?" if work_exit_code is None else work_exit_code)
        reason = (
            f"WorkFailed: {said} (the Job is Complete: with "
            "restartPolicy OnFailure rank 0 exits 0 when its work failed, so that it is not run "
            f"again){f'; {reason}' if reason else ''}"
        )
    return MiniClusterStatus(
        name=name,
        namespace=namespace,
        phase=phase,
        created=True,
        size=size,
        joined=joined,
        running=running,
        succeeded=succeeded,
        failed=failed,
        reason=reason,
        exit_code=exit_code,
        admission=admission,
        work_exit_code=work_exit_code,
        work_failed=work_failed,
    )


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`flux job stats` gave no count of {what}")
    return value


def read_instance(text: str) -> tuple[FluxJobs, Archive | None]:
    """What ``rankzero.INSTANCE_SCRIPT`` printed: the JSON of ``flux job stats`` (job-list's
    ``job-stats``: ``job_states`` by state, then ``successful``, ``failed``, ``canceled`` and
    ``timeout`` among the inactive), then, when there is an archive,
    ``archive <mtime> <bytes> <path>`` (``- -``: no such file). A ValueError for anything
    else."""
    lines = text.strip().splitlines()
    if not lines:
        raise ValueError("`flux job stats` printed nothing")
    try:
        stats = json.loads(lines[0])
    except json.JSONDecodeError:
        raise ValueError(f"`flux job stats` printed no JSON: {lines[0][:200]!r}") from None
    states = stats.get("job_states") if isinstance(stats, dict) else None
    if not isinstance(states, dict):
        raise ValueError(f"`flux job stats` printed no job_states: {lines[0][:200]!r}")
    jobs = FluxJobs(
        pending=sum(_count(states.get(s), s) for s in ("depend", "priority", "sched")),
        running=sum(_count(states.get(s), s) for s in ("run", "cleanup")),
        completed=_count(stats.get("successful"), "successful"),
        failed=_count(stats.get("failed"), "failed"),
        cancelled=_count(stats.get("canceled"), "canceled"),
        timeout=_count(stats.get("timeout"), "timeout"),
    )
    archive = None
    for line in lines[1:]:
        word, _, rest = line.partition(" ")
        if word != rankzero.ARCHIVE_LINE:
            continue
        mtime, size, path = [*rest.split(" ", 2), "", ""][:3]
        if not path:
            raise ValueError(f"an archive line without a path: {line!r}")
        if mtime == "-":
            archive = Archive(path, None, None)
        elif mtime.isdigit() and size.isdigit():
            when = datetime.fromtimestamp(int(mtime), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            archive = Archive(path, when, int(size))
        else:
            raise ValueError(f"an archive line without a time and a size: {line!r}")
    return jobs, archive
