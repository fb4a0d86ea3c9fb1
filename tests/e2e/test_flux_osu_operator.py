"""The Flux Operator's OSU example on real nodes, and PMIx chosen for `-o mpi=openmpi@5`.

../shared/compat/flux-operator-tests/osu-benchmarks/minicluster.yaml (two pods, two tasks,
``flux.optionFlags: "-ompi=openmpi@5"``, ``./osu_get_latency`` in the workingDir where the
operator's metric-osu-benchmark image keeps its benchmarks) is `pulumi up`ed with wait: complete
on conftest's ``mpi_plane`` with nothing changed but its two image names: the flux view is the
project's (``localhost/flux-view-debian:bookworm``, realnode/toolchain.py's flux-images, which
carries flux-pmix's plugin on the job shell's plugin path; the entrypoint's shell initrc turns
it on for ``-o mpi=openmpi@5``), the application image the project's MPI image
(``localhost/flux-mpi:bookworm``: Debian's Open MPI 4.1, the OSU benchmarks also in that
workingDir, ``OMPI_MCA_osc=pt2pt`` in its Env since this Open MPI's default one-sided component
fails over TCP). The latency table is read from rank 0's `kubectl logs`.

The second scenario shows which PMI a job gets, in a MiniCluster of the same images whose launcher
script runs `flux run -N2 -n2 env` with and without ``-o mpi=openmpi@5`` and an MPI program under
the option: with it, the ranks have the flux-pmix server's PMIX_SERVER_URI* and PMIX_RANK and no
simple-PMI descriptor (PMI_FD), the job shell says flux-pmix served, and Open MPI wires up through
it; without it, simple PMI as before (Open MPI 4's own flux component uses it).
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fluxnodes import VIEW_IMAGE, FluxPlane, deploy, minicluster
from kube import condition, job
from osulog import osu_table, section
from stackrun import Engine

REPO = Path(__file__).resolve().parents[2]
OSU_SPEC = REPO.parent / "shared" / "compat" / "flux-operator-tests" / "osu-benchmarks"
MPI_IMAGE = "localhost/flux-mpi:bookworm"  # pyproject's flux-mpi-tags
PMI_VARS = "^(PMIX_RANK|PMIX_SERVER_URI[0-9]*|PMI_FD|PMI_RANK|FLUX_PMI_LIBRARY_PATH)="

pytestmark = pytest.mark.flux


def operator_spec() -> dict[str, Any]:
    """The operator's OSU example as it is."""
    return dict(yaml.safe_load((OSU_SPEC / "minicluster.yaml").read_text()))


def with_images(spec: dict[str, Any], view: str, app: str) -> dict[str, Any]:
    """``spec`` with its flux view and its containers' image renamed, nothing else."""
    out = copy.deepcopy(spec)
    out["spec"]["flux"]["container"]["image"] = view
    for container in out["spec"]["containers"]:
        container["image"] = app
    return out


def test_the_operators_osu_example_runs_with_only_its_images_changed(
    mpi_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    """`pulumi up` (wait: complete) of the operator's spec, its images renamed: the Job
    completes and rank 0's log holds osu_get_latency's table, run by two ranks in two pods that
    wired up through flux-pmix (`-ompi=openmpi@5`)."""
    spec = operator_spec()
    assert spec["spec"]["flux"]["optionFlags"] == "-ompi=openmpi@5", spec["spec"]["flux"]
    ours = with_images(spec, VIEW_IMAGE, MPI_IMAGE)
    assert with_images(ours, "-", "-") == with_images(spec, "-", "-")  # only the images differ
    name, namespace = spec["metadata"]["name"], "osu-operator"
    stack = deploy(
        module_engine, flux_project, mpi_plane, namespace, namespace, ours, "complete",
        as_given=True,
    )  # fmt: skip
    t0 = time.monotonic()
    stack.up()
    wall = time.monotonic() - t0
    live = job(mpi_plane.cp, namespace, name)
    assert condition(live, "Complete") == "True", mpi_plane.diagnostics(namespace, name)
    log = mpi_plane.rank_log(namespace, name)
    assert "# OSU MPI_Get latency Test" in log, f"rank 0's log:\n{log}"
    latency = osu_table(log)
    assert latency.keys() >= {1, 8, 1 << 20}, f"rank 0's log:\n{log}"
    assert all(v > 0 for v in latency.values()), log
    nodes = sorted(str(p["spec"].get("nodeName")) for p in mpi_plane.pods(namespace, name))
    e2e_report(
        f"the operator's osu-benchmarks spec, images only changed ({VIEW_IMAGE}, {MPI_IMAGE}; "
        f"pods on {', '.join(nodes)}): osu_get_latency 1 B {latency[1]:.2f} us, 8 B "
        f"{latency[8]:.2f} us, 64 KiB {latency.get(1 << 16, float('nan')):.1f} us, 1 MiB "
        f"{latency[1 << 20]:.1f} us; pulumi up to Job Complete {stack.last().seconds:.1f}s "
        f"({wall:.1f}s wall)"
    )


def test_openmpi5_option_selects_pmix(
    mpi_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    e2e_report: Callable[[str], None],
) -> None:
    """`-o mpi=openmpi@5` gives the ranks flux-pmix's PMIx server and no simple PMI; plain
    `flux run` gives simple PMI and no PMIx; Open MPI wires up over PMIx under the option."""
    name, namespace = "pmi", "osu-pmi"
    env = f"sh -c 'env | grep -E \"{PMI_VARS}\" | sort'"
    script = "\n".join(
        [
            "set -e",
            "echo '=== openmpi@5'",
            f"flux run -N2 -n2 -o mpi=openmpi@5 {env}",
            "echo '=== default'",
            f"flux run -N2 -n2 {env}",
            "echo '=== mpi over pmix'",
            "flux run -N2 -n2 -o mpi=openmpi@5 -o verbose=1 -o cpu-affinity=off mpi_check 2>&1",
            "echo '=== end'",
        ]
    )
    spec = minicluster(name, 2, {"launcher": True, "commands": {"script": script}}, tasks=2)
    stack = deploy(
        module_engine, flux_project, mpi_plane, namespace, namespace, spec, "complete",
        image=MPI_IMAGE,
    )  # fmt: skip
    stack.up()
    live = job(mpi_plane.cp, namespace, name)
    assert condition(live, "Complete") == "True", mpi_plane.diagnostics(namespace, name)
    log = mpi_plane.rank_log(namespace, name)
    assert "=== end" in log, f"rank 0's log:\n{log}"
    pmix, default = section(log, "openmpi@5"), section(log, "default")
    assert sorted(re.findall(r"^PMIX_RANK=(\d+)$", pmix, re.MULTILINE)) == ["0", "1"], log
    assert re.search(r"^PMIX_SERVER_URI\d*=pmix-server\.\d+;", pmix, re.MULTILINE), log
    assert not re.search(r"^(PMI_FD|PMI_RANK|FLUX_PMI_LIBRARY_PATH)=", pmix, re.MULTILINE), log
    assert sorted(re.findall(r"^PMI_RANK=(\d+)$", default, re.MULTILINE)) == ["0", "1"], log
    assert "PMIX_" not in default, log
    mpi = section(log, "mpi over pmix")
    assert "pmix: server outsourced to OpenPMIx" in mpi, mpi
    hosts = re.findall(r"^hello from rank (\d+) of 2 on (\S+)$", mpi, re.MULTILINE)
    assert sorted(r for r, _ in hosts) == ["0", "1"], mpi
    assert len({h for _, h in hosts}) == 2, f"both ranks in one pod: {hosts}"
    served = re.search(r"pmix: (server outsourced to [^\n(]+)", mpi)
    e2e_report(
        f"-o mpi=openmpi@5: PMIX_RANK 0 and 1, PMIX_SERVER_URI*, no PMI_FD; default: PMI_RANK "
        f"0 and 1 (simple PMI), no PMIX_*; mpi_check over two pods under the option: the job "
        f"shell says {served.group(1).strip() if served else '?'}"
    )
