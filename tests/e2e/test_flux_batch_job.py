"""A MiniCluster's Job as a batch workload, with real brokers under the real Job controller
(issue 21): rank 0 decides completion, and Ready means the broker is in the instance.

- **rank 0 decides.** A batch MiniCluster of 3 brokers with ``minSize: 2``: index 2 is a
  straggler (its ``workerPre`` sleeps for an hour), so the instance runs on ranks 0 and 1 and
  rank 0's work ends while index 2 has not even started its broker. Rendered for the default
  release, the Job carries ``successPolicy`` on index 0: it completes when rank 0 does, the Job
  controller ends the workers, and by then none is left running, well within the pods' grace
  period (30 s: the entrypoint passes SIGTERM on). Rendered for 1.29 (no success policy there)
  the same Job stays active on the straggler. The worker that had joined (rank 1) exits 0 by
  itself when its lead's instance ends, with and without ``flux.completeWorkers``.
- **one pod per rank, disruptions not counted.** A worker evicted while its broker ignores
  SIGTERM: its rank's new pod comes only once the old one has failed (``podReplacementPolicy``),
  beside it when rendered for 1.29; with ``restartPolicy: Never`` two evictions count nothing
  against a budget of one failure per rank (the pod failure policy ignores DisruptionTarget).
- **The server agrees.** The Jobs rendered for the plane's release (1.36), with either
  restartPolicy, pass a server-side dry run; with OnFailure in place of Never the server refuses
  the podFailurePolicy, as the policy ``failure-policy-needs-never`` says.
- **Ready means joined.** An interactive MiniCluster of 3 with ``minSize: 2`` whose index 2
  holds a certificate of its own (its ``workerPre`` runs ``flux keygen`` over its copy): that
  broker starts and never joins. The Job's ``status.ready`` becomes 2 (rank 0, whose instance
  is up with its quorum, and rank 1) and stays there; index 2 is never Ready. And with every
  broker joining, ``wait: ready`` returns only once rank 0 counts all of them up.

Timings are reported (``e2e_report``), taken on a loaded 2-core machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fluxnodes import UP_BROKERS, FluxPlane, deploy
from kube import condition, job, wait_until
from stackrun import Engine

from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.kube.queueing import KUEUE_MANAGED_BY
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import render
from flux_minicluster.policy.rules import FAILURE_POLICY_NEEDS_NEVER

pytestmark = pytest.mark.flux

GRACE_S = 30  # the pods' terminationGracePeriodSeconds (the Kubernetes default; we set none)
LEAD_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def minicluster(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": name},
        "spec": spec,
    }


def straggler_batch(name: str, complete_workers: bool) -> dict[str, Any]:
    """3 brokers, quorum 2, index 2 asleep in workerPre: rank 0's work ends without it."""
    return minicluster(
        name,
        {
            "size": 3,
            "minSize": 2,
            "flux": {"completeWorkers": complete_workers},
            "containers": [
                {
                    "image": "ubuntu:24.04",
                    "batch": True,
                    "command": "hostname",
                    "commands": {
                        "workerPre": f'if [ "$(hostname)" = {name}-2 ]; then sleep 3600; fi'
                    },
                }
            ],
        },
    )


def by_index(plane: FluxPlane, namespace: str, name: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for pod in plane.pods(namespace, name):
        out.setdefault(pod["metadata"]["labels"].get(LEAD_INDEX_LABEL, "?"), []).append(pod)
    return out


def exit_code(pod: Any, container: str) -> int | None:
    for status in pod["status"].get("containerStatuses", []):
        if status["name"] == container:
            terminated = (status.get("state") or {}).get("terminated") or (
                status.get("lastState") or {}
            ).get("terminated")
            return None if terminated is None else int(terminated["exitCode"])
    return None


@pytest.mark.parametrize(
    ("kube_version", "complete_workers"),
    [(None, False), (None, True), ("1.29", False)],
    ids=["default-release", "default-release-completeWorkers", "1.29-no-success-policy"],
)
def test_the_job_completes_when_rank_0_does_and_no_worker_is_left(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    kube_version: str | None,
    complete_workers: bool,
    e2e_report: Callable[[str], None],
) -> None:
    name = "lead-" + ("cw" if complete_workers else "w") + ("-old" if kube_version else "")
    namespace = name
    stack = deploy(
        module_engine,
        flux_project,
        flux_plane,
        name,
        namespace,
        straggler_batch(name, complete_workers),
        "none",
        kube_version=kube_version,
    )
    stack.up()
    cp = flux_plane.cp
    rendered = job(cp, namespace, name)
    assert ("successPolicy" in rendered["spec"]) == (kube_version is None), rendered["spec"]

    def lead_succeeded() -> Any:
        live = job(cp, namespace, name)
        if live and condition(live, "Failed") == "True":
            raise AssertionError(f"{live['status']}\n{flux_plane.diagnostics(namespace, name)}")
        return flux_plane.rank_pod(namespace, name, 0, "Succeeded")

    try:
        wait_until("rank 0's pod Succeeded", lead_succeeded, timeout=180)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{flux_plane.diagnostics(namespace, name)}") from None
    t_lead = time.monotonic()

    if kube_version is not None:
        # No success policy: the Job waits for every index, and index 2 sleeps for an hour.
        time.sleep(GRACE_S)
        live = job(cp, namespace, name)
        assert condition(live, "Complete") != "True", live["status"]
        straggler = by_index(flux_plane, namespace, name).get("2", [])
        assert any(p["status"].get("phase") == "Running" for p in straggler), straggler
        e2e_report(
            f"{kube_version}: rank 0 Succeeded, Job still active {GRACE_S}s later "
            f"(active={live['status'].get('active')}, straggler index 2 Running)"
        )
        return

    def complete() -> Any:
        live = job(cp, namespace, name)
        if live and condition(live, "Failed") == "True":
            raise AssertionError(f"{live['status']}\n{flux_plane.diagnostics(namespace, name)}")
        return live if live and condition(live, "Complete") == "True" else None

    try:
        live = wait_until("the Job Complete", complete, timeout=GRACE_S)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{flux_plane.diagnostics(namespace, name)}") from None
    took = time.monotonic() - t_lead
    assert condition(live, "SuccessCriteriaMet") == "True", live["status"]
    # Complete comes once every pod has terminated: no worker is left running.
    pods = by_index(flux_plane, namespace, name)
    running = [
        p["metadata"]["name"]
        for group in pods.values()
        for p in group
        if p["status"].get("phase") in ("Pending", "Running")
        and not p["metadata"].get("deletionTimestamp")
    ]
    assert not running, running
    worker = flux_plane.rank_pod(namespace, name, 1)
    worker_log = (
        flux_plane.container_log(namespace, worker["metadata"]["name"], name)
        if worker is not None
        else ""
    )
    clean = "The worker broker exited cleanly" in worker_log
    restarted = "starting it again" in worker_log  # the retry of a failed start
    # The worker that had joined: its broker ends with its lead's instance (once, with
    # completeWorkers; without, it starts again to rejoin a new rank 0, and the Job controller
    # stops it while it waits: its part done, exit 0 either way).
    assert worker is not None, "rank 1's pod is gone"
    assert worker["status"].get("phase") == "Succeeded", worker["status"]
    assert exit_code(worker, name) == 0, worker["status"]
    assert clean != complete_workers, worker_log[-2000:]
    assert not restarted, worker_log[-2000:]
    e2e_report(
        f"completeWorkers={complete_workers}: Job Complete {took:.1f}s after rank 0 Succeeded "
        f"(grace {GRACE_S}s); rank 1 when its lead was gone: "
        f"{'pod gone' if worker is None else worker['status'].get('phase')}, exit "
        f"{None if worker is None else exit_code(worker, name)}, "
        f"{'broker exited 0 by itself' if clean else 'no clean exit logged'}"
        f"{', restarted its broker' if restarted else ''}; "
        f"succeeded={live['status'].get('succeeded')} failed={live['status'].get('failed', 0)}"
    )
    # The straggler was stopped by the Job controller: SIGTERM reaches its entrypoint, which
    # ends it at once (not at the grace period's SIGKILL).
    assert took < GRACE_S


def ready_count(plane: FluxPlane, namespace: str, name: str) -> int:
    live = job(plane.cp, namespace, name)
    return int((live or {}).get("status", {}).get("ready") or 0)


def pod_ready(pod: Any) -> bool:
    return condition(pod, "Ready") == "True"


def test_ready_counts_joined_brokers_and_a_broker_that_never_joins_is_never_ready(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    name = "ready-odd"
    namespace = name
    spec = minicluster(
        name,
        {
            "size": 3,
            "minSize": 2,
            "interactive": True,
            "containers": [
                {
                    "image": "ubuntu:24.04",
                    "commands": {
                        # index 2 presents a certificate of its own: its broker never joins
                        "workerPre": (
                            f'if [ "$(hostname)" = {name}-2 ]; then\n'
                            '  flux keygen "${curvepath}"\n'
                            "fi"
                        )
                    },
                }
            ],
        },
    )
    deploy(module_engine, flux_project, flux_plane, name, namespace, spec, "none").up()
    t0 = time.monotonic()
    try:
        wait_until("status.ready == 2", lambda: ready_count(flux_plane, namespace, name) == 2, 120)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{flux_plane.diagnostics(namespace, name)}") from None
    took = time.monotonic() - t0
    rank0 = flux_plane.rank_pod(namespace, name, 0)["metadata"]["name"]
    up = flux_plane.exec(namespace, rank0, name, UP_BROKERS).strip()
    assert up == "2", up
    # it stays so: index 2 runs its broker, in its join state, and is never Ready
    for _ in range(15):
        assert ready_count(flux_plane, namespace, name) == 2
        odd = flux_plane.rank_pod(namespace, name, 2)
        assert odd["status"].get("phase") == "Running", odd["status"]
        assert not pod_ready(odd), odd["status"]
        time.sleep(1)
    e2e_report(
        f"never-joining broker: status.ready reached 2 of 3 {took:.1f}s after up and stayed 2 "
        f"for 15s; rank 0 counts {up} brokers up; index 2 Running, never Ready"
    )


def test_wait_ready_returns_once_every_broker_has_joined(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    name = "ready-all"
    namespace = name
    # an ephemeral cluster (a persistent one is never waited for): its work outlasts the check
    spec = minicluster(
        name, {"size": 3, "containers": [{"image": "ubuntu:24.04", "command": "sleep 90"}]}
    )
    stack = deploy(module_engine, flux_project, flux_plane, name, namespace, spec, "ready")
    stack.up()
    rank0 = flux_plane.rank_pod(namespace, name, 0)["metadata"]["name"]
    # asked once, right after `up` returned: no waiting here
    up = flux_plane.exec(namespace, rank0, name, UP_BROKERS).strip()
    assert up == "3", up
    assert ready_count(flux_plane, namespace, name) == 3
    e2e_report(
        f"wait: ready: `up` returned after {stack.last().seconds:.1f}s with rank 0 counting "
        f"{up} of 3 brokers up"
    )


@pytest.mark.parametrize("restart", ["OnFailure", "Never"])
@pytest.mark.parametrize("source", ["batch.yaml", "interactive.yaml", "bursting-child.yaml"])
def test_the_api_server_takes_the_new_fields_and_refuses_a_failure_policy_with_on_failure(
    flux_plane: FluxPlane, source: str, restart: str
) -> None:
    """What the renderer writes for the plane's release (1.36) is what its API server accepts,
    and the rule ``failure-policy-needs-never`` imitates is the server's own."""
    document = yaml.safe_load((EXAMPLES / source).read_text())
    document["spec"].setdefault("pod", {})["restartPolicy"] = restart
    plan = plans.build(parse(document), kubeversion.parse("1.36"))
    job = render(plan, None).job
    cp = flux_plane.cp
    cp.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    accepted, message = cp.dry_run(job)
    assert accepted, message
    if "podFailurePolicy" in job["spec"]:
        job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
        assert FAILURE_POLICY_NEEDS_NEVER.resource_check is not None
        assert FAILURE_POLICY_NEEDS_NEVER.resource_check(job, {})
        accepted, message = cp.dry_run(job)
        assert not accepted
        assert "restartPolicy" in message, message


# The evictions' grace period: how long an old pod that is slow to stop runs on. Longer where
# the overlap is to be seen: the Job controller delays a counted failure's new pod by its
# back-off (10 s first).
EVICTION_GRACE_S = 8
OVERLAP_GRACE_S = 25
# A worker's commands.workerPre that makes its pod slow to stop: a process of the entrypoint's
# group that ignores SIGTERM, which the entrypoint waits for once stopped, until SIGKILL.
SLOW_TO_STOP = "bash -c \"trap '' TERM; sleep 3600\" > /dev/null 2>&1 &"


def evict(plane: FluxPlane, namespace: str, pod: Any, grace: int) -> None:
    """The Eviction API, as a drain or the scheduler's preemption uses it: the API server gives
    the pod the DisruptionTarget condition and deletes it with the grace period asked for."""
    name = pod["metadata"]["name"]
    status, body = plane.cp.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"gracePeriodSeconds": grace},
        },
    )
    assert status < 300, body


@pytest.mark.parametrize(
    ("kube_version", "restart"),
    [(None, "OnFailure"), ("1.29", "OnFailure"), (None, "Never")],
    ids=["default-release", "1.29", "default-release-Never"],
)
def test_an_evicted_worker_is_replaced_only_once_gone_and_its_eviction_is_not_counted(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    kube_version: str | None,
    restart: str,
    e2e_report: Callable[[str], None],
) -> None:
    """One pod per rank. A worker whose pod is slow to stop (its ``workerPre`` leaves a process
    that ignores SIGTERM, so the pod runs until the eviction's grace period ends in SIGKILL) is
    evicted. Rendered
    for the default release (``podReplacementPolicy: Failed``) the Job controller creates the
    rank's new pod only once the old one has failed: never two brokers of one rank. Rendered for
    1.29 (no such field; with OnFailure no pod failure policy either, which would imply it) the
    new pod comes while the old broker still runs. With ``restartPolicy: Never`` the eviction is
    a disruption the pod failure policy ignores: with a budget of one failure per rank, two
    evictions of the rank count nothing. The replacement rejoins rank 0 every time."""
    never = restart == "Never"
    grace = EVICTION_GRACE_S if kube_version is None else OVERLAP_GRACE_S
    name = "evict" + ("-old" if kube_version else "") + ("-never" if never else "")
    namespace = name
    spec = minicluster(
        name,
        {
            "size": 2,
            "interactive": True,
            "backoffLimit": 1,
            "pod": {"restartPolicy": restart},
            "containers": [{"image": "ubuntu:24.04", "commands": {"workerPre": SLOW_TO_STOP}}],
        },
    )
    stack = deploy(
        module_engine, flux_project, flux_plane, name, namespace, spec, "ready",
        kube_version=kube_version,
    )  # fmt: skip
    stack.up()
    cp = flux_plane.cp
    rendered = job(cp, namespace, name)["spec"]
    # (the API server defaults the field to TerminatingOrFailed where the Job does not set it)
    replacement = "Failed" if kube_version is None else "TerminatingOrFailed"
    assert rendered.get("podReplacementPolicy") == replacement, rendered
    assert ("podFailurePolicy" in rendered) == never, rendered
    rank0 = flux_plane.rank_pod(namespace, name, 0)["metadata"]["name"]

    def up() -> int:
        try:
            out = flux_plane.exec(namespace, rank0, name, UP_BROKERS).strip()
        except (AssertionError, OSError):
            return -1
        return int(out) if out.isdigit() else -1

    overlap: float | None = None
    rounds = 2 if never else 1
    for round_ in range(1, rounds + 1):
        wait_until("both brokers up at rank 0", lambda: up() == 2, timeout=90)
        old = flux_plane.rank_pod(namespace, name, 1)
        old_uid = old["metadata"]["uid"]
        evict(flux_plane, namespace, old, grace)
        began = time.monotonic()
        gone_at: float | None = None
        disrupted = False
        while True:  # watch index 1 until its new pod runs
            pods = [p for p in flux_plane.pods(namespace, name)
                    if p["metadata"]["labels"].get(LEAD_INDEX_LABEL) == "1"]  # fmt: skip
            old_now = next((p for p in pods if p["metadata"]["uid"] == old_uid), None)
            old_running = old_now is not None and old_now["status"].get("phase") in (
                "Pending",
                "Running",
            )
            if old_now is not None:
                disrupted = disrupted or any(
                    c["type"] == "DisruptionTarget" for c in old_now["status"].get("conditions", [])
                )
            if not old_running and gone_at is None:
                gone_at = time.monotonic() - began
            new = [p for p in pods if p["metadata"]["uid"] != old_uid]
            if new and old_running and overlap is None:
                overlap = time.monotonic() - began
            if new and new[0]["status"].get("phase") == "Running" and gone_at is not None:
                break
            assert time.monotonic() - began < grace + 60, (
                f"{pods}\n{job(cp, namespace, name)['status']}\n"
                f"{flux_plane.diagnostics(namespace, name)[-3000:]}"
            )
            time.sleep(0.2)
        assert disrupted, "the evicted pod never showed the DisruptionTarget condition"
        assert gone_at is not None
        assert gone_at >= grace - 1, f"the old pod stopped early ({gone_at:.1f}s)"
        if kube_version is None:
            assert overlap is None, f"a second pod of rank 1 {overlap:.1f}s after the eviction"
        else:
            assert overlap is not None, "no overlap: the old pod stopped before a new one came"
        live = job(cp, namespace, name)
        assert condition(live, "Failed") != "True", live["status"]
        if never:
            assert not live["status"].get("failed"), live["status"]
        wait_until(f"the new rank 1 rejoins rank 0 (round {round_})", lambda: up() == 2, 90)
    counted = job(cp, namespace, name)["status"].get("failed", 0)
    e2e_report(
        f"{kube_version or 'default release'}, {restart}: rank 1 evicted {rounds}x, its pod "
        f"slow to stop for the {grace}s grace: "
        + (
            f"its new pod ran beside the old one for {gone_at - overlap:.1f}s"
            if overlap is not None and gone_at is not None
            else "its new pod came only once the old one had failed"
        )
        + f"; failures counted: {counted}; rank 1 rejoined rank 0 each time"
    )
    stack.destroy()


def test_a_multikueue_job_passes_through_to_the_api_server(flux_plane: FluxPlane) -> None:
    """A queued MiniCluster for MultiKueue: the Job carries ``spec.managedBy`` (the built-in Job
    controller leaves it to Kueue's MultiKueue), its queue and priority class labels, suspended;
    the plane's API server (1.36, where managedBy is GA) takes it as it is."""
    document = yaml.safe_load((EXAMPLES / "batch.yaml").read_text())
    document["spec"]["jobLabels"] = {"kueue.x-k8s.io/priority-class": "hpc-high"}
    plan = plans.build(parse(document), kubeversion.parse("1.36"))
    job = render(plan, None, queue="team-a", managed_by=KUEUE_MANAGED_BY).job
    assert job["spec"]["managedBy"] == KUEUE_MANAGED_BY
    assert job["spec"]["suspend"] is True
    labels = job["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "team-a"
    assert labels["kueue.x-k8s.io/priority-class"] == "hpc-high"
    cp = flux_plane.cp
    cp.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    accepted, message = cp.dry_run(job)
    assert accepted, message
