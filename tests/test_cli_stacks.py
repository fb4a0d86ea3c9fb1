"""`render --stack` and `check --stack` on stack files a user has edited: a mistake in the config
is the user's to fix (exit 2, one line naming the key), never an internal error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli import edit_stack, minicluster, project_copy

P = "flux-minicluster"


def _burst_size(config: dict[str, Any]) -> None:
    config[f"{P}:minicluster"]["spec"]["spec"]["size"] = 3


def _burst_name(config: dict[str, Any]) -> None:
    config[f"{P}:minicluster"]["spec"]["metadata"]["name"] = "gcp-burst"


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (_burst_size, "'eks-burst' has maxSize 3 but the root stack"),
        (_burst_name, "'gcp-burst' is not declared by the root stack"),
    ],
)
@pytest.mark.parametrize("command", ["render", "check"])
def test_a_burst_the_root_does_not_declare_is_a_user_error(
    tmp_path: Path, edit: Any, fragment: str, command: str
) -> None:
    project = project_copy(tmp_path / "p")
    edit_stack(project, "eks-burst", edit)
    result = minicluster(command, "--stack", "eks-burst", cwd=project)
    assert result.returncode == 2, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "root stack" in x]
    assert line.startswith(f"{P}:minicluster: ")
    assert fragment in line
    assert "organization/flux-minicluster/gke-root" in line
    assert "While processing" not in result.stderr
    assert "internal error" not in result.stderr
