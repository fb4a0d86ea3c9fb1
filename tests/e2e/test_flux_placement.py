"""Where ranks run, on real kubelets (conftest's ``cpu_plane``: two nodes whose kubelets run the
static CPU manager with core 0 reserved for the system), through `pulumi up`:

- a pod whose containers ask for a whole CPU with memory limits is Guaranteed (the API server
  says so: the flux-view init container's resources follow the Flux container's), the kubelet
  gives it core 1 as its own (a cpuset), the entrypoint sees cores of the pod's own, R names that
  one core and Flux binds a job's task to it, as Flux always does;
- a pod without limits is Burstable, may run on both cores, which are the node's, shared; the
  entrypoint makes jobs run unbound (cpu-affinity=off) unless they ask.

The figures that make this matter (ranks of co-located pods bound to the same cores) are
test_flux_mpi's and ../shared/reference/mpi/README.md's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fluxnodes import FluxPlane, deploy, minicluster
from kube import condition, job
from stackrun import Engine

pytestmark = pytest.mark.flux

CPUS = "sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status"
SCRIPT = "\n".join(
    [
        "set -e",
        "echo \"=== R cores $(flux resource list -no '{ncores}')\"",
        f'echo "=== job $(flux run -n1 {CPUS})"',
        f'echo "=== unbound $(flux run -n1 -o cpu-affinity=off {CPUS})"',
    ]
)
WHOLE_CPU = {"limits": {"cpu": 1, "memory": "512Mi"}}


def marked(log: str, key: str) -> str:
    found = re.search(rf"^=== {key} (\S+)$", log, flags=re.MULTILINE)
    assert found, f"no '=== {key}' in rank 0's log:\n{log}"
    return found.group(1)


@pytest.mark.parametrize(
    ("case", "resources"), [("own", WHOLE_CPU), ("shared", None)], ids=["own", "shared"]
)
def test_flux_binds_ranks_only_to_cores_of_the_pods_own(
    cpu_plane: FluxPlane,
    module_engine: Engine,
    flux_project: Path,
    case: str,
    resources: dict[str, Any] | None,
    e2e_report: Callable[[str], None],
) -> None:
    name, namespace = "cores", f"cores-{case}"
    container = {"launcher": True, "commands": {"script": SCRIPT}}
    if resources:
        container["resources"] = resources
    spec = minicluster(name, 1, container, tasks=1, logging={"quiet": False})
    stack = deploy(module_engine, flux_project, cpu_plane, namespace, namespace, spec, "complete")
    stack.up()
    live = job(cpu_plane.cp, namespace, name)
    assert condition(live, "Complete") == "True", cpu_plane.diagnostics(namespace, name)
    (pod,) = cpu_plane.pods(namespace, name)
    log = cpu_plane.rank_log(namespace, name)
    qos, cores, bound, unbound = (
        pod["status"].get("qosClass"), marked(log, "R cores"), marked(log, "job"),
        marked(log, "unbound"),
    )  # fmt: skip
    said = re.search(r"^Cores .*$", log, flags=re.MULTILINE)
    e2e_report(
        f"{case}: pod {qos}; the entrypoint said {said.group(0) if said else None!r}; R has "
        f"{cores} core(s); a job's task may run on cores {bound} (with -o cpu-affinity=off: "
        f"{unbound}); pulumi up to Job Complete {stack.last().seconds:.1f}s"
    )
    if case == "own":
        assert qos == "Guaranteed", pod["spec"]
        assert said is not None, log
        assert said.group(0).startswith("Cores 1 of 0-1 are this pod's own"), log
        assert (cores, bound, unbound) == ("1", "1", "1"), log
    else:
        assert qos == "Burstable", pod["spec"]
        assert said is not None, log
        assert said.group(0).startswith("Cores 0-1 are the node's, shared"), log
        assert (cores, bound, unbound) == ("2", "0-1", "0-1"), log
