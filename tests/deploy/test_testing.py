"""`flux_minicluster.testing`: a user's own program under Pulumi's mocks, in a few lines."""

from __future__ import annotations

import pulumi
import pytest

from flux_minicluster import MiniCluster
from flux_minicluster.core.flux import certificate
from flux_minicluster.deploy.offline.recorder import RegistrationRecorder
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


def test_a_users_program_depends_on_and_exports_from_the_typed_children() -> None:
    """``cluster.resources``: each child as its typed resource, for ``depends_on`` and exports."""
    import dataclasses

    import pulumi_kubernetes as k8s

    import flux_minicluster

    def build() -> MiniCluster:
        cluster = MiniCluster("hpc", {"spec": SPEC, "namespace": "team"})
        k8s.core.v1.ConfigMap(
            "after-the-job",
            metadata={"name": "after", "namespace": "team"},
            data={"job": cluster.job_name},
            opts=pulumi.ResourceOptions(depends_on=[cluster.resources.job]),
        )
        pulumi.export("job", cluster.resources.job.metadata.name)
        pulumi.export("parallelism", cluster.resources.job.spec.parallelism)
        pulumi.export("entrypoint", cluster.resources.entrypoint.metadata.name)
        return cluster

    result = run(build)
    children = result.result.resources
    assert isinstance(children, flux_minicluster.MiniClusterResources)  # the name users import
    assert isinstance(children.job, k8s.batch.v1.Job)
    assert isinstance(children.headless_service, k8s.core.v1.Service)
    assert isinstance(children.size_patch, k8s.batch.v1.JobPatch)
    assert [type(p) for p in children.network_policies] == [k8s.networking.v1.NetworkPolicy]
    assert children.keygen is result.result.keygen is not None
    # what this MiniCluster does not have
    assert (children.services_pod, children.restful_service, children.credentials) == (
        None,
        None,
        (),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        children.job = children.job  # type: ignore[misc]
    assert result.exports["job"].value == "hpc"
    assert result.exports["parallelism"].value == 2
    assert result.exports["entrypoint"].value == "hpc-entrypoint"
    (job,) = [r for r in result.resources if r.typ == "kubernetes:batch/v1:Job"]
    (mine,) = [r for r in result.resources if r.name == "after-the-job"]
    assert mine.options is not None
    assert job.urn in mine.options.dependencies


def test_the_children_a_given_certificate_and_services_leave_out_or_add() -> None:
    cert = certificate.render(certificate.generate("fixed", "fixed-0"))
    spec = {**SPEC, "services": [{"image": "redis:7", "name": "redis"}]}

    def build() -> MiniCluster:
        return MiniCluster("hpc", {"spec": spec, "curve_cert": cert, "network_policy": False})

    children = run(build).result.resources
    assert children.keygen is None
    assert children.network_policies == ()
    assert children.services_pod is not None
    assert children.curve_secret is not None
