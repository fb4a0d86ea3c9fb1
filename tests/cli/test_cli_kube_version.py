"""`minicluster render --kube-version` (the release and the Job fields it serves are
tests/core/test_kube_version.py's)."""

from __future__ import annotations

from pathlib import Path

from support.cli import minicluster

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def test_render_kube_version_on_the_command_line(tmp_path: Path) -> None:
    new = minicluster("render", str(EXAMPLES / "batch.yaml"), "--kube-version", "1.33", cwd=REPO)
    assert new.returncode == 0, new.stderr
    assert "succeededIndexes: '0'" in new.stdout
    assert "podReplacementPolicy: Failed" in new.stdout
    old = minicluster("render", str(EXAMPLES / "batch.yaml"), "--kube-version", "1.24", cwd=REPO)
    assert old.returncode == 2
    assert old.stderr.strip().splitlines() == [
        "--kube-version: Kubernetes 1.24 is older than 1.25, the oldest release whose strict "
        "schemas flux-minicluster checks renderings against; give 1.25 or newer"
    ]
