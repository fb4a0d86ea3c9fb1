"""A security scanner's verdict (checkov) over every rendered example and bundled stack.

Every check the product can satisfy by default passes. What still fails belongs to the user (their
image's tag and user, their container's limits) and is listed, with the reason, in one place:
``tests/scanner-user-owned.yaml``. The test fails when a new failure appears, and when a listed one
goes away (so the list only ever shrinks knowingly). ``UPDATE_SCANNER=1`` rewrites the lists of
objects; a check that is new to the file needs its reason written by a person first.

checkov lives in its own virtualenv (``make scanner``; ``make test`` builds it and passes its path
in ``CHECKOV``). It runs offline: no download, no update check.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.cli import folders
from flux_minicluster.cli.render import render_file
from flux_minicluster.deploy import project, stackrender

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = Path(__file__).parents[1] / "scanner-user-owned.yaml"
CERT = ROOT / "tests" / "golden" / "fixed-curve.cert"
CHECKOV = os.environ.get("CHECKOV", "")
OFFLINE = {"CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "BC_SKIP_MAPPING": "TRUE"}

# Only the scans need checkov; the list of user-owned checks is read without it.
needs_checkov = pytest.mark.skipif(
    not Path(CHECKOV).is_file() and not os.environ.get("CI"),
    reason="checkov is not installed: `make scanner` (make test does it), or set CHECKOV",
)

Finding = tuple[str, str]  # ("examples/hello-world/job-flux-hello", "CKV_K8S_43")


def scan(folder: Path, prefix: str) -> set[Finding]:
    """Every failed check over one folder of rendered objects, as (object, check id)."""
    command = [
        CHECKOV, "-d", str(folder.resolve()), "--framework", "kubernetes", "-o", "json",
        "--skip-download", "--quiet", "--compact", "--soft-fail",
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
    found = set()
    for failure in report["results"]["failed_checks"]:
        *_, where, file = failure["file_path"].strip("/").split("/")
        stem = re.sub(r"^\d+-", "", file.removesuffix(".yaml"))  # stable across renumbering
        found.add((f"{prefix}/{where}/{stem}", failure["check_id"]))
    return found


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> set[Finding]:
    if not Path(CHECKOV).is_file():
        pytest.fail(f"CI: checkov must be installed (make scanner); CHECKOV={CHECKOV!r}")
    examples = tmp_path_factory.mktemp("examples")
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        folders.write_folder(examples / path.stem, render_file(str(path), curve_cert=CERT))
    stacks = tmp_path_factory.mktemp("stacks")
    here = project.find(ROOT)
    for rendering in stackrender.render_stacks(here, here.stacks(), curve_cert=CERT.read_text()):
        folders.write_folder(stacks / rendering.stack, rendering.objects, rendering.patches)
    return scan(examples, "examples") | scan(stacks, "stacks")


def allowed() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ALLOWED.read_text())
    return data


@needs_checkov
def test_only_the_users_checks_fail(findings: set[Finding]) -> None:
    listed = allowed()
    expected = {(obj, check) for check, entry in listed.items() for obj in entry["objects"]}
    if os.environ.get("UPDATE_SCANNER"):
        _update(listed, findings)
        expected = findings
    new = sorted(findings - expected)
    gone = sorted(expected - findings)
    assert not new, (
        "new scanner failures (fix the default, or list them with the reason they are the "
        f"user's in {ALLOWED.name}):\n" + "\n".join(f"  {c} {o}" for o, c in new)
    )
    assert not gone, f"fixed, take them out of {ALLOWED.name} (UPDATE_SCANNER=1):\n" + "\n".join(
        f"  {c} {o}" for o, c in gone
    )


def test_every_listed_check_says_why_it_is_the_users() -> None:
    for check, entry in allowed().items():
        assert re.fullmatch(r"CKV2?_K8S_\d+", check), check
        assert len(entry.get("reason", "")) > 30, f"{check}: say why this is the user's"


def _update(listed: dict[str, Any], findings: set[Finding]) -> None:
    checks = sorted({c for _, c in findings})
    missing = [c for c in checks if c not in listed]
    assert not missing, f"write a reason for {missing} in {ALLOWED.name} first"
    for check in list(listed):
        objects = sorted(o for o, c in findings if c == check)
        if objects:
            listed[check]["objects"] = objects
        else:
            del listed[check]
    header = ALLOWED.read_text().split("\n\n", 1)[0] + "\n\n"
    ALLOWED.write_text(header + yaml.safe_dump(listed, sort_keys=True, width=100))
