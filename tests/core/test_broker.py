"""broker.toml and the hostlist: valid TOML whose hosts expand to exactly the intended ranks.

A broker's rank is its hostname's position in ``[bootstrap] hosts``, so each case states the
hosts it means, one by one, and checks the rendered config expands to that list in that order.
"""

from __future__ import annotations

import subprocess
import tomllib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.base.templating import shquote, toml_string
from flux_minicluster.core.flux import hostlist
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.render.broker import broker_toml
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import MiniClusterSpec

NAME = "flux-sample"


Build = Callable[..., plans.MiniClusterPlan]


def pods(name: str, count: int, start: int = 0) -> list[str]:
    return [f"{name}-{i}" for i in range(start, count)]


def child(lead_size: int = 4, port: int = 8050, **bursting: Any) -> dict[str, Any]:
    lead = {"address": "34.1.2.3", "name": "lead", "size": lead_size, "port": port}
    return {
        "size": 2,
        "flux": {
            "bursting": {
                "leadBroker": lead,
                **({"clusters": [{"name": "child", "size": 2}]} | bursting),
            }
        },
    }


# name -> (cluster name, spec, the hosts in rank order)
CASES: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "size-1": (NAME, {"size": 1}, pods(NAME, 1)),
    "size-4": (NAME, {"size": 4}, pods(NAME, 4)),
    "room-to-grow": (NAME, {"size": 2, "maxSize": 4}, pods(NAME, 4)),
    "root-with-bursts": (
        NAME,
        {
            "size": 2,
            "maxSize": 3,
            "flux": {"bursting": {"clusters": [{"name": "gke-b", "size": 3}, {"name": "eks-c"}]}},
        },
        # eks-c has no size: it defaults to this cluster's size (2).
        pods(NAME, 3) + pods("gke-b", 3) + pods("eks-c", 2),
    ),
    "root-burst-defaults": (
        NAME,
        {"size": 2, "flux": {"bursting": {"clusters": [{}, {"size": 1}]}}},
        pods(NAME, 2) + pods("burst-0", 2) + pods("burst-1", 1),
    ),
    "child": ("child", child(), ["34.1.2.3", *pods("lead", 4, 1), *pods("child", 2)]),
    "child-of-one-pod-lead": ("child", child(lead_size=1), ["34.1.2.3", *pods("child", 2)]),
    "child-of-two-pod-lead": (
        "child",
        child(lead_size=2),
        ["34.1.2.3", "lead-1", *pods("child", 2)],
    ),
    "child-among-others": (
        "child",
        child(clusters=[{"name": "first", "size": 3}, {"name": "child", "size": 2}]),
        ["34.1.2.3", *pods("lead", 4, 1), *pods("first", 3), *pods("child", 2)],
    ),
    "custom-hostlist": (
        NAME,
        {
            "size": 4,
            "flux": {"bursting": {"hostlist": "flux-sample-[0-3],gffw-compute-a-[001-003]"}},
        },
        [*pods(NAME, 4), "gffw-compute-a-001", "gffw-compute-a-002", "gffw-compute-a-003"],
    ),
    "child-custom-hostlist": (
        "child",
        child(clusters=[], hostlist="34.1.2.3,lead-[1-3],child-[0-1]"),
        ["34.1.2.3", *pods("lead", 4, 1), *pods("child", 2)],
    ),
}


def parsed(mc: plans.MiniClusterPlan) -> dict[str, Any]:
    return tomllib.loads(broker_toml(mc))


def expanded(config: dict[str, Any]) -> list[str]:
    return [
        host for entry in config["bootstrap"]["hosts"] for host in hostlist.expand(entry["host"])
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_hosts_expand_to_the_intended_ranks(case: str, build: Build) -> None:
    name, spec, hosts = CASES[case]
    mc = build(spec, name=name)
    config = parsed(mc)
    assert expanded(config) == hosts
    assert hostlist.expand(mc.hostlist) == hosts
    # Every broker of the cluster finds itself (a missing hostname makes a broker exit at once).
    for i in range(mc.spec.max_size):
        assert f"{name}-{i}" in hosts


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_shape(case: str, build: Build) -> None:
    name, spec, _ = CASES[case]
    mc = build(spec, name=name)
    config = parsed(mc)
    assert set(config) == {"access", "resource", "bootstrap", "archive", "sched-fluxion-qmanager"}
    assert config["access"] == {"allow-guest-user": True, "allow-root-owner": True}
    assert config["resource"] == {"path": "/mnt/flux/config/etc/flux/system/R"}
    assert config["bootstrap"]["curve_cert"] == "/mnt/flux/config/curve/curve.cert"
    assert config["bootstrap"]["default_port"] == 8050
    assert config["bootstrap"]["default_bind"] == "tcp://eth0:%p"
    domain = f"{name}.default.svc.cluster.local"
    assert config["bootstrap"]["default_connect"] == f"tcp://%h.{domain}:%p"
    assert config["archive"]["dbpath"] == "/mnt/flux/config/var/lib/flux/job-archive.sqlite"
    assert config["sched-fluxion-qmanager"] == {"queue-policy": "fcfs"}
    assert set(config["bootstrap"]) == {
        "curve_cert",
        "default_port",
        "default_bind",
        "default_connect",
        "hosts",
    }
    # The operator's paths agree with the paths the scripts use.
    paths = mc.paths
    assert config["resource"]["path"] == paths.resource
    assert config["bootstrap"]["curve_cert"] == paths.curve_cert


def test_hosts_is_an_array_of_tables_one_per_block(build: Build) -> None:
    name, spec, _ = CASES["root-with-bursts"]
    assert parsed(build(spec, name=name))["bootstrap"]["hosts"] == [
        {"host": "flux-sample-[0-2]"},
        {"host": "gke-b-[0-2]"},
        {"host": "eks-c-[0-1]"},
    ]


@pytest.mark.parametrize("port", [8050, 9000])
def test_child_reaches_the_lead_through_its_address(port: int, build: Build) -> None:
    hosts = parsed(build(child(port=port), name="child"))["bootstrap"]["hosts"]
    assert hosts[0] == {
        "host": "34.1.2.3",
        "bind": f"tcp://eth0:{port}",
        "connect": f"tcp://34.1.2.3:{port}",
    }
    assert all(set(entry) == {"host"} for entry in hosts[1:])


def test_child_custom_hostlist_keeps_the_lead_endpoint(build: Build) -> None:
    mc = build(child(clusters=[], hostlist="34.1.2.3,lead-[1-3],child-[0-1]"), name="child")
    assert mc.host_entries[0].connect == "tcp://34.1.2.3:8050"
    assert mc.hostlist == "34.1.2.3,lead-[1-3],child-[0-1]"


def test_custom_hostlist_is_verbatim(build: Build) -> None:
    custom = "flux-sample-[0-3],gffw-compute-a-[001-003]"
    mc = build({"size": 4, "flux": {"bursting": {"hostlist": custom}}})
    assert mc.hostlist == custom
    assert parsed(mc)["bootstrap"]["hosts"] == [{"host": custom}]


def test_namespace_headless_name_mount_and_queue_policy(build: Build) -> None:
    mc = build(
        {
            "size": 2,
            "network": {"headlessName": "svc"},
            "flux": {
                "container": {"mountPath": "/data/flux"},
                "scheduler": {"queuePolicy": "easy"},
            },
        },
        namespace="hpc",
    )
    config = parsed(mc)
    assert config["bootstrap"]["default_connect"] == "tcp://%h.svc.hpc.svc.cluster.local:%p"
    assert config["bootstrap"]["curve_cert"] == "/data/flux/config/curve/curve.cert"
    assert config["resource"]["path"] == "/data/flux/config/etc/flux/system/R"
    assert config["sched-fluxion-qmanager"]["queue-policy"] == "easy"


def test_unusual_mount_path_stays_one_string(build: Build) -> None:
    mount = '/data/a "quoted" \\ path\twith\ttabs'
    mc = build({"size": 1, "flux": {"container": {"mountPath": mount}}})
    assert parsed(mc)["bootstrap"]["curve_cert"] == f"{mount}/config/curve/curve.cert"


USER_CONFIG = """[bootstrap]
curve_cert = "/mnt/flux/view/curve/curve.cert"
default_port = 8050
default_bind = "tcp://eth0:%p"
default_connect = "tcp://%h.flux-service.default.svc.cluster.local:%p"
hosts = [{host="flux-sample-0", bind="tcp://eth0:8050",connect="tcp://flux-sample-0.x:8050"},
         {host="flux-sample-[1-3]"}]
[resource]
path = "/mnt/flux/view/etc/flux/system/R"
"""


def test_broker_config_replaces_the_generated_one(build: Build) -> None:
    mc = build({"size": 4, "flux": {"brokerConfig": USER_CONFIG}})
    assert broker_toml(mc) == USER_CONFIG
    # R and the certificate copy go where that config looks for them.
    assert mc.hostlist == "flux-sample-0,flux-sample-[1-3]"
    assert hostlist.expand(mc.hostlist) == pods(NAME, 4)
    assert mc.paths.curve_cert == "/mnt/flux/view/curve/curve.cert"
    assert mc.paths.resource == "/mnt/flux/view/etc/flux/system/R"


def test_broker_config_without_hosts_falls_back_to_the_generated_hostlist(build: Build) -> None:
    mc = build({"size": 3, "flux": {"brokerConfig": "[access]\nallow-guest-user = true\n"}})
    assert mc.hostlist == "flux-sample-[0-2]"
    assert mc.paths.curve_cert == "/mnt/flux/config/curve/curve.cert"


@pytest.mark.parametrize("text", ['hosts = [ {host="a"}', "[bootstrap]\nbogus = 1\n"])
def test_a_broker_config_a_broker_would_not_take_is_refused(text: str) -> None:
    # Built without parse(), as a caller could: the renderer still refuses it.
    spec = MiniClusterSpec.model_validate(
        {"containers": [{"image": "x", "command": "y"}], "flux": {"brokerConfig": text}}
    )
    mc = MiniClusterDefinition(name=NAME, namespace="default", spec=spec)
    with pytest.raises(SpecError, match="brokerConfig"):
        plans.build(mc)


def test_size_never_grows_the_config(build: Build) -> None:
    small = broker_toml(build({"size": 2}))
    large = broker_toml(build({"size": 65536}))
    assert len(large.encode()) <= len(small.encode()) + 8
    assert expanded(tomllib.loads(large))[-1] == f"{NAME}-65535"
    assert len(build({"size": 65536}).hostlist) < 32


def test_hostlist_file_matches_broker_toml(build: Build) -> None:
    for name, spec, _ in CASES.values():
        mc = build(spec, name=name)
        assert hostlist.expand(mc.hostlist) == expanded(parsed(mc))


# --- the filters every value passes through ------------------------------------------------


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",))))
def test_toml_string_round_trips(value: str) -> None:
    assert tomllib.loads(f"x = {toml_string(value)}")["x"] == value


@pytest.mark.parametrize(
    "value",
    [
        "",
        "plain",
        "a b",
        "it's",
        '"dq"',
        "$(touch pwned)",
        "`touch pwned`",
        "a\nb",
        "\\",
        "-n",
        "*",
    ],
)
def test_shquote_is_one_exact_word(value: str, tmp_path: Any) -> None:
    out = subprocess.run(
        ["bash", "-c", f"printf '%s|' {shquote(value)}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert out.stdout == f"{value}|"
    assert list(tmp_path.iterdir()) == []
