"""MPI across a MiniCluster's pods with real brokers on real nodes, for two MPIs: `pulumi up` (the
real engine and provider) creates the MiniCluster on a two-node real cluster (conftest's
``mpi_plane``: a FluxPlane whose nodes also hold the two MPI application images of
realnode/toolchain.py, each with the OSU Micro-Benchmarks and realnode/mpi_check.c in
/usr/local/bin), the mesh NetworkPolicy enforced by kube-router and the default security context
by the kubelet and runc. Nothing of Flux is in either image:

- ``openmpi``, localhost/flux-mpi:bookworm (piece flux-mpi): Debian's Open MPI 4.1, which finds
  Flux's PMI through its own `flux` component (the job shell's FLUX_PMI_LIBRARY_PATH);
- ``mpich``, localhost/flux-mpich:bookworm (piece flux-mpich): MPICH 4.0.2 built from Debian's
  source with the ch3:nemesis device (TCP) and the simple PMI, which speaks PMI-1 over the
  PMI_FD of Flux's job shell (its default PMI). Debian's own `mpich` (ch4:ucx) hangs in
  MPI_Finalize across pods (../shared/reference/mpi/README.md): every run here must END, the Job
  Complete before its deadline.

No spec asks for ``-o cpu-affinity``: each pod's resources come from `flux R encode --local`, so
every pod of a node sees the same cores, where Flux's default binding would stack the ranks of
co-located pods on one core and busy-polling MPI then starves itself
(../shared/reference/mpi/README.md: 545 s against 16 s for LAMMPS on 2 cores). The entrypoint sees
that the pod's cores are the node's and gives the job shell cpu-affinity=off by default; a rank's
own allowed cores are checked. Open MPI's ranks yield when idle
(``OMPI_MCA_mpi_yield_when_idle=1``): this machine runs two nodes, four pods, on two cores.
MPICH's ch3:nemesis already calls sched_yield every MPIR_CVAR_POLLS_BEFORE_YIELD (1000) polls of
a busy wait: its ranks run with its defaults. The OSU pods mount a memory emptyDir at /dev/shm,
where Open MPI's shared-memory files then go (checked in a rank's environment). A pod
with cores of its own, where Flux keeps binding: test_flux_placement.

- OSU latency and bandwidth between two pods (one rank per pod, `flux run -N2 -n2`), each MPI;
- an allreduce over every pod (4 pods, one rank each), the user's command as Flux submits it,
  each MPI;
- a failing MPI job (a rank calls MPI_Abort, or exits 5; Open MPI): a Failed Job at once (its
  failure policy on rank 0's WORK_FAILED), with and without ``logging.strict``, the work run once
  and its own code in rank 0's termination message; under restartPolicy OnFailure a Complete Job
  whose termination message and `minicluster status` say the work failed.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fluxnodes import FluxPlane, deploy, minicluster
from kube import condition, job, wait_until
from osulog import osu_table, section
from stackrun import Engine

from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.deployed import status as live_status

MPI_IMAGE = "localhost/flux-mpi:bookworm"  # pyproject's flux-mpi-tags
MPICH_IMAGE = "localhost/flux-mpich:bookworm"  # pyproject's flux-mpich-tags
YIELD = {"OMPI_MCA_mpi_yield_when_idle": "1"}
OSU_MAX = 1 << 20  # bytes: OSU's default 4 MiB top size takes 20 s of bandwidth here
BOUND_MAX = 1 << 12  # bytes: bound ranks stack on one core here, slow at larger sizes
# What an MPI rank is given: the variables the MPIs' bootstraps read, its shared-memory room.
ENVIRONMENT = (
    'sh -c \'env | sort | grep -E "^(PATH|LD_LIBRARY_PATH|FLUX_PMI|PMI|OMPI|MPIR|MPICH|TMPDIR)" | '
    'cut -c1-240; df -h /dev/shm "${TMPDIR:-/tmp}" | tail -n +2; '
    'echo "cores $(sed -n "s/^Cpus_allowed_list:\\s*//p" /proc/self/status) of '
    "$(cat /sys/devices/system/cpu/online)\"'"
)
# The MPI library mpi_check loads, as the dynamic loader finds it in the image.
LIBRARY = "sh -c 'ldd /usr/local/bin/mpi_check | grep -E \"libmpi[.]\"'"
OSU_END_S = 180  # the OSU Job's deadline (Open MPI: 62-104 s from `up` to Complete)
# The allreduce Job's deadline: Open MPI takes 16-22 s from `up` to Complete, MPICH 20 s, but its
# four busy-polling ranks on this machine's two cores took 6.4 ms an allreduce in pods (1000 of
# them timed), 15 to 52 ms under more load outside them.
ALLREDUCE_END_S = 150


@dataclasses.dataclass(frozen=True)
class Flavor:
    """An MPI of the scenarios: its image, what every rank is given, what a rank's environment
    shows of its bootstrap, the library mpi_check loads, and whether OSU also measures two ranks
    that Flux binds to one core (per-task on pods sharing the node's cores)."""

    title: str
    image: str
    environment: dict[str, str]
    bootstrap: str  # a line of a rank's environment (re.MULTILINE)
    library: str  # in ldd's line of it
    bound: bool = True


FLAVORS = {
    # Open MPI's shared-memory files in the memory emptyDir, not under the job's tmpdir on disk
    "openmpi": Flavor(
        "Open MPI",
        MPI_IMAGE,
        YIELD,
        r"^OMPI_MCA_btl_vader_backing_directory=/dev/shm/flux-jobtmp-",
        "libmpi.so.40 => ",
    ),
    # MPICH's simple PMI: the job shell's PMI-1 server on an inherited descriptor. Not bound:
    # ch3:nemesis spins (a sched_yield every MPIR_CVAR_POLLS_BEFORE_YIELD polls, a poll() of its
    # sockets every 128 to 512), two such ranks on one core wait on each other's time slices.
    "mpich": Flavor(
        "MPICH",
        MPICH_IMAGE,
        {},
        r"^PMI_FD=\d+$",
        "libmpi.so.12 => /opt/mpich/lib/libmpi.so.12",
        bound=False,
    ),
}
SHM = {"shm": {"emptyDir": True, "emptyDirMedium": "memory", "emptyDirSizeLimit": "256Mi"}}

pytestmark = pytest.mark.flux


def mpi_spec(
    name: str,
    size: int,
    container: dict[str, Any],
    flavor: Flavor = FLAVORS["openmpi"],
    **spec: Any,
) -> dict[str, Any]:
    """A quiet MiniCluster of ``size`` pods, one rank per pod, with what ``flavor`` gives every
    rank (Open MPI's idle ranks yielding, see the module's docstring)."""
    environment = {**flavor.environment, **container.get("environment", {})}
    container = {**container, "environment": environment} if environment else container
    return minicluster(name, size, container, tasks=size, **spec)


def hello_hosts(log: str) -> dict[int, str]:
    return {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^hello from rank (\d+) of \d+ on (\S+)$", log, flags=re.MULTILINE)
    }


def run_to_completion(
    plane: FluxPlane,
    engine: Engine,
    project: Path,
    namespace: str,
    spec: dict[str, Any],
    image: str = MPI_IMAGE,
) -> tuple[float, str]:
    """`pulumi up` of ``spec`` in ``namespace`` with `wait: complete` (the stack named as the
    namespace), every container running ``image``: the seconds `up` took and rank 0's log, once
    the Job is Complete. A run that does not end (an MPI hanging in MPI_Finalize) fails its Job
    at the spec's deadlineSeconds, and `up` with it."""
    name = spec["metadata"]["name"]
    stack = deploy(engine, project, plane, namespace, namespace, spec, "complete", image=image)
    stack.up()
    live = job(plane.cp, namespace, name)
    assert condition(live, "Complete") == "True", plane.diagnostics(namespace, name)
    deadline = spec["spec"].get("deadlineSeconds")
    if deadline:
        assert stack.last().seconds < deadline, plane.diagnostics(namespace, name)
    return stack.last().seconds, plane.rank_log(namespace, name)


@pytest.mark.parametrize("mpi", sorted(FLAVORS))
def test_osu_latency_and_bandwidth_between_two_pods(
    mpi_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    mpi: str,
    e2e_report: Callable[[str], None],
) -> None:
    """osu_latency and osu_bw with one rank in each of two pods (`flux run -N2 -n2`), after
    mpi_check shows the two ranks are on different pods: the script is the launcher's. Every
    `flux run` of the script must end (the launcher's exit ends the Job), within OSU_END_S."""
    flavor = FLAVORS[mpi]
    name, namespace = "osu", f"mpi-osu-{mpi}"
    run = "flux run -N2 -n2"
    script = "\n".join(
        [
            "set -e",
            "echo '=== mpi_check'",
            f"{run} mpi_check",
            "echo '=== osu_latency'",
            f"{run} osu_latency -m {OSU_MAX}",
            "echo '=== osu_bw'",
            f"{run} osu_bw -m {OSU_MAX}",
            "echo '=== osu_latency one pod'",
            f"flux run -N1 -n2 osu_latency -m {OSU_MAX}",
            "echo '=== osu_latency bound'",
            f"flux run -N2 -n2 -o cpu-affinity=per-task osu_latency -m {BOUND_MAX}"
            if flavor.bound
            else "echo not run",
            "echo '=== bound cores'",
            "flux run -N1 -n1 -o cpu-affinity=per-task grep Cpus_allowed_list /proc/self/status",
            "echo '=== environment'",
            f"flux run -N1 -n1 {ENVIRONMENT}",
            "echo '=== library'",
            f"flux run -N1 -n1 {LIBRARY}",
            "echo '=== end'",
        ]
    )
    container = {"launcher": True, "commands": {"script": script}, "volumes": SHM}
    spec = mpi_spec(name, 2, container, flavor, deadlineSeconds=OSU_END_S)
    seconds, log = run_to_completion(
        mpi_plane, module_engine, flux_project, namespace, spec, flavor.image
    )
    assert "=== end" in log, f"rank 0's log:\n{log}\n" + mpi_plane.diagnostics(namespace, name)
    hosts = hello_hosts(section(log, "mpi_check"))
    assert sorted(hosts) == [0, 1], log
    assert hosts[0] != hosts[1], f"both ranks on {hosts[0]}"
    latency = osu_table(section(log, "osu_latency"))
    bandwidth = osu_table(section(log, "osu_bw"))
    assert latency.keys() >= {8, OSU_MAX}, log
    assert bandwidth.keys() >= {8, OSU_MAX}, log
    assert all(v > 0 for v in [*latency.values(), *bandwidth.values()]), log
    local = osu_table(section(log, "osu_latency one pod"))
    assert local.keys() >= {8, OSU_MAX}, log
    environment = section(log, "environment")
    # unbound: the rank may run on every core its pod may, which are the node's
    cores = re.search(r"^cores (\S+) of (\S+)$", environment, flags=re.MULTILINE)
    assert cores, environment
    assert cores.group(1) == cores.group(2), environment
    # a job that asks for binding is bound: one core of the pod's for its one task
    assert re.search(r"Cpus_allowed_list:\s*\d+$", section(log, "bound cores")), log
    bound = osu_table(section(log, "osu_latency bound"))
    if flavor.bound:
        assert bound.keys() >= {8, BOUND_MAX}, log
        bound_figures = f"8 B {bound[8]:.2f} us, 4 KiB {bound[BOUND_MAX]:.1f} us"
    else:
        bound_figures = "not run"
    assert re.search(flavor.bootstrap, environment, flags=re.MULTILINE), environment
    assert flavor.library in section(log, "library"), log
    nodes = {
        p["spec"].get("hostname"): p["spec"].get("nodeName")
        for p in mpi_plane.pods(namespace, name)
    }
    e2e_report(
        f"OSU between pods {hosts[0]} and {hosts[1]} (nodes {nodes.get(hosts[0])}, "
        f"{nodes.get(hosts[1])}; {flavor.title}, unbound by default): latency "
        f"8 B {latency[8]:.2f} us, 1 MiB {latency[OSU_MAX]:.1f} us; bandwidth 8 B "
        f"{bandwidth[8]:.2f} MB/s, 1 MiB {bandwidth[OSU_MAX]:.1f} MB/s; pulumi up to Job "
        f"Complete {seconds:.1f}s; within one pod: latency 8 B {local[8]:.2f} us, 1 MiB "
        f"{local[OSU_MAX]:.1f} us; between pods with -o cpu-affinity=per-task (each pod's "
        f"R names the same two cores): {bound_figures}"
    )
    e2e_report(
        f"a rank's environment ({flavor.title}): "
        + " | ".join([*environment.splitlines(), *section(log, "library").split()[:3]])
    )


@pytest.mark.parametrize("mpi", sorted(FLAVORS))
def test_an_allreduce_over_every_pod(
    mpi_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    mpi: str,
    e2e_report: Callable[[str], None],
) -> None:
    """mpi_check as the MiniCluster's command (Flux submits it: `-N4 -n4` and the option flags):
    every rank on its own pod says hello, the sum of the ranks adds up at every rank, and every
    rank gets through MPI_Finalize: the Job is Complete within ALLREDUCE_END_S."""
    flavor = FLAVORS[mpi]
    name, namespace, size = "allreduce", f"mpi-allreduce-{mpi}", 4
    spec = mpi_spec(name, size, {"command": "mpi_check"}, flavor, deadlineSeconds=ALLREDUCE_END_S)
    seconds, log = run_to_completion(
        mpi_plane, module_engine, flux_project, namespace, spec, flavor.image
    )
    hosts = hello_hosts(log)
    assert sorted(hosts) == list(range(size)), log
    assert len(set(hosts.values())) == size, f"ranks share pods: {hosts}"
    want = size * (size - 1) // 2
    assert f"allreduce: sum={want} expected={want} OK" in log, log
    timing = re.search(r"allreduce: (\d+) in ([\d.]+) s \(([\d.]+) us each\)", log)
    assert timing, log
    e2e_report(
        f"allreduce over {size} pods ({flavor.title}): {timing.group(3)} us each "
        f"({timing.group(1)} in {timing.group(2)} s); pulumi up to Job Complete {seconds:.1f}s"
    )


def job_outcome(plane: FluxPlane, namespace: str, name: str) -> Any:
    """The Job once it is Complete or Failed (None before)."""
    live = job(plane.cp, namespace, name)
    if live and "True" in (condition(live, "Complete"), condition(live, "Failed")):
        return live
    return None


def pod_outcomes(plane: FluxPlane, namespace: str, name: str) -> list[str]:
    """Each pod's index, phase, the Flux container's restarts and exit codes (the previous
    instance's first) and the last line its current instance printed."""
    out = []
    for pod in plane.pods(namespace, name):
        index = pod["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index")
        codes, restarts = [], 0
        for status in pod["status"].get("containerStatuses", []):
            if status["name"] != name:
                continue
            restarts = status.get("restartCount", 0)
            for state in (status.get("lastState", {}), status.get("state", {})):
                if "terminated" in state:
                    codes.append(str(state["terminated"].get("exitCode")))
        res = plane.rc.kubectl(
            "logs", "-n", namespace, pod["metadata"]["name"], "-c", name, check=False, timeout=30
        )
        last = (res.stdout.strip().splitlines() or ["-"])[-1][:160]
        out.append(
            f"index {index} {pod['status'].get('phase')} restarts {restarts} exit "
            f"{'/'.join(codes) or '-'} last line {last!r}"
        )
    return sorted(out)


def rank0_ending(plane: FluxPlane, namespace: str, name: str) -> dict[str, Any] | None:
    """How rank 0's Flux container last ended (exitCode, message), as the kubelet tells it."""
    terminated = live_status.rank0_termination(name, plane.pods(namespace, name))
    return dict(terminated) if terminated is not None else None


@pytest.mark.parametrize(
    ("mode", "strict", "restart"),
    [
        ("abort", False, None),
        ("abort", True, None),
        ("exit", False, None),
        ("exit", True, "OnFailure"),
    ],
    ids=["abort-default", "abort-strict", "exit-default", "exit-strict-on-failure"],
)
def test_a_failing_mpi_job_fails_the_job(
    mpi_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    mode: str,
    strict: bool,
    restart: str | None,
    e2e_report: Callable[[str], None],
) -> None:
    """Rank 1 of two fails: ``abort``, it calls MPI_Abort(MPI_COMM_WORLD, 3) (Open MPI's flux
    component raises a job exception through Flux's PMI and Flux kills the other rank);
    ``exit``, it exits 5 after MPI_Finalize. `flux submit --watch` at rank 0 returns nonzero.

    With the default restartPolicy (Never, on the 1.36 control plane) rank 0's entrypoint exits
    WORK_FAILED whatever logging.strict says, and the Job's failure policy fails it at once
    (reason PodFailurePolicy, not its deadline, here 120 s), with no second run of the work and
    the work's own code in rank 0's termination message. With restartPolicy OnFailure (the
    user's choice) rank 0 exits 0 so that the work is not run again: the Job completes, and the
    termination message and `minicluster status` tell that the work failed. `pulumi up` only
    creates the Job (`wait: none`)."""
    name, deadline = "fail", 120
    namespace = f"mpi-{mode}-{'strict' if strict else 'default'}"
    if restart:
        namespace += f"-{restart.lower()}"
    spec = mpi_spec(
        name,
        2,
        {"command": f"mpi_check {mode} 1"},
        logging={"quiet": True, "strict": strict},
        deadlineSeconds=deadline,
        **({"pod": {"restartPolicy": restart}} if restart else {}),
    )
    stack = deploy(
        module_engine, flux_project, mpi_plane, namespace, namespace, spec, "none", image=MPI_IMAGE
    )
    seen: dict[str, Any] = {"rank0": set()}

    def ended() -> Any:
        # what the pods show, kept while they exist: a Job that fails deletes its running pods
        pods = pod_outcomes(mpi_plane, namespace, name)
        rank0 = mpi_plane.rank_pod(namespace, name)
        if pods and rank0 is not None:
            seen["rank0"].add(rank0["metadata"]["name"])
            log = mpi_plane.container_log(namespace, rank0["metadata"]["name"], name)
            seen["pods"] = pods
            if "hello from rank" in log or "log" not in seen:  # not a log the kubelet lost
                seen["log"] = log
            ending = rank0_ending(mpi_plane, namespace, name)
            if ending is not None:
                seen["ending"] = ending
        return job_outcome(mpi_plane, namespace, name)

    t0 = time.monotonic()
    stack.up()
    live = wait_until(f"Job {namespace}/{name} Complete or Failed", ended, timeout=deadline + 60)
    seconds = time.monotonic() - t0
    ended()  # rank 0's last word, once the Job has decided
    conditions = [
        f"{c['type']}={c['status']}({c.get('reason', '')})"
        for c in live["status"].get("conditions", [])
    ]
    pods, log, ending = seen.get("pods", []), seen.get("log", ""), seen.get("ending") or {}
    found = live_status.interpret(name, namespace, live, mpi_plane.pods(namespace, name), [])
    e2e_report(
        f"rank 1 {mode}, logging.strict {str(strict).lower()}, restartPolicy "
        f"{restart or 'unset (Never)'}: Job {' '.join(conditions)} {seconds:.1f}s after up "
        f"began; rank 0 exited {ending.get('exitCode')} with message "
        f"{(ending.get('message') or '').strip()!r}; minicluster status: {found.phase}, the work "
        f"exited {found.work_exit_code}; pods: {'; '.join(pods)}; rank 0's log ends: "
        f"{' | '.join(log.strip().splitlines()[-2:])}"
    )
    assert len(hello_hosts(log)) == 2, f"the MPI job did not start:\n{log}"
    # the work ran once: one rank 0 pod, never restarted, one hello from each rank
    assert len(seen["rank0"]) == 1, f"rank 0 ran again: {sorted(seen['rank0'])}; pods {pods}"
    assert log.count("hello from rank 0 ") == 1, log
    assert all(" restarts 0 " in line for line in pods), pods
    code = exitcodes.work_code(ending.get("message"))
    assert code is not None, f"rank 0's termination message: {ending}"
    assert code != 0, ending
    if mode == "exit":
        assert code == 5, ending  # rank 1's own code, through flux submit --watch
    assert (found.phase, found.work_failed, found.work_exit_code) == ("failed", True, code)
    reasons = [c.get("reason") for c in live["status"].get("conditions", [])]
    if restart == "OnFailure":
        assert condition(live, "Complete") == "True", f"the Job {conditions}; pods {pods}"
        assert ending.get("exitCode") == 0, ending
        assert (found.reason or "").startswith("WorkFailed: "), found.reason
        return
    assert condition(live, "Failed") == "True", f"the Job {conditions}; pods {pods}"
    assert "PodFailurePolicy" in reasons, f"not failed by its failure policy: {conditions}"
    assert "DeadlineExceeded" not in reasons, f"failed only at its deadline; pods {pods}"
    assert ending.get("exitCode") == exitcodes.WORK_FAILED, ending
    assert found.exit_code == exitcodes.WORK_FAILED
