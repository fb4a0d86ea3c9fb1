"""``minicluster init DIR``: a Pulumi project of the user's own that deploys a MiniCluster.

The installed package carries no stacks of its own (those belong to its repository), so a user
starts here: the project files come from the package's ``project/`` templates, named after the
directory (or ``--name``), with one stack, ``dev``, and an example spec. Nothing is overwritten:
an existing file is an error naming it, except ``.gitignore``: a repository has one, and
``init .`` there keeps it and appends the lines it lacks (a certificate must stay out of Git).
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import Final

from flux_minicluster.core.base import templating
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.kube import names
from flux_minicluster.version import __version__

# Template (under templates/project/) -> file written, relative to the new project.
FILES: Final = (
    ("Pulumi.yaml.j2", "Pulumi.yaml"),
    ("__main__.py.j2", "__main__.py"),
    ("requirements.txt.j2", "requirements.txt"),
    ("dev-stack.yaml.j2", "stacks/Pulumi.dev.yaml"),
    ("minicluster.yaml.j2", "minicluster.yaml"),
    ("gitignore.j2", ".gitignore"),
)
MERGED: Final = ".gitignore"
"""The one file init adds to when it exists, rather than refusing."""


def run(args: argparse.Namespace) -> int:
    if not args.directory:
        raise SpecError(Problem("", "give the new project's folder (e.g. . or my-cluster)"))
    target = Path(args.directory)
    if target.exists() and not target.is_dir():
        raise SpecError(
            Problem("", f"{target} is a file; init writes a project into a folder (new or not)")
        )
    name = args.name or _name_from(target.resolve().name)
    if problem := names.dns1035_label(name):
        raise SpecError(Problem("--name", f"the project and MiniCluster name {problem}"))
    existing = [rel for _, rel in FILES if rel != MERGED and (target / rel).exists()]
    if existing:
        raise SpecError(
            Problem("", f"{target} already has {', '.join(existing)}; init writes a new project")
        )
    requirement, how = package_requirement(__version__)
    for template, rel in FILES:
        path = target / rel
        text = templating.render(
            f"project/{template}",
            name=name,
            version=__version__,
            requirement=requirement,
            how=how,
            sdk_pins=sdk_pins(),
        )
        if rel == MERGED and path.exists():
            added = _append_missing(path, text)
            print(f"{path} (kept; added {', '.join(added)})" if added else f"{path} (kept)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(path)
    here = target.resolve() == Path.cwd().resolve()
    print(
        f"\nA Pulumi project {name!r} is in {'this folder' if here else target}. Next:\n"
        + ("" if here else f"  cd {shlex.quote(str(target))}\n")
        + "  minicluster render --stack dev          # what `pulumi up -s dev` would create\n"
        "  pulumi stack select --create dev && pulumi up -s dev"
    )
    return 0


def _append_missing(path: Path, template: str) -> list[str]:
    """Append to ``path`` the patterns of ``template`` it does not have; returns them."""
    text = path.read_text()
    have = {line.strip() for line in text.splitlines()}
    missing = [
        line
        for line in template.splitlines()
        if line.strip() and not line.startswith("#") and line.strip() not in have
    ]
    if missing:
        lead = "" if not text or text.endswith("\n") else "\n"
        with path.open("a") as out:
            out.write(lead + "# minicluster init\n" + "".join(f"{m}\n" for m in missing))
    return missing


# The Pulumi SDKs a project's venv needs beside the package, pinned to the versions installed.
SDKS: Final = ("pulumi", "pulumi-kubernetes", "pulumi-command")


def package_requirement(version: str) -> tuple[str, str]:
    """The requirement line that installs this very flux-minicluster again, and how it was
    installed: from a checkout or a wheel file (a ``file://`` URL), from Git (the URL at its
    commit), or from a package index (the version pinned). Read from the install's
    ``direct_url.json`` (PEP 610)."""
    import importlib.metadata as md
    import json

    try:
        text = md.distribution("flux-minicluster").read_text("direct_url.json")
    except md.PackageNotFoundError:
        text = None
    if not text:
        return f"flux-minicluster=={version}", "from a package index"
    direct = json.loads(text)
    url = str(direct.get("url", ""))
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git":
        return f"flux-minicluster @ git+{url}@{vcs.get('commit_id')}", "from Git"
    if "dir_info" in direct:
        return f"flux-minicluster @ {url}", "from a checkout; move it and edit this line"
    return f"flux-minicluster @ {url}", "from a file; move it and edit this line"


def sdk_pins() -> list[str]:
    import importlib.metadata as md

    pins = []
    for sdk in SDKS:
        try:
            pins.append(f"{sdk}=={md.version(sdk)}")
        except md.PackageNotFoundError:
            continue
    return pins


def _name_from(directory: str) -> str:
    """A DNS label from a directory name: lower case, other characters as '-'."""
    name = re.sub(r"[^a-z0-9-]+", "-", directory.lower()).strip("-")
    if not name or not name[0].isalpha():
        name = f"mc-{name}".rstrip("-")
    return name[:40]
