"""Secure by default: the NetworkPolicies around a MiniCluster, and the containers we harden.

The NetworkPolicy tests read each policy's selectors and ports against the pods and Services
rendered beside it: the mesh admits exactly its own pods, every port a Service forwards to is
admitted, rank 0's broker port is admitted from the lead's ranges, and nothing else is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.corpus import load_one

from flux_minicluster import kubecheck
from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.kube.quantity import parse_quantity
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render import hardening
from flux_minicluster.core.render.manifests import render

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
Manifest = dict[str, Any]
Rendered = Callable[..., list[Manifest]]
Build = Callable[..., plans.MiniClusterPlan]


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def pod_labels(objects: list[Manifest]) -> list[dict[str, str]]:
    """The labels of every pod the objects make: the Job's pods (rank 0's index label set, as the
    Job controller sets it) and bare Pods."""
    out = []
    for o in objects:
        if o["kind"] == "Job":
            template = o["spec"]["template"]["metadata"]["labels"]
            out += [
                {**template, lbl.JOB_NAME_LABEL: o["metadata"]["name"],
                 lbl.COMPLETION_INDEX_LABEL: str(i)}
                for i in range(o["spec"]["parallelism"])
            ]  # fmt: skip
        elif o["kind"] == "Pod":
            out.append(o["metadata"]["labels"])
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_mesh_admits_its_own_pods_and_the_ports_its_services_forward_to(
    path: Path, rendered: Rendered
) -> None:
    objects = rendered(path)
    mc = load_one(path)
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}
    mesh = policies[f"{mc.name}-mesh"]["spec"]
    pods = pod_labels(objects)
    assert pods, "every MiniCluster has pods"
    assert all(selects(mesh["podSelector"], p) for p in pods), "the mesh covers every pod"
    assert mesh["policyTypes"] == ["Ingress"], "egress stays open"
    members, *others = mesh["ingress"]
    assert members == {"from": [{"podSelector": mesh["podSelector"]}]}
    admitted = {p["port"] for rule in others for p in rule["ports"]}
    assert all("from" not in rule for rule in others)
    for service in (o for o in objects if o["kind"] == "Service"):
        if service["metadata"]["name"].endswith("-lead"):
            continue
        for port in service["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            assert target in admitted or target == layout.BROKER_PORT, (
                f"{service['metadata']['name']} forwards to {target}, which the mesh refuses"
            )
    declared = {p for c in [*mc.spec.containers, *mc.spec.services] if not c.run_flux
                for p in c.ports}  # fmt: skip
    if plans.build(mc).mode is plans.Mode.RESTFUL and mc.spec.flux_restful is not None:
        declared.add(mc.spec.flux_restful.port)  # v1alpha1's RESTful server is there to be reached
    assert admitted == declared, "only declared ports are open to others"


@pytest.mark.parametrize("ranges", [[], ["198.51.100.0/24", "203.0.113.7/32"]])
def test_a_roots_rank_0_admits_its_bursts_on_the_broker_port(ranges: list[str]) -> None:
    mc = plans.build(load_one(ROOT / "examples" / "bursting-root.yaml"))
    objects = render(mc, None, lead_source_ranges=ranges).objects()
    (lead,) = [o for o in objects if o["metadata"]["name"] == f"{mc.name}-lead"]
    spec = lead["spec"]
    rank0 = [p for p in pod_labels(objects) if selects(spec["podSelector"], p)]
    assert [p[lbl.COMPLETION_INDEX_LABEL] for p in rank0] == ["0"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"port": layout.BROKER_PORT, "protocol": "TCP"}]
    assert rule.get("from", []) == [{"ipBlock": {"cidr": c}} for c in ranges]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, ["flux-sample-mesh"]),
        (
            {"size": 2, "flux": {"bursting": {"clusters": [{"name": "b"}]}}},
            ["flux-sample-mesh", "flux-sample-lead"],
        ),
    ],
    ids=["standalone", "bursting root"],
)
def test_only_a_root_has_a_lead_policy(
    build: Build, spec: dict[str, Any], expected: list[str]
) -> None:
    names = [o["metadata"]["name"] for o in render(build(spec), None).objects()
             if o["kind"] == "NetworkPolicy"]  # fmt: skip
    assert names == expected


def test_network_policies_can_be_left_out(build: Build) -> None:
    doc = {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "x", "annotations": {lbl.NETWORK_POLICY_ANNOTATION: "false"}},
        "spec": {"containers": [{"image": "u:1"}]},
    }
    opted_out = plans.build(parse(doc))
    kinds = {o["kind"] for o in render(opted_out, None).objects()}
    assert "NetworkPolicy" not in kinds
    kinds = {o["kind"] for o in render(build({}), None, network_policy=False).objects()}
    assert "NetworkPolicy" not in kinds
    doc["metadata"]["annotations"][lbl.NETWORK_POLICY_ANNOTATION] = "no"
    with pytest.raises(SpecError, match='must be "true" or "false"'):
        parse(doc)


# --- hardened containers ---------------------------------------------------------------------


def job_pod(objects: list[Manifest]) -> dict[str, Any]:
    (job,) = [o for o in objects if o["kind"] == "Job"]
    pod: dict[str, Any] = job["spec"]["template"]["spec"]
    return pod


LOCKED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
}
NON_ROOT = {"runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": True}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, {**LOCKED, **NON_ROOT}),
        # The pod's user applies to the init container too: non-root unless it is root.
        ({"pod": {"securityContext": {"runAsUser": 1000}}}, {**LOCKED, "runAsNonRoot": True}),
        ({"pod": {"securityContext": {"runAsUser": 0}}}, LOCKED),
        # The view's own securityContext wins.
        (
            {"flux": {"container": {"securityContext": {"runAsUser": 0}}}},
            {**LOCKED, "runAsUser": 0},
        ),
    ],
    ids=["default", "pod-user", "pod-root", "view-root"],
)
def test_the_init_container_is_locked_down_with_resources(
    build: Build, spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    (init,) = job_pod(render(build(spec), None).objects())["initContainers"]
    assert init["securityContext"] == expected
    assert set(init["resources"]) == {"requests", "limits"}


def qos_class(pod: dict[str, Any]) -> str:
    """Kubernetes' QoS class of a pod (GetPodQOS, for cpu and memory), requests defaulting to
    limits as the API server defaults them; e2e reads the real one (test_flux_mpi)."""
    every = [*pod.get("initContainers", []), *pod["containers"]]
    guaranteed, anything = True, False
    for container in every:
        limits = container.get("resources", {}).get("limits", {})
        requests = {**limits, **container.get("resources", {}).get("requests", {})}
        for name in ("cpu", "memory"):
            anything = anything or name in limits or name in requests
            if name not in limits or parse_quantity(requests[name]) != parse_quantity(limits[name]):
                guaranteed = False
    return "Guaranteed" if guaranteed else ("Burstable" if anything else "BestEffort")


WHOLE = {"limits": {"cpu": 2, "memory": "1Gi"}}


@pytest.mark.parametrize(
    ("containers", "view", "qos", "init"),
    [
        # the user's containers are Guaranteed: so is the pod, the init container within theirs
        ([WHOLE], None, "Guaranteed", {"cpu": "1", "memory": "256Mi"}),
        (
            [{"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0.5"}}],
            None,
            "Guaranteed",
            {"cpu": "500m", "memory": "128Mi"},
        ),
        ([WHOLE, WHOLE], None, "Guaranteed", {"cpu": "1", "memory": "256Mi"}),
        # a request below its limit, or a sidecar without limits: Burstable, the defaults
        ([{**WHOLE, "requests": {"cpu": 1}}], None, "Burstable", None),
        ([WHOLE, None], None, "Burstable", None),
        ([None], None, "Burstable", None),
        # the view's own resources win
        (
            [WHOLE],
            {"limits": {"cpu": "2", "memory": "1Gi"}},
            "Guaranteed",
            {"cpu": "2", "memory": "1Gi"},
        ),
    ],
    ids=["whole", "fraction", "sidecar", "request-below", "sidecar-unset", "unset", "view-own"],
)
def test_a_pod_of_guaranteed_containers_is_guaranteed(
    build: Build,
    containers: list[dict[str, Any] | None],
    view: dict[str, Any] | None,
    qos: str,
    init: dict[str, Any] | None,
) -> None:
    """Only a Guaranteed pod can get cores of its own from the kubelet's static CPU manager (and
    Flux then binds ranks to them): the init container must not be what keeps it Burstable."""
    spec: dict[str, Any] = {
        "containers": [
            {
                "image": "mpi:1",
                **({"name": f"side{i}"} if i else {"command": "hostname", "runFlux": True}),
                **({"resources": res} if res else {}),
            }
            for i, res in enumerate(containers)
        ]
    }
    if view:
        spec["flux"] = {"container": {"resources": view}}
    pod = job_pod(render(build(spec), None).objects())
    assert qos_class(pod) == qos
    (container,) = pod["initContainers"]
    if init is None:
        assert container["resources"] == hardening.INIT_RESOURCES
    else:
        res = container["resources"]
        requests = res.get("requests", res["limits"])  # unset: the API server requests the limit
        assert {n: requests[n] for n in init} == {n: res["limits"][n] for n in init} == init


BASELINE = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["NET_RAW"]}}
SIDECARS = {
    "containers": [
        {"image": "ubuntu:24.04", "runFlux": True, "command": "hostname"},
        {"name": "metrics", "image": "exporter:1", "noWrapEntrypoint": True},
    ],
    "services": [{"name": "db", "image": "redis:7"}],
}


def containers_by_name(objects: list[Manifest]) -> dict[str, dict[str, Any]]:
    """Every regular container of the Job's pod and the services Pod, by name."""
    pods = [job_pod(objects), *(o["spec"] for o in objects if o["kind"] == "Pod")]
    return {c["name"]: c for pod in pods for c in pod["containers"]}


@pytest.mark.parametrize("name", ["flux-sample", "metrics", "db"])
def test_every_application_container_drops_net_raw_and_cannot_escalate(
    build: Build, name: str
) -> None:
    """The Flux container, a sidecar and a services container run the user's images: each gets
    the same baseline, and the pod the runtime's seccomp profile."""
    objects = render(build(SIDECARS), None).objects()
    assert containers_by_name(objects)[name]["securityContext"] == BASELINE
    assert job_pod(objects)["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert kubecheck.refusals(objects) == []


def test_a_sidecars_own_security_context_wins(build: Build) -> None:
    spec: dict[str, Any] = {**SIDECARS, "services": [{"name": "db", "image": "redis:7"}]}
    spec["services"][0]["securityContext"] = {"allowPrivilegeEscalation": True, "runAsUser": 999}
    db = containers_by_name(render(build(spec), None).objects())["db"]
    assert db["securityContext"] == {
        "allowPrivilegeEscalation": True,
        "capabilities": {"drop": ["NET_RAW"]},
        "runAsUser": 999,
    }


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        # A spec that asks for more still gets it.
        ({"privileged": True}, {"capabilities": {"drop": ["NET_RAW"]}, "privileged": True}),
        (
            {"capabilities": {"add": ["SYS_ADMIN", "NET_RAW"]}},
            {"capabilities": {"add": ["SYS_ADMIN", "NET_RAW"]}},
        ),
        (
            {"allowPrivilegeEscalation": True, "runAsUser": 1000},
            {
                "allowPrivilegeEscalation": True,
                "capabilities": {"drop": ["NET_RAW"]},
                "runAsUser": 1000,
            },
        ),
        (
            {"capabilities": {"drop": ["CHOWN"]}},
            {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["NET_RAW", "CHOWN"]}},
        ),
    ],
)
def test_the_users_security_context_wins(
    context: dict[str, Any], expected: dict[str, Any], build: Build
) -> None:
    spec = {"containers": [{"image": "u:1", "command": "x", "securityContext": context}]}
    objects = render(build(spec), None).objects()
    (flux,) = job_pod(objects)["containers"]
    assert flux["securityContext"] == expected
    assert kubecheck.refusals(objects) == []


def test_a_pod_seccomp_profile_of_the_users_is_kept(build: Build) -> None:
    spec = {"pod": {"securityContext": {"seccompProfile": {"type": "Unconfined"}, "fsGroup": 7}}}
    pod = job_pod(render(build(spec), None).objects())
    assert pod["securityContext"] == {"fsGroup": 7, "seccompProfile": {"type": "Unconfined"}}


def test_the_init_containers_own_settings_win(build: Build) -> None:
    spec = {
        "flux": {
            "container": {
                "securityContext": {"readOnlyRootFilesystem": False},
                "resources": {"requests": {"cpu": 2}},
            }
        }
    }
    (init,) = job_pod(render(build(spec), None).objects())["initContainers"]
    assert init["securityContext"]["readOnlyRootFilesystem"] is False
    assert init["resources"] == {"requests": {"cpu": 2}}


@pytest.mark.parametrize(
    ("flux", "view", "output"),
    [
        ({}, None, "/tmp/fluxout"),
        # The spec's own output directory, or its own volume over the default, is left as it is.
        ({"logs": "/data/out"}, None, None),
        ({"volumes": {"scratch": {"emptyDir": True, "path": "/tmp"}}}, None, None),
        ({"volumes": {"scratch": {"emptyDir": True, "path": "//tmp"}}}, None, None),
        (
            {"volumes": {"scratch": {"emptyDir": True, "path": "/tmp/fluxout-x"}}},
            None,
            "/tmp/fluxout",
        ),
        # The flux view on, above or inside the default: the view wins, never hidden.
        ({}, "/tmp/fluxout", None),
        ({}, "//tmp/fluxout/", None),
        ({}, "/tmp", None),
        ({}, "/tmp/fluxout/view", None),
    ],
    ids=[
        "default",
        "own-logs",
        "own-volume-above",
        "own-volume-above-unnormalised",
        "own-volume-beside",
        "view-on",
        "view-on-unnormalised",
        "view-above",
        "view-inside",
    ],
)
def test_the_entrypoints_output_is_not_on_the_root_filesystem(
    build: Build, flux: dict[str, Any], view: str | None, output: str | None
) -> None:
    """So a spec can make the Flux container's root read-only: the entrypoint makes
    FLUX_OUTPUT_DIR (the operator's /tmp/fluxout by default), and batch jobs write there."""
    spec: dict[str, Any] = {"containers": [{"image": "u:1", "command": "hostname", **flux}]}
    if view is not None:
        spec["flux"] = {"container": {"mountPath": view}}
    spec["containers"][0]["securityContext"] = {"readOnlyRootFilesystem": True}
    objects = render(build(spec), None).objects()
    pod = job_pod(objects)
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    on_volume = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    ours = [v for v in pod["volumes"] if v["name"] == layout.OUTPUT_VOLUME]
    if output is None:
        assert ours == []
        assert layout.OUTPUT_VOLUME not in on_volume.values()
    else:
        assert on_volume[output] == layout.OUTPUT_VOLUME
        assert ours == [{"name": layout.OUTPUT_VOLUME, "emptyDir": {}}]
        entrypoint = next(o for o in objects if o["kind"] == "ConfigMap")
        assert f"export FLUX_OUTPUT_DIR={output}\n" in entrypoint["data"]["wait-0.sh"]
    assert kubecheck.refusals(objects) == []
