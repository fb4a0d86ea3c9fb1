"""Rank 0's pod and Flux run in it (`minicluster flux`, the jobs `minicluster status` shows).

Which pod is rank 0, where its `flux-view.sh` is (read back from the pod the renderer made, so it
follows the spec's mountPath), and what the exec'd scripts do, run here with bash against a fake
`flux`: the exit code passes through, the arguments arrive as given, the counts and the archive
come out as `status.read_instance` reads them. Against real brokers:
tests/e2e/test_flux_real_node.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fluxpod import COUNTS, STATS, flux_view, rank0_pod, stats_env

from flux_minicluster.core.deployed import rankzero, status
from flux_minicluster.core.planning.plan import MiniClusterPlan

NAME = "flux-sample"
UID = "6f1c1e0a-0000-4000-8000-000000000002"
JOB = {"metadata": {"name": NAME, "uid": UID}}


@pytest.mark.parametrize(
    "flux",
    [
        {},
        {"container": {"mountPath": "/opt/view"}},
        {"container": {"disable": True}},
        {"container": {"name": "my-view", "mountPath": "/srv/flux/"}},
    ],
    ids=["default-view", "mount-path", "disabled-view", "named-view"],
)
def test_the_pods_flux_view_helper_is_where_the_plan_writes_it(
    build: Callable[..., MiniClusterPlan],
    rendered: Callable[..., list[dict[str, Any]]],
    job_pod: Callable[[list[dict[str, Any]]], dict[str, Any]],
    flux: dict[str, Any],
) -> None:
    """Read back from the pod the renderer made: the view's directory of the plan, for the
    default view image, another mountPath and an image with its own Flux alike."""
    plan = build({"flux": flux, "containers": [{"image": "app:1", "command": "true"}]})
    pod = {"spec": job_pod(rendered(plan))}
    assert rankzero.view_helper(pod, plan.name) == f"{plan.paths.view_base}/flux-view.sh"
    assert rankzero.view_helper(pod, "another-container") is None


def _pod(pod: str, **kw: Any) -> dict[str, Any]:
    return rank0_pod(NAME, pod, kw.pop("owner", UID), **kw)


@pytest.mark.parametrize(
    ("pods", "found"),
    [
        ([], None),
        ([_pod(f"{NAME}-1-x", index=1)], None),
        ([_pod(f"{NAME}-0-a", owner="an-earlier-job")], None),
        (
            [_pod(f"{NAME}-0-a", phase="Pending", running=False, ready=False)],
            (f"{NAME}-0-a", False, False),
        ),
        ([_pod(f"{NAME}-0-a", ready=False)], (f"{NAME}-0-a", True, False)),
        ([_pod(f"{NAME}-1-b", index=1), _pod(f"{NAME}-0-a")], (f"{NAME}-0-a", True, True)),
        (
            [
                _pod(
                    f"{NAME}-0-new",
                    created="2026-11-28T12:00:00Z",
                    running=False,
                    ready=False,
                    phase="Pending",
                ),
                _pod(f"{NAME}-0-old", deleting=True),
            ],
            (f"{NAME}-0-new", False, False),
        ),
    ],
    ids=["no-pods", "no-index-0", "an-earlier-jobs", "pending", "not-ready", "ready", "replaced"],
)
def test_rank_0_is_the_jobs_newest_index_0_pod_not_being_deleted(
    pods: list[dict[str, Any]], found: tuple[str, bool, bool] | None
) -> None:
    rank0 = rankzero.find(NAME, JOB, pods)
    if found is None:
        assert rank0 is None
        return
    assert rank0 is not None
    assert (rank0.pod, rank0.running, rank0.ready) == found
    assert (rank0.container, rank0.view_helper) == (NAME, "/mnt/flux/flux-view.sh")
    assert rank0.pod in rank0.state()


@pytest.fixture
def pod_view(tmp_path: Path) -> Path:
    return flux_view(tmp_path)


def _in_pod(command: list[str], stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """What kubectl exec runs, run here."""
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=30,
        env={**os.environ, **stats_env(), **env},
    )  # fmt: skip


def _rank0(view: str) -> rankzero.Rank0:
    return rankzero.Rank0(f"{NAME}-0-a", NAME, "Running", True, True, view)


@pytest.mark.parametrize("code", [0, 3])
def test_flux_runs_at_the_brokers_socket_with_its_exit_code_and_arguments(
    pod_view: Path, code: int
) -> None:
    proc = _in_pod(
        rankzero.flux_command(_rank0(str(pod_view)), ["submit", "--wait", "sh", "-c", "exit 3"]),
        stdin="a line\n",
        FLUX_EXIT=str(code),
    )
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.splitlines() == [
        f"FLUX_URI=local://{pod_view.parent}/config/run/flux/local",
        "submit", "--wait", "sh", "-c", "exit 3",
        "stdin: a line",
    ]  # fmt: skip


def test_a_pod_without_flux_set_up_says_so(tmp_path: Path) -> None:
    proc = _in_pod(rankzero.flux_command(_rank0(str(tmp_path / "flux-view.sh")), ["jobs"]))
    assert proc.returncode == rankzero.NO_FLUX
    assert "flux-view.sh is not there" in proc.stderr


@pytest.mark.parametrize(
    ("given", "dumped", "file", "archive"),
    [
        (None, None, False, None),
        ("{dir}/archive.tar", None, False, ("{dir}/archive.tar", False)),
        ("{dir}/a dir/archive.tar", None, True, ("{dir}/a dir/archive.tar", True)),
        (None, "{dir}/dumped.tar", True, ("{dir}/dumped.tar", True)),
        (None, "auto", False, None),
        (None, "auto", True, ("{dir}/state/dump/RESTORE", True)),
    ],
    ids=[
        "no-archive",
        "never-written",
        "written",
        "the-brokers-own",
        "auto-without-statedir",
        "auto",
    ],
)
def test_the_instance_reports_its_jobs_and_archive(
    pod_view: Path,
    tmp_path: Path,
    given: str | None,
    dumped: str | None,
    file: bool,
    archive: tuple[str, bool] | None,
) -> None:
    """The spec's archive path when the caller knows the spec, else the broker's own."""
    path = (given or dumped or "").format(dir=tmp_path)
    env = {"DUMP": dumped.format(dir=tmp_path)} if dumped else {}
    if dumped == "auto" and file:  # Flux links the newest dump as RESTORE
        env["STATEDIR"] = str(tmp_path / "state")
        (tmp_path / "state" / "dump").mkdir(parents=True)
        (tmp_path / "state" / "dump" / "RESTORE").symlink_to(tmp_path / "dumped.tar")
        path = str(tmp_path / "dumped.tar")
    if file:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(b"x" * 1234)
        os.utime(path, (1_795_000_000, 1_795_000_000))
    given_path = given.format(dir=tmp_path) if given else None
    proc = _in_pod(rankzero.instance_command(_rank0(str(pod_view)), given_path), **env)
    assert proc.returncode == 0, proc.stderr
    jobs, found = status.read_instance(proc.stdout)
    assert jobs == COUNTS
    if archive is None:
        assert found is None
    elif archive[1]:
        written = "2026-11-18T11:06:40Z"
        assert found == status.Archive(archive[0].format(dir=tmp_path), written, 1234)
    else:
        assert found == status.Archive(archive[0].format(dir=tmp_path), None, None)
        assert found.line().endswith("never written")


@pytest.mark.parametrize(
    "text",
    ["", "flux-job: stats: Function not implemented", '{"queues": []}',
     json.dumps({**STATS, "failed": -1}), json.dumps(STATS) + "\narchive 12 x /a"],
)  # fmt: skip
def test_what_is_not_flux_job_stats_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"stats|archive"):
        status.read_instance(text)
