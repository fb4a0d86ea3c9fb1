"""`minicluster check`: the policy pack offline, from the command line, as CI runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.cli import minicluster

from flux_minicluster.cli.curvecerts import STATE_ENV
from flux_minicluster.core.flux import certificate

ROOT = Path(__file__).resolve().parents[2]

BAD = [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "leaky", "namespace": "hpc"},
        "data": {
            "curve.cert": 'curve\n    public-key = "x"\n    secret-key = "y"\n',
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": "hpc"},
        "spec": {
            "containers": [
                {"name": "app", "image": "ubuntu:latest", "securityContext": {"privileged": True}}
            ]
        },
    },
]


def test_a_bad_set_exits_1_and_names_each_policy(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all(BAD))
    result = minicluster(
        "check",
        "bad.yaml",
        "--config",
        str(Path(__file__).parents[2] / "policies" / "config.example.json"),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    for policy in ("curve-cert-in-secret", "pinned-images", "no-privileged"):
        assert f"[mandatory] {policy}" in result.stdout, result.stdout
    assert "Traceback" not in result.stderr


def test_a_stack_rendered_on_the_fly_passes() -> None:
    result = minicluster("check", "--stack", "local", cwd=Path(__file__).parents[2])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 mandatory" in result.stdout


def test_nothing_to_check_is_a_usage_error(tmp_path: Path) -> None:
    result = minicluster("check", cwd=tmp_path)
    assert result.returncode == 2
    assert "give manifest files or folders" in result.stderr


@pytest.mark.parametrize("what", ["empty folder", "empty file", "wrong path", "not kubernetes"])
def test_checking_nothing_fails(tmp_path: Path, what: str) -> None:
    target = tmp_path / "target"
    if what == "empty folder":
        target.mkdir()
    elif what == "empty file":
        target.write_text("")
    elif what == "not kubernetes":
        target.mkdir()
        (target / "notes.txt").write_text("hello\n")
    result = minicluster("check", str(target), cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert "passed" not in result.stdout
    assert result.stderr.strip()


def test_a_minicluster_spec_is_rendered_then_checked(tmp_path: Path) -> None:
    examples = Path(__file__).parents[2] / "examples"
    result = minicluster("check", str(examples / "hello-world.yaml"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rendered MiniCluster minicluster-examples/flux-hello" in result.stderr
    assert "in 5 object(s)" in result.stdout


def test_objects_piped_in_are_checked(tmp_path: Path) -> None:
    """`minicluster render FILE | minicluster check -`: '-' is standard input, as elsewhere."""
    examples = Path(__file__).parents[2] / "examples"
    command = [sys.executable, "-m", "flux_minicluster.cli.main"]
    rendered = subprocess.run(
        [*command, "render", str(examples / "hello-world.yaml"), "--curve-cert", "c.cert"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    result = subprocess.run(
        [*command, "check", "-"],
        input=rendered.stdout,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "in 5 object(s)" in result.stdout
    broken = subprocess.run(
        [*command, "check", "-"],
        input="apiVersion: v1\nkind: Pod\nkind: Job\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert broken.returncode == 2
    assert "<stdin>: invalid YAML: " in broken.stderr


def test_a_burst_stack_alone_renders_its_root(tmp_path: Path) -> None:
    result = minicluster("check", "--stack", "eks-burst", cwd=Path(__file__).parents[2])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rendered the root stack gke-root" in result.stderr


def test_a_folder_the_product_wrote_is_checked_on_its_objects_alone(tmp_path: Path) -> None:
    """``render -d`` writes ``<stack>.outputs.json`` beside the stack folders and examples/ holds
    ``Pulumi.yaml`` and ``package.json``: checking the folder skips them with a note."""
    root = Path(__file__).parents[2]
    rendered = minicluster("render", "--stack", "local", "-d", str(tmp_path), cwd=root)
    assert rendered.returncode == 0, rendered.stderr
    assert (tmp_path / "local.outputs.json").is_file()
    result = minicluster("check", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 mandatory" in result.stdout
    # examples/ holds a hostPath example and a bursting pair: the policies judge those (exit 1),
    # the project files of the other-language examples are skipped, not an input error (exit 2)
    examples = minicluster("check", str(root / "examples"), cwd=tmp_path)
    assert examples.returncode == 1, examples.stdout + examples.stderr
    assert "policy check FAILED" in examples.stdout
    assert "go/Pulumi.yaml: skipped, not a Kubernetes object" in examples.stderr
    assert (
        "local.outputs.json: skipped, not a Kubernetes object"
        in minicluster("check", str(tmp_path), cwd=tmp_path).stderr
    )
    # named on its own, a file that is not a Kubernetes object is still an error
    alone = minicluster("check", str(tmp_path / "local.outputs.json"), cwd=tmp_path)
    assert alone.returncode == 2
    assert "not a Kubernetes object" in alone.stderr


def test_check_json_for_ci_has_the_verdict_and_every_violation(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all(BAD))
    result = minicluster("check", "bad.yaml", "-o", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] is False
    assert report["objects"] == 2
    found = {(v["policy"], v["level"], v["object"]) for v in report["violations"]}
    assert ("curve-cert-in-secret", "mandatory", "ConfigMap/hpc/leaky") in found
    assert ("no-privileged", "mandatory", "Pod/hpc/app") in found
    assert all(v["remediation"] for v in report["violations"])


def test_a_persistent_cluster_rendered_for_kubectl_passes_its_check(tmp_path: Path) -> None:
    """`render FILE -d` then `check DIR`, the GitOps recipe, for a cluster that never completes:
    the files carry no Pulumi await (kubectl awaits nothing), so the rule about `pulumi up`'s
    await does not judge them; the same Job handed to the engine without one is refused."""
    from flux_minicluster.policy import checker

    spec = Path(__file__).parents[2] / "examples" / "interactive.yaml"
    rendered = minicluster("render", str(spec), "-d", str(tmp_path / "out"), cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    result = minicluster("check", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not applied to the 5 object(s) read from files: persistent-no-hang" in result.stderr
    objects = [
        o
        for f in sorted((tmp_path / "out").glob("*.yaml"))
        for o in yaml.safe_load_all(f.read_text())
        if o
    ]
    as_an_engine_sees_them = checker.check(objects)
    assert [v.policy for v in as_an_engine_sees_them.mandatory] == ["persistent-no-hang"]


@pytest.mark.parametrize(
    ("args", "file", "path", "message"),
    [
        ("spec.yaml", "spec.yaml", "spec.float", "spec.float: unknown field"),
        ("missing.yaml", "missing.yaml", "", "missing.yaml: no such file or directory"),
        ("/dev/zero", "/dev/zero", "", "/dev/zero: not a file or folder (a device"),
        ("notk8s.yaml", "notk8s.yaml", "document 1", "notk8s.yaml: document 1: not a Kubernetes"),
        # Python's JSON decoder recurses once per level (a RecursionError was exit 70, no JSON)
        ("deep.json", "deep.json", "", "deep.json: JSON nested deeper than 64 levels"),
        ("deep65.json", "deep65.json", "[0]" * 64, "deep65.json: " + "[0]" * 64 + ": nested"),
    ],
)
def test_check_json_is_a_document_even_when_the_input_is_refused(
    tmp_path: Path, args: str, file: str, path: str, message: str
) -> None:
    """CI reads stdout: a refused input is `passed: false` with its problems, each naming the
    file, and the same line on stderr that a person reads."""
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\nmetadata: {name: x}\n"
        "spec: {size: 1, containers: [{image: x}], float: 1}\n"
    )
    (tmp_path / "notk8s.yaml").write_text("just: data\n")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "deep65.json").write_text("[" * 65 + "]" * 65)
    result = minicluster("check", "-o", "json", args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] is False
    assert report["objects"] == 0
    assert [(p["file"], p["path"]) for p in report["problems"]] == [(file, path)]
    assert message in result.stderr


GROUP = [str(ROOT / "examples" / f) for f in ("bursting-root.yaml", "bursting-child.yaml")]


def test_the_projects_own_examples_pass_their_check() -> None:
    """`check examples/` with the README's config: every example, the bursting root and its
    burst among them (one certificate for the group), passes every mandatory policy."""
    config = str(ROOT / "policies" / "config.example.json")
    result = minicluster("check", "examples/", "--config", config, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 mandatory" in result.stdout


@pytest.mark.parametrize(
    ("source", "origin"),
    [
        ("none", "a CURVE certificate made for this check is used"),
        ("kept", "the CURVE certificate kept in"),  # what render keeps, render then gives
        ("given", "the certificate in"),
    ],
)
def test_a_burst_group_checked_together_holds_one_certificate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: str, origin: str
) -> None:
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "state"))
    extra: list[str] = []
    if source == "kept":
        rendered = minicluster("render", GROUP[0], cwd=tmp_path)
        assert rendered.returncode == 0, rendered.stderr
    elif source == "given":
        cert = tmp_path / "group.cert"
        cert.write_text(certificate.render(certificate.generate("flux-root", "flux-root-0")))
        extra = ["--curve-cert", str(cert)]
    result = minicluster("check", *GROUP, *extra, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count(origin) == 2, result.stderr
    assert source == "kept" or not (tmp_path / "state").exists(), "check never writes"


def test_a_burst_holding_another_certificate_is_told_how_to_share_one(tmp_path: Path) -> None:
    child = yaml.safe_load(Path(GROUP[1]).read_text())
    child["spec"]["flux"]["curveCert"] = certificate.render(
        certificate.generate("flux-root", "flux-root-0")
    )
    (tmp_path / "child.yaml").write_text(yaml.safe_dump(child))
    result = minicluster("check", GROUP[0], "child.yaml", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[mandatory] burst-group-consistent" in result.stdout
    assert "same --curve-cert FILE" in result.stdout


def test_a_certificate_to_check_with_must_exist(tmp_path: Path) -> None:
    result = minicluster("check", GROUP[0], "--curve-cert", "missing.cert", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "missing.cert: does not exist" in result.stderr
    assert "check never makes one" in result.stderr
    assert not (tmp_path / "missing.cert").exists()


def test_json_is_one_document_even_on_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README promises `check -o json` one document whatever happens: a bug of ours too."""
    from flux_minicluster.cli.main import main
    from flux_minicluster.policy import checker

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(checker, "check", broken)
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(BAD))
    assert main(["check", str(path), "-o", "json"]) == 70
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["passed"] is False
    assert document["problems"][0]["message"] == "internal error: RuntimeError: a bug"
    assert "internal error: RuntimeError: a bug" in err
