"""The plan: every fact of a MiniCluster derived once, and read by everything downstream.

Copies of a fact drift apart (a hostlist computed twice, a mode classified three ways), so these
tests count the derivations a render and a stack run make, and pin what the one classifier says.
"""

from __future__ import annotations

import runpy
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
from corpus import load_one

from flux_minicluster.core import definition, loading, plan
from flux_minicluster.core.render import broker, manifests, scripts
from flux_minicluster.core.spec import MiniClusterSpec
from flux_minicluster.deploy.offline.recorder import RegistrationRecorder, run_program
from flux_minicluster.deploy.stack import project, stackrender
from flux_minicluster.deploy.stack.stackconfig import PROJECT

ROOT = Path(__file__).resolve().parents[2]

# Each derivation, by the one public function that makes it. ``plan.build`` derives every fact of
# the plan (the rank order, where the broker's files live, the mode, the role, the quorum) and
# nothing else does: counting it counts them.
DERIVATIONS: tuple[tuple[Any, str], ...] = (
    (MiniClusterSpec, "model_validate"),  # parsing a spec
    (definition.ObjectNames, "of"),  # object names and hostnames
    (plan, "build"),
    (broker, "broker_toml"),
    (scripts, "entrypoint_data"),
)


@pytest.fixture
def derivations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each derivation ran, by ``Owner.function``."""
    counts: Counter[str] = Counter()

    def counted(owner: Any, name: str) -> None:
        original = getattr(owner, name)

        def spy(*args: Any, **kwargs: Any) -> Any:
            counts[f"{getattr(owner, '__name__', owner)}.{name}"] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, spy)

    for owner, name in DERIVATIONS:
        counted(owner, name)
    # The modules that imported a function by name hold their own reference: spy there too.
    monkeypatch.setattr(scripts, "broker_toml", broker.broker_toml)
    monkeypatch.setattr(manifests, "entrypoint_data", scripts.entrypoint_data)
    return counts


def once_each(counts: Counter[str], per_cluster: int = 1) -> None:
    expected = {f"{getattr(o, '__name__', o)}.{n}": per_cluster for o, n in DERIVATIONS}
    assert dict(counts) == expected


def test_one_render_derives_each_fact_once(derivations: Counter[str]) -> None:
    mc = load_one(ROOT / "examples" / "bursting-root.yaml")
    manifests.render(plan.build(mc), None)
    once_each(derivations)


@pytest.mark.parametrize("stack", ["local", "gke-root"])
def test_a_stack_run_parses_its_spec_once_and_derives_each_fact_once(
    stack: str, derivations: Counter[str]
) -> None:
    config, _ = stackrender.read_stack_config(project.find(ROOT), stack)
    config[f"{PROJECT}:keygen"] = {"strategy": "builtin"}
    run_program(
        lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"),
        mocks=stackrender.OfflineMocks(
            command_stdout=(ROOT / "tests/golden/fixed-curve.cert").read_text()
        ),
        project=PROJECT,
        stack=stack,
        config=config,
    )
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


def test_no_resource_is_declared_inside_an_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst stack, under the mocks with its root's outputs known: every object is declared at
    the top of the program (a preview shows them all), none from an Output's callback."""
    inside: list[bool] = []
    declared: list[tuple[str, bool]] = []
    original_apply = pulumi.Output.apply

    def apply(self: Any, func: Callable[..., Any], run_with_unknowns: bool = False) -> Any:
        def wrapped(value: Any) -> Any:
            inside.append(True)
            try:
                return func(value)
            finally:
                inside.pop()

        return original_apply(self, wrapped, run_with_unknowns)

    original_init = pulumi.Resource.__init__

    def init(self: Any, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        declared.append((name, bool(inside)))
        original_init(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.Output, "apply", apply)
    monkeypatch.setattr(pulumi.Resource, "__init__", init)
    root_outputs = {
        "leadName": "flux-root",
        "leadSize": 2,
        "leadBrokerAddress": "192.0.2.10",
        "leadBrokerPort": 8050,
        "burstClusters": [{"name": "eks-burst", "size": 2}, {"name": "aks-burst", "size": 2}],
        "curveCert": (ROOT / "tests/golden/fixed-curve.cert").read_text(),
    }
    config, _ = stackrender.read_stack_config(project.find(ROOT), "eks-burst")
    run = run_program(
        lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"),
        mocks=RegistrationRecorder(
            stack_references={
                "organization/flux-minicluster/gke-root": {
                    "outputs": root_outputs,
                    "secretOutputNames": ["curveCert"],
                }
            }
        ),
        project=PROJECT,
        stack="eks-burst",
        config=config,
        preview=True,
    )
    assert declared
    assert [name for name, in_apply in declared if in_apply] == []
    kinds = sorted(
        r.inputs["kind"]
        for r in run.resources
        if r.is_kubernetes_object and not r.typ.endswith("Patch")
    )
    assert kinds == ["ConfigMap", "Job", "Namespace", "NetworkPolicy", "Secret", "Service"]
    assert run.exports["hostlist"].value == (
        "192.0.2.10,flux-root-[1],eks-burst-[0-1],aks-burst-[0-1]"
    )
