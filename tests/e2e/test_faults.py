"""Faults on the real engine: an `up` killed midway, an API server restarted between two updates,
a Job deleted behind Pulumi's back. Each must converge with no orphaned or duplicated object and
the certificate unchanged."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml
from controlplane import ControlPlane
from kube import condition, job, uid, wait_until
from stackrun import PREFIX, Engine, Stack, child_operation, kill_group, new_certificate

from flux_minicluster.core.flux import certificate as certificates

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "flux-local"
NAME = "flux-hello"


def local_stack(engine: Engine, project: Path, cp: ControlPlane, cert: str) -> Stack:
    return engine.stack(
        project, "local", kubeconfig=cp.kubeconfig, context=cp.name, curve_cert=cert
    )


def up_in(engine: Engine, project: Path, cp: ControlPlane, namespace: str) -> Stack:
    """The local stack, with a certificate of its own, up in a namespace of its own."""
    stack = local_stack(engine, project, cp, new_certificate(NAME))
    stack.set(f"{PREFIX}:cluster.namespace", namespace)
    stack.up()
    return stack


def inventory(cp: ControlPlane) -> dict[str, list[str]]:
    """Every object of the MiniCluster in its namespace, by kind: one of each, or a duplicate."""
    selector = f"minicluster.flux-framework.org/cluster={NAME}"
    out = {}
    for plural, base in (
        ("configmaps", "/api/v1"),
        ("secrets", "/api/v1"),
        ("services", "/api/v1"),
        ("jobs", "/apis/batch/v1"),
        ("networkpolicies", "/apis/networking.k8s.io/v1"),
    ):
        items = cp.items(f"{base}/namespaces/{NAMESPACE}/{plural}", selector)
        out[plural] = sorted(i["metadata"]["uid"] for i in items)
    return out


def secret_public_key(cp: ControlPlane) -> str:
    import base64

    secret = cp.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/{NAME}-curve")
    text = base64.b64decode(secret["data"]["curve.cert"]).decode()
    return certificates.parse(text).public_key


def test_up_killed_midway_converges_after_cancel_refresh_and_up(
    module_control_plane: ControlPlane,
    engine: Engine,
    project: Path,
    tmp_path: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    cert = new_certificate(NAME)
    stack = local_stack(engine, project, cp, cert)
    # No pod can be scheduled: `up` creates every object, then waits in the size patch's waitFor
    # for ready brokers that cannot come, which is where it is killed.
    cp.set_unschedulable(True)
    with child_operation(engine, project, "local", "up", tmp_path / "up.log") as proc:
        wait_until(
            "the Job and its size patch",
            lambda: (job(cp, NAMESPACE, NAME) or {}).get("spec", {}).get("parallelism") == 4,
            timeout=120,
        )
        time.sleep(1.0)
        kill_group(proc)  # SIGKILL to the child, the pulumi CLI and the provider
    before = inventory(cp)
    assert all(len(uids) == 1 for uids in before.values()), before

    # What a user meets next, and must do: the killed update still holds the stack's lock.
    locked = ""
    try:
        stack.refresh()
    except AssertionError as err:
        locked = str(err)
    assert "the stack is currently locked" in locked
    stack.auto.cancel()  # `pulumi cancel`: on a self-managed backend it removes the lock file
    cp.set_unschedulable(False)
    refreshed = stack.refresh()
    refresh_output = stack.last().output
    converged = stack.up()
    assert converged.summary.result == "succeeded"
    stack.preview(expect_no_changes=True)

    after = inventory(cp)
    assert after == before  # no object replaced, none duplicated, none orphaned
    live = job(cp, NAMESPACE, NAME)
    assert live["status"].get("ready") == 4
    assert secret_public_key(cp) == certificates.parse(cert).public_key
    assert stack.outputs()["curvePublicKey"] == certificates.parse(cert).public_key
    pending = [line.strip() for line in refresh_output.splitlines() if "pending" in line.lower()]
    e2e_report(
        "SIGKILLed up: next operation refused ('the stack is currently locked'); "
        f"`pulumi cancel` then refresh ({refreshed.summary.resource_changes}; "
        f"{pending[:2] or 'no pending-operation message'}) then up "
        f"({converged.summary.resource_changes}) converged; no export/import needed"
    )


def test_api_server_restarted_between_two_updates(
    module_control_plane: ControlPlane,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    stack = up_in(engine, project, cp, "restart")
    job_uid = uid(cp, "Job", "restart", NAME, "batch/v1")
    seconds = cp.restart("kube-apiserver", down_for=2.0)
    # the second update: a resize within maxSize (in place), against the restarted server
    spec = yaml.safe_load((REPO / "examples" / "hello-world.yaml").read_text())
    spec["spec"].update(size=2, maxSize=4)
    stack.set_object(f"{PREFIX}:minicluster", {"spec": spec, "wait": "ready"})
    stack.up()
    live = job(cp, "restart", NAME)
    assert live["metadata"]["uid"] == job_uid
    assert live["spec"]["parallelism"] == 2
    assert live["status"].get("ready") == 2
    stack.refresh(expect_no_changes=True)
    stack.destroy()
    assert cp.get("/api/v1/namespaces/restart") is None
    e2e_report(f"kube-apiserver restarted between two updates (ready again in {seconds:.1f}s)")


def test_a_job_deleted_behind_pulumis_back_is_recreated(
    module_control_plane: ControlPlane,
    engine: Engine,
    project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    cp = module_control_plane
    stack = up_in(engine, project, cp, "deleted")
    old = job(cp, "deleted", NAME)
    cp.kubectl("delete", "job", NAME, "-n", "deleted", "--cascade=foreground", "--wait=true")
    assert job(cp, "deleted", NAME) is None

    # Without a refresh the engine still believes in the Job: nothing to do.
    stale = stack.preview()
    assert not stale.change_summary.get("create"), stale.change_summary
    refreshed = stack.refresh()
    assert refreshed.summary.resource_changes.get("delete") == 2  # the Job and its size patch
    recreated = stack.up()
    assert recreated.summary.resource_changes.get("create") == 2
    new = job(cp, "deleted", NAME)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["parallelism"] == 4
    assert new["status"].get("ready") == 4
    assert condition(new, "Complete") is None
    stack.preview(expect_no_changes=True)
    e2e_report(
        "Job deleted with kubectl: preview before a refresh shows nothing to do; refresh drops "
        f"{refreshed.summary.resource_changes} from the state; up recreates the Job and its patch"
    )
