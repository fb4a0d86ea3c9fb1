"""The Pulumi project a command works in, found the way ``pulumi`` finds it.

``pulumi`` looks for ``Pulumi.yaml`` in the current directory and its parents (or in ``--cwd``);
the stack files live in its ``stackConfigDir`` (the project's own directory by default) and the
program is its ``main`` (``__main__.py`` there by default). The offline stack renderer does the
same, so ``minicluster render --stack`` works in this checkout, in a project made by
``minicluster init`` and in any project that uses the component, installed or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.reading import documents

__all__ = ["PROJECT_FILE", "Project", "find"]

PROJECT_FILE: Final = "Pulumi.yaml"


@dataclass(frozen=True)
class Project:
    """A Pulumi project on disk: where it is, what it is called, where its stacks are."""

    root: Path
    name: str
    stacks_dir: Path
    program: Path

    def stack_file(self, stack: str) -> Path:
        path = self.stacks_dir / f"Pulumi.{stack}.yaml"
        if not path.is_file():
            known = ", ".join(self.stacks()) or "none"
            raise SpecError(
                Problem("", f"no stack {stack!r} in {self.stacks_dir} (stacks there: {known})")
            )
        return path

    def stacks(self) -> list[str]:
        """The stacks that have a config file, by name."""
        return sorted(
            p.name[len("Pulumi.") : -len(".yaml")] for p in self.stacks_dir.glob("Pulumi.*.yaml")
        )


def find(start: Path | None = None) -> Project:
    """The project in ``start`` (default: the current directory) or the nearest parent."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file():
            return _read(folder)
    raise SpecError(
        Problem(
            "",
            f"no Pulumi project ({PROJECT_FILE}) in {here} or its parents; run this in a project "
            "(or pass --cwd DIR), or start one with `minicluster init DIR`",
        )
    )


def _read(root: Path) -> Project:
    path = root / PROJECT_FILE
    (document, *_) = documents.read_file(path) or [None]
    if not isinstance(document, Mapping) or not isinstance(document.get("name"), str):
        raise SpecError(Problem("name", "required: the project's name"), source=str(path))
    stacks = document.get("stackConfigDir") or "."
    main = document.get("main") or "."
    program = root / str(main)
    if program.is_dir():
        program = program / "__main__.py"
    return Project(root=root, name=document["name"], stacks_dir=root / str(stacks), program=program)
