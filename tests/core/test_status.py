"""`minicluster status`: how the Job, its pods and Kueue's Workload are read.

The objects here are shaped as the API server returns them (the e2e suite reads live ones:
tests/e2e/test_kueue.py runs the command against the real Job controller and Kueue). This pins
the interpretation: each phase, brokers joined n of N, rank 0's exit code, admitted or queued.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.deployed import status
from flux_minicluster.core.kube.queueing import QUEUE_NAME_LABEL

NAME = "flux-hello"
UID = "6f1c1e0a-0000-4000-8000-000000000001"


def cond(kind: str, state: str = "True", reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": state, "reason": reason, "message": message,
            "lastTransitionTime": "2026-11-24T23:00:00Z"}  # fmt: skip


def job(
    size: int = 4,
    *,
    ready: int = 0,
    active: int = 0,
    suspend: bool | None = None,
    queue: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": NAME}
    if queue is not None:
        labels[QUEUE_NAME_LABEL] = queue
    spec: dict[str, Any] = {"parallelism": size, "completions": size, "completionMode": "Indexed"}
    if suspend is not None:
        spec["suspend"] = suspend
    job_status: dict[str, Any] = {"ready": ready, "active": active, "terminating": 0}
    if conditions:
        job_status["conditions"] = conditions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": NAME, "namespace": "ns", "uid": UID, "labels": labels},
            "spec": spec, "status": job_status}  # fmt: skip


def pod(index: int, exit_code: int | None, *, created: str = "2026-11-24T23:00:00Z",
        restarted: bool = False, owner: str = UID,
        message: str | None = None) -> dict[str, Any]:  # fmt: skip
    terminated = (
        None
        if exit_code is None
        else {"terminated": {"exitCode": exit_code, "reason": "Completed",
                             **({"message": message} if message else {})}}
    )  # fmt: skip
    container: dict[str, Any] = {"name": NAME, "ready": False, "restartCount": int(restarted)}
    if restarted:
        container["state"] = {"running": {"startedAt": created}}
        container["lastState"] = terminated or {}
    else:
        container["state"] = terminated or {"running": {"startedAt": created}}
    sidecar = {"name": "sidecar", "state": {"terminated": {"exitCode": 9}}}
    return {
        "metadata": {
            "name": f"{NAME}-{index}-x",
            "creationTimestamp": created,
            "labels": {"batch.kubernetes.io/job-completion-index": str(index), "job-name": NAME},
            "ownerReferences": [{"kind": "Job", "name": NAME, "uid": owner, "controller": True}],
        },
        "status": {"containerStatuses": [sidecar, container]},
    }


def workload(*conditions: dict[str, Any], cluster_queue: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"job-{NAME}-1a2b3", "namespace": "ns",
                     "ownerReferences": [{"kind": "Job", "name": NAME, "uid": UID}]},
        "spec": {"queueName": "team-a"},
        "status": {"conditions": list(conditions)},
    }  # fmt: skip
    if cluster_queue:
        out["status"]["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": []}
    return out


PENDING = "couldn't assign flavors to pod set main: insufficient unused quota for pods in flavor f"


@pytest.mark.parametrize(
    ("objects", "phase", "summary"),
    [
        ((None, [], []), "absent", {"created": False, "size": 0}),
        ((job(ready=2, active=4), [], []), "starting", {"joined": 2, "running": True}),
        ((job(ready=4, active=4), [], []), "ready", {"joined": 4, "running": True}),
        ((job(conditions=[cond("Complete")]), [pod(0, 0), pod(1, 0)], []), "succeeded",
         {"succeeded": True, "exit_code": 0, "running": False}),
        ((job(active=3, conditions=[cond("Failed", reason="BackoffLimitExceeded",
                                           message="Job has reached the specified backoff limit")]),
          [pod(0, 3)], []), "failed",
         {"failed": True, "exit_code": 3, "running": False,
          "reason": "BackoffLimitExceeded: Job has reached the specified backoff limit"}),
        ((job(suspend=True), [], []), "suspended", {"admission": None, "running": False}),
        ((job(suspend=True, queue="team-a"), [],
          [workload(cond("QuotaReserved", "False", "Pending", PENDING))]),
         "queued", {"running": False}),
        ((job(ready=4, active=4, suspend=False, queue="team-a"), [],
          [workload(cond("QuotaReserved"), cond("Admitted", reason="Admitted",
                                                message="The workload is admitted"),
                    cluster_queue="brokers")]),
         "ready", {"joined": 4}),
        ((job(suspend=True, queue="team-a"), [],
          [workload(cond("QuotaReserved"), cond("Admitted"), cluster_queue="brokers")]),
         "starting", {"running": False}),
    ],
    ids=["absent", "starting", "ready", "succeeded", "failed", "suspended", "queued", "admitted",
         "admitted-not-resumed"],
)  # fmt: skip
def test_phases(objects: Any, phase: str, summary: dict[str, Any]) -> None:
    found = status.interpret(NAME, "ns", *objects)
    assert found.phase == phase
    assert phase in get_args(status.Phase)
    as_json = found.to_json()
    for key, value in summary.items():
        assert as_json[key] == value, key


def test_admission_tells_the_queue_and_kueues_reason() -> None:
    queued = status.interpret(
        NAME, "ns", job(suspend=True, queue="team-a"), [],
        [workload(cond("QuotaReserved", "False", "Pending", PENDING))],
    )  # fmt: skip
    assert queued.admission == status.Admission(
        "team-a", False, f"job-{NAME}-1a2b3", None, f"Pending: {PENDING}"
    )
    assert f"  queue     queued by LocalQueue team-a: Pending: {PENDING}" in queued.lines()
    admitted = status.interpret(
        NAME, "ns", job(ready=1, active=4, suspend=False, queue="team-a"), [],
        [workload(cond("QuotaReserved"), cond("Admitted", reason="Admitted",
                                               message="The workload is admitted"),
                  cluster_queue="brokers")],
    )  # fmt: skip
    assert admitted.admission is not None
    assert admitted.admission.admitted
    assert admitted.admission.cluster_queue == "brokers"
    assert "  joined    1 of 4 brokers" in admitted.lines()


def test_a_workload_of_another_job_is_not_this_ones() -> None:
    other = workload(cond("Admitted"))
    other["metadata"]["ownerReferences"][0]["uid"] = "another"
    found = status.interpret(NAME, "ns", job(suspend=True, queue="team-a"), [], [other])
    assert found.admission is not None
    assert found.admission.workload is None
    assert not found.admission.admitted
    assert "no Workload yet" in found.admission.message


def test_rank0_exit_code_is_the_flux_containers_of_the_newest_rank0_pod() -> None:
    pods = [
        pod(0, 1, created="2026-11-24T23:00:00Z"),  # the first rank 0 pod failed
        pod(0, 0, created="2026-11-24T23:05:00Z"),  # its replacement succeeded
        pod(1, 7),  # a worker's code is not rank 0's
    ]
    assert status.rank0_exit_code(NAME, pods) == 0
    # a restarted container (restartPolicy OnFailure) keeps its last exit in lastState
    assert status.rank0_exit_code(NAME, [pod(0, 2, restarted=True)]) == 2
    assert status.rank0_exit_code(NAME, [pod(0, None), pod(1, 0)]) is None


FAILED_ON_78 = (
    f"Container {NAME} for pod ns/{NAME}-0-7xk2p failed with exit code 78 matching FailJob rule "
    "at index 0"
)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (FAILED_ON_78, 78),
        (FAILED_ON_78.replace(f"{NAME}-0-", f"{NAME}-3-"), None),  # a worker's, not rank 0's
        (FAILED_ON_78.replace(f"Container {NAME}", "Container sidecar"), None),
        ("Job has reached the specified backoff limit", None),
    ],
)
def test_the_job_alone_tells_rank_0s_exit_code_when_its_failure_policy_failed_it(
    message: str, code: int | None
) -> None:
    """The component's output reads the Job only (pods=None): the Job controller's Failed
    message of a FailJob rule names the pod and the exit code."""
    failed = job(conditions=[cond("Failed", reason="PodFailurePolicy", message=message)])
    found = status.interpret(NAME, "ns", failed)
    assert (found.phase, found.exit_code) == ("failed", code)
    # with the pods read, they decide (rank 0's container state)
    assert status.interpret(NAME, "ns", failed, [pod(0, 1)], []).exit_code == 1


@pytest.mark.parametrize(
    ("suspend", "phase", "admitted", "message"),
    [
        (True, "queued", False, "waiting for admission by LocalQueue team-a"),
        (False, "starting", True, "admitted: Kueue resumed the Job"),
    ],
)
def test_the_job_alone_tells_queued_or_admitted(
    suspend: bool, phase: str, admitted: bool, message: str
) -> None:
    found = status.interpret(NAME, "ns", job(suspend=suspend, queue="team-a", active=0))
    assert found.phase == phase
    assert found.admission is not None
    assert found.admission.admitted is admitted
    assert found.admission.message.startswith(message)


@pytest.mark.parametrize(
    ("condition", "phase"),
    [
        (cond("SuccessCriteriaMet", reason="SuccessPolicy", message="Matched rules at index 0"),
         "succeeded"),
        (cond("FailureTarget", reason="PodFailurePolicy", message=FAILED_ON_78), "failed"),
    ],
    ids=["success-criteria-met", "failure-target"],
)  # fmt: skip
def test_the_outcome_is_known_before_every_pod_has_terminated(
    condition: dict[str, Any], phase: str
) -> None:
    """From 1.31 the Job controller sets SuccessCriteriaMet or FailureTarget first, and Complete
    or Failed only once every pod is gone (a pod on a lost node can hold that up for long)."""
    deciding = job(active=3, conditions=[condition])
    found = status.interpret(NAME, "ns", deciding)
    assert (found.phase, found.running) == (phase, False)
    assert found.reason == f"{condition['reason']}: {condition['message']}"
    if phase == "failed":
        assert found.exit_code == 78, "the Job alone tells rank 0's code from FailureTarget"


def test_rank_0_of_a_long_name_is_found_in_its_cut_pod_name() -> None:
    """The Job controller cuts <job>-<index>- to 58 characters; a 57-character name is valid."""
    name = "a" * 57
    assert status.indexed_pod_prefix(name, 0) == "a" * 55 + "-0-"
    assert status.indexed_pod_prefix(NAME, 12) == f"{NAME}-12-"
    message = f"Container {name} for pod ns/{'a' * 55}-0-x7k2p failed with exit code 78 matching"
    assert status.failure_policy_exit_code(name, {"message": message}) == 78
    worker = message.replace("-0-x7k2p", "-1-x7k2p")
    assert status.failure_policy_exit_code(name, {"message": worker}) is None


def test_pods_an_earlier_job_of_the_same_name_left_are_not_read() -> None:
    """They carry the same job-name label until they are gone; the Job's uid tells them apart."""
    done = job(conditions=[cond("Complete")])
    old = pod(0, 1, created="2026-11-24T23:09:00Z", owner="an-earlier-job")
    assert status.interpret(NAME, "ns", done, [pod(0, 0), old], []).exit_code == 0


WORK_3 = exitcodes.work_message(3) + "\n"
FAILED_ON_WORK = FAILED_ON_78.replace("exit code 78", f"exit code {exitcodes.WORK_FAILED}")


@pytest.mark.parametrize(
    ("conditions", "rank0", "want"),
    [
        # restartPolicy Never: the failure policy failed the Job on WORK_FAILED
        ([cond("Failed", reason="PodFailurePolicy", message=FAILED_ON_WORK)],
         pod(0, exitcodes.WORK_FAILED, message=WORK_3),
         ("failed", exitcodes.WORK_FAILED, 3, "PodFailurePolicy: ")),
        # restartPolicy OnFailure: rank 0 exited 0, the Job is Complete, the work failed anyway
        ([cond("Complete", reason="CompletionsReached")], pod(0, 0, message=WORK_3),
         ("failed", 0, 3, "WorkFailed: the work exited with 3 (the Job is Complete")),
        ([cond("SuccessCriteriaMet", reason="SuccessPolicy")], pod(0, 0, message=WORK_3),
         ("failed", 0, 3, "WorkFailed: ")),
        # work that succeeded says so
        ([cond("Complete")], pod(0, 0, message=exitcodes.work_message(0)),
         ("succeeded", 0, 0, None)),
        # a stopped rank 0 says no work code
        ([cond("Failed", reason="DeadlineExceeded")], pod(0, 143, message="stopped by signal 15"),
         ("failed", 143, None, "DeadlineExceeded")),
    ],
    ids=["never", "on-failure-complete", "on-failure-success-criteria", "succeeded", "stopped"],
)  # fmt: skip
def test_failed_work_is_a_failed_minicluster_whatever_the_job_says(
    conditions: list[dict[str, Any]], rank0: dict[str, Any], want: tuple[Any, ...]
) -> None:
    """Rank 0's termination message tells the work's own code; failed work is a failed
    MiniCluster even where its Job completed (restartPolicy OnFailure)."""
    phase, exit_code, work_code, reason = want
    found = status.interpret(NAME, "ns", job(conditions=conditions), [rank0, pod(1, 0)], [])
    assert (found.phase, found.exit_code, found.work_exit_code) == (phase, exit_code, work_code)
    assert found.work_failed is bool(work_code)
    assert found.failed is (phase == "failed")
    assert found.succeeded is (phase == "succeeded")
    assert (found.reason or "").startswith(reason or ""), found.reason
    if work_code is not None:
        assert f"the work exited {work_code}" in "\n".join(found.lines())


def test_the_job_alone_knows_failed_work_but_not_its_code() -> None:
    """The component's output (no pods): the failure policy's message names WORK_FAILED."""
    failed = job(conditions=[cond("Failed", reason="PodFailurePolicy", message=FAILED_ON_WORK)])
    found = status.interpret(NAME, "ns", failed)
    assert (found.phase, found.exit_code, found.work_exit_code) == (
        "failed",
        exitcodes.WORK_FAILED,
        None,
    )
    assert found.work_failed


@pytest.mark.parametrize(
    ("message", "code"),
    [(exitcodes.work_message(0), 0), (WORK_3, 3), ("stopped by signal 15\n", None), (None, None)],
)
def test_the_termination_message_is_read_as_the_entrypoint_writes_it(
    message: str | None, code: int | None
) -> None:
    assert exitcodes.work_code(message) == code
