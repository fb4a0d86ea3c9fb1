"""The component in a user's own Python program, on the real engine: the README's "Its children,
typed" snippet. A resource that depends on ``cluster.resources.job`` is created after the Job and
records the dependency in the state; an output read from the typed child is the live Job's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
from controlplane import ControlPlane
from kube import job
from stackrun import Engine, new_certificate

from flux_minicluster import MiniCluster

NAMESPACE = "user-program"
NAME = "hpc"


def test_a_users_program_depends_on_and_exports_from_the_typed_job(
    module_control_plane: ControlPlane,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    cert = new_certificate(NAME)

    def program() -> None:
        provider = k8s.Provider("user", kubeconfig=cp.kubeconfig.read_text(), context=cp.name)
        on_cluster = pulumi.ResourceOptions(provider=provider)
        namespace = k8s.core.v1.Namespace("team", metadata={"name": NAMESPACE}, opts=on_cluster)
        spec = {"size": 2, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}]}
        cluster = MiniCluster(
            NAME,
            {"spec": spec, "namespace": NAMESPACE, "curve_cert": cert},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[namespace]),
        )
        k8s.core.v1.ConfigMap(
            "monitor",
            metadata={"name": "monitor", "namespace": NAMESPACE},
            data={"job": cluster.job_name},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[cluster.resources.job]),
        )
        pulumi.export("jobUid", cluster.resources.job.metadata.uid)
        pulumi.export("parallelism", cluster.resources.job.spec.parallelism)
        pulumi.export("jobUrn", cluster.resources.job.urn)

    stack = engine.stack(project, "user", program=program)
    stack.up()
    live = job(cp, NAMESPACE, NAME)
    assert live is not None
    assert live["status"].get("ready") == 2
    outputs = stack.outputs()
    assert outputs["jobUid"] == live["metadata"]["uid"]
    assert outputs["parallelism"] == 2

    state = stack.auto.export_stack().deployment["resources"]
    urn_of = {r["urn"].rsplit("::", 1)[-1]: r for r in state if r["type"].startswith("kubernetes")}
    job_urn = next(
        r["urn"]
        for r in state
        if r["type"] == "kubernetes:batch/v1:Job" and r["urn"].endswith(NAME)
    )
    assert job_urn in urn_of["monitor"].get("dependencies", [])
    stack.destroy()
    assert job(cp, NAMESPACE, NAME) is None
    e2e_report(
        "a user's program: a ConfigMap depends on cluster.resources.job (recorded in the state), "
        "jobUid exported from it is the live Job's"
    )
