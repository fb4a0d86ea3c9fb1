"""The target Kubernetes release in the stack config and the component (the release and the Job
fields it serves are tests/core/test_kube_version.py's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

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


@pytest.mark.parametrize(
    ("kube_version", "resized_in_place"), [(None, True), ("1.28", True), ("1.27", False)]
)
def test_a_new_size_replaces_the_job_where_the_release_cannot_resize_it(
    run_pulumi: Callable[..., Any], kube_version: str | None, resized_in_place: bool
) -> None:
    """Before ElasticIndexedJob the API server refuses a new ``completions``: there a new size
    must be a new Job (its diff shows in a replace-on-change field), not a refused patch."""

    def job_at(size: int) -> Any:
        doc = yaml.safe_load((EXAMPLES / "hello-world.yaml").read_text())
        doc["spec"].update(size=size, maxSize=4)
        args: dict[str, Any] = {"spec": doc, "curve_cert": CERT}
        if kube_version is not None:
            args["kube_version"] = kube_version
        run = run_pulumi(lambda: MiniCluster("mc", args), mocks=RegistrationRecorder())
        (job,) = [r for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
        return job

    small, large = job_at(2), job_at(4)
    assert large.options.ignore_changes == small.options.ignore_changes
    assert large.options.replace_on_changes == small.options.replace_on_changes

    def diff(job: Any) -> dict[str, Any]:
        """The Job's spec as the engine diffs it: without what ignore_changes hides."""
        spec = {k: v for k, v in job.inputs["spec"].items() if k != "template"}
        for path in job.options.ignore_changes:
            spec.pop(path.removeprefix("spec."))
        return spec

    changed = {k for k in diff(small) | diff(large) if diff(small).get(k) != diff(large).get(k)}
    replacing = {p.removeprefix("spec.") for p in large.options.replace_on_changes}
    if resized_in_place:  # the size JobPatch resizes the live Job
        assert changed == set()
    else:  # a new Job, created at the new size: nothing of it is taken from the old inputs
        assert changed == {"parallelism", "completions"}
        assert "completions" in replacing
        assert large.options.ignore_changes == ()
