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
