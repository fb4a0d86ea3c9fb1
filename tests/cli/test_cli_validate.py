"""`minicluster validate`: a summary per good file, one line per problem and exit 2 otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import minicluster

GOOD = """\
apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata: {name: flux-sample, namespace: hpc}
spec:
  size: 2
  maxSize: 4
  containers:
    - image: ubuntu:24.04
      command: echo hello
"""


def test_valid_file_prints_one_summary_line(tmp_path: Path) -> None:
    (tmp_path / "mc.yaml").write_text(GOOD)
    result = minicluster("validate", "mc.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout == "mc.yaml: ok hpc/flux-sample: size=2 maxSize=4 mode=submit containers=1\n"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "missing.yaml: no such file"),
        ("", "missing.yaml: empty file: no MiniCluster in it"),
        ("a: [1,\n", "missing.yaml: invalid YAML: line 2, column 1"),
        ("[1, 2]\n", "missing.yaml: expected a mapping (a MiniCluster), got a list"),
        (
            "kind: Job\nmetadata: {name: x}\nspec: {containers: []}\n",
            "missing.yaml: kind: must be 'MiniCluster', got 'Job'",
        ),
        (
            GOOD.replace("containers:", "contianers:"),
            "missing.yaml: spec.contianers: unknown field; did you mean 'containers'?",
        ),
        (
            GOOD.replace("image: ubuntu:24.04", "image: 5"),
            "missing.yaml: spec.containers[0].image: must be a string",
        ),
        (b"\xff\xfe name: x", "missing.yaml: not UTF-8 text"),
        # A key spelled like a type name is a key like any other (it was an IndexError).
        (
            "spec: {size: 1, containers: [{image: x}], float: 1}\n",
            "missing.yaml: spec.float: unknown field",
        ),
    ],
    ids=["missing", "empty", "yaml", "not-mapping", "kind", "typo", "field", "bytes", "type-name"],
)
def test_problems_are_one_line_each_with_exit_2(
    tmp_path: Path, content: str | bytes | None, expected: str
) -> None:
    if isinstance(content, bytes):
        (tmp_path / "missing.yaml").write_bytes(content)
    elif content is not None:
        (tmp_path / "missing.yaml").write_text(content)
    result = minicluster("validate", "missing.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert any(line.startswith(expected) for line in result.stderr.splitlines()), result.stderr


def test_one_bad_file_does_not_hide_the_good_ones(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(GOOD.replace("size: 2", "size: 0"))
    result = minicluster("validate", "good.yaml", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.startswith("good.yaml: ok")
    assert result.stderr.startswith("bad.yaml: spec.size: must be at least 1")


def test_validate_never_imports_pulumi(tmp_path: Path) -> None:
    (tmp_path / "mc.yaml").write_text(GOOD)
    code = (
        "import sys; from flux_minicluster.cli.main import main;"
        "rc = main(['validate', 'mc.yaml']);"
        "bad = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'));"
        "print(bad, file=sys.stderr); sys.exit(rc or (1 if bad else 0))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


V1ALPHA1_WITH_WARNINGS = """\
apiVersion: flux-framework.org/v1alpha1
kind: MiniCluster
metadata: {name: flux-sample, namespace: hpc}
spec:
  localDeploy: true
  size: 2
  containers:
    - image: ubuntu:24.04
      command: hostname
      workdir: /root/lammps
"""


@pytest.mark.parametrize(
    "command", [("validate",), ("render",), ("render", "-d", "out"), ("check",)]
)
def test_every_command_prints_a_v1alpha1_documents_warnings(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """The stack path logs these on `pulumi up`; the CLI says the same, once each."""
    (tmp_path / "mc.yaml").write_text(V1ALPHA1_WITH_WARNINGS)
    result = minicluster(command[0], "mc.yaml", *command[1:], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 2, result.stderr
    assert "spec.containers[0].workdir: unknown field; did you mean 'workingDir'?" in warnings[0]
    assert "spec.localDeploy: has no effect" in warnings[1]


def test_thousands_of_ignored_v1alpha1_fields_are_the_first_hundred_and_a_count(
    tmp_path: Path,
) -> None:
    """A generated v1alpha1 file of 3,000 unknown fields: warned of as errors are reported,
    a hundred with their did-you-mean and then how many more (once one line, and a guess, for
    each of them: 18,000 took 1.9 s and as many lines)."""
    fields = "".join(f"      workingdir{i}: x\n" for i in range(3_000))
    (tmp_path / "mc.yaml").write_text(
        V1ALPHA1_WITH_WARNINGS.replace("      workdir", fields + "      workdir")
    )
    result = minicluster("validate", "mc.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 101, warnings[-3:]
    assert "spec.containers[0].workingdir0: unknown field; did you mean" in warnings[0]
    assert warnings[-1] == "mc.yaml: warning: and 2902 more warnings"
    report = json.loads(minicluster("validate", "-o", "json", "mc.yaml", cwd=tmp_path).stdout)
    (mc,) = report["miniclusters"]
    assert len(mc["warnings"]) == 101
    assert mc["warnings"][-1]["message"] == "and 2902 more warnings"


def test_validate_json_for_ci_lists_every_minicluster_and_problem(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(V1ALPHA1_WITH_WARNINGS)
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\nmetadata: {name: mc}\n"
        "spec: {size: 0, containers: [{image: ubuntu:24.04}]}\n"
    )
    result = minicluster("validate", "-o", "json", "good.yaml", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False
    (good,) = report["miniclusters"]
    assert (good["file"], good["name"], good["namespace"], good["size"]) == (
        "good.yaml",
        "flux-sample",
        "hpc",
        2,
    )
    assert [w["path"] for w in good["warnings"]] == [
        "spec.containers[0].workdir",
        "spec.localDeploy",
    ]
    assert report["problems"]
    assert {p["file"] for p in report["problems"]} == {"bad.yaml"}
    assert any(p["path"] == "spec.size" for p in report["problems"])
    ok = minicluster("validate", "-o", "json", "good.yaml", cwd=tmp_path)
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["valid"] is True


# Inputs that crashed validate (exit 70, and no JSON under -o json): the field, and where.
CRASHED = {
    "alias-cycle": ("spec:\n  x: &x [*x]\n", "spec.x[0]", "line 3, column 10: the alias 'x'"),
    "bool": ("spec: {size: !!bool maybe}\n", "spec.size", "line 2, column 14: 'maybe' is not"),
    "int": ("spec: {size: !!int abc}\n", "spec.size", "'abc' is not a !!int"),
    "float": ("spec: {size: !!float abc}\n", "spec.size", "'abc' is not a !!float"),
    "timestamp": ("spec: {size: !!timestamp x}\n", "spec.size", "the tag !!timestamp is not"),
    "hex": ("spec: {size: !!int 0x}\n", "spec.size", "'0x' is not a !!int"),
    "set": ("spec: {size: !!set [a]}\n", "spec.size", "the tag !!set is not accepted"),
}


def test_input_that_crashed_is_a_problem_at_its_field_in_the_json_report(tmp_path: Path) -> None:
    for name, (text, _, _) in CRASHED.items():
        (tmp_path / f"{name}.yaml").write_text("metadata: {name: x}\n" + text)
    files = [f"{name}.yaml" for name in CRASHED]
    result = minicluster("validate", "-o", "json", *files, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    found = {p["file"]: (p["path"], p["message"]) for p in report["problems"]}
    for name, (_, path, message) in CRASHED.items():
        assert found[f"{name}.yaml"][0] == path, found
        assert message in found[f"{name}.yaml"][1], found


def test_a_reader_that_goes_away_is_not_an_error(tmp_path: Path) -> None:
    """`minicluster validate *.yaml | head -1`: the closed pipe is the reader's choice."""
    for i in range(200):
        (tmp_path / f"mc{i:03}.yaml").write_text(GOOD)
    files = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.Popen(
        [sys.executable, "-m", "flux_minicluster.cli.main", "validate", *files],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does after its line
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert first.startswith(b"mc000.yaml: ok")
    assert stderr == b""


def _document(name: str | None) -> str:
    metadata = f"metadata: {{name: {name}}}\n" if name else ""
    return (
        f"apiVersion: flux-framework.org/v1alpha2\nkind: MiniCluster\n{metadata}"
        "spec: {size: 1, containers: [{image: 'ubuntu:24.04', command: hostname}]}\n"
    )


@pytest.mark.parametrize(
    ("args", "stream"),
    [
        ((), _document("x") + "---\n" + _document("x")),
        (("--name", "x"), _document("a") + "---\n" + _document("b")),
    ],
    ids=["same-metadata-name", "one-name-for-two"],
)
def test_two_miniclusters_of_one_name_in_a_file_are_refused(
    tmp_path: Path, args: tuple[str, ...], stream: str
) -> None:
    """They would render the same objects twice: the second ConfigMap replacing the first."""
    (tmp_path / "two.yaml").write_text(stream)
    for command in ("validate", "render"):
        result = minicluster(command, *args, "two.yaml", cwd=tmp_path)
        assert result.returncode == 2, result.stdout
        assert "two.yaml: document[1].metadata.name: default/x is document[0]'s name too" in (
            result.stderr
        )
        assert result.stdout == ""


def test_standard_input_has_one_name_in_every_line(tmp_path: Path) -> None:
    bad = GOOD.replace("size: 2", "size: 0")
    for text, stream, expected in (
        (GOOD, "stdout", "<stdin>: ok hpc/flux-sample"),
        (bad, "stderr", "<stdin>: spec.size: must be at least 1"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "flux_minicluster.cli.main", "validate", "-"],
            input=text,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        assert getattr(result, stream).startswith(expected), (result.stdout, result.stderr)


@pytest.mark.parametrize(
    ("pod", "command", "warned"),
    [
        ("", ["validate", "mc.yaml"], False),  # Never by default on 1.34: failed work fails
        ("  pod: {restartPolicy: OnFailure}\n", ["validate", "mc.yaml"], True),
        ("  pod: {restartPolicy: OnFailure}\n", ["validate", "-o", "json", "mc.yaml"], True),
        ("", ["render", "--kube-version", "1.28", "mc.yaml"], True),  # no failure policy
        ("", ["render", "--kube-version", "1.29", "mc.yaml"], False),
    ],
    ids=["default", "on-failure", "on-failure-json", "render-1.28", "render-1.29"],
)
def test_failed_work_that_would_leave_a_complete_job_is_a_warning(
    tmp_path: Path, pod: str, command: list[str], warned: bool
) -> None:
    """With restartPolicy OnFailure (or a release without a pod failure policy) rank 0 exits 0
    when its work failed: validate, render and the component say so, naming the field."""
    (tmp_path / "mc.yaml").write_text(GOOD.replace("spec:\n", f"spec:\n{pod}", 1))
    result = minicluster(*command, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    said = "spec.pod.restartPolicy: " in result.stderr or "spec.pod.restartPolicy" in (
        result.stdout if "json" in command else ""
    )
    assert said is warned, (result.stdout, result.stderr)
    if warned and "json" not in command:
        assert "failed work leaves a Complete Job" in result.stderr
    if "json" in command:
        (mc,) = json.loads(result.stdout)["miniclusters"]
        assert [w["path"] for w in mc["warnings"]] == ["spec.pod.restartPolicy"]
