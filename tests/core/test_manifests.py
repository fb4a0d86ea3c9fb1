"""The rendered manifests: valid for Kubernetes, shaped like the operator's, its bugs fixed.

Every object rendered from every example and every MiniCluster of the operator's own test corpus
is validated against the strict Kubernetes 1.29 and 1.34 schemas and our semantic checks (what
only the API server enforces). Then each operator fact we keep and each improvement we make is
asserted once, on a small inline spec that shows it. That the checks fail on these objects
broken on purpose is tests/test_kubecheck.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.corpus import EXAMPLES, load_one, spec_files
from support.manifestcases import ByKind, JobPod, Rendered, mini

from flux_minicluster import kubecheck
from flux_minicluster.core.base import layout, placeholders
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import lead_service, to_yaml

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("1.29", "1.34")
CERT = (ROOT / "tests" / "golden" / "fixed-curve.cert").read_text()
PUBLIC_KEY = certificate.parse(CERT).public_key
SECRET_KEY = certificate.parse(CERT).secret_key


def mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container["volumeMounts"]}


# --- every file, every object, two Kubernetes versions --------------------------------------


def test_there_are_enough_examples() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", spec_files())
def test_the_api_server_accepts_every_object(path: Path, version: str, rendered: Rendered) -> None:
    # rendered for that release: it carries only the Job fields the release serves
    objects = rendered(plans.build(load_one(path), kubeversion.parse(version)))
    assert kubecheck.refusals(objects, (version,)) == []


@pytest.mark.parametrize("path", spec_files())
def test_no_configmap_value_contains_the_secret_key(path: Path, rendered: Rendered) -> None:
    for obj in rendered(path):
        if obj["kind"] == "ConfigMap":
            for key, value in obj["data"].items():
                assert SECRET_KEY not in value, key
                # A certificate's secret-key line (the RESTful Secret's restful-secret-key file,
                # which a v1alpha1 entrypoint reads, is only a file name).
                assert not re.search(r"secret-key\s*=", value), key


def test_placeholder_render_is_valid_too(rendered: Rendered) -> None:
    objects = rendered(load_one(ROOT / "examples" / "services-sidecar.yaml"), certificate=None)
    assert kubecheck.refusals(objects, ("1.34",)) == []


# --- names, order, certificate --------------------------------------------------------------


def test_object_names_and_order_follow_the_operator(rendered: Rendered) -> None:
    mc = mini(
        services=[{"name": "db", "image": "redis:7.4.1"}],
        containers=[
            {"image": "ubuntu:24.04", "runFlux": True, "command": "echo hi"},
            {"name": "web", "image": "nginx:1.27", "ports": [80, 443]},
            {"name": "quiet", "image": "busybox:1.36"},
        ],
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in rendered(mc)] == [
        ("ConfigMap", "demo-entrypoint"),
        ("Secret", "demo-curve"),
        ("NetworkPolicy", "demo-mesh"),
        ("Pod", "demo-services"),
        ("Service", "demo"),
        ("Service", "web"),
        ("Job", "demo"),
    ]
    assert all(o["metadata"]["namespace"] == "hpc" for o in rendered(mc))


def test_custom_headless_name_names_the_service_and_the_subdomain(
    rendered: Rendered, by_kind: ByKind, job_pod: JobPod
) -> None:
    objects = rendered(mini(network={"headlessName": "brokers"}))
    assert by_kind(objects, "Service")["metadata"]["name"] == "brokers"
    assert job_pod(objects)["subdomain"] == "brokers"


def test_secret_holds_the_certificate_with_its_public_key_annotated(
    rendered: Rendered, by_kind: ByKind
) -> None:
    objects = rendered(mini())
    secret = by_kind(objects, "Secret")
    assert secret["type"] == "Opaque"
    assert secret["stringData"] == {layout.CURVE_FILE: CERT}
    assert secret["metadata"]["annotations"] == {lbl.CURVE_PUBLIC_KEY_ANNOTATION: PUBLIC_KEY}
    assert layout.CURVE_FILE not in by_kind(objects, "ConfigMap")["data"]


def test_without_a_certificate_the_secret_carries_placeholders(
    rendered: Rendered, by_kind: ByKind
) -> None:
    objects = rendered(mini(), certificate=None)
    secret = by_kind(objects, "Secret")
    assert secret["stringData"][layout.CURVE_FILE] == placeholders.CURVE_CERT
    assert (
        secret["metadata"]["annotations"][lbl.CURVE_PUBLIC_KEY_ANNOTATION]
        == placeholders.CURVE_PUBLIC_KEY
    )
    found = [token for o in objects for _, token in placeholders.find(o)]
    # The public key also sits on the Job's pod template, so a rotation restarts every broker.
    assert sorted(found) == sorted(
        [placeholders.CURVE_CERT, placeholders.CURVE_PUBLIC_KEY, placeholders.CURVE_PUBLIC_KEY]
    )
    assert all(t.replace("_", "").isalnum() for t in placeholders.ALL)


def certificate_public_key() -> str:
    return certificate.parse(CERT).public_key


def test_a_new_certificate_changes_the_pod_template(rendered: Rendered, by_kind: ByKind) -> None:
    other = certificate.render(certificate.generate("flux-sample", "flux-sample-0"))
    first, second = (
        by_kind(rendered(mini(), certificate=c), "Job")["spec"]["template"] for c in (CERT, other)
    )
    assert first != second
    annotations = second["metadata"]["annotations"]
    assert annotations[lbl.CURVE_PUBLIC_KEY_ANNOTATION] == certificate.parse(other).public_key


@pytest.mark.parametrize(
    ("change", "replaces"),
    [({"size": 3}, False), ({"maxSize": 6}, True), ({"tasks": 8}, False)],
    ids=["resize", "grow-max-size", "tasks"],
)
def test_only_a_rank_order_change_touches_the_pod_template(
    change: dict[str, int], replaces: bool, rendered: Rendered, by_kind: ByKind
) -> None:
    def template(**spec: int) -> Any:
        mc = parse(
            {"spec": {"size": 2, "maxSize": 4, **spec, "containers": [{"image": "ubuntu:24.04"}]}},
            name="flux-sample",
            namespace="hpc",
        )
        return by_kind(rendered(mc), "Job")["spec"]["template"]

    assert (template() != template(**change)) is replaces


def test_a_certificate_flux_would_refuse_is_a_spec_error(rendered: Rendered) -> None:
    with pytest.raises(SpecError, match="curve certificate"):
        rendered(mini(), certificate="metadata\ncurve\n")


def test_same_input_gives_the_same_bytes(rendered: Rendered) -> None:
    path = ROOT / "examples" / "services-sidecar.yaml"
    first = yaml.safe_dump(rendered(load_one(path)), sort_keys=False)
    second = yaml.safe_dump(rendered(load_one(path)), sort_keys=False)
    assert first == second
    assert list(yaml.safe_load_all(to_yaml(rendered(path)))) == rendered(path)


# --- labels and annotations -----------------------------------------------------------------


def test_labels_on_objects_pods_and_the_job(rendered: Rendered, by_kind: ByKind) -> None:
    mc = mini(jobLabels={"kueue.x-k8s.io/queue-name": "hpc"}, pod={"labels": {"team": "md"}})
    objects = rendered(mc)
    ours = {
        lbl.NAME_LABEL: "demo",
        lbl.MANAGED_BY_LABEL: lbl.MANAGED_BY,
        lbl.CLUSTER_LABEL: "demo",
    }
    for obj in objects:
        assert ours.items() <= obj["metadata"]["labels"].items(), obj["kind"]
    assert lbl.BURST_GROUP_LABEL not in by_kind(objects, "ConfigMap")["metadata"]["labels"]
    job = by_kind(objects, "Job")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hpc"
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "team": "md",
        "namespace": "hpc",
        "app": "flux-operator",
        lbl.NAME_LABEL: "demo",
        lbl.HPA_SELECTOR_LABEL: "demo",
        lbl.CLUSTER_LABEL: "demo",
    }


def test_burst_group_label_and_role_of_root_and_child(rendered: Rendered, by_kind: ByKind) -> None:
    root = rendered(load_one(ROOT / "examples" / "bursting-root.yaml"))
    child = rendered(load_one(ROOT / "examples" / "bursting-child.yaml"))
    for objects, group, role in ((root, "flux-root", "root"), (child, "flux-root", "burst")):
        for kind in ("ConfigMap", "Secret"):
            assert by_kind(objects, kind)["metadata"]["labels"][lbl.BURST_GROUP_LABEL] == group
        assert by_kind(objects, "Job")["metadata"]["annotations"][lbl.ROLE_ANNOTATION] == role
    job = by_kind(rendered(mini()), "Job")
    assert job["metadata"]["annotations"][lbl.ROLE_ANNOTATION] == "standalone"


def test_job_annotations_say_max_size_and_lifecycle(rendered: Rendered, by_kind: ByKind) -> None:
    job = by_kind(rendered(mini(size=2, maxSize=5)), "Job")
    assert job["metadata"]["annotations"][lbl.MAX_SIZE_ANNOTATION] == "5"
    assert job["metadata"]["annotations"][lbl.LIFECYCLE_ANNOTATION] == "ephemeral"
    persistent = by_kind(rendered(mini(containers=[{"image": "ubuntu:24.04"}])), "Job")
    assert persistent["metadata"]["annotations"][lbl.LIFECYCLE_ANNOTATION] == "persistent"


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_the_core_renders_no_pulumi_annotation(path: Path, rendered: Rendered) -> None:
    """What only Pulumi reads is the deploy layer's to add (``deploy.awaiting``)."""
    text = json.dumps(rendered(path))
    assert "pulumi.com/" not in text


# --- the Indexed Job ------------------------------------------------------------------------


def test_indexed_job_shape(rendered: Rendered, by_kind: ByKind) -> None:
    mc = mini(size=3, maxSize=6, deadlineSeconds=600, backoffLimit=4, cleanup=True)
    job = by_kind(rendered(mc), "Job")
    assert job["apiVersion"] == "batch/v1"
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 3
    # restartPolicy Never by default (core.kube.completion): the operator's budget is each rank's
    assert spec["backoffLimitPerIndex"] == 4
    assert spec["activeDeadlineSeconds"] == 600
    assert spec["ttlSecondsAfterFinished"] == 0
    defaults = by_kind(rendered(mini()), "Job")["spec"]
    assert defaults["backoffLimitPerIndex"] == 100
    assert defaults["activeDeadlineSeconds"] == 31_500_000
    assert "ttlSecondsAfterFinished" not in defaults


def test_pod_template_fields(rendered: Rendered, by_kind: ByKind, job_pod: JobPod) -> None:
    mc = mini(
        shareProcessNamespace=True,
        pod={
            "restartPolicy": "Never",
            "serviceAccountName": "flux",
            "nodeSelector": {"pool": "hpc"},
            "schedulerName": "fluence",
            "hostPID": True,
            "dnsPolicy": "ClusterFirst",
            "runtimeClassName": "kata",
            "resources": {"cpu": 1},
            "annotations": {"example.com/owner": "md"},
            "tolerations": [{"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}],
        },
    )
    job = by_kind(rendered(mc), "Job")
    template_notes = job["spec"]["template"]["metadata"]["annotations"]
    assert template_notes == {
        "example.com/owner": "md",
        lbl.CURVE_PUBLIC_KEY_ANNOTATION: certificate_public_key(),
        lbl.BROKER_CONFIG_HASH_ANNOTATION: template_notes[lbl.BROKER_CONFIG_HASH_ANNOTATION],
        lbl.ENTRYPOINT_HASH_ANNOTATION: template_notes[lbl.ENTRYPOINT_HASH_ANNOTATION],
    }
    pod = job["spec"]["template"]["spec"]
    assert pod["subdomain"] == "demo"
    assert pod["setHostnameAsFQDN"] is False
    assert pod["restartPolicy"] == "Never"
    assert pod["shareProcessNamespace"] is True
    assert pod["serviceAccountName"] == "flux"
    assert pod["automountServiceAccountToken"] is False
    assert pod["nodeSelector"] == {"pool": "hpc"}
    assert pod["schedulerName"] == "fluence"
    assert pod["hostPID"] is True
    assert "hostIPC" not in pod
    assert pod["dnsPolicy"] == "ClusterFirst"
    assert pod["runtimeClassName"] == "kata"
    assert pod["overhead"] == {"cpu": 1}
    assert pod["tolerations"] == [{"key": "hpc", "effect": "NoSchedule", "operator": "Exists"}]
    plain = job_pod(rendered(mini()))
    assert plain["restartPolicy"] == "Never"  # the default where podFailurePolicy is served
    for absent in ("serviceAccountName", "schedulerName", "dnsPolicy", "runtimeClassName"):
        assert absent not in plain


@pytest.mark.parametrize(
    ("app", "view", "expected"),
    [
        (None, "view-cred", ["view-cred"]),
        ("app-cred", "view-cred", ["app-cred", "view-cred"]),
        ("same", "same", ["same"]),
        ("app-cred", None, ["app-cred"]),
        (None, None, None),
    ],
)
def test_the_flux_views_pull_secret_pulls_its_image(
    rendered: Rendered, job_pod: JobPod, app: str | None, view: str | None, expected: Any
) -> None:
    """The operator ignores flux.container.imagePullSecret; a private view image needs it."""
    container: dict[str, Any] = {"image": "ubuntu:24.04", "command": "echo hi"}
    if app:
        container["imagePullSecret"] = app
    flux = {"container": {"imagePullSecret": view}} if view else {}
    pod = job_pod(rendered(mini(containers=[container], flux=flux)))
    secrets = pod.get("imagePullSecrets")
    assert secrets == (None if expected is None else [{"name": n} for n in expected])


def test_the_whole_pod_security_context_is_applied(rendered: Rendered, job_pod: JobPod) -> None:
    context = {
        "fsGroup": 1000,
        "runAsUser": 1000,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "supplementalGroups": [2000],
    }
    pod = job_pod(rendered(mini(pod={"securityContext": context})))
    assert pod["securityContext"] == context


def test_affinity_is_soft_and_can_be_disabled_but_node_affinity_stays(
    rendered: Rendered, job_pod: JobPod
) -> None:
    affinity = job_pod(rendered(mini(pod={"nodeAffinity": {"pool": ["a", "b"]}})))["affinity"]
    for rule, topology in (
        ("podAffinity", "topology.kubernetes.io/zone"),
        ("podAntiAffinity", "kubernetes.io/hostname"),
    ):
        (term,) = affinity[rule]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert term["weight"] == 100
        assert term["podAffinityTerm"]["topologyKey"] == topology
        assert term["podAffinityTerm"]["labelSelector"]["matchExpressions"] == [
            {"key": lbl.NAME_LABEL, "operator": "In", "values": ["demo"]}
        ]
    required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]}
    ]
    off = mini(network={"disableAffinity": True}, pod={"nodeAffinity": {"pool": ["a"]}})
    assert list(job_pod(rendered(off))["affinity"]) == ["nodeAffinity"]
    assert "affinity" not in job_pod(rendered(mini(network={"disableAffinity": True})))


def test_containers_init_flux_and_sidecars(rendered: Rendered, job_pod: JobPod) -> None:
    mc = mini(
        flux={"container": {"pullAlways": True, "workingDir": "/tmp"}},
        containers=[
            {"name": "helper", "image": "busybox:1.36", "imagePullSecret": "regcred"},
            {
                "image": "ubuntu:24.04",
                "runFlux": True,
                "command": "echo hi",
                "imagePullPolicy": "Never",
                "imagePullSecret": "regcred",
                "environment": {"B": "2", "A": "1"},
                "secrets": {"TOKEN": {"name": "creds", "key": "token"}},
                "lifeCycle": {"postStartExec": "echo started > /tmp/x", "preStopExec": "flux"},
            },
            {"name": "plain", "image": "nginx:1.27", "noWrapEntrypoint": True, "ports": [80]},
        ],
    )
    pod = job_pod(rendered(mc))
    (init,) = pod["initContainers"]
    assert init["name"] == "flux-view"
    assert init["command"] == ["/bin/bash", "/flux_operator/flux-init.sh"]
    assert init["imagePullPolicy"] == "Always"
    assert init["workingDir"] == "/tmp"
    assert mounts(init) == {
        layout.HOME_VOLUME: layout.HOME_DIR,
        "flux-view": "/mnt/flux",
        # the copy of the view's software lands where the Job containers mount it
        layout.SOFTWARE_VOLUME: "/mnt/flux/software",
        "demo-entrypoint": layout.ENTRYPOINT_DIR,
    }
    helper, flux, plain = pod["containers"]
    assert flux["name"] == "demo"
    assert flux["command"] == ["/bin/bash", "/flux_operator/wait-1.sh"]
    assert flux["imagePullPolicy"] == "Never"
    assert flux["stdin"] is True
    assert flux["tty"] is True
    assert flux["env"] == [
        {"name": "B", "value": "2"},
        {"name": "A", "value": "1"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
    ]
    # The operator's one-element argv cannot run a command with arguments; a shell can.
    assert flux["lifecycle"] == {
        "postStart": {"exec": {"command": ["/bin/sh", "-c", "echo started > /tmp/x"]}},
        "preStop": {"exec": {"command": ["/bin/sh", "-c", "flux"]}},
    }
    assert helper["command"] == ["/bin/bash", "/flux_operator/start-0.sh"]
    assert "command" not in plain
    assert plain["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    # The certificate goes to the containers that start or join a broker.
    assert layout.CURVE_DIR in mounts(flux).values()
    assert layout.CURVE_DIR in mounts(helper).values()
    assert layout.CURVE_DIR not in mounts(plain).values()
    for container in (helper, flux, plain):
        assert mounts(container)[layout.SOFTWARE_VOLUME] == layout.SOFTWARE_DIR


def test_entrypoint_volume_lists_every_key_with_executable_scripts(
    rendered: Rendered, by_kind: ByKind, job_pod: JobPod
) -> None:
    objects = rendered(mini())
    data = by_kind(objects, "ConfigMap")["data"]
    volume = next(v for v in job_pod(objects)["volumes"] if v["name"] == "demo-entrypoint")
    items = volume["configMap"]["items"]
    assert [i["key"] for i in items] == list(data)
    for item in items:
        assert item["path"] == item["key"]
        assert item.get("mode") == (0o755 if item["key"].endswith(".sh") else None)
    assert {"flux-init.sh", "wait-0.sh", "broker.toml", "hostlist"} <= set(data)


# --- services -------------------------------------------------------------------------------


def test_headless_service_publishes_not_ready_addresses(
    rendered: Rendered, by_kind: ByKind
) -> None:
    service = by_kind(rendered(mini()), "Service")
    assert service["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {lbl.JOB_NAME_LABEL: "demo"},
    }


def test_minimal_service_stays_headless_and_selects_rank_zero(
    rendered: Rendered, by_kind: ByKind
) -> None:
    objects = rendered(mini(flux={"minimalService": True}))
    spec = by_kind(objects, "Service")["spec"]
    assert spec["clusterIP"] == "None"
    assert spec["publishNotReadyAddresses"] is True
    assert spec["selector"] == {lbl.JOB_NAME_LABEL: "demo", lbl.COMPLETION_INDEX_LABEL: "0"}
    assert spec["ports"] == [
        {"name": "flux-broker", "port": 8050, "targetPort": 8050, "protocol": "TCP"}
    ]


def test_services_pod_stays_resolvable_with_a_minimal_service(
    rendered: Rendered, by_kind: ByKind
) -> None:
    services = [{"name": "db", "image": "redis:7.4.1"}]
    normal = rendered(mini(services=services))
    assert by_kind(normal, "Pod")["spec"]["subdomain"] == "demo"
    minimal = rendered(mini(services=services, flux={"minimalService": True}))
    pod = by_kind(minimal, "Pod")
    own = by_kind(minimal, "Service", "demo-services")
    assert pod["spec"]["subdomain"] == "demo-services"
    assert own["spec"]["clusterIP"] == "None"
    assert own["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert kubecheck.semantic_errors(minimal) == []


def test_services_pod(rendered: Rendered, by_kind: ByKind) -> None:
    mc = mini(
        pod={"serviceAccountName": "flux", "annotations": {"example.com/a": "b"}},
        services=[
            {
                "name": "db",
                "image": "redis:7.4.1",
                "command": "ignored",
                "ports": [6379],
                "volumes": {"data": {"path": "/data", "claimName": "db-data"}},
            }
        ],
        containers=[
            {
                "image": "ubuntu:24.04",
                "command": "echo hi",
                "volumes": {"work": {"path": "/work", "claimName": "work"}},
            }
        ],
    )
    pod = by_kind(rendered(mc), "Pod")
    assert pod["metadata"]["name"] == "demo-services"
    assert pod["metadata"]["labels"][lbl.JOB_NAME_LABEL] == "demo"
    assert lbl.HPA_SELECTOR_LABEL not in pod["metadata"]["labels"]
    assert pod["metadata"]["annotations"] == {"example.com/a": "b"}
    spec = pod["spec"]
    assert spec["hostname"] == "demo-services"
    assert spec["setHostnameAsFQDN"] is False
    assert spec["restartPolicy"] == "OnFailure"
    assert spec["serviceAccountName"] == "flux"
    (db,) = spec["containers"]
    assert "command" not in db
    assert mounts(db) == {"data": "/data"}
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "db-data"}}]
    assert "initContainers" not in spec


def test_sidecar_port_service(rendered: Rendered) -> None:
    mc = mini(
        containers=[
            {"image": "ubuntu:24.04", "runFlux": True, "command": "echo hi", "ports": [8080]},
            {"name": "web", "image": "nginx:1.27", "ports": [80, 443]},
        ]
    )
    services = [o for o in rendered(mc) if o["kind"] == "Service"]
    assert [s["metadata"]["name"] for s in services] == ["demo", "web"]  # none for Flux's ports
    web = services[1]["spec"]
    assert web["type"] == "ClusterIP"
    assert web["selector"][lbl.NAME_LABEL] == "demo"
    assert web["ports"] == [
        {"name": "port-80", "port": 80, "targetPort": 80, "protocol": "TCP"},
        {"name": "port-443", "port": 443, "targetPort": 443, "protocol": "TCP"},
    ]


def test_lead_service_selects_rank_zero(rendered: Rendered) -> None:
    mc = plans.build(load_one(ROOT / "examples" / "bursting-root.yaml"))
    service = lead_service(
        mc, service_type="NodePort", port=30050, node_port=30050, annotations={"a.io/b": "c"}
    )
    assert service["metadata"]["name"] == "flux-root-lead"
    assert service["metadata"]["annotations"] == {"a.io/b": "c"}
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["selector"] == {
        lbl.JOB_NAME_LABEL: "flux-root",
        lbl.COMPLETION_INDEX_LABEL: "0",
    }
    assert service["spec"]["ports"] == [
        {
            "name": "flux-broker",
            "port": 30050,
            "targetPort": 8050,
            "protocol": "TCP",
            "nodePort": 30050,
        }
    ]
    *objects, default = rendered(mc)  # a root's objects end with its default lead Service
    assert default == lead_service(mc)
    assert default["spec"]["type"] == "LoadBalancer"
    assert kubecheck.semantic_errors([*objects, service]) == []
    with pytest.raises(ValueError, match="service_type"):
        lead_service(mc, service_type="ClusterIP")  # type: ignore[arg-type]


# --- volumes --------------------------------------------------------------------------------


def test_configmap_volume_is_named_by_its_key(rendered: Rendered, job_pod: JobPod) -> None:
    volume = {"path": "/config", "configMapName": "inputs", "items": {"in.lj": "in.lammps"}}
    pod = job_pod(rendered(mini(containers=[{"image": "u:1", "volumes": {"cfg": volume}}])))
    assert pod["volumes"][-1] == {
        "name": "cfg",
        "configMap": {"name": "inputs", "items": [{"key": "in.lj", "path": "in.lammps"}]},
    }
    assert mounts(pod["containers"][0])["cfg"] == "/config"


def test_volumes_do_not_leak_into_later_containers(rendered: Rendered, job_pod: JobPod) -> None:
    mc = mini(
        containers=[
            {
                "name": "first",
                "image": "u:1",
                "volumes": {"one": {"path": "/one", "claimName": "c1"}},
            },
            {"image": "u:1", "runFlux": True, "command": "echo hi"},
            {
                "name": "third",
                "image": "u:1",
                "volumes": {
                    "one": {"path": "/elsewhere", "claimName": "c1"},
                    "two": {"path": "/two", "hostPath": "/mnt/two"},
                },
            },
        ]
    )
    pod = job_pod(rendered(mc))
    first, flux, third = pod["containers"]
    assert mounts(first)["one"] == "/one"
    assert "two" not in mounts(first)
    assert "one" not in mounts(flux)
    assert "two" not in mounts(flux)
    assert mounts(third)["one"] == "/elsewhere"
    assert mounts(third)["two"] == "/two"
    names = [v["name"] for v in pod["volumes"]]
    assert names.count("one") == 1
    assert names.count("two") == 1


def test_every_volume_kind(rendered: Rendered, job_pod: JobPod) -> None:
    volumes = {
        "csi": {
            "path": "/bucket",
            "csiDriver": "gcsfuse.csi.storage.gke.io",
            "csiDriverAttributes": {"bucketName": "b"},
            "readOnly": True,
        },
        "creds": {"path": "/creds", "secretName": "creds", "items": {"token": "t"}},
        "shm": {"emptyDir": True, "emptyDirMedium": "memory", "emptyDirSizeLimit": "1Gi"},
        "scratch": {"path": "/scratch", "emptyDir": True, "emptyDirSizeLimit": 2},
        "data": {"path": "/data", "hostPath": "/mnt/data"},
        "claim": {"path": "/claim", "claimName": "claim", "readOnly": True},
        "tmp": {"path": "/tmp/fluxout"},
    }
    pod = job_pod(rendered(mini(containers=[{"image": "u:1", "volumes": volumes}])))
    user = {v["name"]: {k: x for k, x in v.items() if k != "name"} for v in pod["volumes"][5:]}
    assert user == {
        "csi": {
            "csi": {
                "driver": "gcsfuse.csi.storage.gke.io",
                "readOnly": True,
                "volumeAttributes": {"bucketName": "b"},
            }
        },
        "creds": {"secret": {"secretName": "creds", "items": [{"key": "token", "path": "t"}]}},
        "shm": {"emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        "scratch": {"emptyDir": {"sizeLimit": 2}},
        "data": {"hostPath": {"path": "/mnt/data", "type": "Directory"}},
        "claim": {"persistentVolumeClaim": {"claimName": "claim", "readOnly": True}},
        # A path-only volume: the operator's empty-claimName PVC is refused; scratch space is meant.
        "tmp": {"emptyDir": {}},
    }
    container = pod["containers"][0]
    got = {m["name"]: m for m in container["volumeMounts"]}
    assert got["shm"]["mountPath"] == "/dev/shm"  # emptyDir without a path
    assert got["scratch"]["mountPath"] == "/scratch"  # the operator would use /dev/shm
    assert got["tmp"]["mountPath"] == "/tmp/fluxout"
    assert got["claim"]["readOnly"] is True
    assert "readOnly" not in got["data"]


def test_system_volumes(rendered: Rendered, job_pod: JobPod) -> None:
    volumes = job_pod(rendered(mini()))["volumes"]
    assert [v["name"] for v in volumes] == [
        layout.SOFTWARE_VOLUME,
        layout.HOME_VOLUME,
        "flux-view",
        "demo-entrypoint",
        layout.CURVE_VOLUME,
        layout.OUTPUT_VOLUME,
    ]
    assert volumes[4]["secret"]["secretName"] == "demo-curve"


@pytest.mark.parametrize(
    "value", ["74793576925972e0", "1e3", "0x1F", "0o17", ".inf", "-.Inf", ".NaN", "12", "1.5", "~"]
)
def test_strings_yaml_12_reads_as_numbers_are_quoted(value: str) -> None:
    """kubectl and the clouds' tools read YAML 1.2, where a digest such as 74793576925972e0 is a
    float: a bare one in an annotation makes the whole object unreadable to them."""
    text = to_yaml([{"metadata": {"annotations": {"hash": value}}}])
    assert f"hash: '{value}'" in text
    assert yaml.safe_load(text)["metadata"]["annotations"]["hash"] == value
