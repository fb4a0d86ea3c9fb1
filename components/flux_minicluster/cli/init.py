"""``minicluster init DIR``: a Pulumi project of the user's own that deploys a MiniCluster.

The installed package carries no stacks of its own (those belong to its repository), so a user
starts here: the project files come from the package's ``project/`` templates, named after the
directory (or ``--name``), with one stack, ``dev``, and an example spec. Nothing is overwritten:
an existing file is an error naming it.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Final

from flux_minicluster.core import names, templating
from flux_minicluster.core.errors import Problem, SpecError

# Template (under templates/project/) -> file written, relative to the new project.
FILES: Final = (
    ("Pulumi.yaml.j2", "Pulumi.yaml"),
    ("__main__.py.j2", "__main__.py"),
    ("requirements.txt.j2", "requirements.txt"),
    ("dev-stack.yaml.j2", "stacks/Pulumi.dev.yaml"),
    ("minicluster.yaml.j2", "minicluster.yaml"),
    ("gitignore.j2", ".gitignore"),
)


def run(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.main import version

    target = Path(args.directory)
    name = args.name or _name_from(target.resolve().name)
    if problem := names.dns1035_label(name):
        raise SpecError(Problem("--name", f"the project and MiniCluster name {problem}"))
    existing = [rel for _, rel in FILES if (target / rel).exists()]
    if existing:
        raise SpecError(
            Problem("", f"{target} already has {', '.join(existing)}; init writes a new project")
        )
    for template, rel in FILES:
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(templating.render(f"project/{template}", name=name, version=version()))
        print(path)
    print(
        f"\nA Pulumi project {name!r} is in {target}. Next:\n"
        f"  cd {target}\n"
        "  minicluster render --stack dev          # what `pulumi up -s dev` would create\n"
        "  pulumi stack init dev && pulumi up -s dev"
    )
    return 0


def _name_from(directory: str) -> str:
    """A DNS label from a directory name: lower case, other characters as '-'."""
    name = re.sub(r"[^a-z0-9-]+", "-", directory.lower()).strip("-")
    if not name or not name[0].isalpha():
        name = f"mc-{name}".rstrip("-")
    return name[:40]
