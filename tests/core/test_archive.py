"""Where a MiniCluster keeps its Flux instance's content across rank 0's pods (core.spec.archive):
which clusters get an archive, where it goes, what the Job's pods get for it, and the warning of
a cluster that serves work forever with nowhere to keep it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render import manifests
from flux_minicluster.core.spec import archive

CLAIM = {"data": {"path": "/data", "claimName": "shared"}}
NAME = "keeper"
LEAD = {"address": "10.0.0.1", "name": "root", "size": 2}
BURST = {"bursting": {"leadBroker": LEAD, "clusters": [{"name": NAME, "size": 2}]}}


def container(*, command: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"image": "ubuntu:24.04", **({"command": command} if command else {}), **extra}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # the spec's own path wins, whatever the mode
        (
            {"archive": {"path": "/keep/a.tgz"}, "containers": [container(command="x")]},
            "/keep/a.tgz",
        ),
        # a cluster that serves forever, on its first writable claim
        ({"containers": [container(volumes=CLAIM)]}, f"/data/flux-archives/{NAME}.tgz"),
        (
            {"interactive": True, "containers": [container(command="x", volumes=CLAIM)]},
            f"/data/flux-archives/{NAME}.tgz",
        ),
        # work that ends the instance: nothing to keep unless asked
        ({"containers": [container(command="x", volumes=CLAIM)]}, None),
        # no claim, or a read-only one, or a volume that dies with the pod or stays on its node
        ({"containers": [container()]}, None),
        (
            {"containers": [container(volumes={"d": {**CLAIM["data"], "readOnly": True}})]},
            None,
        ),
        ({"containers": [container(volumes={"d": {"path": "/data", "emptyDir": True}})]}, None),
        ({"containers": [container(volumes={"d": {"path": "/d", "hostPath": "/srv"}})]}, None),
        # a burst holds no content of its own
        ({"archive": {"path": "/keep/a.tgz"}, "flux": BURST, "containers": [container()]}, None),
    ],
    ids=[
        "spec-path",
        "persistent-claim",
        "interactive-claim",
        "submit-claim",
        "persistent-no-volume",
        "read-only-claim",
        "empty-dir",
        "host-path",
        "burst",
    ],
)
def test_the_archive_of_a_minicluster(
    spec: dict[str, Any], expected: str | None, build: Callable[..., plans.MiniClusterPlan]
) -> None:
    plan = build({"size": 2, **spec}, name=NAME)
    assert plan.archive == expected
    job = manifests.render(plan, None).job
    pod = job["spec"]["template"]["spec"]
    # rank 0's dump must fit in the pod's grace period
    assert pod.get("terminationGracePeriodSeconds") == (archive.GRACE_SECONDS if expected else None)


@pytest.mark.parametrize(
    ("spec", "warned"),
    [
        ({"containers": [container()]}, True),
        ({"interactive": True, "containers": [container(command="x")]}, True),
        ({"containers": [container(volumes=CLAIM)]}, False),
        ({"archive": {"path": "/keep/a.tgz"}, "containers": [container()]}, False),
        ({"containers": [container(command="x")]}, False),
    ],
    ids=["persistent", "interactive", "default-on-claim", "spec-path", "submit"],
)
def test_a_cluster_that_serves_forever_without_an_archive_is_warned(
    spec: dict[str, Any], warned: bool
) -> None:
    document = {"apiVersion": "flux-framework.org/v1alpha2", "kind": "MiniCluster",
                "metadata": {"name": NAME}, "spec": {"size": 2, **spec}}  # fmt: skip
    warnings = [w for w in parse(document).warnings if w.path == "spec.archive.path"]
    assert bool(warnings) is warned
    if warned:
        assert "PersistentVolumeClaim" in warnings[0].message


@pytest.mark.parametrize(
    ("path", "staged"),
    [
        ("/data/flux-archives/keeper.tgz", "/data/flux-archives/partial-keeper.tgz"),
        ("/a.tar.gz", "/partial-a.tar.gz"),
    ],
)
def test_a_dump_is_staged_beside_the_archive_with_its_suffix(path: str, staged: str) -> None:
    assert archive.staging(path) == staged
