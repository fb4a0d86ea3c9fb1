"""What the two commands a newcomer runs say while they work: `make demo` announces the one slow
step (the first install) before it starts, and a plain `pytest` sums up the e2e tests it skips
in one line instead of one per test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A module that marks its tests e2e itself and one that leaves it to the conftest: pytest folds
# skips of the two kinds apart unless they are reported alike.
E2E_FILES = ("tests/e2e/test_toolchain.py", "tests/e2e/test_user_program.py")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_the_first_make_demo_says_it_installs_before_it_does(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    planned = subprocess.run(
        ["make", "-n", "demo", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    creates = next(i for i, line in enumerate(planned) if "-m venv" in line)
    assert any(line.startswith("echo ") and "once" in line for line in planned[:creates])


def test_skipped_e2e_tests_are_summed_up_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-ra", *E2E_FILES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "FLUX_MINICLUSTER_E2E"},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, skipped[:3]
    assert re.match(r"SKIPPED \[\d+\] tests/e2e/conftest.py: e2e: run with", skipped[0])
