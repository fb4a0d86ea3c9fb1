"""`minicluster render`: a kubectl-ready stream on stdout, or one file per object with -o."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.cli import minicluster

from flux_minicluster.cli.curvecerts import STATE_ENV
from flux_minicluster.core.base import layout
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.kube import labels as lbl

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "examples" / "hello-world.yaml"
SIDECARS = ROOT / "examples" / "services-sidecar.yaml"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return minicluster("render", *args, cwd=cwd, timeout=120)


def test_stdout_is_a_multi_document_stream_with_a_kept_certificate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(STATE_ENV, str(tmp_path))
    result = run(str(SIDECARS))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("---\n")
    docs = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in docs] == [
        "ConfigMap", "Secret", "NetworkPolicy", "Pod", "Service", "Service", "Job"
    ]  # fmt: skip
    assert result.stdout.count("\n---\n") + 1 == len(docs)
    secret = docs[1]
    cert = certificate.parse(secret["stringData"][layout.CURVE_FILE])
    assert secret["metadata"]["annotations"][lbl.CURVE_PUBLIC_KEY_ANNOTATION] == cert.public_key
    assert cert.hostname == "flux-app-0"
    assert "made a new CURVE certificate" in result.stderr
    assert "secret-key" not in result.stderr


EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(["lammps.yaml"], id="the-readme-pipe"),
        pytest.param(["v1alpha1-restful.yaml"], id="v1alpha1-credentials-derived"),
        # a root and its burst rendered apart share the group's kept certificate
        pytest.param(["bursting-root.yaml", "bursting-child.yaml"], id="burst-group"),
    ],
)
def test_rendering_again_gives_the_same_bytes_with_a_certificate_kept_per_user(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, files: list[str]
) -> None:
    """`render FILE | kubectl apply -f -` run twice: the second apply must change nothing, so
    the Secret and the Job (whose pod template holds the public key) are the same bytes. The
    certificate lives in the user's state folder, private, out of the spec's folder."""
    state = tmp_path / "state"
    monkeypatch.setenv(STATE_ENV, str(state))
    first = [run(str(EXAMPLES / f)) for f in files]
    for result in first:
        assert result.returncode == 0, result.stderr
    kept = state / "curve" / "minicluster-examples"
    [path] = kept.iterdir()  # one certificate, whatever the number of files
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert f"kept it in {path}" in first[0].stderr
    again = [run(str(EXAMPLES / f)) for f in files]
    assert [r.stdout for r in again] == [r.stdout for r in first]
    assert all(f"kept in {path} is used" in r.stderr for r in again)
    keys = {
        d["metadata"]["annotations"][lbl.CURVE_PUBLIC_KEY_ANNOTATION]
        for r in first
        for d in yaml.safe_load_all(r.stdout)
        if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-curve")
    }
    assert keys == {certificate.parse(path.read_text()).public_key}


def test_a_state_folder_that_cannot_be_written_is_a_user_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "state").write_text("not a folder")
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "state"))
    result = run(str(HELLO))
    assert result.returncode == 2, result.stderr
    assert "cannot keep the certificate" in result.stderr
    assert f"--curve-cert FILE, or point {STATE_ENV} at a folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_namespace_option_and_a_spec_certificate(tmp_path: Path) -> None:
    cert = certificate.render(certificate.generate("flux-cert", "mc-0"))
    spec = {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "mc"},
        "spec": {
            "flux": {"curveCert": cert},
            "containers": [{"image": "ubuntu:24.04", "command": "echo hi"}],
        },
    }
    (tmp_path / "mc.yaml").write_text(yaml.safe_dump(spec))
    result = run("mc.yaml", "-n", "hpc", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    assert {d["metadata"]["namespace"] for d in docs} == {"hpc"}
    assert docs[1]["stringData"][layout.CURVE_FILE] == cert
    assert "generated" not in result.stderr


def test_the_curve_cert_option_wins_over_the_spec_certificate(tmp_path: Path) -> None:
    # The one precedence (core.flux.certificate.choose), as the component's curve_cert argument.
    in_spec = certificate.render(certificate.generate("flux-cert", "mc-0"))
    given = certificate.render(certificate.generate("flux-given", "mc-0"))
    (tmp_path / "given.cert").write_text(given)
    spec = {
        "flux": {"curveCert": in_spec},
        "containers": [{"image": "ubuntu:24.04", "command": "echo hi"}],
    }
    (tmp_path / "mc.yaml").write_text(yaml.safe_dump(spec))
    result = run("mc.yaml", "--name", "mc", "--curve-cert", "given.cert", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (secret,) = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "Secret"]
    assert secret["stringData"][layout.CURVE_FILE] == given


def test_output_dir_writes_one_numbered_file_per_object(tmp_path: Path) -> None:
    out = tmp_path / "manifests"
    result = run(str(HELLO), "--output-dir", str(out))
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.glob("*.yaml"))
    assert names == [
        "01-configmap-flux-hello-entrypoint.yaml",
        "02-secret-flux-hello-curve.yaml",
        "03-networkpolicy-flux-hello-mesh.yaml",
        "04-service-flux-hello.yaml",
        "05-job-flux-hello.yaml",
    ]
    for name in names:
        assert str(out / name) in result.stderr.splitlines()
        (doc,) = yaml.safe_load_all((out / name).read_text())
        assert doc["metadata"]["name"] in name
        assert list(doc)[:3] == ["apiVersion", "kind", "metadata"]
    assert result.stdout == ""
    secret_mode = stat.S_IMODE((out / names[1]).stat().st_mode)
    assert secret_mode == 0o600


def test_a_second_render_replaces_its_own_files_and_keeps_the_users(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(str(SIDECARS), "-d", str(out)).returncode == 0
    (out / "kustomization.yaml").write_text("resources: []\n")  # the user's own file
    result = run(str(HELLO), "-d", str(out))
    assert result.returncode == 0, result.stderr
    kinds = [yaml.safe_load(p.read_text())["kind"] for p in sorted(out.glob("*-*.yaml"))]
    kinds_expected = ["ConfigMap", "Secret", "NetworkPolicy", "Service", "Job"]
    assert kinds == kinds_expected, "one Job, no leftover objects"
    assert (out / "kustomization.yaml").read_text() == "resources: []\n"


def test_with_a_certificate_file_two_renders_are_byte_identical(tmp_path: Path) -> None:
    cert = tmp_path / "hello.cert"
    first = run(str(HELLO), "--curve-cert", str(cert))
    assert first.returncode == 0, first.stderr
    assert "created a NEW CURVE certificate" in first.stderr
    assert stat.S_IMODE(cert.stat().st_mode) == 0o600
    second = run(str(HELLO), "--curve-cert", str(cert))
    assert second.stdout == first.stdout
    assert "created" not in second.stderr
    assert certificate.parse(cert.read_text()).secret_key in first.stdout


@pytest.mark.parametrize(
    ("example", "curve_secret", "left_out"),
    [
        ("hello-world.yaml", "flux-hello-curve", []),
        # v1alpha1: the munge key, passwords and RESTful credentials (from the certificate) too
        (
            "v1alpha1-restful.yaml",
            "flux-restful-curve",
            ["flux-restful-munge", "flux-restful-restful", "flux-restful-users"],
        ),
    ],
)
def test_without_the_secret_the_output_holds_no_key(
    tmp_path: Path, example: str, curve_secret: str, left_out: list[str]
) -> None:
    cert = tmp_path / "hello.cert"
    with_secrets = run(str(ROOT / "examples" / example), "--curve-cert", str(cert))
    secrets = [d for d in yaml.safe_load_all(with_secrets.stdout) if d["kind"] == "Secret"]
    assert sorted(s["metadata"]["name"] for s in secrets) == sorted([curve_secret, *left_out])
    result = run(str(ROOT / "examples" / example), "--curve-cert", str(cert), "--no-secret")
    assert result.returncode == 0, result.stderr
    assert "Secret" not in [d["kind"] for d in yaml.safe_load_all(result.stdout)]
    assert certificate.parse(cert.read_text()).secret_key not in result.stdout
    for secret in secrets:
        for key, value in (secret.get("stringData") or secret.get("data")).items():
            assert key == "restful-user" or value not in result.stdout, key
    ns = secrets[0]["metadata"]["namespace"]
    assert f"kubectl create secret generic {curve_secret} -n {ns}" in result.stderr
    assert f"--from-file={layout.CURVE_FILE}={cert}" in result.stderr  # the file just given
    for name in left_out:
        assert f"the Secret {ns}/{name} (keys " in result.stderr


@pytest.mark.parametrize("target", [(str(HELLO),), ("--stack", "local")], ids=["file", "stack"])
def test_without_the_secret_a_certificate_file_is_required(
    tmp_path: Path, target: tuple[str, ...]
) -> None:
    # A certificate made here would be thrown away while the Job carries its public key.
    result = run(*target, "--no-secret", "-d", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "--no-secret needs --curve-cert FILE" in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_json_output_is_a_kubernetes_list() -> None:
    result = run(str(HELLO), "-o", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    kinds = [i["kind"] for i in document["items"]]
    assert kinds == ["ConfigMap", "Secret", "NetworkPolicy", "Service", "Job"]


def test_standard_input_every_document_and_a_name_for_a_bare_spec(tmp_path: Path) -> None:
    bare = {"size": 2, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}]}
    text = yaml.safe_dump(bare)
    result = subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", "render", "-", "--name", "piped"],
        input=text, capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    jobs = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "Job"]
    assert [j["metadata"]["name"] for j in jobs] == ["piped"]
    two = HELLO.read_text() + "---\n" + SIDECARS.read_text()
    (tmp_path / "two.yaml").write_text(two)
    result = run("two.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    jobs = [d for d in yaml.safe_load_all(result.stdout) if d["kind"] == "Job"]
    assert len(jobs) == 2


def test_a_namespace_that_disagrees_with_the_documents_is_refused() -> None:
    result = run(str(HELLO), "-n", "elsewhere")
    assert result.returncode == 2
    assert (
        "metadata.namespace: is 'minicluster-examples' but the namespace given is 'elsewhere'"
        in (result.stderr)
    )


def test_a_stack_renders_objects_only_with_outputs_beside_them(tmp_path: Path) -> None:
    result = run("--stack", "local", "-d", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "r" / "local"
    for path in folder.glob("*.yaml"):
        assert {"apiVersion", "kind", "metadata"} <= set(yaml.safe_load(path.read_text()))
    assert not list(folder.glob("*.json"))
    (patch,) = (folder / "patches").glob("*.yaml")
    assert yaml.safe_load(patch.read_text())["spec"] == {"parallelism": 4, "completions": 4}
    outputs = json.loads((tmp_path / "r" / "local.outputs.json").read_text())
    assert outputs["outputs"]["curveCert"] == "[secret]"
    assert outputs["secretOutputNames"] == ["curveCert"]
    job = yaml.safe_load(next(folder.glob("*-job-*.yaml")).read_text())
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    assert "pulumi.com/waitFor" in yaml.safe_load(patch.read_text())["metadata"]["annotations"]


def test_a_burst_stack_renders_alone_with_stable_file_names(tmp_path: Path) -> None:
    names = []
    cert = tmp_path / "group.cert"
    for attempt in ("a", "b"):
        result = run(
            "--stack", "eks-burst", "--curve-cert", str(cert), "-d", str(tmp_path / attempt)
        )
        assert result.returncode == 0, result.stderr
        assert "'gke-root' was rendered first" in result.stderr
        names.append(sorted(p.name for p in (tmp_path / attempt / "eks-burst").glob("*.yaml")))
    assert names[0] == names[1]
    assert names[0][0].endswith("-namespace-flux.yaml")


def test_a_bad_file_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\nmetadata: {name: mc}\n"
        "spec:\n  size: 2\n  containers:\n    - image: ubuntu:24.04\n      volumes:\n"
        "        data: {claimName: data}\n"
    )
    result = run("bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("bad.yaml: spec.containers[0].volumes.data.path: required")


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = run("nope.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "nope.yaml: no such file\n"


CERT_TARGETS = [("file", (str(HELLO),)), ("stack", ("--stack", "local"))]


@pytest.mark.parametrize(("what", "target"), CERT_TARGETS)
def test_a_binary_certificate_file_is_a_user_error(
    tmp_path: Path, what: str, target: tuple[str, ...]
) -> None:
    cert = tmp_path / "curve.cert"
    cert.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    result = run(*target, "--curve-cert", str(cert))
    assert result.returncode == 2, result.stderr
    assert str(cert) in result.stderr
    assert "not a CURVE certificate" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize(("what", "target"), CERT_TARGETS)
def test_a_certificate_path_in_a_missing_folder_is_refused(
    tmp_path: Path, what: str, target: tuple[str, ...]
) -> None:
    """A typo in the folder of --curve-cert must not quietly make a new key (and a new Job)."""
    cert = tmp_path / "secrtes" / "lammps.cert"
    result = run(*target, "--curve-cert", str(cert), "-d", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert f"{cert.parent} does not exist" in result.stderr
    assert not cert.parent.exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("what", "target"), CERT_TARGETS)
def test_a_certificate_link_to_nothing_is_refused_never_replaced(
    tmp_path: Path, what: str, target: tuple[str, ...]
) -> None:
    """The link points into a secret store that is not mounted: a new key in its place would
    replace the Secret and the Job (it did, silently)."""
    cert = tmp_path / "lammps.cert"
    cert.symlink_to(tmp_path / "vault" / "lammps.cert")
    result = run(*target, "--curve-cert", str(cert), "-d", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert f"{cert}: a symbolic link to {tmp_path / 'vault' / 'lammps.cert'}, which does not " in (
        result.stderr
    )
    assert cert.is_symlink()
    assert not (tmp_path / "vault").exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("what", "target"), CERT_TARGETS)
def test_a_new_certificate_file_is_announced_loudly(
    tmp_path: Path, what: str, target: tuple[str, ...]
) -> None:
    cert = tmp_path / "lammps.cert"
    result = run(*target, "--curve-cert", str(cert))
    assert result.returncode == 0, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "NEW CURVE certificate" in x]
    assert line.startswith(f"WARNING: {cert} did not exist")
    assert "replaces the Job" in line


def _curve_keys(folder: Path) -> set[str]:
    secret = yaml.safe_load(next(folder.glob("*-secret-*-curve.yaml")).read_text())
    return {certificate.parse(secret["stringData"]["curve.cert"]).public_key}


TRIO = ("gke-root", "eks-burst", "aks-burst")


@pytest.mark.parametrize("given", [False, True], ids=["kept", "curve-cert"])
def test_a_trio_rendered_one_stack_at_a_time_shares_one_certificate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, given: bool
) -> None:
    """The GitOps way, a folder per cluster, each stack in a command of its own: the keygen
    Command of the root prints the certificate kept for it (or the one given), and each burst
    reads its root's, so the keys agree; rendering again writes the same bytes."""
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "state"))
    extra = ["--curve-cert", str(tmp_path / "group.cert")] if given else []

    def render_all() -> list[bytes]:
        for stack in TRIO:
            result = run("--stack", stack, *extra, "-d", str(tmp_path / stack))
            assert result.returncode == 0, result.stderr
        return [p.read_bytes() for s in TRIO for p in sorted((tmp_path / s / s).glob("*.yaml"))]

    first = render_all()
    keys = [_curve_keys(tmp_path / s / s) for s in TRIO]
    assert keys[0] == keys[1] == keys[2]
    kept = list((tmp_path / "state").rglob("*.cert"))
    assert [p.name for p in kept] == ([] if given else ["gke-root.cert"])
    assert render_all() == first


def test_two_renders_making_a_certificate_at_once_use_the_same_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The render that comes second to a missing certificate file uses the first one's, never
    replacing the certificate the other has already printed into its Secret."""
    from flux_minicluster.cli import folders

    path = tmp_path / "mc.cert"
    first = certificate.generate("mc", "mc-0")
    write = certificate.write

    def meanwhile(cert: certificate.CurveCertificate, target: Path) -> None:
        write(first, path)  # the other render gets there first
        write(cert, target)

    monkeypatch.setattr(certificate, "write", meanwhile)
    text, created = folders.load_or_create_certificate(path, "mc", "mc-0")
    assert (text, created) == (certificate.render(first), False)
    assert path.read_text() == certificate.render(first)
    assert [p.name for p in tmp_path.iterdir()] == ["mc.cert"]
