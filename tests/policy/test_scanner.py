"""Two security scanners' verdicts (checkov and kube-score) over every rendered example and stack.

Every check the product can satisfy by default passes. What still fails belongs to the user (their
image's tag and user, their container's limits) and is listed, with the reason, in one place:
``tests/scanner-user-owned.yaml``. The test fails when a new failure appears, and when a listed one
goes away (so the list only ever shrinks knowingly). ``UPDATE_SCANNER=1`` rewrites the lists of
objects; a check that is new to the file needs its reason written by a person first.

Each failure is the container's that fails it: both scanners report a check per object, and
checkov stops at the first failing container (the user's come before our flux-view init
container), so each object that runs containers is scanned as one copy per container
(``job-flux-hello/flux-view``, ``job-flux-hello/flux-hello``), the pod's own fields in each and
the container as its only regular one (the init container too: a copy without regular
containers fails the pod-level checks that read only those). A pod-level failure (no egress
policy, the pod's user) is then listed under each container of the pod.

checkov lives in its own virtualenv and kube-score is built with ``go install`` (``make
scanner``; ``make test`` builds both and passes their paths in ``CHECKOV`` and ``KUBE_SCORE``).
Both run offline: no download, no update check.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.cli import folders
from flux_minicluster.cli.render import render_file
from flux_minicluster.core.render.manifests import to_yaml
from flux_minicluster.deploy.stack import project, stackrender

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = Path(__file__).parents[1] / "scanner-user-owned.yaml"
CERT = ROOT / "tests" / "golden" / "fixed-curve.cert"
SCANNERS = {
    "checkov": os.environ.get("CHECKOV", ""),
    "kube-score": os.environ.get("KUBE_SCORE", ""),
}
OFFLINE = {"CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "BC_SKIP_MAPPING": "TRUE"}
# A copy's file is named <object>--<container>.yaml; its findings <object>/<container>.
CONTAINER_SEPARATOR = "--"
# kube-score grades a check 10 when it passes, 5 (warning) or 1 (critical) when it does not.
KUBE_SCORE_OK = 10

Finding = tuple[str, str]  # ("examples/hello-world/job-flux-hello/flux-view", "CKV_K8S_43")


def scanner_of(check: str) -> str:
    """checkov's checks are CKV_K8S_<n> (CKV2_ for graph checks); kube-score's are words."""
    return "checkov" if re.fullmatch(r"CKV2?_K8S_\d+", check) else "kube-score"


def installed(scanner: str) -> bool:
    return Path(SCANNERS[scanner]).is_file()


def _pod_spec(doc: Any) -> dict[str, Any] | None:
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == "Pod":
        spec: dict[str, Any] = doc["spec"]
        return spec
    template = (doc.get("spec") or {}).get("template")
    return template["spec"] if template else None


def split_by_container(folder: Path) -> None:
    """Replace each object that runs containers by one copy per container, named for it."""
    for path in sorted(folder.rglob("*.yaml")):
        if folders.PATCHES in path.parts:
            continue
        doc = yaml.safe_load(path.read_text())
        pod = _pod_spec(doc)
        if pod is None:
            continue
        for group in ("initContainers", "containers"):
            for container in pod.get(group) or []:
                one = copy.deepcopy(doc)
                spec = _pod_spec(one)
                assert spec is not None
                # as a regular container: some pod-level checks (checkov's CKV_K8S_40) read
                # only containers, and would fail a copy that has none
                spec.pop("initContainers", None)
                spec["containers"] = [container]
                name = container["name"]
                # distinct objects to the scanners, which key their results by name
                one["metadata"]["name"] += CONTAINER_SEPARATOR + name
                copy_path = path.with_name(f"{path.stem}{CONTAINER_SEPARATOR}{name}.yaml")
                # the renderer's own writer: a plain safe_dump leaves a digest such as
                # 74793576925972e0 bare, which YAML 1.2 readers take for a number
                copy_path.write_text(to_yaml([one]))
        path.unlink()


def _object(prefix: str, file: str) -> str:
    """``<prefix>/<folder>/<object>[/<container>]`` of a rendered file, stable across
    renumbering (``05-job-flux-hello--flux-view.yaml`` -> ``.../job-flux-hello/flux-view``)."""
    *_, where, name = file.strip("/").split("/")
    stem = re.sub(r"^\d+-", "", name.removesuffix(".yaml"))
    return f"{prefix}/{where}/" + stem.replace(CONTAINER_SEPARATOR, "/")


def checkov(folder: Path, prefix: str) -> set[Finding]:
    """Every failed check over one folder of rendered objects, as (object, check id)."""
    command = [
        SCANNERS["checkov"], "-d", str(folder.resolve()), "--framework", "kubernetes",
        "-o", "json", "--skip-download", "--quiet", "--compact", "--soft-fail",
        # A stack's patches/ holds server-side-apply patches (a Job's size), not objects.
        "--skip-path", folders.PATCHES,
    ]  # fmt: skip
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env={**os.environ, **OFFLINE},
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert "results" in report, f"checkov found no Kubernetes object in {folder}"
    assert report["summary"]["parsing_errors"] == 0
    return {
        (_object(prefix, failure["file_path"]), failure["check_id"])
        for failure in report["results"]["failed_checks"]
    }


def kube_score(folder: Path, prefix: str) -> set[Finding]:
    """Every check kube-score grades below OK (critical or warning), as (object, check id)."""
    files = [str(p) for p in sorted(folder.rglob("*.yaml")) if folders.PATCHES not in p.parts]
    result = subprocess.run(
        [SCANNERS["kube-score"], "score", "-o", "json", *files],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr[-2000:]  # 1: something is critical
    found = set()
    for obj in json.loads(result.stdout):
        file = str(Path(obj["file_name"]).resolve().relative_to(folder.resolve()))
        for check in obj["checks"]:
            if not check["skipped"] and check["grade"] < KUBE_SCORE_OK:
                found.add((_object(prefix, "/" + file), check["check"]["id"]))
    return found


SCAN: dict[str, Callable[[Path, str], set[Finding]]] = {
    "checkov": checkov,
    "kube-score": kube_score,
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every example and bundled stack rendered, each object split by container."""
    examples = tmp_path_factory.mktemp("examples")
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        folders.write_folder(examples / path.stem, render_file(str(path), curve_cert=CERT))
    stacks = tmp_path_factory.mktemp("stacks")
    here = project.find(ROOT)
    for rendering in stackrender.render_stacks(here, here.stacks(), curve_cert=CERT.read_text()):
        folders.write_folder(stacks / rendering.stack, rendering.objects, rendering.patches)
    for folder in (examples, stacks):
        split_by_container(folder)
    return {"examples": examples, "stacks": stacks}


def allowed() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ALLOWED.read_text())
    return data


@pytest.mark.parametrize("scanner", sorted(SCANNERS))
def test_only_the_users_checks_fail(scanner: str, rendered: dict[str, Path]) -> None:
    if not installed(scanner):
        if os.environ.get("CI"):
            pytest.fail(f"CI: {scanner} must be installed (make scanner)")
        pytest.skip(f"{scanner} is not installed: `make scanner` (make test does it)")
    findings = set().union(*(SCAN[scanner](folder, key) for key, folder in rendered.items()))
    listed = {c: e for c, e in allowed().items() if scanner_of(c) == scanner}
    expected = {(obj, check) for check, entry in listed.items() for obj in entry["objects"]}
    if os.environ.get("UPDATE_SCANNER"):
        _update(scanner, findings)
        expected = findings
    new = sorted(findings - expected)
    gone = sorted(expected - findings)
    assert not new, (
        f"new {scanner} failures (fix the default, or list them with the reason they are the "
        f"user's in {ALLOWED.name}):\n" + "\n".join(f"  {c} {o}" for o, c in new)
    )
    assert not gone, f"fixed, take them out of {ALLOWED.name} (UPDATE_SCANNER=1):\n" + "\n".join(
        f"  {c} {o}" for o, c in gone
    )


def test_every_listed_check_says_why_it_is_the_users() -> None:
    for check, entry in allowed().items():
        assert re.fullmatch(r"CKV2?_K8S_\d+|[a-z0-9]+(-[a-z0-9]+)+", check), check
        assert len(entry.get("reason", "")) > 30, f"{check}: say why this is the user's"
        # each object names the container that fails it, where the object has containers
        assert all(o.count("/") >= 2 for o in entry["objects"]), check


def test_objects_are_split_one_container_per_copy(tmp_path: Path) -> None:
    folders.write_folder(
        tmp_path / "hello",
        render_file(str(ROOT / "examples" / "hello-world.yaml"), curve_cert=CERT),
    )
    split_by_container(tmp_path)
    jobs = sorted(p.name for p in (tmp_path / "hello").glob("*job*"))
    assert jobs == ["05-job-flux-hello--flux-hello.yaml", "05-job-flux-hello--flux-view.yaml"]
    view = yaml.safe_load((tmp_path / "hello" / jobs[1]).read_text())
    pod = view["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    assert [c["name"] for c in pod["containers"]] == ["flux-view"]
    assert _object("examples", f"/hello/{jobs[1]}") == "examples/hello/job-flux-hello/flux-view"


def _update(scanner: str, findings: set[Finding]) -> None:
    listed = allowed()
    checks = sorted({c for _, c in findings})
    missing = [c for c in checks if c not in listed]
    assert not missing, f"write a reason for {missing} in {ALLOWED.name} first"
    for check in [c for c in listed if scanner_of(c) == scanner]:
        objects = sorted(o for o, c in findings if c == check)
        if objects:
            listed[check]["objects"] = objects
        else:
            del listed[check]
    header = ALLOWED.read_text().split("\n\n", 1)[0] + "\n\n"
    ALLOWED.write_text(header + yaml.safe_dump(listed, sort_keys=True, width=100))
