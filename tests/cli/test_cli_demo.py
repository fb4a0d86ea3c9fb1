"""`minicluster demo` and `render --stack` as a newcomer meets them: what they say when there is
nothing to render, while they work, and before a secret key reaches a terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.cli import minicluster, project_copy

from flux_minicluster.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_demo_in_a_project_without_stacks_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    result = minicluster("demo", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert f"no stacks in {tmp_path}" in result.stderr
    assert "pulumi up -s" not in result.stdout + result.stderr
    assert "validates" not in result.stdout
    assert not (tmp_path / "rendered").exists()


def test_demo_counts_its_stacks_and_says_what_it_renders_as_it_goes(tmp_path: Path) -> None:
    project = project_copy(tmp_path / "p")
    for stack in (project / "stacks").glob("Pulumi.*.yaml"):
        if stack.name != "Pulumi.local.yaml":
            stack.unlink()
    result = minicluster("demo", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Rendered 1 stack offline into rendered/")
    assert "rendering stack local offline" in result.stderr


def test_a_stack_rendered_to_a_terminal_warns_of_the_secret_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["render", "--stack", "local"]) == 0
    out, err = capsys.readouterr()
    assert "kind: Secret" in out
    assert "warning: the output holds Secret flux-local/flux-hello-curve in clear" in err


def test_a_stack_rendered_into_a_pipe_says_nothing_of_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["render", "--stack", "local"]) == 0
    assert "warning: the output holds Secret" not in capsys.readouterr().err
