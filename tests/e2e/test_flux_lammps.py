"""A real workload: the Flux Operator's LAMMPS spec (../shared/compat/flux-operator-tests/lammps,
skipped without it) `pulumi up`ped through the component on a two-node real cluster
(conftest's ``lammps_plane``) with only its image changed: the operator's
ghcr.io/converged-computing/metric-lammps:latest becomes localhost/flux-lammps:bookworm
(realnode/toolchain.py's flux-lammps: LAMMPS 29Sep2021 with REAXFF against Debian's Open MPI,
the HNS example at the workingDir the spec names), and the flux view the view image, as every
`flux` scenario names them (fluxnodes.localize). Everything else is the operator's: 4 pods,
``tasks: 2``, ``lmp -v x 2 -v y 2 -v z 2 -in in.reaxc.hns -nocite`` in
/opt/lammps/examples/reaxff/HNS, no environment, no option flags.

Rank 0's log (`kubectl logs`) must show LAMMPS's whole run on the spec's two ranks (the loop
time on 2 procs, 100 steps of 2,432 atoms, its total wall time), and the thermo output at the
last step must equal a serial run's of the same binary and input (SERIAL_STEP_100) within
REL_TOL: a parallel ReaxFF run differs from a serial one only in the order of its sums.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fluxnodes import FluxPlane, deploy, localize
from kube import condition, job
from lammpslog import differences, parse
from stackrun import Engine

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO.parent / "shared" / "compat" / "flux-operator-tests" / "lammps" / "minicluster.yaml"
LAMMPS_IMAGE = "localhost/flux-lammps:bookworm"  # pyproject's flux-lammps-tags
ATOMS = 2432  # data.hns-equil's 304 atoms replicated 2 x 2 x 2
# The thermo row at step 100 of a serial run (`lmp -in in.reaxc.hns -v x 2 -v y 2 -v z 2
# -nocite`, one rank, the image's lmp, outside Kubernetes: benchmarks/lammps.py prints it).
SERIAL_STEP_100 = {
    "Temp": 305.38276,
    "PotEng": -113.29357,
    "Press": 10085.748,
    "E_vdwl": -111.59518,
    "E_coul": -1.6983875,
    "Volume": 27418.867,
}
REL_TOL = 1e-4

pytestmark = pytest.mark.flux


def only_images_changed(original: dict[str, Any], deployed: dict[str, Any]) -> None:
    """``deployed`` is ``original`` but for the image names (and their pull policies)."""
    a, b = copy.deepcopy(original), copy.deepcopy(deployed)
    for doc in (a, b):
        for container in doc["spec"]["containers"]:
            container.pop("image", None)
            container.pop("imagePullPolicy", None)
        doc["spec"].get("flux", {}).pop("container", None)
        if not doc["spec"].get("flux"):
            doc["spec"].pop("flux", None)
    assert a == b, f"the spec changed beyond its images:\n{original}\n{deployed}"


def test_the_operators_lammps_spec_runs_on_real_nodes(
    lammps_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    if not SPEC.is_file():
        pytest.skip(f"{SPEC} is absent (../shared beside the checkout)")
    original = yaml.safe_load(SPEC.read_text())
    only_images_changed(original, localize(original, LAMMPS_IMAGE))
    name, namespace = original["metadata"]["name"], "op-lammps"
    tasks = int(original["spec"]["tasks"])
    stack = deploy(
        module_engine,
        flux_project,
        lammps_plane,
        namespace,
        namespace,
        original,
        "complete",
        image=LAMMPS_IMAGE,
    )
    stack.up()
    up_s = stack.last().seconds
    live = job(lammps_plane.cp, namespace, name)
    assert condition(live, "Complete") == "True", lammps_plane.diagnostics(namespace, name)
    log = lammps_plane.rank_log(namespace, name)
    run = parse(log)
    assert (run.procs, run.steps, run.atoms) == (tasks, 100, ATOMS), log
    last = run.last()
    assert last["Step"] == 100, f"the last thermo row is step {last['Step']}:\n{log}"
    off = differences(last, SERIAL_STEP_100)
    worst = max(off, key=lambda k: off[k])
    e2e_report(
        f"the operator's LAMMPS spec (size {original['spec']['size']}, tasks {tasks}, only its "
        f"image changed): loop time {run.loop_s:.1f} s on {run.procs} procs, LAMMPS's whole run "
        f"{run.wall_s} s, pulumi up to Job Complete {up_s:.1f} s; step 100 against a serial "
        f"run: largest relative difference {off[worst]:.1e} ({worst})"
    )
    assert off[worst] <= REL_TOL, f"step 100 {last} against serial {SERIAL_STEP_100}: {off}"
