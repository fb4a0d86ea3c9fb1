"""Shared pytest configuration.

# --- Pulumi mocks ------------------------------------------------------------------------------
``run_pulumi`` runs a Pulumi program under ``components.deploy.mocks``, with a fresh monitor and
root Stack per run: ``set_mocks`` is process-global, and no run may see another's resources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from components.deploy.mocks import ProgramRun


# --- Pulumi mocks --------------------------------------------------------------------------------


@pytest.fixture
def run_pulumi() -> Callable[..., ProgramRun[Any]]:
    """Run a Pulumi program under recording mocks, each run with a fresh monitor and Stack.

    ``set_mocks`` is process-global, so nothing about one run may leak into the next; pass your
    own ``RecordingMocks`` to fake a Command's stdout or a StackReference's outputs.
    """
    from components.deploy.mocks import RecordingMocks, run_program

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
