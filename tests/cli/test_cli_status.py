"""`minicluster status`: where the command looks (how it reads what it finds is
tests/core/test_status.py's, against a live cluster tests/e2e/test_kueue.py's)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from flux_minicluster.cli.main import main


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
    assert main(["status", "--stack", "local", "-o", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["name"], found["namespace"], found["phase"]) == (
        "flux-hello",
        "flux-local",
        "absent",
    )
    assert asked.read_text() == "get -n flux-local job flux-hello -o json --ignore-not-found\n"
