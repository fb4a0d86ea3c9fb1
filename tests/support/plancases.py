"""Counting the derivations of a MiniCluster's facts: shared by the core's plan tests (a render,
tests/core/test_plan.py) and the stack program's (a stack run, tests/deploy/test_stacks.py). The
``derivations`` fixture is tests/conftest.py's."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from flux_minicluster.core.planning import plan
from flux_minicluster.core.render import broker, manifests, scripts
from flux_minicluster.core.spec import definition
from flux_minicluster.core.spec.models import MiniClusterSpec

# Each derivation, by the one public function that makes it. ``plan.build`` derives every fact of
# the plan (the rank order, where the broker's files live, the mode, the role, the quorum) and
# nothing else does: counting it counts them.
DERIVATIONS: tuple[tuple[Any, str], ...] = (
    (MiniClusterSpec, "model_validate"),  # parsing a spec
    (definition.ObjectNames, "of"),  # object names and hostnames
    (plan, "build"),
    (broker, "broker_toml"),
    (scripts, "entrypoint_data"),
)


def count_derivations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each derivation ran, by ``Owner.function``."""
    counts: Counter[str] = Counter()

    def counted(owner: Any, name: str) -> None:
        original = getattr(owner, name)

        def spy(*args: Any, **kwargs: Any) -> Any:
            counts[f"{getattr(owner, '__name__', owner)}.{name}"] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, spy)

    for owner, name in DERIVATIONS:
        counted(owner, name)
    # The modules that imported a function by name hold their own reference: spy there too.
    monkeypatch.setattr(scripts, "broker_toml", broker.broker_toml)
    monkeypatch.setattr(manifests, "entrypoint_data", scripts.entrypoint_data)
    return counts


def once_each(counts: Counter[str], per_cluster: int = 1) -> None:
    expected = {f"{getattr(o, '__name__', o)}.{n}": per_cluster for o, n in DERIVATIONS}
    assert dict(counts) == expected
