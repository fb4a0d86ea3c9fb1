"""`minicluster status`: where the command looks (how it reads what it finds is
tests/core/test_status.py's, against a live cluster tests/e2e/test_kueue.py's)."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from support.fluxpod import COUNTS, REFUSED, fake_kubectl, flux_view, rank0_pod

from flux_minicluster.cli.main import main
from flux_minicluster.core.kube.labels import ARCHIVE_ANNOTATION
from flux_minicluster.core.spec.archive import staging


def test_a_stack_says_where_to_look(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status --stack` reads the stack's config file (never Pulumi state): kubectl is asked for
    its MiniCluster's Job in its namespace, with its kubeconfig and context (none for local)."""
    asked = tmp_path / "kubectl.args"
    kubectl = tmp_path / "kubectl"  # prints nothing: there is no such Job
    kubectl.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(asked))}\n')
    kubectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(["status", "--stack", "local", "-o", "json"]) == 1  # not there (not deployed)
    found = json.loads(capsys.readouterr().out)
    assert (found["name"], found["namespace"], found["phase"]) == (
        "flux-hello",
        "flux-local",
        "absent",
    )
    assert asked.read_text() == "get -n flux-local job flux-hello -o json --ignore-not-found\n"


_KUBECTL = """#!/bin/sh
printf "%s\\n" "$*" >> "$ASKED"
case "$*" in *"config view"*) printf "%s" "$CONTEXT_NS"; exit 0 ;; esac
if [ -n "$FAIL" ]; then echo "$FAIL" >&2; exit 1; fi
case "$*" in
  *" job "*) [ -f "$JOB" ] && cat "$JOB" ;;
  *" pods "*) echo '{"items": []}' ;;
esac
exit 0
"""
UNREACHABLE = "The connection to the server 127.0.0.1:6443 was refused"


@pytest.mark.parametrize(
    ("argv", "job", "fail", "code", "namespace", "said"),
    [
        (["hello"], True, "", 0, "team-a", "MiniCluster team-a/hello: starting"),
        (["hello", "-n", "other"], True, "", 0, "other", "MiniCluster other/hello: starting"),
        (
            ["helo"],
            False,
            "",
            1,
            "team-a",
            "MiniCluster 'helo' not found: no Job of that name in namespace 'team-a', the "
            "kube-context's",
        ),
        (
            ["hello"],
            True,
            UNREACHABLE,
            2,
            "team-a",
            f"`kubectl get -n team-a job hello`: {UNREACHABLE}",
        ),
    ],
    ids=["context-namespace", "given-namespace", "misspelt", "unreachable"],
)
@pytest.mark.parametrize("output", ["text", "json"])
def test_status_reads_as_kubectl_reads(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    job: bool,
    fail: str,
    code: int,
    namespace: str,
    said: str,
    output: str,
) -> None:
    """Without -n the kube-context's namespace; a name that is not there is exit 1, as `kubectl
    get` says NotFound; every error names the namespace, and -o json is one document always."""
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(_KUBECTL)
    kubectl.chmod(0o755)
    job_file = tmp_path / "job.json"
    if job:
        job_file.write_text(
            json.dumps(
                {
                    "metadata": {"name": "hello", "namespace": namespace},
                    "spec": {"parallelism": 2, "completions": 2},
                    "status": {},
                }
            )
        )
    for key, value in {
        "ASKED": str(tmp_path / "asked"),
        "CONTEXT_NS": "team-a",
        "FAIL": fail,
        "JOB": str(job_file),
        "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}",
    }.items():
        monkeypatch.setenv(key, value)
    assert main(["status", *argv, "-o", output]) == code
    out, err = capsys.readouterr()
    assert f"get -n {namespace} job " in (tmp_path / "asked").read_text()
    if output == "json":
        document = json.loads(out)
        assert document["namespace"] == namespace
        assert bool(document.get("problems")) == (code == 2)
    if code == 0:
        assert json.loads(out)["created"] if output == "json" else said in out
    else:
        assert said in err
        assert namespace in err


UID = "6f1c1e0a-0000-4000-8000-000000000004"
LIVE_JOB = {
    "metadata": {"name": "hello", "namespace": "team-a", "uid": UID},
    "spec": {"parallelism": 2, "completions": 2},
    "status": {"active": 2, "ready": 2},
}


@pytest.mark.parametrize(
    ("state", "env", "archive", "jobs", "unread", "problem"),
    [
        ({}, {}, None, True, None, None),
        ({}, {"DUMP": "{dir}/archive.tar"}, None, True, None, None),
        ({}, {"DUMP": "{dir}/archive.tar"}, "{dir}/archive.tar", True, None, None),
        ({}, {"REFUSED": REFUSED}, None, False, REFUSED, REFUSED),
        ({"phase": "Pending", "running": False, "ready": False}, {}, None, False,
         "the instance is not up: rank 0's pod hello-0-a is Pending", None),
        ({"ready": False}, {}, None, False, "is running but not Ready", None),
    ],
    ids=["jobs", "archive-never-written", "archive-written", "exec-refused", "pod-pending",
         "not-ready"],
)  # fmt: skip
@pytest.mark.parametrize("output", ["text", "json"])
def test_status_shows_the_instances_jobs_and_archive(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    state: dict[str, Any],
    env: dict[str, str],
    archive: str | None,
    jobs: bool,
    unread: str | None,
    problem: str | None,
    output: str,
) -> None:
    """Once rank 0 is Ready, the jobs (and the archive the broker names) through the user's
    exec; a refused exec is a problem, never a failed status; a pod not up, a reason."""
    view = flux_view(tmp_path / "view")
    pods = [rank0_pod("hello", "hello-0-a", UID, view=str(view.parent), **state)]
    for key, value in {**fake_kubectl(tmp_path, LIVE_JOB, pods), **env}.items():
        monkeypatch.setenv(key, value.replace("{dir}", str(tmp_path)))
    if archive:
        Path(archive.replace("{dir}", str(tmp_path))).write_bytes(b"x" * 10)
    assert main(["status", "hello", "-n", "team-a", "-o", output]) == 0
    out = capsys.readouterr().out
    if output == "text":
        if jobs:
            assert f"  jobs      {COUNTS.line()}" in out
        else:
            assert "  jobs      not read: " in out
            assert str(unread) in out
        if "DUMP" in env:
            written = "written " if archive else "never written"
            assert f"  archive   {tmp_path}/archive.tar: {written}" in out
        return
    document = json.loads(out)
    assert document["phase"] == "ready"
    assert document["jobs"] == (dataclasses.asdict(COUNTS) if jobs else None)
    assert (document["jobs_unread"] is None) == jobs
    if unread:
        assert unread in document["jobs_unread"]
    assert [p["message"] for p in document["problems"]] == (
        [f"`kubectl exec -n team-a hello-0-a -c hello`: {problem}"] if problem else []
    )
    if "DUMP" in env:
        assert document["archive"]["path"] == f"{tmp_path}/archive.tar"
        assert (document["archive"]["written"] is None) == (archive is None)
        assert document["archive"]["bytes"] == (10 if archive else None)
    else:
        assert document["archive"] is None


def test_status_reads_the_archive_the_job_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Job names its archive (the default on a claim included): status reads that file, not
    the dump the broker writes beside it as it stops."""
    named = tmp_path / "flux-archives" / "hello.tgz"
    named.parent.mkdir()
    named.write_bytes(b"x" * 7)
    notes = {"annotations": {ARCHIVE_ANNOTATION: str(named)}}
    job = {**LIVE_JOB, "metadata": {**LIVE_JOB["metadata"], **notes}}
    view = flux_view(tmp_path / "view")
    pods = [rank0_pod("hello", "hello-0-a", UID, view=str(view.parent))]
    env = {**fake_kubectl(tmp_path, job, pods), "DUMP": str(staging(str(named)))}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["status", "hello", "-n", "team-a", "-o", "json"]) == 0
    archive = json.loads(capsys.readouterr().out)["archive"]
    assert archive["path"] == str(named)
    assert archive["bytes"] == 7
