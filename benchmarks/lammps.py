"""LAMMPS time to solution through the component, and the floor beneath it.

The input is the Flux Operator's LAMMPS example (../shared/compat/flux-operator-tests/lammps:
ReaxFF, HNS, ``lmp -v x 2 -v y 2 -v z 2 -in in.reaxc.hns -nocite``, 2,432 atoms, 100 steps), the
binary the e2e image's (tests/e2e/realnode/toolchain.py's flux-lammps, built or reused):

* **floor**: the image's root file system unpacked here and ``mpirun -np N lmp ...`` run in it
  (``unshare`` of a mount namespace, /proc, /dev and /sys mounted, ``chroot``; as root, with
  Open MPI's defaults, ``--oversubscribe`` beyond the cores): no Kubernetes, no Flux;
* **component**: the operator's spec with ``size`` pods and ``size x --ranks-per-pod`` tasks
  (or ``--tasks``; its image changed as tests/e2e/test_flux_lammps.py changes it), `pulumi up` with
  ``wait: complete`` on a two-node real cluster (``fluxnodes.FluxPlane``), rank 0's log read;
  ``--option-flags`` and ``--env`` add to the spec (say ``-o cpu-affinity=off`` and
  ``OMPI_MCA_mpi_yield_when_idle=1`` where pods share cores, ../shared/reference/mpi).

Figures per run: LAMMPS's loop time (the 100 steps), its total wall time (whole seconds), and
for the component the whole `pulumi up` until the Job is Complete. One run each (``--repeat``
for medians); it also prints the serial run's thermo row at step 100, the reference of
test_flux_lammps.py.

    .venv/bin/python benchmarks/lammps.py [--sizes 1,2,4] [--ranks 1,2,4] [--no-component]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402
from e2e import nodes_set, toolchain_bin  # noqa: E402
from fluxnodes import IMAGES, FluxPlane, deploy  # noqa: E402
from lammpslog import Run, parse  # noqa: E402
from report import machine, table  # noqa: E402
from stackrun import Engine, copy_project  # noqa: E402

SPEC = ROOT.parent / "shared" / "compat" / "flux-operator-tests" / "lammps" / "minicluster.yaml"
IMAGE = "localhost/flux-lammps:bookworm"
ARCHIVE = "flux-lammps.tar"
HNS = "/opt/lammps/examples/reaxff/HNS"
DEADLINE_S = 1800  # a run this slow fails its Job rather than hanging the benchmark


def operator_command() -> str:
    return str(yaml.safe_load(SPEC.read_text())["spec"]["containers"][0]["command"])


def unpack(archive: Path, root: Path) -> None:
    """The docker-archive's one layer (toolchain.py's docker_archive) unpacked into ``root``."""
    with tarfile.open(archive) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
        (layer,) = manifest[0]["Layers"]
        with tarfile.open(fileobj=outer.extractfile(layer)) as inner:
            inner.extractall(root, filter="fully_trusted")


def floor(root: Path, ranks: int) -> tuple[Run, float, str]:
    """``mpirun -np ranks`` of the operator's command in the unpacked image: the run, the
    seconds mpirun took, its output."""
    inside = f"cd {HNS} && mpirun --allow-run-as-root --oversubscribe -np {ranks} "
    inside += operator_command()
    mounts = (
        f"mount -t proc proc {root}/proc && mount --rbind /dev {root}/dev && "
        f"mount --rbind /sys {root}/sys && mount -t tmpfs tmpfs {root}/tmp && "
        f"exec chroot {root} /bin/sh -c '{inside}'"
    )
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root"},
    )
    seconds = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"mpirun -np {ranks} failed ({proc.returncode}):\n{out[-3000:]}")
    return parse(out), seconds, out


def component(
    engine: Engine,
    project: Path,
    plane: FluxPlane,
    ns: str,
    pods: int,
    tasks: int,
    flags: str,
    env: dict[str, str],
) -> tuple[Run, float]:
    """The operator's spec with ``pods`` and ``tasks`` (and the extra flags and environment)
    `pulumi up`ped until Complete: the run rank 0's log shows and the seconds `up` took."""
    doc = yaml.safe_load(SPEC.read_text())
    doc["spec"].update(size=pods, tasks=tasks, deadlineSeconds=DEADLINE_S)
    if flags:
        doc["spec"]["flux"] = {"optionFlags": flags}
    if env:
        doc["spec"]["containers"][0]["environment"] = env
    name = doc["metadata"]["name"]
    stack = deploy(engine, project, plane, ns, ns, doc, "complete", image=IMAGE)
    t0 = time.perf_counter()
    stack.up()
    seconds = time.perf_counter() - t0
    log = plane.rank_log(ns, name)
    stack.destroy()
    stack.auto.workspace.remove_stack(stack.name)
    return parse(log), seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: tuple(int(x) for x in s.split(",") if x)  # noqa: E731
    ap.add_argument("--sizes", type=ints, default=(1, 2, 4), help="pods (default 1,2,4)")
    ap.add_argument("--ranks-per-pod", type=int, default=1)
    ap.add_argument("--tasks", type=int, default=0, help="tasks whatever the pods (the spec's 2)")
    ap.add_argument("--ranks", type=ints, default=(1, 2, 4), help="floor's mpirun -np values")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (median)")
    ap.add_argument("--option-flags", default="", help="spec.flux.optionFlags to add")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the container")
    ap.add_argument("--no-component", action="store_true", help="the floor only")
    args = ap.parse_args(argv)
    if not SPEC.is_file():
        sys.exit(f"{SPEC} is absent (../shared beside the checkout)")
    env = dict(e.split("=", 1) for e in args.env)
    nodes = nodes_set()
    t0 = time.perf_counter()
    print("LAMMPS (ReaxFF HNS, 2,432 atoms, 100 steps): time to solution")
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the start")
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-lammps-") as tmp:
        work = Path(tmp)
        root = work / "root"
        unpack(nodes / "images" / ARCHIVE, root)
        for ranks in args.ranks:
            runs = [floor(root, ranks) for _ in range(args.repeat)]
            loop = statistics.median(r.loop_s for r, _, _ in runs)
            whole = statistics.median(s for _, s, _ in runs)
            rows.append([f"mpirun -np {ranks}", "-", f"{loop:.1f}", f"{whole:.1f}", "-"])
            print(f"({rows[-1][0]}: loop {loop:.1f} s; load {os.getloadavg()[0]:.1f})", flush=True)
            if ranks == 1:
                print("serial thermo at step 100:", json.dumps(runs[0][0].thermo.get(100)))
        if not args.no_component:
            with FluxPlane(
                toolchain_bin(), nodes, "benchlammps", images=(*IMAGES, ARCHIVE)
            ) as plane:
                engine = Engine.create(toolchain_bin(), work / "engine")
                project = copy_project(work / "project")
                for pods in args.sizes:
                    tasks = args.tasks or pods * args.ranks_per_pod
                    done = [
                        component(
                            engine, project, plane, f"lammps-{pods}-{i}", pods, tasks,
                            args.option_flags, env,
                        )
                        for i in range(args.repeat)
                    ]  # fmt: skip
                    loop = statistics.median(r.loop_s for r, _ in done)
                    wall = statistics.median(r.wall_s for r, _ in done)
                    up = statistics.median(s for _, s in done)
                    rows.append(
                        [
                            f"{pods} pods, -n {tasks}",
                            f"{pods}",
                            f"{loop:.1f}",
                            f"{wall}",
                            f"{up:.1f}",
                        ]
                    )
                    print(
                        f"({rows[-1][0]}: loop {loop:.1f} s, up {up:.1f} s; load "
                        f"{os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
    print()
    extra = " ".join(filter(None, [args.option_flags, " ".join(args.env)]))
    print(f"component runs with: {extra or 'the operator spec as it is (images changed)'}")
    headers = ["run", "pods", "loop s", "LAMMPS wall s / mpirun s", "pulumi up to Complete s"]
    print(table(headers, rows))
    print(f"\nmedians of {args.repeat}; done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
