"""`minicluster validate` and `render` over a MiniCluster too large for Kubernetes: exit 2 and one
line naming the spec field (the size rule itself is tests/core/test_sizes.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli import minicluster
from sizecases import TOO_LARGE


@pytest.mark.parametrize("command", ["validate", "render"])
def test_the_cli_refuses_a_large_object_with_exit_2(tmp_path: Path, command: str) -> None:
    doc, field, _ = TOO_LARGE["command over 1 MiB"]
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(doc))
    result = minicluster(command, "big.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-500:]
    assert result.stderr.startswith(f"big.yaml: {field}: makes ConfigMap big-entrypoint")
    assert result.stdout == ""
