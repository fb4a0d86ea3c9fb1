"""Every bundled example, rendered, passes every mandatory policy under the example config.

The example config (`policies/config.example.json`) is the one the README shows: it makes image
pinning mandatory and allow-lists the hostPath of the volumes example, which is how a team would
let one MiniCluster use a node directory on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.policy import checker

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "policies" / "config.example.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


Rendered = Callable[..., list[dict[str, Any]]]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_passes_every_mandatory_policy(path: Path, rendered: Rendered) -> None:
    report = checker.check(rendered(path), checker.load_config(CONFIG))
    assert report.mandatory == (), report.format()


def test_without_the_allow_list_the_hostpath_example_is_refused(rendered: Rendered) -> None:
    report = checker.check(rendered(ROOT / "examples" / "volumes.yaml"))
    assert [v.policy for v in report.mandatory] == ["no-privileged"]
