"""Golden files: the exact manifests of five representative MiniClusters, byte for byte.

Any byte that changes in a rendered object changes a cluster (a new ConfigMap replaces the pods,
a new pod template replaces the Job), so every change to the renderer, the scripts or the broker
config must show up here as a reviewable diff. The first three cover the main shapes: a plain
cluster (``examples/hello-world.yaml``), a bursting root with its lead Service
(``examples/bursting-root.yaml``) and services plus a sidecar with ports and volumes of several
kinds (``examples/services-sidecar.yaml``); and two v1alpha1 MiniClusters, a multi-user RESTful
cluster with its Secrets and its v1alpha1 entrypoint (``examples/v1alpha1-restful.yaml``) and an
operator-made hostPath volume with its PersistentVolume and claim
(``examples/v1alpha1-volumes.yaml``). They are rendered with a fixed, test-only certificate
(``tests/golden/fixed-curve.cert``), so nothing in them is random: the v1alpha1 Secrets' values
are derived from it.

After an intended change, refresh them and review the diff before committing::

    UPDATE_GOLDEN=1 pytest tests/core/test_golden.py      # what `make golden` runs
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.core.render.manifests import to_yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
CASES = (
    "hello-world",
    "bursting-root",
    "services-sidecar",
    "v1alpha1-restful",
    "v1alpha1-volumes",
)


def current(case: str, rendered: Callable[..., list[dict[str, Any]]]) -> str:
    source = f"examples/{case}.yaml"
    objects = rendered(ROOT / source)
    header = (
        f"# Golden manifests of {source} (fixed test certificate), written by "
        "tests/test_golden.py.\n# Do not edit: refresh with `make golden` and review the diff.\n"
    )
    return header + to_yaml(objects)


@pytest.mark.parametrize("case", CASES)
def test_rendered_manifests_match_the_golden_file(
    case: str, rendered: Callable[..., list[dict[str, Any]]]
) -> None:
    path = GOLDEN / f"{case}.yaml"
    text = current(case, rendered)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"{path} is missing; create it with `make golden`"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"golden/{case}.yaml",
            tofile="rendered now",
        )
        shown = "".join(list(diff)[:80])
        pytest.fail(
            f"the rendered manifests of examples/{case}.yaml differ from {path.name}; if the "
            f"change is intended, run `make golden` and review the diff:\n{shown}"
        )


@pytest.mark.parametrize("case", CASES)
def test_golden_files_are_a_plain_manifest_stream(case: str) -> None:
    docs = list(yaml.safe_load_all((GOLDEN / f"{case}.yaml").read_text(encoding="utf-8")))
    assert docs
    assert all({"apiVersion", "kind", "metadata"} <= set(doc) for doc in docs)
