"""What a LAMMPS run printed (its screen output, as rank 0's log or mpirun's stdout carries it):
the thermo table, the loop time and the total wall time. Shared by tests/e2e/test_flux_lammps.py
and benchmarks/lammps.py, so that both read a run the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LOOP = re.compile(
    r"^Loop time of ([\d.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", re.M
)
WALL = re.compile(r"^Total wall time: (\d+):(\d\d):(\d\d)\s*$", re.M)


@dataclass(frozen=True)
class Run:
    loop_s: float  # "Loop time of": the 100 steps
    procs: int  # MPI ranks LAMMPS ran on
    steps: int
    atoms: int
    wall_s: int  # "Total wall time": LAMMPS's whole run, input read to exit (whole seconds)
    thermo: dict[int, dict[str, float]]  # step -> column -> value

    def last(self) -> dict[str, float]:
        return self.thermo[max(self.thermo)]


def thermo(text: str) -> dict[int, dict[str, float]]:
    """Every thermo row of the run: the lines of numbers under the header that starts with
    ``Step``, up to the loop time."""
    rows: dict[int, dict[str, float]] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["Step"]:
            header = words
            continue
        if header is None:
            continue
        if line.startswith("Loop time of"):
            header = None
            continue
        try:
            values = [float(w) for w in words]
        except ValueError:
            continue
        if len(values) == len(header):
            rows[int(values[0])] = dict(zip(header, values, strict=True))
    return rows


def parse(text: str) -> Run:
    """The run in ``text``; an AssertionError naming what is missing when LAMMPS did not finish."""
    loop, wall = LOOP.search(text), WALL.search(text)
    assert loop, f"no 'Loop time of' line (LAMMPS did not finish its run):\n{text[-3000:]}"
    assert wall, f"no 'Total wall time' line:\n{text[-3000:]}"
    table = thermo(text)
    assert table, f"no thermo output:\n{text[-3000:]}"
    h, m, s = (int(x) for x in wall.groups())
    return Run(
        loop_s=float(loop.group(1)),
        procs=int(loop.group(2)),
        steps=int(loop.group(3)),
        atoms=int(loop.group(4)),
        wall_s=h * 3600 + m * 60 + s,
        thermo=table,
    )


def differences(run: dict[str, float], reference: dict[str, float]) -> dict[str, float]:
    """Each column's relative difference from ``reference`` (absolute where it is zero)."""
    return {
        k: abs(run[k] - v) / (abs(v) if v else 1.0) for k, v in reference.items() if k != "Step"
    }
