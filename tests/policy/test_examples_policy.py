"""Every bundled example, rendered, passes every mandatory policy under the example config.

The example config (`policies/config.example.json`) is the one the README shows: it makes image
pinning and a restricted lead Service mandatory and allow-lists the hostPath of the volumes
example, which is how a team would let one MiniCluster use a node directory on purpose. A
bursting root is checked as a stack deploys it with `flux-minicluster:bursting.sourceRanges`
set: its lead Service then carries `spec.loadBalancerSourceRanges`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.core.kube import labels
from flux_minicluster.policy import checker

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "policies" / "config.example.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SOURCE_RANGES = ["198.51.100.0/24", "203.0.113.0/24"]


Rendered = Callable[..., list[dict[str, Any]]]


def with_source_ranges(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects as a stack with ``bursting.sourceRanges`` deploys them."""
    for obj in objects:
        spec = obj.get("spec", {})
        selector = spec.get("selector", {})
        if obj["kind"] == "Service" and selector.get(labels.COMPLETION_INDEX_LABEL) == "0":
            spec["loadBalancerSourceRanges"] = list(SOURCE_RANGES)
    return objects


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_passes_every_mandatory_policy(path: Path, rendered: Rendered) -> None:
    objects = rendered(path, wait="ready")  # as the component registers them
    report = checker.check(with_source_ranges(objects), checker.load_config(CONFIG))
    assert report.mandatory == (), report.format()


@pytest.mark.parametrize(
    ("example", "config", "refused"),
    [
        ("volumes.yaml", None, ["no-privileged"]),
        ("bursting-root.yaml", CONFIG, ["lead-open-to-all"]),
    ],
    ids=["hostpath-without-allow-list", "lead-without-source-ranges"],
)
def test_what_the_example_config_refuses(
    rendered: Rendered, example: str, config: Path | None, refused: list[str]
) -> None:
    objects = rendered(ROOT / "examples" / example, wait="ready")
    report = checker.check(objects, checker.load_config(config))
    assert [v.policy for v in report.mandatory] == refused, report.format()
    assert report.exit_code == 1
