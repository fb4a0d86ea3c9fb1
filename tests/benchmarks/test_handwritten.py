"""The yardstick of the benchmarks: the hand-written pulumi-kubernetes program
(``benchmarks/handwritten.py``) declares what ``minicluster render`` wrote, with the await the
component uses, so that ``pulumi up`` returns when the brokers are Ready rather than waiting for a
persistent Job to complete (which hung ``make bench-e2e`` once the renderer stopped writing Pulumi
annotations into plain manifests)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.cli import minicluster

from flux_minicluster.deploy.offline.recorder import RegistrationRecorder, plain

ROOT = Path(__file__).resolve().parents[2]


def test_the_hand_written_program_awaits_ready_brokers(
    tmp_path: Path, run_pulumi: Callable[..., Any]
) -> None:
    out = tmp_path / "objects"
    cert = tmp_path / "curve.cert"
    spec = ROOT / "examples" / "hello-world.yaml"
    rendered = minicluster(
        "render", str(spec), "--curve-cert", str(cert), "-d", str(out), cwd=tmp_path
    )
    assert rendered.returncode == 0, rendered.stderr
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import handwritten
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    config = {
        "handwritten:objects": str(out),
        "handwritten:namespace": "hand",
        "handwritten:kubeconfig": str(tmp_path / "kubeconfig"),
    }
    run = run_pulumi(handwritten.main, mocks=RegistrationRecorder(), config=config)
    (job,) = [plain(r.inputs) for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
    annotations = job["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == "jsonpath={.status.ready}=4"
    assert job["metadata"]["namespace"] == "hand"
    kinds = sorted(r.typ.rsplit(":", 1)[-1] for r in run.resources if r.is_kubernetes_object)
    assert kinds == ["ConfigMap", "Job", "Namespace", "NetworkPolicy", "Secret", "Service"]
