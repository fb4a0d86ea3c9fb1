"""Running the `minicluster` command as a user does: a new process, its exit code and output."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


def dev_only_modules() -> list[str]:
    """Top-level modules that only the ``dev`` extra brings (pytest, jsonschema, ...): what a
    plain ``pip install flux-minicluster`` lacks. Read from the installed metadata, so a new dev
    dependency is covered without editing a list."""
    import importlib.metadata as md
    import re

    from packaging.requirements import Requirement

    def key(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    def closure(reqs: list[Requirement]) -> set[str]:
        seen: set[str] = set()
        todo = list(reqs)
        while todo:
            req = todo.pop()
            if key(req.name) in seen:
                continue
            try:
                dist = md.distribution(req.name)
            except md.PackageNotFoundError:
                continue
            seen.add(key(req.name))
            for line in dist.requires or []:
                sub = Requirement(line)
                if sub.marker is None or sub.marker.evaluate({"extra": ""}):
                    todo.append(sub)
        return seen

    ours = [Requirement(r) for r in md.distribution("flux-minicluster").requires or []]
    product = closure([r for r in ours if r.marker is None])
    dev = closure([r for r in ours if r.marker is not None]) - product
    return sorted(
        module
        for module, dists in md.packages_distributions().items()
        if module.isidentifier() and all(key(d) in dev for d in dists)
    )


_PLAIN = """
import sys
# None in sys.modules: `import x` raises ModuleNotFoundError and find_spec answers None, as when
# x is not installed at all.
sys.modules.update(dict.fromkeys({blocked!r}))
from flux_minicluster.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def minicluster_plain(
    *args: str, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`minicluster ARGS...` as in a plain install: every module of the dev extra is missing."""
    code = _PLAIN.format(blocked=sorted(dev_only_modules()))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def project_copy(destination: Path) -> Path:
    """This checkout's Pulumi project (program, stacks, examples) copied to ``destination``, for a
    test that edits a stack file as a user would."""
    import shutil

    root = Path(__file__).resolve().parents[2]
    destination.mkdir(parents=True, exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(root / name, destination / name)
    for name in ("stacks", "examples"):
        shutil.copytree(root / name, destination / name)
    return destination


def edit_stack(project: Path, stack: str, edit: Callable[[dict[str, Any]], object]) -> None:
    """Apply ``edit`` to the ``config:`` mapping of ``stacks/Pulumi.<stack>.yaml``."""
    import yaml

    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    edit(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))
