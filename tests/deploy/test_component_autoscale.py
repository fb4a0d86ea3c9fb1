"""The elastic MiniCluster's component: Pulumi creates the Job at size and leaves its size to the
scaler (the scaler itself, the settings and the rendering are tests/core/test_autoscale.py's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pulumi
import pytest
from support.autoscalecases import document

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.deploy.component.minicluster import (
    JOB_IGNORE_CHANGES,
    OUTPUTS,
    MiniCluster,
    MiniClusterArgs,
    prepare,
)
from flux_minicluster.deploy.offline.recorder import RegistrationRecorder, plain

REPO = Path(__file__).resolve().parents[2]

CERT = (REPO / "tests" / "golden" / "fixed-curve.cert").read_text().removesuffix("\n")
JOBPATCH = "kubernetes:batch/v1:JobPatch"


def deploy(run_pulumi: Callable[..., Any], args: dict[str, Any]) -> Any:
    def build() -> Any:
        cluster = MiniCluster("mc", cast(MiniClusterArgs, args))
        for key in OUTPUTS:
            pulumi.export(key, getattr(cluster, key))
        return cluster

    return run_pulumi(build, mocks=RegistrationRecorder(command_stdout=CERT))


@pytest.mark.parametrize(
    "autoscale_arg", [True, {"interval_seconds": 5}, {"idleSeconds": 30.0}, "annotation"]
)
def test_component_registers_the_account_and_no_size_patch(
    run_pulumi: Callable[..., Any], autoscale_arg: Any
) -> None:
    if autoscale_arg == "annotation":
        args: dict[str, Any] = {"spec": document("true")}
    else:
        args = {"spec": document(None), "autoscale": autoscale_arg}
    run = deploy(run_pulumi, args)
    types = [r.typ for r in run.resources]
    for typ in (
        "kubernetes:core/v1:ServiceAccount",
        "kubernetes:rbac.authorization.k8s.io/v1:Role",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    ):
        assert types.count(typ) == 1, types
    assert JOBPATCH not in types  # the size is the scaler's after creation
    (job,) = [r for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
    assert plain(job.inputs)["spec"]["parallelism"] == 2
    assert job.options is not None
    assert job.options.ignore_changes == JOB_IGNORE_CHANGES
    assert run.exports["live_size"].value == 2


def test_component_without_autoscale_keeps_its_size_patch(run_pulumi: Callable[..., Any]) -> None:
    for args in ({"spec": document(None)}, {"spec": document("true"), "autoscale": False}):
        run = deploy(run_pulumi, args)
        types = [r.typ for r in run.resources]
        assert JOBPATCH in types
        assert not [t for t in types if "rbac" in t or t.endswith("ServiceAccount")]
        assert run.exports["live_size"].value == 2


def test_component_argument_refused_with_its_path() -> None:
    with pytest.raises(SpecError) as err:
        prepare("mc", {"spec": document(None), "autoscale": {"idle": 3}})
    assert [p.path for p in err.value.problems] == ["autoscale.idle"]
