"""What the MPI scenarios read in rank 0's log: an OSU benchmark's table and a `=== title`
section of a launcher script's output (test_flux_mpi, test_flux_osu_operator)."""

from __future__ import annotations

import re


def osu_table(text: str) -> dict[int, float]:
    """An OSU benchmark's table: message size -> figure (its lines ``<size> <value>``)."""
    return {
        int(m.group(1)): float(m.group(2))
        for m in re.finditer(r"^(\d+)\s+([\d.]+)\s*$", text, flags=re.MULTILINE)
    }


def section(log: str, title: str) -> str:
    """The lines of ``log`` after ``=== title`` up to the next ``===``."""
    part = log.split(f"=== {title}\n", 1)
    assert len(part) == 2, f"no section {title!r} in:\n{log}"
    return part[1].split("\n===", 1)[0]
