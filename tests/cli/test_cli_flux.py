"""`minicluster flux NAME -- ARGS`: flux in rank 0's pod through `kubectl exec`, as a user runs
it (a new process, its standard input a pipe). kubectl is a fake that runs the exec'd command
here against a fake flux (tests/support/fluxpod.py); against real brokers:
tests/e2e/test_flux_real_node.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.fluxpod import REFUSED, fake_kubectl, flux_view, rank0_pod

NAME = "flux-sample"
UID = "6f1c1e0a-0000-4000-8000-000000000003"
JOB = {"metadata": {"name": NAME, "namespace": "team-a", "uid": UID},
       "spec": {"parallelism": 2}, "status": {"active": 2}}  # fmt: skip
COMPONENTS = Path(__file__).resolve().parents[2] / "components"


def _minicluster(
    args: list[str], env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", *args],
        input=stdin, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(COMPONENTS), **env},
    )  # fmt: skip


def _pods(view: Path, **state: Any) -> list[dict[str, Any]]:
    return [
        rank0_pod(NAME, f"{NAME}-1-b", UID, index=1),
        rank0_pod(NAME, f"{NAME}-0-a", UID, view=str(view), **state),
    ]


@pytest.mark.parametrize(
    ("flux_args", "env", "stdin", "code", "out"),
    [
        (["jobs", "-a"], {}, None, 0, ["jobs", "-a"]),
        (["submit", "--wait", "sh", "-c", "exit 3"], {"FLUX_EXIT": "3"}, None, 3,
         ["submit", "--wait", "sh", "-c", "exit 3"]),
        (["job", "attach", "-n", "f123"], {}, "a script\n", 0,
         ["job", "attach", "-n", "f123", "stdin: a script"]),
    ],
    ids=["jobs", "exit-code-passes", "stdin-passes"],
)  # fmt: skip
def test_flux_runs_in_rank_0s_flux_container(
    tmp_path: Path,
    flux_args: list[str],
    env: dict[str, str],
    stdin: str | None,
    code: int,
    out: list[str],
) -> None:
    view = flux_view(tmp_path / "view")
    kube = fake_kubectl(tmp_path, JOB, _pods(view.parent))
    proc = _minicluster(["flux", NAME, "-n", "team-a", "--", *flux_args], {**kube, **env}, stdin)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.splitlines() == [
        f"FLUX_URI=local://{view.parent}/config/run/flux/local",
        *out,
    ]
    asked = (tmp_path / "asked").read_text()
    assert f"exec -i -n team-a {NAME}-0-a -c {NAME} -- /bin/bash -c " in asked
    assert proc.stderr == ""


@pytest.mark.parametrize(
    ("job", "state", "env", "said"),
    [
        (None, {}, {}, f"MiniCluster {NAME!r} not found: no Job of that name in namespace"),
        (JOB, {"phase": "Pending", "running": False, "ready": False}, {},
         f"rank 0's pod {NAME}-0-a is Pending, its Flux container not running"),
        (JOB, {"index": 1}, {}, "it has no rank 0 pod: the instance is not up"),
        (JOB, {}, {"PATH": "/nonexistent"}, "kubectl: not found on PATH"),
    ],
    ids=["no-minicluster", "rank-0-pending", "no-rank-0", "no-kubectl"],
)  # fmt: skip
def test_what_cannot_be_reached_is_said_in_one_line(
    tmp_path: Path, job: dict[str, Any] | None, state: dict[str, Any], env: dict[str, str],
    said: str,
) -> None:  # fmt: skip
    view = flux_view(tmp_path / "view")
    pods = [rank0_pod(NAME, f"{NAME}-0-a", UID, view=str(view.parent), **state)]
    kube = {**fake_kubectl(tmp_path, job, pods), **env}
    proc = _minicluster(["flux", NAME, "-n", "team-a", "--", "jobs"], kube)
    assert proc.returncode == 2
    assert said in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_user_without_pods_exec_gets_the_api_servers_refusal(tmp_path: Path) -> None:
    view = flux_view(tmp_path / "view")
    kube = fake_kubectl(tmp_path, JOB, _pods(view.parent))
    proc = _minicluster(["flux", NAME, "-n", "team-a", "--", "jobs"], {**kube, "REFUSED": REFUSED})
    assert (proc.returncode, proc.stderr.strip()) == (1, REFUSED)


def test_rank_0_not_ready_is_a_warning_and_flux_still_runs(tmp_path: Path) -> None:
    """`flux uptime` and `flux overlay status` answer before the quorum is up."""
    view = flux_view(tmp_path / "view")
    kube = fake_kubectl(tmp_path, JOB, _pods(view.parent, ready=False))
    proc = _minicluster(["flux", NAME, "-n", "team-a", "--", "uptime"], kube)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[1:] == ["uptime"]
    assert "warning: rank 0's pod flux-sample-0-a is running but not Ready" in proc.stderr
