"""The plan: every fact of a MiniCluster derived once, and read by everything downstream.

Copies of a fact drift apart (a hostlist computed twice, a mode classified three ways), so these
tests count the derivations a render makes (a stack run's: tests/deploy/test_stacks.py), and pin
what the one classifier says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.corpus import load_one
from support.plancases import once_each

from flux_minicluster.core.planning import plan
from flux_minicluster.core.reading import loading
from flux_minicluster.core.render import manifests

ROOT = Path(__file__).resolve().parents[2]


def test_one_render_derives_each_fact_once(derivations: Counter[str]) -> None:
    mc = load_one(ROOT / "examples" / "bursting-root.yaml")
    manifests.render(plan.build(mc), None)
    once_each(derivations)


# --- one classifier ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("container", "interactive", "mode"),
    [
        ({"command": "hostname"}, False, plan.Mode.SUBMIT),
        ({"command": "lmp", "launcher": True}, False, plan.Mode.LAUNCHER),
        ({"command": "a\nb", "batch": True}, False, plan.Mode.BATCH),
        ({"commands": {"script": "hostname\n"}}, False, plan.Mode.SUBMIT),
        ({"command": "hostname"}, True, plan.Mode.INTERACTIVE),
        ({}, False, plan.Mode.PERSISTENT),
        ({}, True, plan.Mode.PERSISTENT),
    ],
)
def test_the_mode_rank_0_runs_in(
    container: dict[str, Any],
    interactive: bool,
    mode: plan.Mode,
    build: Callable[..., plan.MiniClusterPlan],
) -> None:
    got = build({"interactive": interactive, "containers": [{"image": "u:1", **container}]})
    assert got.mode is mode
    assert got.persistent is (mode in (plan.Mode.INTERACTIVE, plan.Mode.PERSISTENT))


@pytest.mark.parametrize(
    ("bursting", "role", "group"),
    [
        ({}, plan.Role.STANDALONE, None),
        ({"clusters": [{"name": "b"}]}, plan.Role.ROOT, "flux-sample"),
        (
            {
                "leadBroker": {"address": "a.org", "name": "lead", "size": 2},
                "clusters": [{"name": "flux-sample", "size": 1}],
            },
            plan.Role.BURST,
            "lead",
        ),
    ],
)
def test_the_role_in_a_bursting_group(
    bursting: dict[str, Any],
    role: plan.Role,
    group: str | None,
    build: Callable[..., plan.MiniClusterPlan],
) -> None:
    got = build({"flux": {"bursting": bursting}})
    assert (got.role, got.burst_group) == (role, group)


def test_a_derived_definition_keeps_its_names() -> None:
    mc = loading.parse({"containers": [{"image": "u:1"}]}, name="n", namespace="ns")
    names = mc.names
    derived = mc.with_spec(mc.spec.model_copy(update={"size": 3}))
    assert derived.names is names
    other = mc.spec.network.model_copy(update={"headless_name": "other"})
    renamed = mc.with_spec(mc.spec.model_copy(update={"network": other}))
    assert renamed.names.headless_service == "other"
