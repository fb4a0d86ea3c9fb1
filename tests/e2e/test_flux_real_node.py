"""examples/hello-world.yaml on real nodes: the project renders it (`minicluster render`, as the
example's own header tells users), `kubectl apply` creates it on two real kubelets with containerd,
CoreDNS, kube-proxy and kube-router (realnode/cluster.py), and real Flux brokers run in the images
realnode/toolchain.py built: the application image the spec's container names and the flux view
image its init container copies Flux from. Nothing of the host's root file system is in a pod.

The spec names the images as a user names theirs: containers[0].image with imagePullPolicy Never
(the images were imported, no registry is reachable) and flux.container.image with pullAlways
false (the view's policy is IfNotPresent, which never pulls an image the node holds).

- the example as it is: the Job completes, `kubectl logs` of rank 0 is the four tasks' output;
- the same MiniCluster persistent (interactive): every pod Ready (the readiness probe is "this
  broker joined"), then `flux resource list` at rank 0 through `kubectl exec` sees every node up;
- and from the user's machine, with the user's kubeconfig: `minicluster flux NAME -- submit
  --wait ...` exits as the job did (3), `-- jobs -a` lists the jobs, `minicluster status -o
  json` counts them; a user without `pods/exec` (a ServiceAccount's token that may only get and
  list) gets the rest of the status and a problem saying the exec was refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fluxnodes import localize

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "minicluster-examples"
INDEX = "batch.kubernetes.io/job-completion-index"
JOB_TIMEOUT_S = 240
# what a user runs in rank 0's container: the view's environment, then Flux at the local socket
RESOURCE_LIST = (
    '. /mnt/flux/flux-view.sh && FLUX_URI="${fluxsocket}" flux resource list -s up -no {nnodes}'
)

pytestmark = pytest.mark.flux


def hello_world(name: str, **spec: Any) -> dict[str, Any]:
    """examples/hello-world.yaml with the images built here, under another name if given."""
    doc = localize(yaml.safe_load((REPO / "examples" / "hello-world.yaml").read_text()))
    doc["metadata"]["name"] = name
    doc["spec"].update(spec)
    return doc


def render(doc: dict[str, Any], tmp_path: Path) -> str:
    """`minicluster render FILE --curve-cert CERT`: the objects a user applies with kubectl."""
    path = tmp_path / f"{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flux_minicluster.cli.main",
            "render",
            str(path),
            "--curve-cert",
            str(tmp_path / f"{doc['metadata']['name']}.cert"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def minicluster_cli(
    rc: Any, command: str, *args: str, kubeconfig: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`minicluster COMMAND --kubeconfig K ARGS` as a user runs it: kubectl on PATH (the
    cluster's own), the admin's kubeconfig unless another is given."""
    env = {**os.environ, "PATH": f"{rc.nodes_dir / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    config = str(kubeconfig or rc.cp.kubeconfig)
    return subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", command, "--kubeconfig", config, *args],
        capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def exec_refused_kubeconfig(rc: Any, tmp_path: Path) -> Path:
    """A kubeconfig of a ServiceAccount that may get and list Jobs and pods in the namespace,
    and nothing else (no pods/exec): a user who may look but not exec."""
    for args in (
        ("create", "serviceaccount", "looker"),
        ("create", "role", "looker", "--verb=get,list", "--resource=jobs,pods"),
        (
            "create",
            "rolebinding",
            "looker",
            "--role=looker",
            f"--serviceaccount={NAMESPACE}:looker",
        ),
    ):
        account = [f"--serviceaccount={NAMESPACE}:looker"] if args[1] == "rolebinding" else []
        rc.kubectl(*args, *account, "-n", NAMESPACE)
    token = rc.kubectl("create", "token", "looker", "-n", NAMESPACE).stdout.strip()
    config = yaml.safe_load(rc.cp.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path = tmp_path / "looker.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def pods(rc: Any, job: str) -> list[dict[str, Any]]:
    out = rc.kubectl("get", "pods", "-n", NAMESPACE, "-l", f"job-name={job}", "-o", "yaml")
    return list(yaml.safe_load(out.stdout)["items"])


def rank0(rc: Any, job: str) -> str:
    found = [p for p in pods(rc, job) if p["metadata"]["labels"].get(INDEX) == "0"]
    assert found, f"no pod of index 0 of Job {job}\n{diagnostics(rc, job)}"
    return str(found[0]["metadata"]["name"])


def diagnostics(rc: Any, job: str) -> str:
    """Each pod's phase, node and the logs of its containers, then the cluster's own logs."""
    out = []
    for p in pods(rc, job):
        name = p["metadata"]["name"]
        out.append(
            f"--- {name} on {p['spec'].get('nodeName')}: {p['status'].get('phase')} "
            f"{[(c['name'], c.get('state')) for c in p['status'].get('containerStatuses', [])]}"
        )
        for container in ("flux-view", job):
            res = rc.kubectl("logs", "-n", NAMESPACE, name, "-c", container, check=False)
            out.append(f"[{container}] {res.stdout[-1500:]}{res.stderr[-300:]}")
    return "\n".join(out) + "\n" + str(rc.diagnostics())


def job_condition(rc: Any, job: str) -> str | None:
    live = yaml.safe_load(rc.kubectl("get", "job", "-n", NAMESPACE, job, "-o", "yaml").stdout)
    for cond in live.get("status", {}).get("conditions", []):
        if cond["status"] == "True" and cond["type"] in ("Complete", "Failed"):
            return str(cond["type"])
    return None


def wait(rc: Any, job: str, what: str, predicate: Callable[[], bool]) -> None:
    """``rc.wait_for`` (which also fails when a piece of the cluster died), with the pods' own
    state and logs in the failure."""
    from realnode.cluster import RealNodeError

    try:
        rc.wait_for(what, predicate, timeout=JOB_TIMEOUT_S, interval=0.5)
    except RealNodeError as exc:
        raise AssertionError(f"{exc}\n{diagnostics(rc, job)}") from None


def test_hello_world_runs_on_real_nodes_from_images_built_here(
    real_flux_cluster: Any, tmp_path: Path, e2e_report: Callable[[str], None]
) -> None:
    rc = real_flux_cluster
    rc.kubectl("create", "namespace", NAMESPACE)

    # the example as it is: four brokers, `echo hello world` on each node, the Job completes
    job = "flux-hello"
    manifests = render(hello_world(job), tmp_path)
    t0 = time.monotonic()
    rc.kubectl("apply", "-f", "-", input=manifests)
    outcome: list[str | None] = [None]

    def ended() -> bool:
        outcome[0] = job_condition(rc, job)
        return outcome[0] is not None

    wait(rc, job, "Job flux-hello Complete or Failed", ended)
    complete_s = time.monotonic() - t0  # from apply
    assert outcome[0] == "Complete", diagnostics(rc, job)
    nodes = {p["spec"]["nodeName"] for p in pods(rc, job)}
    # rank 0's output as the README reads it
    log = rc.kubectl("logs", "-n", NAMESPACE, rank0(rc, job), "-c", job).stdout
    assert [line.strip() for line in log.strip().splitlines()] == ["hello world"] * 4, (
        f"rank 0's log:\n{log}\n{diagnostics(rc, job)}"
    )

    # persistent: every broker joined (each pod Ready), then rank 0's view of the instance
    job = "flux-hello-up"
    manifests = render(hello_world(job, interactive=True), tmp_path)
    t0 = time.monotonic()
    rc.kubectl("apply", "-f", "-", input=manifests)

    def all_ready() -> bool:
        live = pods(rc, job)
        return len(live) == 4 and all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
            for p in live
        )

    wait(rc, job, "every broker of flux-hello-up joined (every pod Ready)", all_ready)
    joined_s = time.monotonic() - t0
    res = rc.kubectl(
        "exec", "-n", NAMESPACE, rank0(rc, job), "-c", job, "--", "bash", "-c", RESOURCE_LIST,
        check=False,
    )  # fmt: skip
    assert (res.returncode, res.stdout.strip()) == (0, "4"), (
        f"{res.stdout}\n{res.stderr}\n{diagnostics(rc, job)}"
    )

    # flux from the user's machine: the exit code of a job passes through, jobs -a lists it
    where = (job, "-n", NAMESPACE)
    t0 = time.monotonic()
    failing = minicluster_cli(rc, "flux", *where, "--", "submit", "--wait", "sh", "-c", "exit 3")
    submit_s = time.monotonic() - t0
    assert failing.returncode == 3, f"{failing}\n{diagnostics(rc, job)}"
    ok = minicluster_cli(rc, "flux", *where, "--", "submit", "--wait", "hostname")
    assert ok.returncode == 0, f"{ok}\n{diagnostics(rc, job)}"
    listed = minicluster_cli(
        rc, "flux", *where, "--", "jobs", "-a", "--no-header", "--format={result} {returncode}"
    )
    assert listed.returncode == 0, listed.stderr
    assert sorted(listed.stdout.split("\n")[:-1]) == ["COMPLETED 0", "FAILED 3"], listed
    t0 = time.monotonic()
    shown = minicluster_cli(rc, "status", *where, "-o", "json")
    status_s = time.monotonic() - t0
    assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)
    assert (found["phase"], found["problems"]) == ("ready", []), found
    assert found["jobs"] == {"pending": 0, "running": 0, "completed": 1, "failed": 1,
                             "cancelled": 0, "timeout": 0}, found  # fmt: skip

    # a user who may look but not exec: the rest of the status, and why the jobs are missing
    looker = exec_refused_kubeconfig(rc, tmp_path)
    refused = minicluster_cli(rc, "status", *where, "-o", "json", kubeconfig=looker)
    assert refused.returncode == 0, refused.stderr
    found = json.loads(refused.stdout)
    assert (found["phase"], found["jobs"]) == ("ready", None), found
    assert "pods/exec" in found["problems"][0]["message"], found
    e2e_report(
        f"hello-world on {len(nodes)} real nodes: apply to Job Complete {complete_s:.1f}s; "
        f"persistent: apply to every broker joined (4 pods Ready) {joined_s:.1f}s; "
        f"`minicluster flux -- submit --wait` {submit_s:.1f}s, `minicluster status` with the "
        f"jobs {status_s:.1f}s"
    )
    e2e_report("real cluster start: " + ", ".join(f"{k} {v:.1f}s" for k, v in rc.timings.items()))
