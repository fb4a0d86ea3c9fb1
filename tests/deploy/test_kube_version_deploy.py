"""The target Kubernetes release in the stack config and the component (the release and the Job
fields it serves are tests/core/test_kube_version.py's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.deploy.component.minicluster import MiniCluster
from flux_minicluster.deploy.offline.recorder import RegistrationRecorder
from flux_minicluster.deploy.stack.stackconfig import ClusterConfig

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CERT = (REPO / "tests" / "golden" / "fixed-curve.cert").read_text()


def test_the_stack_config_takes_a_quoted_release_and_refuses_a_yaml_number() -> None:
    assert ClusterConfig.model_validate({"kubernetesVersion": "1.30"}).kubernetes_version == "1.30"
    for bad, says in ((1.3, "quoted string"), ("1.20", "older than 1.25")):
        with pytest.raises(ValueError, match=says):
            ClusterConfig.model_validate({"kubernetesVersion": bad})


@pytest.mark.parametrize(("kube_version", "lead_decides"), [(None, True), ("1.29", False)])
def test_the_component_renders_for_its_kube_version(
    run_pulumi: Callable[..., Any], kube_version: str | None, lead_decides: bool
) -> None:
    args: dict[str, Any] = {"spec": EXAMPLES / "batch.yaml", "curve_cert": CERT}
    if kube_version is not None:
        args["kube_version"] = kube_version
    run = run_pulumi(lambda: MiniCluster("mc", args), mocks=RegistrationRecorder())
    (job,) = [r.inputs for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
    assert ("successPolicy" in job["spec"]) == lead_decides
