"""The older v1alpha1 MiniCluster: read with its own schema, converted into the one model.

The operator's own v1alpha1 specs (its e2e tests, samples, RESTful and multi-user examples)
validate and render clean; each v1alpha1 default and each moved field lands where v1alpha2 keeps
it; what v1alpha1 has that v1alpha2 lacks (operator-made volumes, the RESTful server, users and
munge) becomes objects; and a v1alpha2 document keeps every byte it had. What the component
exports and keeps of them is tests/deploy/test_v1alpha1_deploy.py's; a curve cert Secret through
the CLI's renderer and the component, tests/cli/test_cli_v1alpha1.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.corpus import V1ALPHA1, corpus_files
from support.v1alpha1cases import APP, Manifest, by, v1

from flux_minicluster import kubecheck
from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.flux import credentials
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import load_file, load_text, parse
from flux_minicluster.core.render.manifests import render


@pytest.mark.parametrize("path", corpus_files(V1ALPHA1))
def test_every_corpus_spec_validates_and_renders_clean(path: Path, curve_cert: str) -> None:
    for mc in load_file(path):
        for version in ("1.29", "1.34"):
            plan = plans.build(mc, kubeversion.parse(version))
            assert kubecheck.refusals(render(plan, curve_cert).objects(), (version,)) == []


def test_v1alpha1_defaults_are_its_own() -> None:
    mc = parse(v1({"containers": [APP], "volumes": {"data": {"path": "/tmp/data"}}}))
    s = mc.spec
    assert s.logging.strict is True
    assert s.network.headless_name == "flux-service"
    assert s.tasks == 1
    assert s.flux_restful is not None
    assert (s.flux_restful.branch, s.flux_restful.port) == ("main", 5000)
    volume = s.volumes["data"]
    assert (volume.storage_class, volume.capacity, volume.delete) == ("hostpath", "5Gi", True)
    assert s.flux.container.disable, "v1alpha1 has no flux view: Flux is in the image"
    assert s.flux.install_root == "/usr"
    assert s.containers[0].flux_user is not None, "the broker runs as the flux user"


def test_moved_fields_land_where_v1alpha2_keeps_them() -> None:
    container = {
        **APP,
        "command": "lmp",
        "preCommand": "source /etc/profile",
        "fluxOptionFlags": "-ompi=openmpi@5",
        "fluxLogLevel": 7,
        "postStartExec": "echo up",
        "commands": {"pre": "echo pre"},
        "existingVolumes": {"data": {"path": "/data", "claimName": "data"}},
        "securityContext": {"privileged": True, "addCapabilities": ["SYS_PTRACE"]},
    }
    mc = parse(v1({"test": True, "containers": [container]}))
    (c,) = mc.spec.containers
    assert c.commands.pre == "source /etc/profile\necho pre"
    assert mc.spec.flux.option_flags == "-ompi=openmpi@5"
    assert mc.spec.flux.log_level == 7
    assert mc.spec.logging.quiet
    assert c.life_cycle is not None
    assert c.life_cycle.post_start_exec == "echo up"
    assert (c.volumes["data"].claim_name, c.volumes["data"].path) == ("data", "/data")
    assert c.security_context is not None
    assert c.security_context.privileged
    assert c.security_context.capabilities is not None
    assert c.security_context.capabilities.add == ["SYS_PTRACE"]


def test_what_the_v1alpha1_api_server_dropped_is_a_warning() -> None:
    doc = v1({"localDeploy": True, "containers": [{**APP, "workdir": "/x"}]})
    warnings = [str(w) for w in parse(doc).warnings]
    assert any("spec.containers[0].workdir" in w and "did you mean 'workingDir'" in w
               for w in warnings)  # fmt: skip
    assert any(w.startswith("spec.localDeploy: has no effect") for w in warnings)


def test_a_duplicate_key_is_a_warning_in_v1alpha1_only() -> None:
    text = "apiVersion: flux-framework.org/v1alpha1\nkind: MiniCluster\nmetadata: {name: mc}\n"
    text += "spec:\n  containers:\n  - image: a\n    command: one\n    command: two\n"
    (mc,) = load_text(text)
    assert mc.spec.containers[0].command == "two"
    assert "duplicate key 'command'" in str(mc.warnings[0])
    with pytest.raises(SpecError, match="duplicate key"):
        load_text(text.replace("v1alpha1", "v1alpha2"))


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        ({"users": [{"name": "bad name"}]}, "spec.users[0].name", "Linux user name"),
        ({"users": [{"name": "ann"}, {"name": "ann"}]}, "spec.users[1].name", "also users[0]"),
        ({"users": [{"name": "root"}]}, "spec.users[0].name", "every image"),
        # a newline would give chpasswd a second line: another account's password
        ({"users": [{"name": "ann", "password": "pw\nroot:chosen"}]}, "spec.users[0].password",
         "control characters"),
        ({"users": [{"name": "ann", "password": "pw\rroot:x"}]}, "spec.users[0].password",
         "control characters"),
        # the Flux user is word-split in ${asFlux} and given to useradd
        ({"containers": [{**APP, "fluxUser": {"name": "x -u root"}}]},
         "spec.containers[0].fluxUser.name", "Linux user name"),
        ({"containers": [{**APP, "fluxUser": {"name": "flux\nroot"}}]},
         "spec.containers[0].fluxUser.name", "Linux user name"),
        ({"containers": [{**APP, "fluxUser": {"uid": -1}}]},
         "spec.containers[0].fluxUser.uid", "between 0 and"),
        ({"volumes": {"Data_1": {"path": "/d"}}}, "spec.volumes.Data_1", "DNS-1123 label"),
        ({"volumes": {"d": {"path": "d"}}}, "spec.volumes.d.path", "absolute path"),
        ({"volumes": {"d": {"path": "/d", "storageClass": "fast"}}}, "spec.volumes.d.driver",
         "required for storageClass 'fast'"),
        ({"volumes": {"d": {"path": "/d", "storageClass": "fast", "driver": "Bad_Driver"}}},
         "spec.volumes.d.driver", "CSI driver"),
        ({"volumes": {"d": {"path": "/d", "labels": {"a": "b c"}}}}, "spec.volumes.d.labels.a",
         "value"),
        ({"fluxRestful": {"port": 70000}}, "spec.fluxRestful.port", "from 1 to 65535"),
        ({"containers": [{**APP, "runFlux": True}, {"image": "b", "name": "mc-restful",
          "ports": [80]}]}, "spec.containers[1].name", "RESTful API server's Service"),
        ({"containers": [{**APP, "existingVolumes": {"munge-key": {"path": "/m",
          "configMapName": "m"}}}]}, "spec.containers[0].existingVolumes.munge-key", "reserved"),
        ({"containers": [{**APP, "existingVolumes": {"m": {"path": "/mnt/munge/x",
          "configMapName": "m"}}}]}, "spec.containers[0].existingVolumes.m.path",
         "the MiniCluster"),
        # problems name the field the v1alpha1 document wrote, not the one it converts into
        ({"containers": [{**APP, "existingVolumes": {"Bad_Name": {"path": "/b",
          "configMapName": "m"}}}]}, "spec.containers[0].existingVolumes.Bad_Name", "DNS-1123"),
        ({"containers": [{**APP, "fluxLogLevel": 99}]}, "spec.containers[0].fluxLogLevel", "7"),
    ],
)  # fmt: skip
def test_v1alpha1_objects_are_checked_before_anything_is_made(
    spec: dict[str, Any], path: str, message: str
) -> None:
    """Each of these would be refused by the API server half-way through creating the objects
    (or collide with one of ours): the spec is refused first, naming the field."""
    with pytest.raises(SpecError) as info:
        parse(v1({"containers": [APP], **spec}))
    assert [(p.path, message in p.message) for p in info.value.problems] == [(path, True)]


# --- the objects v1alpha1 adds ----------------------------------------------------------------


def objects_of(doc: dict[str, Any], cert: str | None) -> list[Manifest]:
    return render(plans.build(parse(doc)), cert).objects()


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2"])
def test_operator_volumes_become_a_volume_and_a_claim(version: str, curve_cert: str) -> None:
    doc = v1(
        {
            "containers": [{**APP, "command": "ls /data", "volumes": {"data": {"path": "/data"}}}],
            "volumes": {
                "data": {"path": "/tmp/data", "labels": {"type": "local"}},
                "bucket": {
                    "storageClass": "csi-gcs", "driver": "gcs.csi.ofek.dev", "delete": False,
                    "path": "/b", "secret": "gcs-key", "claimAnnotations": {"a": "b"},
                },
            },
        }
    )  # fmt: skip
    doc["apiVersion"] = f"flux-framework.org/{version}"
    mc = parse(doc)
    assert bool(mc.warnings) is (version == "v1alpha2"), "a v1alpha2 document is told"
    objects = render(plans.build(mc), curve_cert).objects()
    volumes = {o["metadata"]["name"]: o for o in by(objects, "PersistentVolume")}
    claims = {o["metadata"]["name"]: o for o in by(objects, "PersistentVolumeClaim")}
    assert set(volumes) == {"hpc-mc-data", "hpc-mc-bucket"}
    assert set(claims) == {"mc-data", "mc-bucket"}
    data = volumes["hpc-mc-data"]
    assert "namespace" not in data["metadata"], "a PersistentVolume is cluster-scoped"
    assert data["metadata"]["labels"]["type"] == "local"
    assert data["spec"]["hostPath"] == {"path": "/tmp/data"}
    assert data["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert data["spec"]["claimRef"] == {"namespace": "hpc", "name": "mc-data"}
    bucket = volumes["hpc-mc-bucket"]["spec"]
    assert bucket["persistentVolumeReclaimPolicy"] == "Retain", "delete: false keeps the data"
    assert bucket["csi"]["driver"] == "gcs.csi.ofek.dev"
    assert bucket["csi"]["volumeHandle"] == "csi-gcs"
    assert bucket["csi"]["nodePublishSecretRef"] == {"name": "gcs-key", "namespace": "default"}
    assert claims["mc-data"]["spec"]["volumeName"] == "hpc-mc-data"
    assert claims["mc-bucket"]["metadata"]["annotations"] == {"a": "b"}
    (job,) = by(objects, "Job")
    pod = job["spec"]["template"]["spec"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "mc-data"}} in pod["volumes"]
    assert kubecheck.semantic_errors(objects) == []


def test_no_command_starts_the_restful_server_with_its_service_and_secret(
    curve_cert: str,
) -> None:
    objects = objects_of(v1({"size": 2, "containers": [APP]}), curve_cert)
    mc = plans.build(parse(v1({"size": 2, "containers": [APP]})))
    assert mc.mode is plans.Mode.RESTFUL
    assert mc.persistent
    (service,) = [s for s in by(objects, "Service") if s["metadata"]["name"] == "mc-restful"]
    assert service["spec"]["ports"][0]["port"] == 5000
    assert service["spec"]["selector"]["batch.kubernetes.io/job-completion-index"] == "0"
    (secret,) = [s for s in by(objects, "Secret") if s["metadata"]["name"] == "mc-restful"]
    data = secret["stringData"]
    assert data[layout.RESTFUL_USER] == "flux"
    assert data[layout.RESTFUL_TOKEN] == credentials.restful_token(curve_cert)
    for configmap in by(objects, "ConfigMap"):
        assert data[layout.RESTFUL_TOKEN] not in str(configmap), "never in a ConfigMap"


def test_interactive_or_a_command_means_no_restful_server() -> None:
    for spec in ({"containers": [{**APP, "command": "hostname"}]},
                 {"interactive": True, "containers": [APP]}):  # fmt: skip
        objects = objects_of(v1(spec), None)
        assert "mc-restful" not in [o["metadata"]["name"] for o in objects]


def test_users_get_passwords_and_a_munge_key_in_secrets(curve_cert: str) -> None:
    sidecar = {"name": "helper", "image": "busybox:1.36", "command": "sleep infinity"}
    spec = {"users": [{"name": "peenut"}, {"name": "squidward", "password": "given"}],
            "containers": [{**APP, "runFlux": True}, sidecar]}  # fmt: skip
    objects = objects_of(v1(spec), curve_cert)
    secrets = {s["metadata"]["name"]: s["stringData"] for s in by(objects, "Secret")}
    assert secrets["mc-users"] == {
        "password-peenut": credentials.password(curve_cert, "peenut"),
        "password-squidward": "given",
    }
    assert secrets["mc-munge"] == {"munge.key": credentials.munge_key(curve_cert)}
    (job,) = by(objects, "Job")
    flux, helper = job["spec"]["template"]["spec"]["containers"]
    mounts = {m["mountPath"] for m in flux["volumeMounts"]}
    assert {layout.CREDENTIALS_DIR, layout.MUNGE_DIR} <= mounts
    assert "allowPrivilegeEscalation" not in flux["securityContext"], "flux-imp is setuid"
    # a wrapped sidecar reaches the broker (the certificate) but starts none: no passwords, no key
    helper_mounts = {m["mountPath"] for m in helper["volumeMounts"]}
    assert layout.CURVE_DIR in helper_mounts
    assert not {layout.CREDENTIALS_DIR, layout.MUNGE_DIR} & helper_mounts


def test_a_munge_secret_of_the_users_is_mounted_and_none_made(curve_cert: str) -> None:
    spec = {"flux": {"mungeSecret": "site-munge"}, "containers": [{**APP, "command": "x"}]}
    objects = objects_of(v1(spec), curve_cert)
    assert "mc-munge" not in [o["metadata"]["name"] for o in by(objects, "Secret")]
    (job,) = by(objects, "Job")
    munge = [v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "munge-key"]
    assert munge[0]["secret"]["secretName"] == "site-munge"


def test_a_curve_cert_secret_of_the_users_replaces_ours() -> None:
    spec = {"flux": {"curveCertSecret": "site-curve"}, "containers": [{**APP, "command": "x"}]}
    objects = objects_of(v1(spec), None)
    assert "mc-curve" not in [o["metadata"]["name"] for o in by(objects, "Secret")]
    (job,) = by(objects, "Job")
    (curve,) = [v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "curve-cert"]
    assert curve["secret"]["secretName"] == "site-curve"
    assert curve["secret"]["items"] == [{"key": "curve-cert", "path": "curve.cert"}]


DERIVED: dict[str, Callable[[str], str]] = {
    "munge key": credentials.munge_key,
    "RESTful token": credentials.restful_token,
    "RESTful secret key": credentials.restful_secret_key,
    "password of a": lambda cert: credentials.password(cert, "a"),
    "password of b": lambda cert: credentials.password(cert, "b"),
}


def test_derived_secrets_are_stable_and_follow_the_certificate(curve_cert: str) -> None:
    """Each value is a function of the certificate alone (the same after a re-render or on
    another machine), a rotation changes every one of them, and none repeats another."""
    import base64

    from flux_minicluster.core.flux import certificate

    other = certificate.render(certificate.generate("x", "x-0"))
    values = {name: derive(curve_cert) for name, derive in DERIVED.items()}
    # pinned for tests/golden/fixed-curve.cert: a change of the derivation is a deliberate one
    assert values["RESTful token"] == "8775e195e9446027d9ec23fe6012218cf2200624862ff960"
    assert values["password of a"] == "yatvsgsvxp43f4ytc5m2"
    assert values["munge key"].startswith("VG+zRzY+hP8ddv8pnIg2lA1h")
    assert len(base64.b64decode(values["munge key"])) == 1024
    assert len(set(values.values())) == len(values)
    rotated = [name for name, derive in DERIVED.items() if derive(other) != values[name]]
    assert rotated == list(DERIVED)


def test_v1alpha2_examples_get_no_v1alpha1_objects(
    rendered: Callable[..., list[Manifest]],
) -> None:
    """A v1alpha2 document never gets a v1alpha1 object (that its bytes are unchanged is
    tests/core/test_golden.py's)."""
    for path in sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml")):
        if yaml.safe_load(path.read_text())["apiVersion"].endswith("/v1alpha1"):
            continue  # examples/v1alpha1-*.yaml: v1alpha1 documents, which do get them
        kinds = {o["kind"] for o in rendered(path)}
        assert not kinds & {"PersistentVolume", "PersistentVolumeClaim"}
        names = [o["metadata"]["name"] for o in rendered(path)]
        assert not [n for n in names if n.endswith(("-restful", "-munge", "-users"))]
