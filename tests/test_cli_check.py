"""`minicluster check`: the policy pack offline, from the command line, as CI runs it."""

from __future__ import annotations

from pathlib import Path

import yaml
from cli import minicluster

BAD = [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "leaky", "namespace": "hpc"},
        "data": {
            "curve.cert": 'curve\n    public-key = "x"\n    secret-key = "y"\n',
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": "hpc"},
        "spec": {
            "containers": [
                {"name": "app", "image": "ubuntu:latest", "securityContext": {"privileged": True}}
            ]
        },
    },
]


def test_a_bad_set_exits_1_and_names_each_policy(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all(BAD))
    result = minicluster(
        "check",
        "bad.yaml",
        "--config",
        str(Path(__file__).parents[1] / "policies" / "config.example.json"),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    for policy in ("curve-cert-in-secret", "pinned-images", "no-privileged"):
        assert f"[mandatory] {policy}" in result.stdout, result.stdout
    assert "Traceback" not in result.stderr


def test_a_stack_rendered_on_the_fly_passes(tmp_path: Path) -> None:
    result = minicluster("check", "--stack", "local", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 mandatory" in result.stdout


def test_nothing_to_check_is_a_usage_error(tmp_path: Path) -> None:
    result = minicluster("check", cwd=tmp_path)
    assert result.returncode == 2
    assert "give manifest files or folders" in result.stderr
