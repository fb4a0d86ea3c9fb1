"""`minicluster render`: a kubectl-ready stream on stdout, or one file per object with -o."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import yaml
from cli import minicluster

from flux_minicluster.core import certificate, layout
from flux_minicluster.core import labels as lbl

ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT / "examples" / "hello-world.yaml"
SIDECARS = ROOT / "examples" / "services-sidecar.yaml"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return minicluster("render", *args, cwd=cwd, timeout=120)


def test_stdout_is_a_multi_document_stream_with_a_fresh_certificate() -> None:
    result = run(str(SIDECARS))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("---\n")
    docs = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Secret", "Pod", "Service", "Service", "Job"]
    assert result.stdout.count("\n---\n") + 1 == len(docs)
    secret = docs[1]
    cert = certificate.parse(secret["stringData"][layout.CURVE_FILE])
    assert secret["metadata"]["annotations"][lbl.CURVE_PUBLIC_KEY_ANNOTATION] == cert.public_key
    assert cert.hostname == "flux-app-0"
    assert "generated a new CURVE certificate locally" in result.stderr
    assert "secret-key" not in result.stderr


def test_namespace_option_and_a_spec_certificate(tmp_path: Path) -> None:
    cert = certificate.render(certificate.generate("flux-cert", "mc-0"))
    spec = {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "mc"},
        "spec": {
            "flux": {"curveCert": cert},
            "containers": [{"image": "ubuntu:24.04", "command": "echo hi"}],
        },
    }
    (tmp_path / "mc.yaml").write_text(yaml.safe_dump(spec))
    result = run("mc.yaml", "-n", "hpc", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    assert {d["metadata"]["namespace"] for d in docs} == {"hpc"}
    assert docs[1]["stringData"][layout.CURVE_FILE] == cert
    assert "generated" not in result.stderr


def test_output_dir_writes_one_numbered_file_per_object(tmp_path: Path) -> None:
    out = tmp_path / "manifests"
    result = run(str(HELLO), "-o", str(out))
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "01-configmap-flux-hello-entrypoint.yaml",
        "02-secret-flux-hello-curve.yaml",
        "03-service-flux-hello.yaml",
        "04-job-flux-hello.yaml",
    ]
    for name in names:
        assert str(out / name) in result.stderr.splitlines()
        (doc,) = yaml.safe_load_all((out / name).read_text())
        assert doc["metadata"]["name"] in name
    assert result.stdout == ""
    secret_mode = stat.S_IMODE((out / names[1]).stat().st_mode)
    assert secret_mode == 0o600


def test_a_bad_file_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\nmetadata: {name: mc}\n"
        "spec:\n  size: 2\n  containers:\n    - image: ubuntu:24.04\n      volumes:\n"
        "        data: {claimName: data}\n"
    )
    result = run("bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("bad.yaml: spec.containers[0].volumes.data.path: required")


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = run("nope.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "nope.yaml: no such file\n"
