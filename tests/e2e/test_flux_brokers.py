"""Real Flux brokers under the real Job controller: `pulumi up` (the real engine and provider)
creates the MiniCluster on a real-node cluster (fluxnodes.FluxPlane: two nodes with the real
kubelet, containerd, CoreDNS, kube-proxy and kube-router's NetworkPolicy controller), whose pods
run the images built here: the entrypoint scripts of templates/, broker.toml, the CURVE
certificate, the flux view image's Flux, names answered by CoreDNS, NetworkPolicy enforced by
kube-router and the securityContext by the kubelet and runc.

- the Flux Operator's own e2e specs that need no special image (../shared/compat/
  flux-operator-tests): the Job completes, `wait: complete` returns with it, and rank 0's log
  equals the spec's test.out.correct where there is one;
- examples/restricted.yaml in a namespace enforcing Pod Security `restricted` (and rank 0, uid
  1000, writes its termination message);
- a worker pod deleted mid-run: the Job controller replaces it and its broker rejoins rank 0;
- NetworkPolicy: the mesh lets the brokers talk; a pod of another MiniCluster of the namespace
  cannot reach them.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fluxnodes import UP_BROKERS, FluxPlane, deploy, wait_job_complete
from kube import condition, job, wait_until
from stackrun import Engine

from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.deployed import status as live_status
from flux_minicluster.core.flux import certificate

REPO = Path(__file__).resolve().parents[2]
COMPAT = REPO.parent / "shared" / "compat" / "flux-operator-tests"
# The specs whose image is a plain OS (the application image built here stands in for it).
# Left out: nginx-service and nginx-sidecar-service (an nginx image), lammps (its image built
# here, test_flux_lammps.py), osu-benchmarks (test_flux_osu_operator.py runs it on the MPI image),
# snakemake, singularity, pokemon (images with their own software), disable-view, flux-sidecar,
# custom-config, existing-volumes, volumes (a flux image of their own, or volumes of a real
# cluster).
OPERATOR_SPECS = [
    "hello-world",
    "post",
    "batch",
    "flux-resource-list",
    "minimal-service",
    "timed",
    "debug",
    "emptydir",
]
JOB_TIMEOUT_S = 240

pytestmark = pytest.mark.flux


def log_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


@pytest.mark.parametrize("name", OPERATOR_SPECS)
def test_operator_spec_completes_with_real_brokers(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    name: str,
    e2e_report: Callable[[str], None],
) -> None:
    folder = COMPAT / name
    if not folder.is_dir():
        pytest.skip(f"{COMPAT} is absent (../shared beside the checkout)")
    spec = yaml.safe_load((folder / "minicluster.yaml").read_text())
    job_name = spec["metadata"]["name"]
    size = int(spec["spec"]["size"])
    namespace = f"op-{name}"
    stack = deploy(
        module_engine, flux_project, flux_plane, f"op-{name}", namespace, spec, "complete"
    )
    stack.up()
    seconds = stack.last().seconds
    live = job(flux_plane.cp, namespace, job_name)  # as `up` left it: `wait: complete` returned
    assert condition(live, "Complete") == "True", (
        f"`up` returned before the Job completed: {live['status']}\n"
        + flux_plane.diagnostics(namespace, job_name)
    )
    # rank 0's index succeeded (the success policy's criterion; a worker still shutting down
    # then is stopped by the Job controller and not counted as succeeded)
    completed = str(live["status"].get("completedIndexes", ""))
    assert completed.split(",")[0].split("-")[0] == "0", live["status"]
    log = flux_plane.rank_log(namespace, job_name)
    correct = folder / "test.out.correct"
    if correct.exists():
        assert log_lines(log) == log_lines(correct.read_text()), (
            f"rank 0's log:\n{log}\n" + flux_plane.diagnostics(namespace, job_name)
        )
    else:
        assert log.strip(), flux_plane.diagnostics(namespace, job_name)
    e2e_report(f"{name}: pulumi up to Job Complete {seconds:.1f}s ({size} brokers)")


@pytest.mark.parametrize("strategy", ["flux", "builtin"])
def test_a_certificate_made_by_the_keygen_command_forms_the_instance(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    strategy: str,
    e2e_report: Callable[[str], None],
) -> None:
    """The seeds' mechanism end to end: no certificate given, the keygen Command (the real
    command provider) makes one, and the four brokers of examples/hello-world.yaml join with it:
    rank 0 runs its command only once every rank is online."""
    spec = yaml.safe_load((REPO / "examples" / "hello-world.yaml").read_text())
    name = spec["metadata"]["name"]
    namespace = f"keygen-{strategy}"
    stack = deploy(
        module_engine,
        flux_project,
        flux_plane,
        f"keygen-{strategy}",
        namespace,
        spec,
        "complete",
        keygen=strategy,
    )
    stack.up()
    live = job(flux_plane.cp, namespace, name)
    assert condition(live, "Complete") == "True", flux_plane.diagnostics(namespace, name)
    # one task per broker: all four joined with the certificate (the Job itself counts rank 0's
    # success; a worker still shutting down then is stopped by the success policy, not counted)
    assert log_lines(flux_plane.rank_log(namespace, name)) == ["hello world"] * 4
    secret = json.loads(
        flux_plane.cp.kubectl(
            "-n", namespace, "get", "secret", f"{name}-curve", "-o", "json"
        ).stdout
    )
    made = certificate.parse(base64.b64decode(secret["data"]["curve.cert"]).decode())
    # flux keygen records its own version in the certificate; the builtin generator does not
    assert ("keygen.flux-core-version" in dict(made.metadata)) == (strategy == "flux")
    e2e_report(
        f"keygen {strategy}: the Command's certificate formed a 4-broker instance "
        f"({stack.last().seconds:.1f}s to Job Complete)"
    )


def test_restricted_example_runs_under_pod_security_restricted(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    spec = yaml.safe_load((REPO / "examples" / "restricted.yaml").read_text())
    namespace = "restricted"
    labels = {f"pod-security.kubernetes.io/{k}": "restricted" for k in ("enforce", "warn")}
    flux_plane.cp.ensure(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": labels},
        }
    )
    spec["metadata"].pop("namespace", None)
    stack = deploy(
        module_engine,
        flux_project,
        flux_plane,
        "restricted",
        namespace,
        spec,
        "complete",
        create_namespace=False,
    )
    stack.up()
    job_name = spec["metadata"]["name"]
    wait_job_complete(flux_plane, namespace, job_name, JOB_TIMEOUT_S)
    # `id` as the command: the brokers and the command run as the pod's user, not root
    log = flux_plane.rank_log(namespace, job_name)
    ids = [line for line in log_lines(log) if line.startswith("uid=")]
    assert ids, flux_plane.diagnostics(namespace, job_name)
    assert all(line.startswith("uid=1000") and "gid=1000" in line for line in ids), log
    # the securityContext was enforced: no capability left in the main container
    pod = flux_plane.rank_pod(namespace, job_name)
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    # the kubelet's termination log is writable by the pod's user (uid 1000, no capability,
    # read-only paths aside): rank 0 says how its work ended there
    ended = live_status.rank0_termination(job_name, [pod]) or {}
    assert ended.get("message") == exitcodes.work_message(0) + "\n", ended
    e2e_report(
        f"restricted: {len(ids)} tasks ran as {ids[0]}; rank 0's termination message "
        f"{ended.get('message', '').strip()!r}"
    )


def connects(
    plane: FluxPlane, pod: dict[str, Any], ip: str, port: int, timeout: float = 3.0
) -> bool:
    """A TCP connection from ``pod``'s network namespace to ip:port succeeds within ``timeout``
    (the probe runs with the node's python3 in the pod's network only)."""
    probe = (
        "import socket,sys\n"
        "s=socket.socket(); s.settimeout(float(sys.argv[3]))\n"
        "try:\n s.connect((sys.argv[1], int(sys.argv[2]))); print('open')\n"
        "except OSError as e:\n print(type(e).__name__)\n"
    )
    meta = pod["metadata"]
    out = plane.in_pod_network(
        meta["namespace"], meta["name"], meta["labels"]["job-name"],
        "python3", "-c", probe, ip, str(port), str(timeout),
    )  # fmt: skip
    return out.strip() == "open"


def interactive(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": name},
        "spec": {
            "size": size,
            "interactive": True,
            "logging": {"quiet": True},
            "containers": [{"image": "ubuntu:24.04"}],
        },
    }


def test_network_policy_lets_the_mesh_talk_and_keeps_other_pods_out(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    namespace = "netpol"
    one = deploy(
        module_engine,
        flux_project,
        flux_plane,
        "netpol-a",
        namespace,
        interactive("mesh-a", 2),
        "ready",
    )
    one.up()
    two = deploy(
        module_engine,
        flux_project,
        flux_plane,
        "netpol-b",
        namespace,
        interactive("mesh-b", 2),
        "ready",
    )
    two.up()
    cp = flux_plane.cp
    policies = cp.items(f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies")
    assert len(policies) == 2, [p["metadata"]["name"] for p in policies]
    a0, a1 = (flux_plane.rank_pod(namespace, "mesh-a", i) for i in (0, 1))
    b0, b1 = (flux_plane.rank_pod(namespace, "mesh-b", i) for i in (0, 1))
    port = 8050
    # the brokers of each mesh form one instance: rank 1 reaches rank 0 through its mesh policy
    # (so each rank 0 listens: a refusal below is the policy's, not an empty port)
    for one, zero in ((a1, a0), (b1, b0)):
        wait_until(
            f"{one['metadata']['name']} connected to its rank 0",
            lambda one=one, zero=zero: connects(flux_plane, one, zero["status"]["podIP"], port),
            timeout=30,
        )
    assert not connects(flux_plane, b0, a0["status"]["podIP"], port), (
        "a pod of another MiniCluster reached mesh-a's rank 0"
    )
    # and the other way round: mesh-b's own broker port is closed to mesh-a
    assert not connects(flux_plane, a1, b0["status"]["podIP"], port)
    e2e_report(
        "netpol: mesh-a 1 -> 0 and mesh-b 1 -> 0 open; mesh-b -> mesh-a and mesh-a -> mesh-b "
        "refused by kube-router"
    )


def test_worker_pod_deleted_mid_run_is_replaced_and_rejoins(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    namespace = "rejoin"
    name = "flux-rejoin"
    stack = deploy(
        module_engine, flux_project, flux_plane, "rejoin", namespace, interactive(name, 2), "ready"
    )
    stack.up()
    cp = flux_plane.cp
    rank0 = flux_plane.rank_pod(namespace, name, 0)["metadata"]["name"]

    def up() -> int:
        try:
            out = flux_plane.exec(namespace, rank0, name, UP_BROKERS).strip()
        except (AssertionError, OSError):  # rank 0's container or its instance not up yet
            return -1
        return int(out) if out.isdigit() else -1

    wait_until("both brokers up at rank 0", lambda: up() == 2, timeout=60)
    first = flux_plane.rank_pod(namespace, name, 1)
    first_uid = first["metadata"]["uid"]
    cp.kubectl("-n", namespace, "delete", "pod", first["metadata"]["name"], "--grace-period=2")
    wait_until("rank 0 to see the worker go", lambda: up() == 1, timeout=60)

    def replaced() -> Any:
        pod = flux_plane.rank_pod(namespace, name, 1)
        return pod if pod and pod["metadata"]["uid"] != first_uid else None

    new = wait_until("the Job controller's replacement of index 1", replaced, timeout=60)
    t0 = time.monotonic()
    wait_until("the new worker's broker to rejoin rank 0", lambda: up() == 2, timeout=90)
    assert new["metadata"]["name"] != first["metadata"]["name"]
    e2e_report(
        f"rejoin: index 1 deleted, replaced by the Job controller ({new['metadata']['name']}), "
        f"its broker rejoined rank 0 {time.monotonic() - t0:.1f}s after the replacement appeared"
    )
