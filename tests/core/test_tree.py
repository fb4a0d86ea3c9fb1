"""The brokers' tree: flat while rank 0 can hold every broker (256), then the fewest routers
that keep every broker's children within the limit (Flux's mincrit with a limit of its own);
the spec's ``flux.topology`` wins, and a bursting group keeps the operator's fanout."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flux_minicluster.core.flux import tree
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse


@pytest.mark.parametrize(
    ("brokers", "topology"),
    [
        (1, "kary:0"),
        (4, "kary:0"),
        (64, "kary:0"),
        (257, "kary:0"),  # rank 0 and its 256 children, as the operator's fanout
        (258, "mincrit:2"),  # never one router: it would only move rank 0's load to rank 1
        (1024, "mincrit:4"),
        (1536, "mincrit:6"),  # flux-core#6806: mincrit:5 ran 38 to 44 jobs/s there, flat 10.9
        (65536, "mincrit:255"),
    ],
)
def test_the_tree_for_a_size(brokers: int, topology: str) -> None:
    assert tree.for_size(brokers) == topology


@given(st.integers(min_value=1, max_value=2**17))
def test_every_fanout_within_the_limit_with_the_fewest_routers(brokers: int) -> None:
    topology = tree.for_size(brokers)
    widest = tree.widest_fanout(brokers, topology)
    k = tree.routers(brokers)
    if k <= tree.MAX_FANOUT:  # beyond 128 routers rank 0's own fanout is the routers'
        assert widest <= tree.MAX_FANOUT
    if k > 2:  # one router fewer would overload the routers
        assert tree.widest_fanout(brokers, f"mincrit:{k - 1}") > tree.MAX_FANOUT


def spec(size: int, **flux: Any) -> dict[str, Any]:
    return {
        "size": size,
        "containers": [{"image": "app:1", "command": "hostname"}],
        **({"flux": flux} if flux else {}),
    }


@pytest.mark.parametrize(
    ("doc", "topology"),
    [
        (spec(4), "kary:0"),
        (spec(200), "kary:0"),
        (spec(300), "mincrit:2"),
        ({**spec(64), "maxSize": 600}, "mincrit:3"),  # the instance's ranks are maxSize's
        (spec(300, topology="binomial"), "binomial"),  # the user's tree is kept
        (spec(4, bursting={"clusters": [{"size": 4, "name": "burst"}]}), None),
        (spec(4, bursting={"hostlist": "a-[0-3],b-[0-3]"}), None),
    ],
)
def test_the_plan_takes_the_spec_tree_or_the_size_tree(
    doc: dict[str, Any], topology: str | None
) -> None:
    assert plans.build(parse(doc, name="a", namespace="b")).topology == topology


@pytest.mark.parametrize(
    ("brokers", "topology", "widest"),
    [
        (256, "kary:0", 255),
        (256, "kary:256", 255),  # the operator's fanout: flat up to 257 brokers
        (512, "kary:256", 256),
        (512, "mincrit:4", 127),
        (1536, "mincrit:11", 139),
    ],
)
def test_widest_fanout(brokers: int, topology: str, widest: int) -> None:
    assert tree.widest_fanout(brokers, topology) == widest
