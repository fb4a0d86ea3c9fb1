"""`minicluster validate` and `render` over a MiniCluster too large for Kubernetes: exit 2 and one
line naming the spec field (the size rule itself is tests/core/test_sizes.py's); one the API
server takes but plain `kubectl apply` cannot: a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.cli import minicluster
from support.sizecases import JUST_UNDER, TOO_LARGE, spec


@pytest.mark.parametrize("command", ["validate", "render"])
def test_the_cli_refuses_a_large_object_with_exit_2(tmp_path: Path, command: str) -> None:
    doc, field, _ = TOO_LARGE["command over 1 MiB"]
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(doc))
    result = minicluster(command, "big.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-500:]
    assert result.stderr.startswith(f"big.yaml: {field}: makes ConfigMap big-entrypoint")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("case", "flagged"),
    [
        ("command of 1,000,000 bytes", "ConfigMap default/big-entrypoint"),
        ("one environment value of 1.4 MB", "Job default/big"),
        (None, None),
    ],
)
@pytest.mark.parametrize("output", [[], ["-d", "out"]])
def test_render_warns_of_an_object_too_large_for_plain_kubectl_apply(
    tmp_path: Path, case: str | None, flagged: str | None, output: list[str]
) -> None:
    """kubectl's client-side apply copies the object into an annotation, which the API server
    holds to 256 KiB with the others (tests/e2e/test_server_sizes.py measures the edge): the
    render succeeds, and stderr names the object and ``--server-side``, only for such objects."""
    doc = JUST_UNDER[case] if case else spec()
    (tmp_path / "mc.yaml").write_text(yaml.safe_dump(doc))
    result = minicluster("render", "mc.yaml", *output, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-500:]
    warnings = [line for line in result.stderr.splitlines() if "kubectl apply" in line]
    if flagged is None:
        assert warnings == []
    else:
        (warning,) = warnings
        assert warning.startswith(f"warning: {flagged} is too large for client-side")
        assert "kubectl apply --server-side" in warning
