"""Shared pytest configuration.

``run_pulumi`` runs a Pulumi program under the recording mocks, with a fresh monitor and root
Stack per run: ``set_mocks`` is process-global, and no run may see another's resources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from flux_minicluster.deploy.mocks import ProgramRun


# --- Pulumi mocks --------------------------------------------------------------------------------


@pytest.fixture
def run_pulumi() -> Callable[..., ProgramRun[Any]]:
    """Run a Pulumi program under recording mocks, each run with a fresh monitor and Stack.

    ``set_mocks`` is process-global, so nothing about one run may leak into the next; pass your
    own ``RecordingMocks`` to fake a Command's stdout or a StackReference's outputs.
    """
    from flux_minicluster.deploy.mocks import RecordingMocks, run_program

    def run(
        build: Callable[[], Any],
        *,
        mocks: RecordingMocks | None = None,
        preview: bool = False,
        config: Mapping[str, Any] | None = None,
    ) -> ProgramRun[Any]:
        return run_program(
            build,
            mocks=mocks if mocks is not None else RecordingMocks(),
            project="flux-minicluster",
            stack="test",
            preview=preview,
            config=config,
        )

    return run


# --- hypothesis profiles -------------------------------------------------------------------------
# ``default`` keeps ``make test`` quick and repeatable: a modest number of examples from a fixed
# seed per test (derandomized, so a failure comes back on the next run rather than by chance) and
# no per-example deadline (rendering a 100000-rank cluster or running bash is slow next to
# hypothesis's 200 ms default).
# ``fuzz`` (``HYPOTHESIS_PROFILE=fuzz``, which ``make fuzz`` sets) explores many random inputs and
# keeps failures in hypothesis's example database, so the next run replays them first.

import os  # noqa: E402  (kept with the section it serves)

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    max_examples=600,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
