"""Kueue: what a queue does to the component's registrations (what it does to the rendered Job is
tests/core/test_queueing.py's, to policy tests/policy/test_queueing_policy.py's).

The real controller's side (admission, the quota, what it injects, no diff on a second `up`)
is tests/e2e/test_kueue.py's; here, what we register for it.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.queuecases import CERT, spec

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.kube import queueing
from flux_minicluster.deploy.component import awaiting, queued
from flux_minicluster.deploy.component.minicluster import JOB_IGNORE_CHANGES, MiniCluster
from flux_minicluster.deploy.offline.recorder import (
    ProgramRun,
    RegistrationRecorder,
    plain,
    run_program,
)
from flux_minicluster.deploy.stack import project, stackconfig, stackrender

JOB = "kubernetes:batch/v1:Job"
JOBPATCH = "kubernetes:batch/v1:JobPatch"
Run = Callable[..., ProgramRun[Any]]


def deploy(run_pulumi: Run, **args: Any) -> ProgramRun[MiniCluster]:
    def program() -> MiniCluster:
        return MiniCluster("mc", {"spec": spec(), **args})

    return run_pulumi(program, mocks=RegistrationRecorder(command_stdout=CERT))


def awaits(resource: Any) -> dict[str, str]:
    notes = plain(resource.inputs)["metadata"]["annotations"]
    return {k: v for k, v in notes.items() if k.startswith("pulumi.com/") and "patchForce" not in k}


@pytest.mark.parametrize(
    ("wait", "queue_await"),
    [
        ("ready", {lbl.WAIT_FOR_ANNOTATION: "jsonpath={.status.ready}=4",
                   awaiting.TIMEOUT_ANNOTATION: "90"}),
        ("complete", {awaiting.TIMEOUT_ANNOTATION: "90"}),  # the Job await: done or failed
        ("none", None),
    ],
)  # fmt: skip
def test_a_queued_minicluster_waits_through_a_patch_named_for_its_queue(
    run_pulumi: Run, wait: str, queue_await: dict[str, str] | None
) -> None:
    run = deploy(run_pulumi, queue="team-a", wait=wait, wait_timeout=90)
    (job,) = [r for r in run.resources if r.typ == JOB]
    patches = {r.name: r for r in run.resources if r.typ == JOBPATCH}
    assert job.options is not None
    assert job.options.ignore_changes == (*JOB_IGNORE_CHANGES, *queued.QUEUED_IGNORE_CHANGES)
    assert awaits(job) == {
        lbl.SKIP_AWAIT_ANNOTATION: "true",
        awaiting.DELETION_PROPAGATION_ANNOTATION: "background",
    }
    assert plain(job.inputs)["spec"]["suspend"] is True
    assert awaits(patches["mc-size"]) == {lbl.SKIP_AWAIT_ANNOTATION: "true"}
    if queue_await is None:
        assert set(patches) == {"mc-size"}
        return
    waiting = patches["mc-localqueue-team-a"]
    assert awaits(waiting) == queue_await
    assert waiting.options is not None
    assert waiting.options.dependencies == (patches["mc-size"].urn,)
    assert waiting.options.deleted_with == job.urn
    assert "spec" not in plain(waiting.inputs)  # it sets nothing on the Job: it only waits


def test_an_unqueued_minicluster_registers_no_queue_patch(run_pulumi: Run) -> None:
    run = deploy(run_pulumi, wait="ready")
    (job,) = [r for r in run.resources if r.typ == JOB]
    assert [r.name for r in run.resources if r.typ == JOBPATCH] == ["mc-size"]
    assert job.options is not None
    assert job.options.ignore_changes == JOB_IGNORE_CHANGES


def test_wait_timeout_bounds_the_unqueued_wait_too(run_pulumi: Run) -> None:
    for wait in ("ready", "complete"):  # the size patch carries either wait
        run = deploy(run_pulumi, wait=wait, wait_timeout=60)
        (patch,) = [r for r in run.resources if r.typ == JOBPATCH]
        assert awaits(patch)[awaiting.TIMEOUT_ANNOTATION] == "60"
    with pytest.raises(SpecError, match="wait_timeout: must be a positive number of seconds"):
        deploy(run_pulumi, wait_timeout=0)


# --- the stack config ------------------------------------------------------------------------


def test_the_stack_config_keys_reach_the_component() -> None:
    """The stack's minicluster.queue, managedBy and waitTimeout, through the real program."""
    root = Path(__file__).resolve().parents[2]
    config, _ = stackrender.read_stack_config(project.find(root), "local")
    minicluster = config[f"{stackconfig.PROJECT}:minicluster"]
    minicluster.update(queue="team-a", managedBy=queueing.KUEUE_MANAGED_BY, waitTimeout=600)
    config[f"{stackconfig.PROJECT}:keygen"] = {"strategy": "builtin"}
    run = run_program(
        lambda: runpy.run_path(str(root / "__main__.py"), run_name="__main__"),
        mocks=RegistrationRecorder(command_stdout=CERT),
        project=stackconfig.PROJECT,
        stack="local",
        config=config,
    )
    (job,) = [plain(r.inputs) for r in run.resources if r.typ == JOB]
    assert job["metadata"]["labels"][queueing.QUEUE_NAME_LABEL] == "team-a"
    assert job["spec"]["managedBy"] == queueing.KUEUE_MANAGED_BY
    # wait: ready, so the patch that waits for the admitted pods carries the bound
    waits = [plain(r.inputs)["metadata"]["annotations"] for r in run.resources if r.typ == JOBPATCH]
    assert [w.get(awaiting.TIMEOUT_ANNOTATION) for w in waits if lbl.WAIT_FOR_ANNOTATION in w] == [
        "600"
    ]
    with pytest.raises(SpecError, match="waitTimeout"):
        stackconfig.parse_stack_config({"minicluster": {"file": "x.yaml", "waitTimeout": "soon"}})
