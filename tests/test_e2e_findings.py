"""Bugs the real engine found (tests/e2e), pinned here with Pulumi's mocks or no Pulumi at all, so
that `make test` keeps them fixed without the e2e toolchain. Each test names the e2e scenario that
revealed it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flux_minicluster import kubecheck
from flux_minicluster.core.errors import SpecError
from flux_minicluster.deploy import stackconfig

ROOT = Path(__file__).resolve().parents[1]
CERT = (ROOT / "tests" / "golden" / "fixed-curve.cert").read_text()
LOCAL = {"cluster": {"cloud": "kind", "namespace": "flux-local"}, "minicluster": {"file": "x"}}


def test_the_curve_cert_config_key_is_accepted_as_the_readme_spells_it() -> None:
    # e2e test_local_lifecycle: `pulumi config set --secret flux-minicluster:curveCert` was refused
    # as an unknown key (the check compared the Python field name, curve_cert).
    config = stackconfig.parse_stack_config({**LOCAL, "curveCert": CERT})
    assert config.curve_cert == CERT


def test_an_unknown_top_level_key_lists_the_keys_as_a_stack_file_spells_them() -> None:
    with pytest.raises(SpecError) as err:
        stackconfig.parse_stack_config({**LOCAL, "curve_cert": CERT})
    (problem,) = err.value.problems
    assert problem.path == "flux-minicluster:curve_cert"
    assert "flux-minicluster:curveCert" in problem.message
    assert "curve_cert," not in problem.message


# --- kubecheck against a real kube-apiserver (tests/e2e/test_server_validation.py) ---------------
# Objects the server refused with a server-side dry run while kubecheck let them through. Most come
# from specs that core validation accepts (generated and mutated specs): each case is the rendered
# Job's pod with the one field the server named.


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


# --- a replaced Job on the real engine (tests/e2e/test_local_stack.py) ---------------------------


@pytest.mark.parametrize(
    ("wait", "command", "background"),
    [
        ("ready", "hostname", True),  # the waitFor moves to the size patch: the Job skips
        ("none", "hostname", True),
        ("ready", None, True),  # persistent: always skips
        ("complete", "hostname", False),  # awaited with Pulumi's Job await, deletes awaited too
    ],
    ids=["ready", "none", "persistent", "complete"],
)
def test_a_job_that_skips_awaiting_is_deleted_in_the_background(
    wait: Any, command: str | None, background: bool
) -> None:
    # e2e: an image change (or a new certificate) replaced the Job with delete-before-replace,
    # but pulumi-kubernetes does not wait for the deletion of a Job that skips awaiting; the new
    # Job was applied to the old one while it was being deleted and failed with a server-side
    # apply conflict on .spec.template...image. Background propagation removes the old object at
    # once.
    from flux_minicluster.core.labels import SKIP_AWAIT_ANNOTATION
    from flux_minicluster.core.loading import parse
    from flux_minicluster.core.plan import build
    from flux_minicluster.deploy.awaiting import DELETION_PROPAGATION_ANNOTATION, job_annotations

    container: dict[str, Any] = {"image": "ubuntu:24.04"}
    if command is not None:
        container["command"] = command
    plan = build(parse({"size": 2, "containers": [container]}, name="demo", namespace="hpc"))
    annotations = job_annotations(plan, wait)
    assert (annotations.get(SKIP_AWAIT_ANNOTATION) == "true") == background
    assert (annotations.get(DELETION_PROPAGATION_ANNOTATION) == "background") == background
