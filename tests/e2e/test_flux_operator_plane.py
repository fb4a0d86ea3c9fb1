"""The Flux Operator itself on real nodes, beside where the component runs: operatorplane.py
applies the operator's CRD to a FluxPlane and runs its manager (realnode/toolchain.py's piece
flux-operator, built from ../shared/vendor) against it, and the operator's hello-world
MiniCluster (../shared/compat/flux-operator-tests/hello-world, four brokers) is `kubectl apply`d
with only its images localized (operatorplane.operator_spec: the nodes' application image and
flux view). The operator's Job completes on the real kubelet, containerd, CoreDNS and kube-proxy
with the images built here, and rank 0's log is the folder's test.out.correct.

The figures reported are those a benchmark compares with the component's: `kubectl apply` to every
broker joined (rank 0's instance counts four brokers up, asked through `kubectl exec`), to the
Job Complete, and the MiniCluster's deletion until its pods are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from fluxnodes import FluxPlane
from operatorplane import OperatorPlane, operator_spec

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO.parent / "shared" / "compat" / "flux-operator-tests" / "hello-world"
NAMESPACE = "operator-hello"
TIMEOUT_S = 240

pytestmark = pytest.mark.flux


@pytest.fixture(scope="module")
def operator(flux_plane: FluxPlane, nodes_set: Path) -> Iterator[OperatorPlane]:
    with OperatorPlane(flux_plane, nodes_set) as op:
        yield op


def log_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


def test_the_operators_hello_world_runs_on_real_nodes(
    flux_plane: FluxPlane, operator: OperatorPlane, e2e_report: Callable[[str], None]
) -> None:
    if not HELLO.is_dir():
        pytest.skip(f"{HELLO} is absent (../shared beside the checkout)")
    doc = yaml.safe_load((HELLO / "minicluster.yaml").read_text())
    name, size = doc["metadata"]["name"], int(doc["spec"]["size"])
    spec = operator_spec(doc, NAMESPACE)

    run = operator.run(spec, NAMESPACE, TIMEOUT_S)

    log = flux_plane.rank_log(NAMESPACE, name)
    correct = HELLO / "test.out.correct"
    want = log_lines(correct.read_text()) if correct.is_file() else ["hello world"]
    assert log_lines(log) == want, f"rank 0's log:\n{log}"
    nodes = sorted(str(p["spec"].get("nodeName")) for p in flux_plane.pods(NAMESPACE, name))
    assert len(nodes) == size, nodes

    gone = operator.delete(name, NAMESPACE)
    seen = "not seen (the instance ended first)" if run.joined is None else f"{run.joined:.1f}s"
    e2e_report(
        f"the Flux Operator's hello-world ({size} brokers; pods on {', '.join(nodes)}): "
        f"kubectl apply -> every broker joined {seen}, -> Job Complete {run.complete:.1f}s; "
        f"delete until the pods are gone {gone:.1f}s; manager ready in "
        f"{operator.startup_seconds:.1f}s"
    )
