"""How every benchmark script prints: aligned tables and the machine a figure was measured on.

One module so that `make bench` and `make bench-e2e` print their tables alike and name the
machine in the same words (the README quotes both).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: bool = True) -> str:
    """Columns two spaces apart under a rule; the first left-aligned, the others right-aligned
    (numbers) unless ``right`` is false."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            out.append(str(cell).ljust(width) if i == 0 or not right else str(cell).rjust(width))
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cores() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    total = os.cpu_count()
    return f"{usable} usable of {total}" if usable and usable != total else str(total)


def machine() -> str:
    """The processor, the cores and the system, as the README's tables name their machine."""
    return f"{cpu_model()}, {cores()} cores, {platform.system()} {platform.machine()}"
