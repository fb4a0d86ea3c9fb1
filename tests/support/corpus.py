"""The operator's own MiniCluster specs beside the repository (``../shared/compat``), and ours.

Tests read the compatibility corpus when it is there and skip cleanly when it is not:
``spec_files()`` gives every bundled example and every corpus MiniCluster as pytest params, or a
skipped param that names the missing folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.core.reading.loading import load_file
from flux_minicluster.core.spec.definition import MiniClusterDefinition

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SHARED = ROOT.parent / "shared"
V1ALPHA2 = SHARED / "compat" / "flux-operator-tests"
V1ALPHA1 = SHARED / "compat" / "flux-operator-v1alpha1"


def corpus_files(corpus: Path = V1ALPHA2, prefix: str = "") -> list[Any]:
    """Every MiniCluster of a corpus (its ``*minicluster*.yaml`` files) as pytest params; one
    skipped param naming the folder when it is not there."""
    if not corpus.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no compat corpus at {corpus}"))]
    return [
        pytest.param(p, id=f"{prefix}{p.relative_to(corpus)}")
        for p in sorted(corpus.rglob("*minicluster*.yaml"))
    ]


def spec_files() -> list[Any]:
    """The bundled examples and the v1alpha2 corpus's MiniClusters, as pytest params."""
    examples = [pytest.param(p, id=f"examples/{p.name}") for p in EXAMPLES]
    return examples + corpus_files(V1ALPHA2, prefix="compat/")


def load_one(path: Path) -> MiniClusterDefinition:
    """The one MiniCluster of a file (every example and corpus file holds one)."""
    (definition,) = load_file(path)
    return definition
