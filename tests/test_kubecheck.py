"""``flux_minicluster.kubecheck``, the API server imitated offline.

``tests/e2e/test_server_validation.py`` holds every rule against a real kube-apiserver; the cases
here are what the server refused (or accepted) while kubecheck said otherwise, found there and
pinned here so that ``make test`` keeps them fixed without the e2e toolchain. Most come from specs
that core validation accepts (generated and mutated specs): each case is the rendered Job's pod
with the one field the server named. The last section breaks a rendered MiniCluster's objects one
field at a time: the checker can fail.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.manifestcases import ByKind, JobPod, Rendered, mini

from flux_minicluster import kubecheck
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube import labels as lbl


def test_refusals_are_each_releases_schema_errors_then_the_sets_own() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"typo": 1},
    }
    typo = "spec: Additional properties are not allowed ('typo' was unexpected)"
    assert kubecheck.schema_errors(service) == [typo]  # strict: an unknown field is an error
    no_port = "Service/x: spec.ports: a Service that is not headless needs at least one port"
    assert kubecheck.refusals([service], ("1.29", "1.34")) == [
        f"Service/x (k8s 1.29): {typo}",
        f"Service/x (k8s 1.34): {typo}",
        no_port,
    ]
    assert kubecheck.refusals([service], ()) == [no_port]  # no release: the API-server rules only


def _job(**pod: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "ubuntu:24.04", **pod.pop("container", {})}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "demo", "namespace": "hpc"},
        "spec": {
            "completionMode": "Indexed",
            "completions": 1,
            "template": {
                "spec": {"restartPolicy": "OnFailure", "containers": [container], **pod},
            },
        },
    }


def _resources(**resources: Any) -> dict[str, Any]:
    return {"container": {"resources": resources}}


SERVER_REFUSED = [
    pytest.param(
        _resources(limits={"memory": 38}, requests={"memory": "64Mi"}),
        "requests['memory']: '64Mi' is more than the limit 38",
        id="request-above-limit",
    ),
    pytest.param(_resources(requests={"memory": "-1"}), "must be at least 0", id="negative"),
    pytest.param(_resources(limits={"cp": "1"}), "limits['cp']: must be cpu", id="unknown-name"),
    pytest.param(
        {
            "container": {"volumeMounts": [{"name": "v", "mountPath": "/v"}]},
            "volumes": [
                {"name": "v", "configMap": {"name": "m", "items": [{"key": "k", "path": ""}]}}
            ],
        },
        "items[0].path: must be a non-empty relative path",
        id="configmap-item-without-path",
    ),
    pytest.param(
        {"volumes": [{"name": "v", "csi": {"driver": "/var/tmp/run"}}]},
        "csi.driver: must be a DNS-1123 subdomain",
        id="csi-driver",
    ),
    pytest.param({"runtimeClassName": "n "}, "runtimeClassName", id="runtime-class-name"),
    pytest.param({"serviceAccountName": "A_b"}, "serviceAccountName", id="service-account"),
    pytest.param(
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["'; touch x; '"]}
                                ]
                            }
                        ]
                    }
                }
            }
        },
        "matchExpressions[0].values[0]",
        id="node-affinity-value",
    ),
    pytest.param(
        {"tolerations": [{"key": "\u00e7r\x7f", "operator": "Exists"}]},
        "tolerations[0].key",
        id="toleration-key",
    ),
    pytest.param({"nodeSelector": {"zone": "a b"}}, "nodeSelector['zone']", id="node-selector"),
]


@pytest.mark.parametrize(("pod", "expected"), SERVER_REFUSED)
def test_kubecheck_refuses_what_the_api_server_refused(pod: dict[str, Any], expected: str) -> None:
    job = _job(**pod)
    assert kubecheck.schema_errors(job, "1.36") == []  # the schema alone let it through
    errors = kubecheck.semantic_errors([job])
    assert any(expected in e for e in errors), errors


def test_kubecheck_accepts_the_same_job_without_the_mistake() -> None:
    job = _job(
        **_resources(limits={"memory": "1Gi", "nvidia.com/gpu": 1}, requests={"memory": "64Mi"}),
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        nodeSelector={"zone": "a"},
    )
    assert kubecheck.semantic_errors([job]) == []


def _service(port_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "metrics", "namespace": "hpc"},
        "spec": {"selector": {"a": "b"}, "ports": [{"name": port_name, "port": 9100}]},
    }


def test_a_service_port_name_is_a_dns_label_not_an_iana_service_name() -> None:
    # e2e test_each_kubecheck_rule_against_the_server: the server accepted a Service port named
    # with 21 characters, which kubecheck refused with the container ports' IANA rule.
    def errors(port_name: str) -> list[str]:
        return [e for e in kubecheck.semantic_errors([_service(port_name)]) if "ports[0]" in e]

    assert errors("a-very-long-port-name") == []
    assert errors("Bad_Name") != []
    # container ports keep the IANA rule (at most 15 characters), which the server enforces there
    job = _job(container={"ports": [{"name": "a-very-long-port-name", "containerPort": 80}]})
    assert any("ports[0].name: must be an IANA" in e for e in kubecheck.semantic_errors([job]))


# --- the checker can fail -------------------------------------------------------------------


@pytest.fixture
def good(rendered: Rendered) -> list[dict[str, Any]]:
    """A valid MiniCluster's objects, for a test to break one of them."""
    return rendered(mini())


def test_kubecheck_refuses_a_job_that_restarts_always(
    job_pod: JobPod, good: list[dict[str, Any]]
) -> None:
    objects = good
    job_pod(objects)["restartPolicy"] = "Always"
    errors = kubecheck.semantic_errors(objects)
    assert any("restartPolicy OnFailure or Never" in e for e in errors), errors


def test_kubecheck_refuses_a_bad_name(by_kind: ByKind, good: list[dict[str, Any]]) -> None:
    objects = good
    by_kind(objects, "ConfigMap")["metadata"]["name"] = "Bad_Name"
    errors = kubecheck.semantic_errors(objects)
    assert any(
        e.startswith("ConfigMap/Bad_Name: metadata.name: must be a DNS-1123") for e in errors
    )
    service = by_kind(objects, "Service")
    service["metadata"]["name"] = "1demo"  # a Service name must start with a letter
    assert any("DNS-1035" in e for e in kubecheck.semantic_errors(objects))


def test_kubecheck_refuses_a_selector_that_matches_nothing(
    by_kind: ByKind, good: list[dict[str, Any]]
) -> None:
    objects = good
    by_kind(objects, "Service")["spec"]["selector"] = {lbl.JOB_NAME_LABEL: "other"}
    errors = kubecheck.semantic_errors(objects)
    assert any("selects no pod of this set" in e for e in errors), errors
    # ... and the pods' subdomain must still name a headless Service.
    by_kind(objects, "Service")["metadata"]["name"] = "renamed"
    assert any("no headless Service named 'demo'" in e for e in kubecheck.semantic_errors(objects))


def test_kubecheck_completion_index_must_exist(by_kind: ByKind, good: list[dict[str, Any]]) -> None:
    objects = good
    by_kind(objects, "Service")["spec"]["selector"] = {
        lbl.JOB_NAME_LABEL: "demo",
        lbl.COMPLETION_INDEX_LABEL: "1",  # size 1: only index 0 exists
    }
    assert any("selects no pod" in e for e in kubecheck.semantic_errors(objects))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p["containers"][0].update(imagePullPolicy="Sometimes"), "imagePullPolicy"),
        (lambda p: p.update(dnsPolicy="Bogus"), "dnsPolicy"),
        (
            lambda p: p["containers"][0]["volumeMounts"].append(
                {"name": "nope", "mountPath": "/x"}
            ),
            "'nope' is not a volume of the pod",
        ),
        (
            lambda p: p["containers"][0]["volumeMounts"].append(
                {"name": "spack-software", "mountPath": "/mnt/flux"}
            ),
            "mounted twice",
        ),
        (
            lambda p: p["volumes"].append({"name": "spack-software", "emptyDir": {}}),
            "defined twice",
        ),
        (lambda p: p["volumes"].append({"name": "x", "emptyDir": {"medium": "Disk"}}), "medium"),
        (
            lambda p: p["volumes"].append({"name": "y", "hostPath": {"path": "/y", "type": "Dir"}}),
            "hostPath.type",
        ),
        (lambda p: p["containers"][0].update(ports=[{"containerPort": 70000}]), "containerPort"),
        (lambda p: p.update(overhead={"cpu": 1}), "runtimeClassName"),
    ],
)
def test_kubecheck_pod_rules(
    mutate: Any, message: str, job_pod: JobPod, good: list[dict[str, Any]]
) -> None:
    objects = good
    mutate(job_pod(objects))
    errors = kubecheck.semantic_errors(objects)
    assert any(message in e for e in errors), errors


def test_kubecheck_job_and_service_rules(by_kind: ByKind, good: list[dict[str, Any]]) -> None:
    objects = good
    job = by_kind(objects, "Job")
    del job["spec"]["completions"]
    assert any("completions: required" in e for e in kubecheck.semantic_errors(objects))
    job["spec"]["completions"] = 1
    job["spec"]["parallelism"] = 2
    assert any("more than completions" in e for e in kubecheck.semantic_errors(objects))
    job["spec"]["parallelism"] = 1
    service = by_kind(objects, "Service")
    service["spec"]["type"] = "Bogus"
    service["spec"]["ports"] = [{"port": 0, "protocol": "HTTP"}]
    errors = "\n".join(kubecheck.semantic_errors(objects))
    assert "spec.type" in errors
    assert "spec.ports[0].port" in errors
    assert "protocol" in errors


def test_kubecheck_schema_errors_catch_typos_and_types(
    by_kind: ByKind, good: list[dict[str, Any]]
) -> None:
    job = by_kind(good, "Job")
    job["spec"]["parallelizm"] = 1
    job["spec"]["completions"] = "two"
    errors = kubecheck.schema_errors(job, kubecheck.DEFAULT_VERSION)
    assert any("'parallelizm' was unexpected" in e for e in errors)
    assert any(e.startswith("spec.completions:") for e in errors)
    assert kubecheck.schema_errors({"apiVersion": "v1", "kind": "Nope"}) != []
    with pytest.raises(ValueError, match="no schemas for Kubernetes"):
        kubecheck.schema_errors(job, "0.1")


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"services": [{"image": "redis:7", "name": "redis"}]},
        {"flux": {"bursting": {"clusters": [{"name": "burst", "size": 2}]}}},
    ],
    ids=["plain", "services", "bursting-root"],
)
def test_a_name_validation_accepts_is_one_every_object_made_from_it_can_carry(
    rendered: Rendered, spec: dict[str, Any]
) -> None:
    """The longest name ``validate`` takes renders objects the API server takes, one more
    character is refused by ``validate`` itself (not first by the server, after a deploy began)."""
    accepted, refused = [], []
    for length in range(40, 64):
        try:
            definition = mini("a" * length, size=2, maxSize=12, **spec)
        except SpecError as err:
            refused.append({p.path for p in err.problems})
            continue
        assert kubecheck.refusals(rendered(definition), ()) == [], length
        accepted.append(length)
    assert refused == [{"metadata.name"}] * len(refused)
    assert accepted == list(range(40, max(accepted) + 1))
    assert max(accepted) < 63
