"""An elastic MiniCluster with real Flux brokers under the real Job controller: the scaler rank 0
runs (core/inpod/scaler.py) grows its own Job when work waits for nodes and gives idle ranks back.

Through `pulumi up` on a real-node cluster (fluxnodes.FluxPlane; rank 0's scaler reaches the API
server through the `kubernetes` Service, as kube-proxy routes it):

- size 2, maxSize 4, autoscale from the stack config; a job that needs 4 nodes (by its tasks:
  `-n` of 4 ranks' cores, no `-N`) is submitted at rank 0: the Job grows to 4, the new brokers
  join (rank 0's `flux resource list`), the job runs;
- `refresh` then `up` while it is grown: no change, the size is not reset, `liveSize` says 4;
  an `up` that changes the Job's labels updates it in place and keeps the size;
- after the idle time the scaler drains ranks 2-3 and the Job shrinks back to 2: the pods of
  indexes 2 and 3 are gone, rank 0 sees those ranks offline, no Flux job and no pod failed;
- the scaler's token may patch its own Job only: patching another Job of the namespace with it is
  forbidden by the API server;
- turning autoscale off hands the size back to `size`.

The timeline (queue, Job size, brokers up) goes into the e2e findings.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from fluxnodes import APP_IMAGE, FluxPlane, localize
from kube import wait_until
from stackrun import PREFIX, Engine, Stack, changes_of, copy_project, new_certificate

from flux_minicluster.core.planning import autoscale

pytestmark = pytest.mark.flux

NAMESPACE = "elastic"
NAME = "flux-elastic"
IDLE_S = 20
INTERVAL_S = 3
JOB_SECONDS = 75  # long enough for a refresh and two ups while the Job is grown

# Rank 0's instance through its local socket, with the Flux of its view.
FLUX = (
    "sock=$(find /mnt/flux -maxdepth 5 -type s -name local | head -1); "
    'flux=$(find /mnt/flux -maxdepth 4 -type f -path "*/bin/flux" | head -1); '
    'run() { "$flux" proxy "local://$sock" "$flux" "$@"; }; '
)


def elastic_document(**extra: Any) -> dict[str, Any]:
    return localize(
        {
            "apiVersion": "flux-framework.org/v1alpha2",
            "kind": "MiniCluster",
            "metadata": {"name": NAME},
            "spec": {
                "size": 2,
                "maxSize": 4,
                "interactive": True,
                "flux": {"scheduler": {"simple": True}},
                "containers": [{"image": "ubuntu:24.04"}],
                **extra,
            },
        }
    )


class Timeline:
    """Every couple of seconds: the queue at rank 0, the Job's size, the brokers up."""

    def __init__(self, plane: FluxPlane, rank0: str) -> None:
        self.plane = plane
        self.rank0 = rank0
        self.rows: list[tuple[float, str, int, int, str]] = []
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def flux(self, script: str) -> str:
        return self.plane.exec(NAMESPACE, self.rank0, NAME, FLUX + script)

    def size(self) -> int:
        live = self.plane.cp.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{NAME}")
        return int(live["spec"]["parallelism"])

    def up(self) -> int:
        try:
            out = self.flux("run resource list -s up -no {nnodes}").strip()
        except (AssertionError, OSError):
            return -1
        return int(out) if out.isdigit() else -1

    def queue(self) -> str:
        try:
            return self.flux("run jobs -a -no '{state}:{nnodes}' | sort | uniq -c | xargs").strip()
        except (AssertionError, OSError):
            return "?"

    def sample(self) -> tuple[float, str, int, int, str]:
        pods = sorted(
            p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
            for p in self.plane.pods(NAMESPACE, NAME)
            if p["status"].get("phase") in ("Pending", "Running")
        )
        row = (time.monotonic() - self.t0, self.queue(), self.size(), self.up(), ",".join(pods))
        self.rows.append(row)
        return row

    def _run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(2)

    def table(self) -> str:
        lines = ["   t(s)  Job size  brokers up  pods (indexes)  queue at rank 0"]
        last = None
        for t, queue, size, up, pods in self.rows:
            if (queue, size, up, pods) == last:
                continue
            last = (queue, size, up, pods)
            lines.append(f"{t:7.1f}  {size:8d}  {up:10d}  {pods:14s}  {queue}")
        return "\n".join(lines)


def scaler_lines(plane: FluxPlane, rank0: str) -> list[str]:
    log = plane.container_log(NAMESPACE, rank0, NAME)
    return [line for line in log.splitlines() if line.startswith("autoscale: ")]


def test_queue_grows_and_shrinks_its_own_job(
    flux_plane: FluxPlane,
    module_engine: Engine,
    tmp_path_factory: pytest.TempPathFactory,
    e2e_report: Callable[[str], None],
) -> None:
    cp = flux_plane.cp
    project = copy_project(tmp_path_factory.mktemp("elastic") / "project")
    stack: Stack = module_engine.stack(
        project,
        "elastic",
        like="local",
        kubeconfig=cp.kubeconfig,
        context=cp.name,
        curve_cert=new_certificate(NAME),
    )
    stack.set(f"{PREFIX}:cluster.namespace", NAMESPACE)
    stack.set(f"{PREFIX}:cluster.createNamespace", "true")
    config = {
        "spec": elastic_document(),
        "wait": "ready",
        "autoscale": {"intervalSeconds": INTERVAL_S, "idleSeconds": IDLE_S},
    }
    stack.set_object(f"{PREFIX}:minicluster", config)
    stack.up()
    assert stack.outputs()["liveSize"] == 2

    rank0 = flux_plane.rank_pod(NAMESPACE, NAME, 0)["metadata"]["name"]
    timeline = Timeline(flux_plane, rank0)
    wait_until("2 brokers up at rank 0", lambda: timeline.up() == 2, timeout=120)
    timeline.thread.start()
    try:
        # Submitted as most jobs are, by tasks (-n) and not by nodes: job-list gives no node
        # count for it, and the scaler reads its cores over a rank's. It needs all 4 ranks.
        per_rank = int(timeline.flux("run resource list -s up -no {ncores}").strip()) // 2
        job = timeline.flux(f"run submit -n {4 * per_rank} sleep {JOB_SECONDS}").strip()
        t_submit = time.monotonic()
        wait_until("the Job grown to 4", lambda: timeline.size() == 4, timeout=90)
        t_grown = time.monotonic()
        wait_until("4 brokers up at rank 0", lambda: timeline.up() == 4, timeout=150)
        t_joined = time.monotonic()
        wait_until(
            "the 4-node job running",
            lambda: timeline.flux(f"run jobs -no {{state}} {job}").strip() == "RUN",
            timeout=60,
        )
        listing = timeline.flux("run resource list -no '{state}:{nnodes}:{ranks}:{nodelist}'")

        # Pulumi leaves the size to the scaler: refresh, then up, change nothing.
        stack.refresh()
        result = stack.up()
        unchanged = changes_of(result)
        assert set(unchanged) == {"same"}, unchanged
        assert timeline.size() == 4, "an up reset the size the scaler set"
        assert stack.outputs()["liveSize"] == 4
        # An unrelated change that updates the Job in place (its labels) keeps the size too.
        labelled = {**config, "spec": elastic_document(jobLabels={"team": "hpc"})}
        stack.set_object(f"{PREFIX}:minicluster", labelled)
        changed = changes_of(stack.up())
        live = cp.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{NAME}")
        assert changed.get("update") == 1, changed
        assert live["metadata"]["labels"]["team"] == "hpc"
        assert timeline.size() == 4, "an unrelated up reset the size the scaler set"

        wait_until(
            "the 4-node job completed",
            lambda: timeline.flux(f"run jobs -no {{result}} {job}").strip() == "COMPLETED",
            timeout=JOB_SECONDS + 90,
        )
        t_done = time.monotonic()
        wait_until("the Job shrunk back to 2", lambda: timeline.size() == 2, timeout=IDLE_S + 90)
        t_shrunk = time.monotonic()

        def gone() -> bool:
            live = {
                p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
                for p in flux_plane.pods(NAMESPACE, NAME)
            }
            return live == {"0", "1"} and timeline.up() == 2

        wait_until("the pods of indexes 2-3 gone and 2 brokers up", gone, timeout=90)
        t_gone = time.monotonic()
        timeline.sample()
    except AssertionError as err:
        log = flux_plane.container_log(NAMESPACE, rank0, NAME)
        tail = "\n".join(log.splitlines()[-60:])
        raise AssertionError(f"{err}\n{timeline.table()}\n--- rank 0:\n{tail}") from None
    finally:
        timeline.stop.set()
        timeline.thread.join(timeout=30)

    # Drained ranks leave `resource list -s up` at once; rank 0 marks them offline only once it
    # has seen their brokers go (killed at the pods' grace period): that may come later.
    wait_until(
        "ranks 2-3 offline at rank 0",
        lambda: timeline.flux("run resource status -s offline -no {ranks}").strip() == "2-3",
        timeout=90,
    )
    results = timeline.flux("run jobs -a -no {result}").split()
    assert results == ["COMPLETED"], results
    live = cp.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{NAME}")
    assert not live["status"].get("failed"), live["status"]
    lines = scaler_lines(flux_plane, rank0)
    actions = [line.split()[1] for line in lines]
    assert "action=grow" in actions, lines
    assert "action=drain" in actions, lines
    assert "action=shrink" in actions, lines
    for line in lines:
        for part in ("queue=", "idle=", "from=", "to=", "why="):
            assert part in line, line

    # The token rank 0 holds: its own Job only.
    other = "not-mine"
    cp.kubectl(
        "-n",
        NAMESPACE,
        "create",
        "job",
        other,
        f"--image={APP_IMAGE}",
        "--",
        "true",
    )
    token_dir = autoscale.TOKEN_DIR
    probe = f"""
import json, os, ssl, urllib.request, urllib.error
token = open("{token_dir}/token").read().strip()
ctx = ssl.create_default_context(cafile="{token_dir}/ca.crt")
# the container's environment (exec through nsenter starts with none of it)
env = dict(v.split("=", 1) for v in open("/proc/1/environ").read().split("\\0") if "=" in v)
base = "https://" + env["KUBERNETES_SERVICE_HOST"] + ":" + env["KUBERNETES_SERVICE_PORT"]
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={{"Authorization": "Bearer " + token,
                  "Content-Type": "application/merge-patch+json"}})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
jobs = "/apis/batch/v1/namespaces/{NAMESPACE}/jobs"
print(call("PATCH", jobs + "/{other}", {{"spec": {{"parallelism": 0}}}}),
      call("GET", jobs + "/{NAME}"), call("GET", jobs), call("DELETE", jobs + "/{NAME}"))
"""
    codes = flux_plane.exec(NAMESPACE, rank0, NAME, f"python3 - <<'PROBE'\n{probe}\nPROBE").split()
    assert codes == ["403", "200", "403", "403"], codes

    # A second up changes nothing; turning autoscale off hands the size back to `size`.
    assert set(changes_of(stack.up())) == {"same"}
    stack.set_object(f"{PREFIX}:minicluster", {**labelled, "autoscale": False})
    stack.up()
    live = cp.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{NAME}")
    assert live["spec"]["parallelism"] == live["spec"]["completions"] == 2
    assert "serviceAccountName" not in live["spec"]["template"]["spec"]

    e2e_report(
        f"autoscale: grew 2->4 {t_grown - t_submit:.1f}s after a 4-node job was submitted, "
        f"4 brokers up {t_joined - t_submit:.1f}s after; shrank 4->2 {t_shrunk - t_done:.1f}s "
        f"after the job ended (idleSeconds {IDLE_S}, intervalSeconds {INTERVAL_S}), pods of "
        f"indexes 2-3 gone {t_gone - t_done:.1f}s after; token: other Job 403, own Job 200, "
        f"list 403, delete 403; refresh+up while grown: no change, liveSize 4; a label change "
        f"updated the Job in place and kept size 4"
    )
    e2e_report("autoscale timeline:\n" + timeline.table())
    e2e_report("autoscale decisions:\n" + "\n".join(lines))
    e2e_report(f"autoscale resource list while grown:\n{listing.strip()}")
