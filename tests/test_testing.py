"""`flux_minicluster.testing`: a user's own program under Pulumi's mocks, in a few lines."""

from __future__ import annotations

import pulumi
import pytest

from flux_minicluster import MiniCluster
from flux_minicluster.core import certificate
from flux_minicluster.deploy.recorder import RegistrationRecorder
from flux_minicluster.testing import MiniClusterMocks, run

SPEC = {"size": 2, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}]}


def program() -> MiniCluster:
    cluster = MiniCluster("hpc", {"spec": SPEC, "namespace": "team"})
    pulumi.export("hostlist", cluster.hostlist)
    return cluster


def test_a_users_program_runs_under_the_testing_mocks() -> None:
    mocks = MiniClusterMocks()
    result = run(program, mocks=mocks)
    assert result.result.plan.name == "hpc", "the MiniCluster is named after the resource"
    assert result.exports["hostlist"].value == "hpc-[0-1]"
    (keygen,) = mocks.commands()
    assert "cert_name=hpc" in keygen.inputs["create"]
    secret = next(r for r in result.resources if r.typ == "kubernetes:core/v1:Secret")
    text = secret.plain_inputs["stringData"]["curve.cert"]
    assert certificate.parse(text).name == "hpc"


def test_a_given_certificate_is_used() -> None:
    cert = certificate.render(certificate.generate("fixed", "fixed-0"))
    result = run(program, mocks=MiniClusterMocks(curve_cert=cert))
    secret = next(r for r in result.resources if r.typ == "kubernetes:core/v1:Secret")
    assert secret.plain_inputs["stringData"]["curve.cert"] == cert


def test_plain_mocks_fail_with_a_message_that_names_the_fix() -> None:
    with pytest.raises(Exception, match=r"flux_minicluster\.testing\.MiniClusterMocks"):
        run(program, mocks=RegistrationRecorder())  # type: ignore[arg-type]


def test_the_namespace_argument_wins_over_metadata_with_a_warning() -> None:
    """The component's namespace argument overrides metadata.namespace, as the deployer's
    choice, and says so (kubectl's -n, in the CLI, refuses a mismatch instead)."""
    document = {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "mc", "namespace": "team-a"},
        "spec": SPEC,
    }

    def build() -> MiniCluster:
        return MiniCluster("mc", {"spec": document, "namespace": "team-b"})

    result = run(build)
    assert result.result.plan.namespace == "team-b"
    (warning,) = result.result.plan.definition.warnings
    assert warning.path == "metadata.namespace"
    assert "'team-a' but the namespace argument is 'team-b', which wins" in warning.message
    same = run(lambda: MiniCluster("mc", {"spec": document, "namespace": "team-a"}))
    assert same.result.plan.definition.warnings == ()
