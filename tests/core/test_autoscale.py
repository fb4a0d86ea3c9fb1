"""The elastic MiniCluster: the scaler's decision over a table of queue states, its settings and
their refusals, and what autoscale adds to the rendering (and only to it). The component's side is
tests/deploy/test_component_autoscale.py's."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.autoscalecases import document

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.inpod import scaler
from flux_minicluster.core.inpod.scaler import Decision, Observation, decide
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning import autoscale
from flux_minicluster.core.planning.plan import build as build_plan
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import render

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "autoscale.yaml"
IDLE = 30.0


def seen(
    size: int,
    pending: tuple[int, ...] = (),
    *,
    online: str = "",
    busy: str = "",
    drained: str = "",
    idle: dict[int, float] | None = None,
    others: str = "",
    leaving: str = "",
) -> Observation:
    return Observation(
        size=size,
        pending=pending,
        online=scaler.parse_idset(online or f"0-{size - 1}"),
        busy=scaler.parse_idset(busy),
        drained=scaler.parse_idset(drained),
        idle_for=idle or {},
        drained_by_others=scaler.parse_idset(others),
        leaving=scaler.parse_idset(leaving),
    )


def ranks(text: str) -> frozenset[int]:
    return scaler.parse_idset(text)


# min 2, max 4 throughout
CASES: list[tuple[str, Observation, Decision]] = [
    (
        "a 4-node job waits on 2 ranks: grow to 4",
        seen(2, (4,)),
        Decision("grow", 4, ranks(""), "4 node(s) wanted, 2 free"),
    ),
    (
        "a 1-node job waits while both ranks run: grow by one",
        seen(2, (1,), busy="0-1"),
        Decision("grow", 3, ranks(""), "1 node(s) wanted, 0 free"),
    ),
    (
        "a 6-node job: never beyond maxSize",
        seen(2, (6,)),
        Decision("grow", 4, ranks(""), "6 node(s) wanted, 2 free"),
    ),
    (
        "already growing: the ranks still joining count, no second patch",
        seen(4, (4,), online="0-1"),
        Decision("hold", 4, ranks(""), "4 node(s) wanted, 4 free"),
    ),
    (
        "at maxSize with work waiting: hold",
        seen(4, (2,), busy="0-3"),
        Decision("hold", 4, ranks(""), "2 node(s) wanted, at maxSize"),
    ),
    (
        "work waits while ranks are drained for shrinking: give them back first",
        seen(4, (3,), busy="0", drained="2-3", idle={1: 99, 2: 99, 3: 99}),
        Decision("undrain", 4, ranks("2-3"), "3 node(s) wanted, 1 free"),
    ),
    (
        "one rank of the drained two is enough: the lower one comes back",
        seen(4, (2,), busy="0", drained="2-3", idle={1: 99, 2: 99, 3: 99}),
        Decision("undrain", 4, ranks("2"), "2 node(s) wanted, 1 free"),
    ),
    (
        "growing into ranks drained before a shrink undrains them",
        seen(2, (4,), drained="2-3"),
        Decision("grow", 4, ranks("2-3"), "4 node(s) wanted, 2 free"),
    ),
    (
        "idle long enough: drain the top ranks, not below minSize",
        seen(4, idle={0: 99, 1: 99, 2: 99, 3: 99}),
        Decision("drain", 4, ranks("2-3"), "idle for 30s or more"),
    ),
    (
        "a busy rank below an idle one: only the ranks above it",
        seen(4, busy="2", idle={0: 99, 1: 99, 3: 99}),
        Decision("drain", 4, ranks("3"), "idle for 30s or more"),
    ),
    (
        "the top rank runs a job: nothing is drained under it",
        seen(4, busy="3", idle={0: 99, 1: 99, 2: 99}),
        Decision("hold", 4, ranks(""), "nothing waits, nothing idle long enough"),
    ),
    (
        "not idle long enough yet",
        seen(4, idle={2: 10, 3: 10}),
        Decision("hold", 4, ranks(""), "nothing waits, nothing idle long enough"),
    ),
    (
        "drained and running nothing: shrink over them",
        seen(4, drained="2-3", idle={2: 99, 3: 99}),
        Decision("shrink", 2, ranks("2-3"), "drained ranks run nothing"),
    ),
    (
        "a drained rank still runs the job it had: wait for it",
        seen(4, busy="3", drained="2-3", idle={2: 99}),
        Decision("hold", 4, ranks(""), "nothing waits, nothing idle long enough"),
    ),
    (
        "only the top of the drained ranks is free: shrink over that",
        seen(4, busy="2", drained="2-3", idle={3: 99}),
        Decision("shrink", 3, ranks("3"), "drained ranks run nothing"),
    ),
    (
        "at minSize: nothing to give back",
        seen(2, idle={0: 99, 1: 99}),
        Decision("hold", 2, ranks(""), "nothing waits, nothing idle long enough"),
    ),
    (
        "a job waits but fits in what is free: hold (the scheduler places it)",
        seen(3, (1,), busy="0"),
        Decision("hold", 3, ranks(""), "1 node(s) wanted, 2 free"),
    ),
    (
        "a rank someone else drained is not free: grow past it",
        seen(3, (2,), busy="0", others="2"),
        Decision("grow", 4, ranks(""), "2 node(s) wanted, 1 free"),
    ),
    (
        "a rank someone else drained is left alone: nothing drained under it, no log every tick",
        seen(4, others="3", drained="2", idle={0: 99, 1: 99, 2: 99, 3: 99}),
        Decision("hold", 4, ranks(""), "nothing waits, nothing idle long enough"),
    ),
    (
        "growing right after a shrink: ranks whose old pods still run stay drained",
        seen(2, (4,), online="0-3", drained="2-3", leaving="2-3"),
        Decision("grow", 4, ranks(""), "4 node(s) wanted, 2 free"),
    ),
    (
        "grown back: the ranks come back only once their old brokers have gone",
        seen(4, (4,), online="0-3", drained="2-3", leaving="2-3"),
        Decision("hold", 4, ranks(""), "4 node(s) wanted, 2 free; ranks 2-3 still shutting down"),
    ),
    (
        "grown back: a rank seen offline since comes back",
        seen(4, (4,), online="0-1,3", drained="2-3", leaving="3"),
        Decision("undrain", 4, ranks("2"), "4 node(s) wanted, 2 free"),
    ),
]


@pytest.mark.parametrize(("case", "observed", "expected"), CASES, ids=[c[0] for c in CASES])
def test_decision_over_queue_states(case: str, observed: Observation, expected: Decision) -> None:
    decision = decide(observed, 2, 4, IDLE)
    assert decision == expected
    assert 2 <= decision.size <= 4
    # a shrink never removes a rank that runs a job, and never a rank it did not drain
    if decision.action == "shrink":
        removed = frozenset(range(decision.size, observed.size))
        assert not removed & observed.busy
        assert removed <= observed.drained
    line = scaler.log_line(observed, decision)
    for part in ("queue=", "idle=", f"from={observed.size}", f"to={decision.size}", "why="):
        assert part in line


class FakeHandle:
    """Flux's broker as the scaler's two RPCs see it (``resource.status``, ``job-list.list``)."""

    def __init__(self, status: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        self.replies = {"resource.status": status, "job-list.list": {"jobs": jobs}}
        self.asked: list[tuple[str, Any]] = []

    def rpc(self, topic: str, payload: Any = None, nodeid: int = 0) -> Any:
        self.asked.append((topic, payload))
        reply = self.replies[topic]
        return type("Future", (), {"get": lambda _self: reply})()


R_4X8 = {"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": {"core": "0-7"}}]}}


@pytest.mark.parametrize(
    ("job", "nodes"),
    [
        ({"state": 8, "nnodes": 3, "ncores": 24, "priority": 16}, 3),  # -N 3
        ({"state": 8, "ncores": 16, "priority": 16}, 2),  # -n 16 on 8-core ranks, no nnodes
        ({"state": 8, "ncores": 9, "priority": 16}, 2),  # rounded up
        ({"state": 8, "ncores": 1, "priority": 16}, 1),
        ({"state": 8, "priority": 16}, 1),  # nothing known: one node
    ],
)
def test_a_waiting_job_needs_its_nodes_or_its_cores_over_a_ranks(
    job: dict[str, Any], nodes: int
) -> None:
    """job-list leaves nnodes out for a job submitted without -N, the usual `flux submit -n`."""
    status = {"online": "0-1", "drain": {}, "R": R_4X8}
    state = scaler.observe_flux(FakeHandle(status, [job]))
    assert state.pending == (nodes,)


def test_held_jobs_and_other_drains_are_read_apart() -> None:
    drains = {
        "2": {"reason": scaler.DRAIN_REASON, "timestamp": 1.0},
        "3": {"reason": "bad disk", "timestamp": 2.0},
    }
    status = {"online": "0-3", "drain": drains, "R": R_4X8}
    jobs = [
        {"state": 8, "nnodes": 2, "priority": 0},  # held: waits for a person, not for nodes
        {"state": 8, "nnodes": 1, "priority": 7},
        {"state": 16, "ranks": "0-1", "nnodes": 2},
    ]
    handle = FakeHandle(status, jobs)
    state = scaler.observe_flux(handle)
    assert state == scaler.FluxState(
        pending=(1,), online=ranks("0-3"), busy=ranks("0-1"), drained=ranks("2"),
        drained_by_others=ranks("3"),
    )  # fmt: skip
    (_, listing), = [a for a in handle.asked if a[0] == "job-list.list"]  # fmt: skip
    assert {"nnodes", "ncores", "priority"} <= set(listing["attrs"])


def test_cores_per_rank_is_the_fewest_a_rank_has() -> None:
    mixed = {"execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-7"}},
                                      {"rank": "2", "children": {"core": "0-3"}}]}}  # fmt: skip
    assert scaler.cores_per_rank(mixed) == 4
    assert scaler.cores_per_rank(None) is None
    assert scaler.cores_per_rank({"execution": {"R_lite": []}}) is None


def test_a_rank_given_back_leaves_once_seen_offline() -> None:
    assert scaler.track_leaving(ranks("2-3"), online=ranks("0-2")) == ranks("2")
    assert scaler.track_leaving(ranks("2"), online=ranks("0-1")) == ranks("")


def test_idle_clock_restarts_when_a_rank_runs_and_covers_offline_ranks() -> None:
    first = scaler.track_idle({}, 4, ranks("1"), now=100.0)
    assert first == {0: 100.0, 2: 100.0, 3: 100.0}
    later = scaler.track_idle(first, 4, ranks("2"), now=150.0)
    assert later == {0: 100.0, 1: 150.0, 3: 100.0}


@pytest.mark.parametrize(
    ("text", "expected"), [("", set()), ("3", {3}), ("0-2,5", {0, 1, 2, 5}), ("[1-2]", {1, 2})]
)
def test_idsets_round_trip(text: str, expected: set[int]) -> None:
    assert scaler.parse_idset(text) == expected
    assert scaler.parse_idset(scaler.format_idset(expected)) == expected


@pytest.mark.parametrize(
    ("annotation", "spec", "path", "says"),
    [
        ("true", {"maxSize": 2}, "spec.maxSize", "room to move"),
        ("true", {"minSize": 3, "size": 3, "maxSize": 3}, "spec.maxSize", "minSize (3)"),
        (
            "true",
            {"flux": {"scheduler": {"simple": False}}},
            "spec.flux.scheduler.simple",
            "Fluxion",
        ),
        ("yes", {}, "metadata.annotations", "JSON object"),
        ('{"idle": 5}', {}, "metadata.annotations", "allowed: intervalSeconds, idleSeconds"),
        ('{"intervalSeconds": 0}', {}, "intervalSeconds", "greater than or equal to 1"),
        (
            "true",
            {"jobLabels": {"kueue.x-k8s.io/queue-name": "team-a"}},
            "spec.jobLabels",
            "cannot autoscale",
        ),
    ],
)
def test_refused_with_the_field(
    annotation: str, spec: dict[str, Any], path: str, says: str
) -> None:
    with pytest.raises(SpecError) as err:
        render(build_plan(parse(document(annotation, **spec))), None)
    assert any(path in p.path and says in p.message for p in err.value.problems), err.value


@pytest.mark.parametrize(("version", "refused"), [("1.27", True), ("1.28", False)])
def test_autoscale_needs_a_release_that_resizes_a_running_indexed_job(
    version: str, refused: bool
) -> None:
    definition = parse(document("true"))
    if not refused:
        assert build_plan(definition, kubeversion.parse(version)).autoscale is not None
        return
    with pytest.raises(SpecError) as err:
        build_plan(definition, kubeversion.parse(version))
    (problem,) = err.value.problems
    assert problem.path == "kube_version"
    assert "elastic Indexed Jobs, taken from 1.28" in problem.message


def test_settings_and_bounds_reach_the_plan() -> None:
    plan = build_plan(parse(document('{"idleSeconds": 5}', minSize=1)))
    assert plan.autoscale == autoscale.Autoscale(
        min_size=1,
        max_size=4,
        interval_seconds=10,
        idle_seconds=5,
        account="elastic-autoscaler",
        job="elastic",
    )
    assert build_plan(parse(document("false"))).autoscale is None
    assert build_plan(parse(document(None))).autoscale is None


def test_rendering_grants_get_and_patch_of_its_own_job_only(
    rendered: Callable[..., list[dict[str, Any]]], by_kind: Callable[..., dict[str, Any]]
) -> None:
    objects = rendered(EXAMPLE)
    role = by_kind(objects, "Role")
    assert role["rules"] == [
        {
            "apiGroups": ["batch"],
            "resources": ["jobs"],
            "resourceNames": ["flux-autoscale"],
            "verbs": ["get", "patch"],
        }
    ]
    binding = by_kind(objects, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "flux-autoscale-autoscaler"
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "flux-autoscale-autoscaler",
            "namespace": "minicluster-examples",
        }
    ]
    account = by_kind(objects, "ServiceAccount")
    assert account["automountServiceAccountToken"] is False
    assert not [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]

    pod = by_kind(objects, "Job")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "flux-autoscale-autoscaler"
    assert pod["automountServiceAccountToken"] is False
    token = next(v for v in pod["volumes"] if v["name"] == autoscale.TOKEN_VOLUME)
    sources = token["projected"]["sources"]
    assert sources[0]["serviceAccountToken"]["expirationSeconds"] == autoscale.TOKEN_SECONDS
    mounting = [
        c["name"]
        for c in pod["initContainers"] + pod["containers"]
        if any(m["name"] == autoscale.TOKEN_VOLUME for m in c.get("volumeMounts", []))
    ]
    assert mounting == ["flux-autoscale"]  # the Flux container, where rank 0 runs the scaler


def test_the_shipped_scaler_is_this_module_and_rank0_starts_it(
    rendered: Callable[..., list[dict[str, Any]]], by_kind: Callable[..., dict[str, Any]]
) -> None:
    data = by_kind(rendered(EXAMPLE), "ConfigMap")["data"]
    assert data[autoscale.SCALER_KEY] == Path(scaler.__file__).read_text(encoding="utf-8")
    script = data["wait-0.sh"]
    assert "start_autoscaler\n" in script
    assert "--max-size=4" in script
    assert "--job=flux-autoscale" in script


def test_without_autoscale_nothing_changes(curve_cert: str) -> None:
    with_off = render(build_plan(parse(document("false"))), curve_cert)
    without = render(build_plan(parse(document(None))), curve_cert)
    assert with_off.objects() == without.objects()
    assert not with_off.autoscaler
    pod = without.job["spec"]["template"]["spec"]
    assert "serviceAccountName" not in pod
    assert pod["automountServiceAccountToken"] is False


@pytest.mark.parametrize("simple", [True, False])
def test_scheduler_simple_is_the_one_flux_modprobe_loads(simple: bool) -> None:
    """Flux >= 0.70 loads its scheduler with ``flux modprobe``, which picks Fluxion whenever it is
    installed; ``flux.scheduler.simple`` must name sched-simple as the alternative (the e2e
    scenario runs it: a 4-node job waits on 2 brokers instead of failing as unsatisfiable)."""
    spec = {"flux": {"scheduler": {"simple": simple}}}
    data = render(build_plan(parse(document(None, **spec)))).entrypoint["data"]
    config = tomllib.loads(data["broker.toml"])
    if simple:
        assert config["modules"]["alternatives"] == {
            "sched": "sched-simple",
            "feasibility": "sched-simple",
        }
    else:
        assert "modules" not in config


@pytest.mark.parametrize(
    "container",
    [
        {"image": "ubuntu:24.04"},
        {"image": "ubuntu:24.04", "command": "hostname"},
        {"image": "ubuntu:24.04", "command": "hostname", "batch": True},
        {"image": "ubuntu:24.04", "command": "flux run -N 4 hostname", "launcher": True},
    ],
    ids=["interactive", "submit", "batch", "launcher"],
)
def test_rank0_starts_the_scaler_beside_its_broker_in_every_mode(container: dict[str, Any]) -> None:
    spec = {"interactive": "command" not in container, "containers": [container]}
    script = render(build_plan(parse(document("true", **spec)))).entrypoint["data"]["wait-0.sh"]
    rank0 = script[script.index('if [ "${host}" = "${mainHost}" ]; then') :]
    rank0 = rank0[: rank0.index("\nelse\n")]
    assert (
        rank0.index("start_autoscaler") < rank0.index("run_rank0") < rank0.index("stop_autoscaler")
    )
