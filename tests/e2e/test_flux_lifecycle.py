"""Nothing lost inside Flux: a persistent MiniCluster's queue and job history across what
Kubernetes and Pulumi do to its pods, with real brokers under the real Job controller on real
nodes (fluxnodes.FluxPlane).

The MiniCluster serves work for as long as it lives (interactive) and mounts a claim, so its
archive defaults to ``<claim>/flux-archives/<name>.tgz`` (core.spec.archive): rank 0 dumps the
instance there whenever its broker stops and restores it when a broker starts. The claim is bound
to a PersistentVolume of the host's directory, which every node sees (the nodes share the host's
file system, as pods of a cloud share a network file system or a disk that follows them).

Into it go 100 jobs, as the issue asks: 50 that finished (exit codes 0, 1 and 2, each with its
output) and 50 held in the queue (urgency 0: pending until a person releases them), and a job
running. Then, in turn:

- rank 0's pod is deleted: the Job controller makes a new one, which restores the archive, and
  the worker, whose broker exited when the instance shut down, rejoins it;
- a ``pulumi up`` that replaces the Job (a new pod template);
- ``pulumi destroy`` and ``pulumi up``, the claim kept.

After each: ``flux jobs -a`` lists every finished job with its exit code and its output, the held
jobs are still pending, and the running job carries the exception Flux gives a job its instance
lost; at the end the held jobs are released and complete.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fluxnodes import UP_BROKERS, FluxPlane, deploy, localize
from kube import wait_until
from stackrun import PREFIX, Engine

pytestmark = pytest.mark.flux

NAME = "keeper"
NAMESPACE = "lifecycle"
CLAIM = "keeper-data"
MOUNT = "/data"
ARCHIVE = f"{MOUNT}/flux-archives/{NAME}.tgz"
FINISHED = 50  # exit codes i % 3 for i in 1..50
HELD = 50  # the issue's 100 jobs: half finished, half pending
# Flux's own client from the view, on PATH, in a shell connected to the broker's socket (found
# as UP_BROKERS finds it).
FLUX_SHELL = (
    "sock=$(find /mnt/flux -maxdepth 5 -type s -name local | head -1); "
    'flux=$(find /mnt/flux -maxdepth 4 -type f -path "*/bin/flux" | head -1); '
    'PATH="$(dirname "$flux"):$PATH" FLUX_URI="local://$sock" sh -c '
)


def spec(marker: str = "") -> dict[str, Any]:
    """An interactive MiniCluster of two brokers with the claim mounted; ``marker`` changes the
    pod template (a replacing ``up``)."""
    container: dict[str, Any] = {
        "image": "ubuntu:24.04",
        "volumes": {"data": {"path": MOUNT, "claimName": CLAIM}},
    }
    if marker:
        container["environment"] = {"KEEPER_GENERATION": marker}
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": NAME},
        "spec": {
            "size": 2,
            "interactive": True,
            "logging": {"quiet": True},
            "containers": [container],
        },
    }


def storage(plane: FluxPlane, where: Path) -> None:
    """The namespace, and a claim bound to a PersistentVolume of the host directory ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o777)  # the brokers run as the image's user
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{NAMESPACE}-{CLAIM}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": str(where), "type": "Directory"},
                "claimRef": {"namespace": NAMESPACE, "name": CLAIM},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": CLAIM, "namespace": NAMESPACE},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": f"{NAMESPACE}-{CLAIM}",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ]
    plane.cp.kubectl("apply", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1",
                                                           "items": objects}))  # fmt: skip


class Instance:
    """The MiniCluster's Flux instance, seen through rank 0's pod."""

    def __init__(self, plane: FluxPlane) -> None:
        self.plane = plane

    def rank0(self) -> str:
        pod = self.plane.rank_pod(NAMESPACE, NAME, 0, phase="Running")
        assert pod is not None, "rank 0 is not running"
        return str(pod["metadata"]["name"])

    def flux(self, script: str) -> str:
        """``script`` run with Flux's commands against the instance."""
        return self.plane.exec(NAMESPACE, self.rank0(), NAME, FLUX_SHELL + shlex.quote(script))

    def brokers_up(self) -> int:
        try:
            out = self.plane.exec(NAMESPACE, self.rank0(), NAME, UP_BROKERS).strip()
        except (AssertionError, OSError):  # rank 0's container or its instance not up yet
            return -1
        return int(out) if out.isdigit() else -1

    def jobs(self) -> list[dict[str, str]]:
        """Every job the instance knows: its name, state, result, exit code, exception, id."""
        out = self.flux(
            "flux jobs -a -n --count=0 "
            "-o '{name}|{state}|{result}|{returncode}|{exception.type}|{id.f58}'"
        )
        keys = ("name", "state", "result", "code", "exception", "id")
        return [dict(zip(keys, line.split("|"), strict=True)) for line in out.strip().splitlines()]

    def named(self, name: str) -> list[dict[str, str]]:
        return [job for job in self.jobs() if job["name"] == name]

    def joined(self, timeout: float = 180) -> None:
        try:
            wait_until("both brokers up at rank 0", lambda: self.brokers_up() == 2, timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.plane.diagnostics(NAMESPACE, NAME)}") from None


def check_kept(instance: Instance, event: str) -> dict[str, str]:
    """After ``event``: the finished jobs with their exit codes and output, the held jobs still
    pending, the job that ran when the instance stopped ended by an exception (that job)."""
    # each finished job's exit code and output: "output of done<i>", and it exited i % 3
    lines = instance.flux(
        "flux jobs -a -n --count=0 --name=done -o '{id.f58} {state} {returncode}' | "
        "while read -r id state code; do "
        'printf "%s|%s|%s\\n" "$state" "$code" "$(flux job attach "$id" < /dev/null 2>/dev/null)"; '
        "done"
    ).splitlines()
    seen = []
    for line in lines:
        state, code, output = line.split("|", 2)
        assert state == "INACTIVE", (event, line)
        assert output.startswith("output of done"), (event, line)
        i = int(output.removeprefix("output of done"))
        assert code == str(i % 3), (event, line)
        seen.append(i)
    assert sorted(seen) == list(range(1, FINISHED + 1)), (event, sorted(seen))
    held = instance.named("held")
    assert len(held) == HELD, (event, len(held))
    assert all(job["state"] in ("SCHED", "DEPEND", "PRIORITY") for job in held), (event, held)
    (sleeper,) = instance.named("sleeper")
    assert sleeper["state"] == "INACTIVE", (event, sleeper)
    assert sleeper["result"] != "COMPLETED", (event, sleeper)
    assert sleeper["exception"], (event, sleeper)
    return sleeper


def test_queue_and_history_survive_rank0_loss_replacement_and_destroy(
    flux_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    tmp_path: Path,
    e2e_report: Callable[[str], None],
) -> None:
    storage(flux_plane, tmp_path / "claim")
    archive_on_host = tmp_path / "claim" / "flux-archives" / f"{NAME}.tgz"
    stack = deploy(
        module_engine, flux_project, flux_plane, "keeper", NAMESPACE, spec(), "ready",
        create_namespace=False,
    )  # fmt: skip
    stack.up()
    instance = Instance(flux_plane)
    instance.joined()
    # the work: finished jobs with exit codes and output, held jobs, a running one
    instance.flux(
        f"flux submit --quiet --cc=1-{FINISHED} --job-name=done "
        "sh -c 'echo output of done{cc}; exit $(({cc} % 3))' && "
        f"flux submit --quiet --cc=1-{HELD} --urgency=0 --job-name=held hostname && "
        "flux submit --quiet --job-name=sleeper sleep 3600"
    )

    def settled() -> bool:
        jobs = instance.jobs()
        done = [j for j in jobs if j["name"] == "done" and j["state"] == "INACTIVE"]
        running = [j for j in jobs if j["name"] == "sleeper" and j["state"] == "RUN"]
        return len(done) == FINISHED and len(running) == 1

    wait_until("the finished jobs done and the sleeper running", settled, timeout=60)
    figures: list[str] = []

    # 1. rank 0's pod deleted: a new one restores, the worker rejoins
    first = flux_plane.rank_pod(NAMESPACE, NAME, 0)
    t0 = time.monotonic()
    flux_plane.cp.kubectl(
        "-n", NAMESPACE, "delete", "pod", first["metadata"]["name"], "--wait=false"
    )

    def replaced() -> Any:
        pod = flux_plane.rank_pod(NAMESPACE, NAME, 0, phase="Running")
        return pod if pod and pod["metadata"]["uid"] != first["metadata"]["uid"] else None

    wait_until("a new rank 0 pod", replaced, timeout=180)
    instance.joined()
    figures.append(f"rank 0 deleted -> restored and rejoined {time.monotonic() - t0:.1f}s")
    assert archive_on_host.is_file(), "rank 0 saved no archive as it stopped"
    sleeper = check_kept(instance, "rank 0's pod deleted")

    # 2. a `pulumi up` that replaces the Job
    stack.set_object(f"{PREFIX}:minicluster", {"spec": localize(spec("2")), "wait": "ready"})
    t0 = time.monotonic()
    stack.up()
    instance.joined()
    figures.append(f"replacing up -> restored {time.monotonic() - t0:.1f}s")
    check_kept(instance, "a replacing pulumi up")

    # 3. destroy, then up, the claim kept
    stack.destroy()
    assert archive_on_host.is_file()
    t0 = time.monotonic()
    stack.up()
    instance.joined()
    figures.append(f"destroy + up -> restored {time.monotonic() - t0:.1f}s")
    check_kept(instance, "pulumi destroy and up")

    # the held jobs run once released (a few at a time: each exec has a minute)
    ids = [job["id"] for job in instance.named("held")]
    for start in range(0, len(ids), 10):
        chunk = " ".join(ids[start : start + 10])
        instance.flux(f"for id in {chunk}; do flux job urgency $id default; done")

    def held_done() -> bool:
        return all(job["result"] == "COMPLETED" for job in instance.named("held"))

    wait_until("the released jobs completed", held_done, timeout=120)
    e2e_report(
        "lifecycle: "
        + "; ".join(figures)
        + f"; the running job after its instance stopped: {sleeper['result']} "
        f"({sleeper['exception']})"
    )
