"""The migration table for operator users (docs/operator.md): every "to restore it" line works.

Each row names a difference from the operator and the one line that restores the old behaviour:
a spec fragment is applied to examples/hello-world.yaml and its effect checked in the rendering; a
kubectl selector or a path is checked against the rendered objects it must find.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.core.flux import certificate
from flux_minicluster.core.planning import plan
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import render

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "examples" / "hello-world.yaml"
CERT = certificate.render(certificate.generate("flux-hello", "flux-hello-0"))


def migration_rows() -> list[tuple[str, str]]:
    """(what the operator did, the restore cell) of each row of the docs' table."""
    text = (ROOT / "docs" / "operator.md").read_text()
    section = text.split("## Migrating from the operator", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    out = []
    for row in rows[1:]:  # the header first
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 3, row
        out.append((cells[0], cells[2]))
    return out


ROWS = migration_rows()


def _objects(edit: dict[str, Any] | None = None, container: dict[str, Any] | None = None) -> Any:
    document = yaml.safe_load(HELLO.read_text())
    document["spec"].update(edit or {})
    document["spec"]["containers"][0].update(container or {})
    return render(plan.build(parse(document)), CERT).objects()


def _job(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (job,) = [o for o in objects if o["kind"] == "Job"]
    return job


def test_the_table_has_every_difference_operator_users_hit() -> None:
    firsts = " ".join(first for first, _ in ROWS)
    for topic in ("app=flux-operator", "job-index", "sudo", "curve.cert", "/opt/view", "$VAR"):
        assert topic in firsts, topic


@pytest.mark.parametrize(("difference", "restore"), ROWS, ids=[r[0][:40] for r in ROWS])
def test_each_restore_line_does_what_it_says(difference: str, restore: str) -> None:
    snippet = re.search(r"`([^`]*)`", restore)
    if restore.startswith("none"):
        assert "brokerConfig" in difference  # the one difference deliberately kept
        return
    assert snippet is not None, restore
    line = snippet[1]
    if line.startswith("kubectl"):
        selector = re.search(r"-l (\S+)=(\S+)", line)
        assert selector is not None
        key, value = selector.groups()
        job = _job(_objects())
        if key == "batch.kubernetes.io/job-completion-index":
            # the Job controller labels each pod of an Indexed Job with its index
            assert job["spec"]["completionMode"] == "Indexed"
            assert f"-n {job['metadata']['namespace']}" in line
        else:
            assert job["metadata"]["labels"][key] == value
            assert job["spec"]["template"]["metadata"]["labels"][key] == value
        return
    if restore.startswith("read "):
        path = Path(line)
        flux = _job(_objects())["spec"]["template"]["spec"]["containers"][0]
        (mount,) = [m for m in flux["volumeMounts"] if m["mountPath"] == str(path.parent)]
        volumes = _job(_objects())["spec"]["template"]["spec"]["volumes"]
        (volume,) = [v for v in volumes if v["name"] == mount["name"]]
        assert volume["secret"]["items"][0]["path"] == path.name
        return
    fragment = yaml.safe_load(line)
    if "on the container" in restore:
        container = _job(_objects(container=fragment))["spec"]["template"]["spec"]["containers"][0]
        for key, value in fragment.items():
            assert container[key] == value
    elif "jobLabels" in fragment:
        labels = _job(_objects(fragment))["metadata"]["labels"]
        assert fragment["jobLabels"].items() <= labels.items()
    elif "flux" in fragment:
        assert fragment == {"flux": {"container": {"disable": True}}}

        def init_script(objects: list[dict[str, Any]]) -> str:
            (entrypoint,) = [o for o in objects if o["kind"] == "ConfigMap"]
            return str(entrypoint["data"]["flux-init.sh"])

        refusal = "has no Flux view at /opt/view"
        assert refusal in init_script(_objects())
        assert refusal not in init_script(_objects(fragment))
    else:
        raise AssertionError(f"no check for the restore line {line!r}")
