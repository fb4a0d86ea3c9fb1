"""Running the `minicluster` command as a user does: a new process, its exit code and output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def minicluster(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`minicluster ARGS...` in ``cwd``, with this interpreter (so this checkout's package)."""
    return subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
