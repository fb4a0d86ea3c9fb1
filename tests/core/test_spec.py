"""The spec model: every operator MiniCluster is accepted, every bad one refused with its path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.corpus import EXAMPLES, corpus_files

from flux_minicluster import kubecheck
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import V1ALPHA2_NOTES, load_file, load_text, parse
from flux_minicluster.core.render.manifests import render
from flux_minicluster.core.spec.models import DEFAULT_VIEW_IMAGE
from flux_minicluster.core.validation import crossfield


@pytest.mark.parametrize("path", corpus_files())
def test_every_operator_spec_in_the_compat_corpus_validates(path: Path) -> None:
    (mc,) = load_file(path)
    assert mc.name
    assert mc.spec.max_size >= mc.spec.size >= 1


def base() -> dict[str, Any]:
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "flux-sample", "namespace": "hpc"},
        "spec": {"size": 2, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}]},
    }


def test_defaults_are_the_operators() -> None:
    mc = plans.build(parse(base()))
    s = mc.spec
    assert (s.max_size, s.tasks, s.deadline_seconds, mc.backoff_limit) == (
        2,
        1,
        31_500_000,
        100,
    )
    assert s.flux.container.image == DEFAULT_VIEW_IMAGE
    assert (s.flux.container.name, s.flux.container.mount_path) == ("flux-view", "/mnt/flux")
    assert (s.flux.connect_timeout, s.flux.log_level, s.flux.scheduler.queue_policy) == (
        "5s",
        6,
        "fcfs",
    )
    assert s.containers[0].run_flux, "a single container runs Flux"
    assert mc.names.headless_service == "flux-sample"
    assert mc.names.lead_fqdn == "flux-sample-0.flux-sample.hpc.svc.cluster.local"


def test_bare_spec_and_arguments_give_name_and_namespace() -> None:
    mc = parse(base()["spec"], name="bare", namespace="team")
    assert (mc.name, mc.namespace) == ("bare", "team")
    assert parse(base(), namespace="other").namespace == "other"
    assert parse({"metadata": {"name": "x"}, "spec": base()["spec"]}).namespace == "default"


def test_bursting_cluster_defaults_are_really_applied() -> None:
    doc = base()
    doc["spec"]["size"] = 3
    doc["spec"]["flux"] = {"bursting": {"clusters": [{}, {"name": "gke", "size": 5}]}}
    clusters = parse(doc).spec.flux.bursting.clusters
    assert [(c.name, c.size) for c in clusters] == [("burst-0", 3), ("gke", 5)]


def test_quorum_follows_min_size_then_elastic_size() -> None:
    doc = base()
    assert plans.build(parse(doc)).quorum is None
    root = copy.deepcopy(doc)
    root["spec"]["flux"] = {"bursting": {"clusters": [{"name": "burst"}]}}
    assert plans.build(parse(root)).quorum == 2, "a bursting root does not wait for its bursts"
    doc["spec"]["maxSize"] = 4
    assert plans.build(parse(doc)).quorum == 2
    doc["spec"]["minSize"] = 1
    assert plans.build(parse(doc)).quorum == 1


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``spec.containers.0.name``-style paths, creating mappings on the way."""
    parts = dotted.split(".")
    node: Any = doc
    for part in parts[:-1]:
        key: Any = int(part) if part.isdigit() else part
        if isinstance(node, dict) and key not in node:
            node[key] = {}
        node = node[key]
    last: Any = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
    node[last] = value


SIDECAR = {"image": "nginx:1.27", "name": "web"}

# (mutations applied to base(), expected path, expected message fragment)
INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "blank command",
        {"spec.containers.0.command": "  \n"},
        "spec.containers[0].command",
        "is empty",
    ),
    (
        "sidecar named like the view",
        {"spec.containers": [{"runFlux": True}, {"name": "flux-view"}]},
        "spec.containers[1].name",
        "flux view init container",
    ),
    (
        "overhead without runtime class",
        {"spec.pod.resources": {"cpu": "1"}},
        "spec.pod.resources",
        "runtimeClassName",
    ),
    (
        "volume on the curve mount",
        {"spec.containers.0.volumes": {"d": {"path": "/mnt/curve"}}},
        "spec.containers[0].volumes.d.path",
        "used by the MiniCluster",
    ),
    ("typo at spec", {"spec.contianers": []}, "spec.contianers", "did you mean 'containers'"),
    (
        "typo in container",
        {"spec.containers.0.comand": "x"},
        "spec.containers[0].comand",
        "did you mean 'command'",
    ),
    ("case typo", {"spec.maxsize": 3}, "spec.maxsize", "did you mean 'maxSize'"),
    (
        "typo in flux",
        {"spec.flux.conectTimeout": "5s"},
        "spec.flux.conectTimeout",
        "did you mean 'connectTimeout'",
    ),
    ("size string", {"spec.size": "4"}, "spec.size", "must be an integer"),
    ("size zero", {"spec.size": 0}, "spec.size", "at least 1"),
    ("negative tasks", {"spec.tasks": -1}, "spec.tasks", "at least 0"),
    ("maxSize below size", {"spec.maxSize": 1}, "spec.maxSize", "at least size (2)"),
    ("maxSize absurd", {"spec.maxSize": 10**6}, "spec.maxSize", "at most 100000"),
    # maxSize left out is size: the size the user wrote is named, not the field they did not
    ("size absurd", {"spec.size": 200_000}, "spec.size", "at most 100000"),
    ("minSize above size", {"spec.minSize": 3}, "spec.minSize", "at most size (2)"),
    ("negative backoffLimit", {"spec.backoffLimit": -1}, "spec.backoffLimit", "at least 0"),
    ("backoffLimit past int32", {"spec.backoffLimit": 2**31}, "spec.backoffLimit", "at most"),
    (
        "runAsUser past the IDs",
        {"spec.containers.0.securityContext": {"runAsUser": 2**32}},
        "spec.containers[0].securityContext.runAsUser",
        "between 0 and 2147483647",
    ),
    (
        "negative fsGroup",
        {"spec.pod.securityContext": {"fsGroup": -1}},
        "spec.pod.securityContext.fsGroup",
        "between 0 and 2147483647",
    ),
    (
        "supplemental group past the IDs",
        {"spec.pod.securityContext": {"supplementalGroups": [5, 5_000_000_000]}},
        "spec.pod.securityContext.supplementalGroups[1]",
        "between 0 and 2147483647",
    ),
    (
        "Exists toleration with a value",
        {"spec.pod.tolerations": [{"key": "a", "operator": "Exists", "value": "v"}]},
        "spec.pod.tolerations[0].value",
        "must be empty with operator Exists",
    ),
    (
        "tolerationSeconds without NoExecute",
        {"spec.pod.tolerations": [{"key": "a", "effect": "NoSchedule", "tolerationSeconds": 5}]},
        "spec.pod.tolerations[0].effect",
        "must be NoExecute when tolerationSeconds is set",
    ),
    (
        "a label of the Job controller's",
        {"spec.pod.labels": {"job-name": "other"}},
        "spec.pod.labels",
        "the Job controller sets these",
    ),
    ("zero deadline", {"spec.deadlineSeconds": 0}, "spec.deadlineSeconds", "at least 1"),
    ("bool as string", {"spec.interactive": "yes"}, "spec.interactive", "true or false"),
    ("bad name", {"metadata.name": "Flux_Sample"}, "metadata.name", "DNS-1035"),
    ("name too long for hostnames", {"metadata.name": "a" * 62}, "metadata.name", "63 characters"),
    ("bad namespace", {"metadata.namespace": "HPC"}, "metadata.namespace", "DNS-1123"),
    ("no containers", {"spec.containers": []}, "spec.containers", "at least one container"),
    (
        "two flux containers",
        {"spec.containers": [{"runFlux": True, "name": "a"}, {"runFlux": True, "name": "b"}]},
        "spec.containers",
        "exactly one container must have runFlux",
    ),
    (
        "no flux container",
        {"spec.containers": [{"name": "a"}, {"name": "b"}]},
        "spec.containers",
        "found 0",
    ),
    (
        "sidecar without name",
        {"spec.containers": [{"runFlux": True}, {"image": "nginx:1"}]},
        "spec.containers[1].name",
        "required for a container that does not run Flux",
    ),
    (
        "sidecar bad name",
        {"spec.containers": [{"runFlux": True}, {"name": "Web"}]},
        "spec.containers[1].name",
        "DNS-1123",
    ),
    (
        "sidecar named like the cluster",
        {"spec.containers": [{"runFlux": True}, {"name": "flux-sample"}]},
        "spec.containers[1].name",
        "already used",
    ),
    (
        "launcher and batch",
        {"spec.containers.0.launcher": True, "spec.containers.0.batch": True},
        "spec.containers[0]",
        "launcher and batch",
    ),
    (
        "batchRaw without batch",
        {"spec.containers.0.batchRaw": True},
        "spec.containers[0].batchRaw",
        "requires batch",
    ),
    (
        "script and command",
        {"spec.containers.0.commands.script": "echo hi"},
        "spec.containers[0].commands.script",
        "cannot be used together with command",
    ),
    (
        "port out of range",
        {"spec.containers.0.ports": [70000]},
        "spec.containers[0].ports[0]",
        "65535",
    ),
    (
        "port twice",
        {"spec.containers.0.ports": [80, 80]},
        "spec.containers[0].ports[1]",
        "listed twice",
    ),
    (
        "bad env name",
        {"spec.containers.0.environment": {"1BAD": "x"}},
        "spec.containers[0].environment['1BAD']",
        "environment variable",
    ),
    (
        "env value not a string",
        {"spec.containers.0.environment": {"N": 1}},
        "spec.containers[0].environment.N",
        "must be a string",
    ),
    (
        "secret ref missing key",
        {"spec.containers.0.secrets": {"TOKEN": {"name": "s"}}},
        "spec.containers[0].secrets.TOKEN.key",
        "required",
    ),
    (
        "bad pull policy",
        {"spec.containers.0.imagePullPolicy": "Sometimes"},
        "spec.containers[0].imagePullPolicy",
        "must be one of",
    ),
    (
        "relative workingDir",
        {"spec.containers.0.workingDir": "work"},
        "spec.containers[0].workingDir",
        "absolute path",
    ),
    (
        "bad cpu quantity",
        {"spec.containers.0.resources": {"limits": {"cpu": "two"}}},
        "spec.containers[0].resources.limits.cpu",
        "not a Kubernetes quantity",
    ),
    (
        "request above its limit",
        {"spec.containers.0.resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}},
        "spec.containers[0].resources",
        "'2' is more than the limit '1500m'",
    ),
    (
        "negative request",
        {"spec.containers.0.resources": {"requests": {"memory": "-1Gi"}}},
        "spec.containers[0].resources",
        "must be at least 0",
    ),
    (
        "a container claim the pod cannot declare",
        {"spec.containers.0.resources": {"claims": [{"name": "gpu"}]}},
        "spec.containers[0].resources",
        "claims: gpu must name a claim of the pod's resourceClaims",
    ),
    (
        "Localhost seccomp profile without its name",
        {"spec.containers.0.securityContext": {"seccompProfile": {"type": "Localhost"}}},
        "spec.containers[0].securityContext.seccompProfile",
        "localhostProfile: required when type is Localhost",
    ),
    (
        "a profile name with another type",
        {
            "spec.pod.securityContext": {
                "appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}
            }
        },
        "spec.pod.securityContext.appArmorProfile",
        "localhostProfile: set only when type is Localhost",
    ),
    (
        "unqualified extended resource",
        {"spec.containers.0.resources": {"limits": {"gpu": 1}}},
        "spec.containers[0].resources",
        "fully qualified extended resource such as nvidia.com/gpu",
    ),
    (
        "toleration with a bad key",
        {"spec.pod.tolerations": [{"key": "gpu vendor", "operator": "Exists"}]},
        "spec.pod.tolerations[0].key",
        "must be a label key",
    ),
    (
        "toleration without a key that is not Exists",
        {"spec.pod.tolerations": [{"operator": "Equal", "value": "x"}]},
        "spec.pod.tolerations[0].operator",
        "must be Exists when the key is empty",
    ),
    (
        "toleration with a bad value",
        {"spec.pod.tolerations": [{"key": "gpu", "value": "a b"}]},
        "spec.pod.tolerations[0].value",
        "label value",
    ),
    (
        "node affinity value that is no label value",
        {"spec.pod.nodeAffinity": {"zone": ["'; touch pwned; '"]}},
        "spec.pod.nodeAffinity.zone",
        "value must be a label value",
    ),
    (
        "runtime class that is no DNS subdomain",
        {"spec.pod.runtimeClassName": "n "},
        "spec.pod.runtimeClassName",
        "DNS-1123 subdomain",
    ),
    (
        "csi driver that is a path",
        {"spec.containers.0.volumes": {"data": {"path": "/data", "csiDriver": "/var/tmp/run"}}},
        "spec.containers[0].volumes.data.csiDriver",
        "DNS-1123 subdomain of at most 63 characters",
    ),
    (
        "empty item path",
        {
            "spec.containers.0.volumes": {
                "cfg": {"path": "/cfg", "configMapName": "c", "items": {"k": ""}}
            }
        },
        "spec.containers[0].volumes.cfg.items.k",
        "non-empty relative path",
    ),
    (
        "bad overhead quantity",
        {"spec.pod.resources": {"memory": "10GG"}},
        "spec.pod.resources.memory",
        "not a Kubernetes quantity",
    ),
    (
        "service without name",
        {"spec.services": [{"image": "nginx:1"}]},
        "spec.services[0].name",
        "required for a service",
    ),
    (
        "service with pre",
        {"spec.services": [{"name": "db", "commands": {"pre": "x"}}]},
        "spec.services[0].commands.pre",
        "not allowed on a service",
    ),
    (
        "service with brokerPre",
        {"spec.services": [{"name": "db", "commands": {"brokerPre": "x"}}]},
        "spec.services[0].commands.brokerPre",
        "not allowed on a service",
    ),
    (
        "claim without path",
        {"spec.containers.0.volumes": {"data": {"claimName": "data"}}},
        "spec.containers[0].volumes.data.path",
        "required for a persistentVolumeClaim",
    ),
    (
        "hostPath without path",
        {"spec.containers.0.volumes": {"data": {"hostPath": "/data"}}},
        "spec.containers[0].volumes.data.path",
        "required for a hostPath",
    ),
    (
        "two volume sources",
        {"spec.containers.0.volumes": {"data": {"path": "/d", "claimName": "c", "hostPath": "/h"}}},
        "spec.containers[0].volumes.data",
        "set one volume source",
    ),
    (
        "bad sizeLimit",
        {"spec.containers.0.volumes": {"shm": {"emptyDir": True, "emptyDirSizeLimit": "lots"}}},
        "spec.containers[0].volumes.shm.emptyDirSizeLimit",
        "not a Kubernetes quantity",
    ),
    (
        "bad medium",
        {"spec.containers.0.volumes": {"shm": {"emptyDir": True, "emptyDirMedium": "disk"}}},
        "spec.containers[0].volumes.shm.emptyDirMedium",
        "'memory' or empty",
    ),
    (
        "volume name invalid",
        {"spec.containers.0.volumes": {"My_Data": {"path": "/d"}}},
        "spec.containers[0].volumes.My_Data",
        "DNS-1123",
    ),
    (
        "volume on reserved path",
        {"spec.containers.0.volumes": {"d": {"path": "/mnt/flux/x"}}},
        "spec.containers[0].volumes.d.path",
        "used by the MiniCluster",
    ),
    (
        "volume reserved name",
        {"spec.containers.0.volumes": {"flux-view": {"path": "/x"}}},
        "spec.containers[0].volumes.flux-view",
        "reserved",
    ),
    (
        "volume defined twice differently",
        {
            "spec.containers": [
                {"runFlux": True, "volumes": {"d": {"path": "/a", "claimName": "one"}}},
                {"name": "web", "volumes": {"d": {"path": "/b", "claimName": "two"}}},
            ]
        },
        "spec.containers[1].volumes.d",
        "defined differently",
    ),
    (
        "items without configMap",
        {"spec.containers.0.volumes": {"d": {"path": "/d", "claimName": "c", "items": {"a": "b"}}}},
        "spec.containers[0].volumes.d.items",
        "only a configMap or secret",
    ),
    (
        "bad connectTimeout",
        {"spec.flux.connectTimeout": "five seconds"},
        "spec.flux.connectTimeout",
        "Flux duration",
    ),
    ("bad topology", {"spec.flux.topology": "star"}, "spec.flux.topology", "kary"),
    (
        "log level too high",
        {"spec.flux.logLevel": 9},
        "spec.flux.logLevel",
        "less than or equal to 7",
    ),
    (
        "bad queue policy",
        {"spec.flux.scheduler.queuePolicy": "lifo"},
        "spec.flux.scheduler.queuePolicy",
        "must be one of",
    ),
    (
        "broker config unclosed array",
        {"spec.flux.brokerConfig": "[bootstrap]\nhosts = [\n"},
        "spec.flux.brokerConfig",
        "not valid TOML",
    ),
    (
        "broker config unknown bootstrap key",
        {"spec.flux.brokerConfig": "[bootstrap]\ndefualt_port = 8050\n"},
        "spec.flux.brokerConfig",
        "unknown key 'defualt_port'",
    ),
    (
        "bad curve cert",
        {"spec.flux.curveCert": 'metadata\ncurve\n    public-key = "abc"\n'},
        "spec.flux.curveCert",
        "is not a valid CURVE key",
    ),
    (
        "hostlist and clusters",
        {"spec.flux.bursting": {"hostlist": "flux-sample-[0-1]", "clusters": [{"name": "b"}]}},
        "spec.flux.bursting",
        "cannot both be set",
    ),
    (
        "bad custom hostlist",
        {"spec.flux.bursting": {"hostlist": "flux-sample-[1-"}},
        "spec.flux.bursting.hostlist",
        "is never closed",
    ),
    (
        "custom hostlist without own hosts",
        {"spec.flux.bursting": {"hostlist": "other-[0-3]"}},
        "spec.flux.bursting.hostlist",
        "missing flux-sample-",
    ),
    (
        "burst cluster duplicate",
        {"spec.flux.bursting": {"clusters": [{"name": "b"}, {"name": "b"}]}},
        "spec.flux.bursting.clusters[1].name",
        "listed twice",
    ),
    (
        "lead broker incomplete",
        {"spec.flux.bursting": {"leadBroker": {"address": "1.2.3.4"}}},
        "spec.flux.bursting.leadBroker.name",
        "required",
    ),
    (
        "child not among clusters",
        {
            "spec.flux.bursting": {
                "leadBroker": {"address": "1.2.3.4", "name": "root", "size": 2},
                "clusters": [{"name": "other"}],
            }
        },
        "spec.flux.bursting.clusters",
        "must list this bursted cluster",
    ),
    (
        "root lists itself",
        {"spec.flux.bursting": {"clusters": [{"name": "flux-sample"}]}},
        "spec.flux.bursting.clusters",
        "itself",
    ),
    (
        "bad restart policy",
        {"spec.pod.restartPolicy": "Always"},
        "spec.pod.restartPolicy",
        "must be one of",
    ),
    ("bad label value", {"spec.pod.labels": {"team": "a b"}}, "spec.pod.labels.team", "value"),
    ("bad job label key", {"spec.jobLabels": {"-bad": "x"}}, "spec.jobLabels['-bad']", "key"),
    (
        "bad headless name",
        {"spec.network.headlessName": "Svc"},
        "spec.network.headlessName",
        "DNS-1035",
    ),
    (
        "v1alpha1 users",
        {"spec.users": [{"name": "u"}]},
        "spec.users",
        "set apiVersion: flux-framework.org/v1alpha1",
    ),
    (
        "v1alpha1 fluxRestful",
        {"spec.fluxRestful": {}},
        "spec.fluxRestful",
        "set apiVersion: flux-framework.org/v1alpha1",
    ),
    (
        "v1alpha1 volume without a path",
        {"spec.volumes": {"data": {"storageClass": "x", "capacity": "1Gi"}}},
        "spec.volumes.data.path",
        "required",
    ),
    (
        "v1alpha1 cores",
        {"spec.containers.0.cores": 4},
        "spec.containers[0].cores",
        "resources.limits.cpu",
    ),
    (
        "v1alpha1 preCommand",
        {"spec.containers.0.preCommand": "x"},
        "spec.containers[0].preCommand",
        "replaced by commands.pre",
    ),
    (
        "v1alpha1 fluxOptionFlags",
        {"spec.containers.0.fluxOptionFlags": "x"},
        "spec.containers[0].fluxOptionFlags",
        "flux.optionFlags",
    ),
    (
        "v1alpha1 fluxLogLevel",
        {"spec.containers.0.fluxLogLevel": 7},
        "spec.containers[0].fluxLogLevel",
        "flux.logLevel",
    ),
    (
        "v1alpha1 fluxUser",
        {"spec.containers.0.fluxUser": {"name": "flux"}},
        "spec.containers[0].fluxUser",
        "runAsUser",
    ),
    (
        "v1alpha1 diagnostics",
        {"spec.containers.0.diagnostics": True},
        "spec.containers[0].diagnostics",
        "flux overlay status",
    ),
    (
        "v1alpha1 existingVolumes not a mapping",
        {"spec.containers.0.existingVolumes": "data"},
        "spec.containers[0].existingVolumes",
        "replaced by volumes",
    ),
    (
        "v1alpha1 existingVolumes read as volumes, problems at the field written",
        {"spec.containers.0.existingVolumes": {"data": {"claimName": "data"}}},
        "spec.containers[0].existingVolumes.data.path",
        "required",
    ),
    (
        "v1alpha1 addCapabilities not a list",
        {"spec.containers.0.securityContext": {"addCapabilities": "SYS_PTRACE"}},
        "spec.containers[0].securityContext.addCapabilities",
        "replaced by capabilities.add",
    ),
    (
        "v1alpha1 runFluxAsRoot",
        {"spec.containers.0.commands.runFluxAsRoot": True},
        "spec.containers[0].commands.runFluxAsRoot",
        "runAsUser: 0",
    ),
    (
        "v1alpha1 installRoot",
        {"spec.flux.installRoot": "/usr"},
        "spec.flux.installRoot",
        "flux.container.disable",
    ),
    ("v1alpha1 test", {"spec.test": True}, "spec.test", "replaced by logging.quiet"),
    ("wrong kind", {"kind": "Job"}, "kind", "must be 'MiniCluster'"),
    (
        "wrong apiVersion",
        {"apiVersion": "flux-framework.org/v2"},
        "apiVersion",
        "must be 'flux-framework.org/v1alpha2' (or the older",
    ),
    ("no name", {"metadata": {}}, "metadata.name", "required"),
    ("unknown top-level key", {"specs": {}}, "specs", "unknown field"),
    (
        "bad securityContext",
        {"spec.containers.0.securityContext": {"privilegd": True}},
        "spec.containers[0].securityContext.privilegd",
        "did you mean 'privileged'",
    ),
    *(
        (
            f"lead broker port {port}",
            {
                "spec.flux.bursting.leadBroker": {"name": "root", "size": 2, "port": port},
                "spec.flux.bursting.clusters": [{"name": "flux-sample"}],
            },
            "spec.flux.bursting.leadBroker.port",
            "must be greater than or equal to 1",  # the schema's minimum, one message
        )
        for port in (0, -1)
    ),
    (
        "view pull secret not a Secret name",
        {"spec.flux.container.imagePullSecret": "Reg_Cred"},
        "spec.flux.container.imagePullSecret",
        "DNS-1123 subdomain",
    ),
    (
        "bad toleration effect",
        {"spec.pod.tolerations": [{"key": "k", "effect": "Sometimes"}]},
        "spec.pod.tolerations[0].effect",
        "must be one of",
    ),
]


@pytest.mark.parametrize("field", sorted(V1ALPHA2_NOTES), ids=".".join)
def test_a_field_the_v1alpha2_operator_ignores_is_a_warning(field: tuple[str, ...]) -> None:
    """Accepted (the operator accepts it), said at its own path, and only when it is set."""
    doc = base()
    assert parse(copy.deepcopy(doc)).warnings == ()
    value = {"data": {"path": "/data"}} if field == ("volumes",) else "x"
    _set(doc, "spec." + ".".join(field), value)
    warnings = parse(doc).warnings
    assert [w.path for w in warnings] == ["spec." + ".".join(field)]


# The operator's own v1alpha2 examples that still carry a v1alpha1 container field, which its API
# server prunes: (the field, its value, the warning's words, what the rendered container gets).
CARRIED_OVER = [
    pytest.param(
        "existingVolumes",
        {"data": {"path": "/data", "claimName": "data"}},
        "read as spec.containers[0].volumes",
        lambda pod, flux: (
            {"mountPath": "/data", "name": "data"}.items()
            <= next(m for m in flux["volumeMounts"] if m["name"] == "data").items()
            and any(
                v.get("persistentVolumeClaim", {}).get("claimName") == "data"
                for v in pod["volumes"]
            )
        ),
        id="existing-volumes",
    ),
    pytest.param(
        "securityContext",
        {"addCapabilities": ["SYS_PTRACE"]},
        "read as spec.containers[0].securityContext.capabilities.add",
        lambda pod, flux: "SYS_PTRACE" in flux["securityContext"]["capabilities"]["add"],
        id="shared-process-space",
    ),
]


@pytest.mark.parametrize(("field", "value", "said", "applied"), CARRIED_OVER)
def test_a_v1alpha1_container_field_in_a_v1alpha2_document_is_converted_and_said(
    field: str,
    value: Any,
    said: str,
    applied: Callable[[dict[str, Any], dict[str, Any]], bool],
    rendered: Callable[..., list[dict[str, Any]]],
    by_kind: Callable[..., dict[str, Any]],
) -> None:
    """Accepted unchanged, as the operator accepts it; the warning names the field written and
    what it became, and the pods really get it (the operator would have dropped it)."""
    doc = base()
    doc["spec"]["containers"][0][field] = value
    definition = parse(doc)
    [warning] = definition.warnings
    assert warning.path.startswith(f"spec.containers[0].{field}")
    assert "operator's v1alpha2 controller drops" in warning.message
    assert said in warning.message
    pod = by_kind(rendered(definition), "Job")["spec"]["template"]["spec"]
    flux = next(c for c in pod["containers"] if c["name"] == "flux-sample")
    assert applied(pod, flux)


@pytest.mark.parametrize(
    ("mutations", "path", "fragment"), [pytest.param(m, p, f, id=i) for i, m, p, f in INVALID]
)
def test_invalid_spec_names_the_field_and_what_is_allowed(
    mutations: dict[str, Any], path: str, fragment: str
) -> None:
    doc = copy.deepcopy(base())
    for dotted, value in mutations.items():
        _set(doc, dotted, value)
    with pytest.raises(SpecError) as info:
        parse(doc)
    problems = info.value.problems
    matching = [p for p in problems if p.path == path]
    assert matching, f"no problem at {path}; got {[str(p) for p in problems]}"
    assert any(fragment in p.message for p in matching), [str(p) for p in matching]


def test_the_invalid_table_is_wide_enough() -> None:
    assert len(INVALID) >= 40


def _problems(mutations: dict[str, Any]) -> list[str]:
    """The paths of every problem of base() with ``mutations`` applied, in order."""
    doc = copy.deepcopy(base())
    for dotted, value in mutations.items():
        _set(doc, dotted, value)
    with pytest.raises(SpecError) as info:
        parse(doc)
    return [p.path for p in info.value.problems]


REQUESTS = "spec.containers.0.resources.requests"


@pytest.mark.parametrize(
    ("mutations", "paths"),
    [
        pytest.param({REQUESTS: {"cpu": "lots", "memory": "1Gb"}},
                     [f"spec.containers[0].resources.requests.{k}" for k in ("cpu", "memory")],
                     id="every bad quantity of a map"),
        pytest.param({"spec.pod.runtimeClassName": "kata", "spec.pod.resources": {"cpu": "x",
                      "memory": "y"}}, ["spec.pod.resources.cpu", "spec.pod.resources.memory"],
                     id="every bad overhead quantity"),
        pytest.param({"spec.size": -3}, ["spec.size"], id="a bad size and no minSize"),
        pytest.param({"spec.size": -3, "spec.flux.bursting.clusters": [{"name": "b"}]},
                     ["spec.size"], id="a bad size and no burst size"),
    ],
)  # fmt: skip
def test_each_problem_the_user_wrote_and_only_those(
    mutations: dict[str, Any], paths: list[str]
) -> None:
    """Every bad value is reported at once at its own field, and no field the user did not
    write is blamed for one that is (a default derived from a bad size)."""
    assert _problems(mutations) == paths


VOLUME = "spec.containers.0.volumes"
VOLUME_PATH = "spec.containers[0].volumes.d.path"


@pytest.mark.parametrize(
    ("mutations", "path", "server"),
    [
        pytest.param({"spec.flux.mungeSecret": "Not_A_Name"}, "spec.flux.mungeSecret",
                     "secret.secretName", id="munge Secret name"),
        pytest.param({"spec.flux.container.mountPath": "/mnt/curve"},
                     "spec.flux.container.mountPath", "used by another mount",
                     id="flux view on the curve mount"),
        pytest.param({"spec.flux.container.name": "flux-sample"}, "spec.flux.container.name",
                     "used by another container", id="flux view named like the Flux container"),
        # the API server compares mount paths as strings; the runtime mounts these at one place
        pytest.param({"spec.flux.container.mountPath": "//mnt/curve/"},
                     "spec.flux.container.mountPath", None, id="flux view at //mnt/curve/"),
        pytest.param({"spec.flux.container.mountPath": "/opt/software/view"},
                     "spec.flux.container.mountPath", None, id="flux view in the software tree"),
        *(
            pytest.param({VOLUME: {"d": {"path": at, "emptyDir": True}}}, VOLUME_PATH, None,
                         id=f"volume at {at}")
            for at in ("//mnt/curve", "/mnt/./curve", "/x/../mnt/flux", "/mnt/flux/../curve/k")
        ),
        pytest.param({VOLUME: {"c": {"path": "/data", "emptyDir": True},
                      "d": {"path": "//data/./", "emptyDir": True}}}, VOLUME_PATH, None,
                     id="two volumes at one place"),
    ],
)  # fmt: skip
def test_objects_the_cluster_refuses_are_refused_first(
    monkeypatch: pytest.MonkeyPatch, mutations: dict[str, Any], path: str, server: str | None
) -> None:
    """Each is refused at the field the user wrote. With the rules off, the rendering is one the
    API server refuses (``server``: what kubecheck, held against it, says), or, for a path it
    compares as a string, one the container runtime mounts twice at one place."""
    assert _problems(mutations) == [path]
    if server is not None:
        doc = copy.deepcopy(base())
        for dotted, value in mutations.items():
            _set(doc, dotted, value)
        monkeypatch.setattr(crossfield, "check_semantics", lambda definition, **_: [])
        refusals = kubecheck.refusals(render(plans.build(parse(doc))).objects())
        assert any(server in r for r in refusals), refusals


# Names pydantic also uses for the members of a union in an error's location: type names, the
# models' class names, its own tags, and builtins beside them. Each is an ordinary key to a user.
_TAG_LIKE_NAMES = [
    "int", "float", "str", "bool", "list", "dict", "None", "bytes", "object", "type",
    "Container", "MiniClusterSpec", "FluxSpec", "Resources", "function-after", "function-wrap",
    "constrained-str", "nullable", "tagged-union", "json-or-python", "lax-str",
]  # fmt: skip


@pytest.mark.parametrize("name", _TAG_LIKE_NAMES)
@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        ("spec.{name}", "unknown field"),
        ("spec.flux.{name}", "unknown field"),
        ("spec.containers[0].{name}", "unknown field"),
        # A mapping key of the user's choosing, above and below a union of int | float | str.
        ("spec.containers[0].volumes.{name}.path", "must be a string"),
        ("spec.containers[0].resources.limits.{name}", "must be"),
    ],
    ids=["spec", "flux", "container", "volume-key", "union-key"],
)
def test_keys_spelled_like_type_names_keep_their_place_in_the_path(
    name: str, where: str, fragment: str
) -> None:
    doc = copy.deepcopy(base())
    target = doc
    *parents, leaf = where.format(name=name).replace("[0]", ".0").split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
    target[leaf] = [1]
    with pytest.raises(SpecError) as info:
        parse(doc)
    expected = where.format(name=name)
    problems = info.value.problems
    assert any(p.path == expected and fragment in p.message for p in problems), [
        str(p) for p in problems
    ]


def test_all_problems_are_reported_at_once() -> None:
    doc = base()
    doc["spec"].update({"size": 0, "tasks": -1})
    doc["metadata"]["name"] = "Bad"
    with pytest.raises(SpecError) as info:
        parse(doc)
    assert {p.path for p in info.value.problems} >= {"metadata.name", "spec.size", "spec.tasks"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # A type error beside an unrelated cross-field problem: both in one run.
        (
            {"size": "two", "flux": {"connectTimeout": "5 sec"}},
            {"spec.size": "must be an integer", "spec.flux.connectTimeout": "Flux duration"},
        ),
        (
            {
                "containers": [{"image": "x", "workingDir": 5}],
                "pod": {"nodeSelector": {"a b": "c"}},
            },
            {
                "spec.containers[0].workingDir": "must be a string",
                "spec.pod.nodeSelector['a b']": "key",
            },
        ),
        (
            {"float": 1, "containers": [{"image": "x", "volumes": {"d": {"path": "rel"}}}]},
            {"spec.float": "unknown field", "spec.containers[0].volumes.d.path": "absolute path"},
        ),
        # A union's members fail one by one at one field: it alone is left out; a volume rule
        # that would compare it with another container's is skipped, not warned about.
        (
            {
                "containers": [
                    {
                        "image": "x",
                        "name": "a",
                        "runFlux": True,
                        "volumes": {"d": {"emptyDir": True, "emptyDirSizeLimit": [1]}},
                    },
                    {"image": "y", "name": "b", "volumes": {"d": {"emptyDir": True}}},
                ],
                "flux": {"connectTimeout": "5 sec"},
            },
            {
                "spec.containers[0].volumes.d.emptyDirSizeLimit": "must be",
                "spec.flux.connectTimeout": "Flux duration",
            },
        ),
        # No rule judges a value the user did not write: size is unknown, so is minSize's bound.
        ({"size": "two", "minSize": 3}, {"spec.size": "must be an integer"}),
        # A burst's declared size defaults to size: unknown too, so maxSize is not judged by it.
        (
            {
                "size": "two",
                "maxSize": 4,
                "flux": {
                    "bursting": {
                        "leadBroker": {"address": "lead.example.org", "name": "root", "size": 2},
                        "clusters": [{"name": "flux-sample"}],
                    }
                },
            },
            {"spec.size": "must be an integer"},
        ),
    ],
)
def test_a_type_error_does_not_hide_a_cross_field_problem(
    spec: dict[str, Any], expected: dict[str, str]
) -> None:
    doc = base()
    doc["spec"] = {"containers": [{"image": "ubuntu:24.04"}], **spec}
    with pytest.raises(SpecError) as info:
        parse(doc)
    found = {p.path: p.message for p in info.value.problems}
    assert found.keys() == expected.keys(), info.value.lines()
    assert all(fragment in found[path] for path, fragment in expected.items()), found


def test_a_type_error_in_metadata_does_not_hide_the_specs_problems() -> None:
    doc = base()
    doc["metadata"]["labels"] = ["team=hpc"]
    doc["spec"]["flux"] = {"connectTimeout": "5 sec"}
    with pytest.raises(SpecError) as info:
        parse(doc)
    assert {p.path for p in info.value.problems} == {
        "metadata.labels",
        "spec.flux.connectTimeout",
    }, info.value.lines()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty file"),
        ("- a\n- b\n", "expected a mapping"),
        ("a: [1,\n", "invalid YAML"),
        ("a: 1\na: 2\n", "duplicate key"),
        ("a: 1\nb: *nope\n", "line 2, column 4: found undefined alias 'nope'"),
        ("a: &x 1\nb: &x 2\n", "line 2, column 4: found duplicate anchor 'x'"),
        # the limits on what a hand-written spec may hold (core/reading/yamlio.py), at the line
        ("a: 1\nb: " + "[" * 64 + "]" * 64 + "\n", "line 2: nested deeper than 64 levels"),
        ("a: &a 1\nb: [" + ",".join(["*a"] * 201) + "]\n", "line 2: more than 200 YAML aliases"),
        ("a: 1\nb: [" + "1," * 20_000 + "]\n", "line 2: more than 20000 values"),
        # an alias inside what it names: a value that holds itself (a RecursionError, exit 70)
        ("a: &x [*x]\n", "line 1, column 8: the alias 'x' is inside the collection it names"),
        ("a: &x {b: [1, *x]}\n", "line 1, column 15: the alias 'x' is inside the collection"),
        # explicit tags the constructors cannot read (KeyError, ValueError...: exit 70)
        ("a: 1\nb: !!bool maybe\n", "line 2, column 4: 'maybe' is not a !!bool"),
        ("a: !!int abc\n", "line 1, column 4: 'abc' is not a !!int"),
        ("a: !!float abc\n", "line 1, column 4: 'abc' is not a !!float"),
        ("a: !!int 0x\n", "line 1, column 4: '0x' is not a !!int"),
        ("a: !!timestamp nope\n", "line 1, column 4: the tag !!timestamp is not accepted here"),
        ("a: !!set [a]\n", "line 1, column 4: the tag !!set is not accepted here"),
        ("a: !!python/name:os.system x\n", "the tag !!python/name:os.system is not accepted"),
        # an int by its pattern that int() cannot read, tag or no tag
        ("a: 0x_\n", "line 1, column 4: cannot read '0x_' as a !!int"),
        # Another kind of object: the kind, not a list of fields a MiniCluster lacks.
        (
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: p}\n"
            "spec: {capacity: {storage: 1Gi}, hostPath: {path: /d}}\n",
            "kind: must be 'MiniCluster', got 'PersistentVolume'",
        ),
    ],
)
def test_bad_files_are_one_clear_problem(text: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        load_text(text, source="f.yaml")
    (line,) = info.value.lines()
    assert fragment in line
    assert line.startswith("f.yaml: ")


# Files that are wrong in thousands of places, one kind of place each: under the limit on the
# values a file may hold, each one a problem (it took 21.5 s to order 16,000 of them).
MANY = 9_900
MANY_PROBLEMS = {
    "unknown spec keys": "spec:\n  containers: [{image: x}]\n"
    + "".join(f"  k{i}: 1\n" for i in range(MANY)),
    "unknown document keys": "spec: {containers: [{image: x}]}\n"
    + "".join(f"k{i}: 1\n" for i in range(MANY)),
    "NUL bytes": "spec:\n  containers:\n  - image: x\n    environment:\n"
    + "".join(f'      E{i}: "\\0"\n' for i in range(MANY)),
    "bad labels": "metadata:\n  labels:\n"
    + "".join(f"    'a b{i}': x\n" for i in range(MANY))
    + "spec: {containers: [{image: x}]}\n",
}


@pytest.mark.parametrize("text", MANY_PROBLEMS.values(), ids=MANY_PROBLEMS.keys())
def test_thousands_of_problems_show_the_first_hundred_and_how_many_more(text: str) -> None:
    with pytest.raises(SpecError) as info:
        load_text("metadata: {name: x}\n" + text if "metadata" not in text else text, source="f")
    lines = info.value.lines()
    assert len(lines) == 101, lines[-3:]
    more = len(info.value.problems) - 100
    assert more >= MANY - 100
    assert lines[-1] == f"f: and {more} more problems"


def test_multi_document_files_name_the_document() -> None:
    good = (
        "apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\n"
        "metadata: {name: a}\nspec: {containers: [{image: x}]}\n"
    )
    with pytest.raises(SpecError) as info:
        load_text(good + "---\n" + good.replace("{image: x}", "{image: 1}"), source="f.yaml")
    assert info.value.lines() == [
        "f.yaml: document[1].spec.containers[0].image: must be a string (quote it)"
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_bundled_examples_validate(path: Path) -> None:
    (mc,) = load_file(path)
    assert mc.namespace != "default", "examples show a dedicated namespace"


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (lambda s, v: s["containers"][0].update(image=v), "spec.containers[0].image"),
        (
            lambda s, v: s.update(services=[{"name": "svc", "image": v}]),
            "spec.services[0].image",
        ),
        (lambda s, v: s.update(flux={"container": {"image": v}}), "spec.flux.container.image"),
    ],
)
@pytest.mark.parametrize("image", ["ubuntu:24.04 latest", "ubuntu:24.04\tx", " ", "ubuntu\n"])
def test_an_image_reference_with_a_space_is_refused(where: Any, path: str, image: str) -> None:
    spec: dict[str, Any] = {"size": 1, "containers": [{"image": "ubuntu:24.04"}]}
    where(spec, image)
    with pytest.raises(SpecError) as err:
        parse(spec, name="mc")
    assert any(p.path == path for p in err.value.problems), err.value.problems
