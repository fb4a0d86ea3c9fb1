"""Every example in the package's docstrings is run, so the documentation cannot drift from the
code: a literal block (``::``) is either run here or listed as not code, with the reason."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import flux_minicluster

PACKAGE = Path(flux_minicluster.__file__).parent

# module -> the literal blocks that are not code, each with why (in order of appearance)
NOT_CODE = {
    "flux_minicluster.core.kube.quantity": ["the grammar of a quantity, in BNF"],
    "flux_minicluster.policy.stackref": ["the shape of a dict, with '...' for the rest"],
}

# A program module for examples that import one (`import my_program`).
MY_PROGRAM = """
import pulumi
from flux_minicluster import MiniCluster

SPEC = {"size": 4, "containers": [{"image": "ubuntu:24.04", "command": "hostname"}]}
cluster = MiniCluster("hpc", {"spec": SPEC, "namespace": "team"})
pulumi.export("hostlist", cluster.hostlist)
"""


def _literal_blocks(docstring: str) -> Iterator[str]:
    """The indented blocks that follow a paragraph ending in ``::`` (reStructuredText)."""
    lines = docstring.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith("::"):
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            start = i
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                i += 1
            yield textwrap.dedent("\n".join(lines[start:i])).strip() + "\n"
        else:
            i += 1


def _examples() -> list[tuple[str, int, str]]:
    found = []
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="flux_minicluster."):
        path = PACKAGE.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        tree = ast.parse(source.read_text())
        nodes = [
            tree,
            *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)),
        ]
        blocks = [b for n in nodes for b in _literal_blocks(ast.get_docstring(n) or "")]
        found += [(info.name, i, block) for i, block in enumerate(blocks)]
    return found


EXAMPLES = _examples()


def test_every_literal_block_is_run_or_said_not_to_be_code() -> None:
    counts: dict[str, int] = {}
    for module, _, _ in EXAMPLES:
        counts[module] = counts.get(module, 0) + 1
    for module, reasons in NOT_CODE.items():
        assert counts.get(module, 0) >= len(reasons), f"{module}: a listed block is gone"
    assert "flux_minicluster.testing" in counts, "the testing helper's example was not found"


@pytest.mark.parametrize(
    ("module", "index", "block"),
    [e for e in EXAMPLES if e[1] >= len(NOT_CODE.get(e[0], []))],
    ids=lambda v: v if isinstance(v, str) and v.startswith("flux_") else "",
)
def test_a_docstring_example_runs(tmp_path: Path, module: str, index: int, block: str) -> None:
    """A block is a pytest module (it defines ``test_*``, run by pytest beside ``my_program``)
    or a script (run by Python); either way in a new process, as a user runs it."""
    ast.parse(block)
    (tmp_path / "my_program.py").write_text(MY_PROGRAM)
    example = tmp_path / "test_example.py"
    example.write_text(block)
    if "def test_" in block:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(example)]
    else:
        command = [sys.executable, str(example)]
    result = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, (
        f"{module} example {index}:\n{block}\n{result.stdout}{result.stderr}"
    )
