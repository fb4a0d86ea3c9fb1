"""Every command in the shell blocks of the README and of every docs/ page is run here, or checked,
or said to be run elsewhere.

The docs and the product must not drift: a reader copies these lines. Each command of each
```sh block (continuation lines joined, comments dropped, ``a && b`` and ``a | b`` split) is:

- run, when it works offline: ``minicluster ...`` (as written, in a copy of this project, with
  ``.venv`` and ``~`` pointing where a reader's would), ``cd``, ``mkdir``, ``make demo`` (its
  recipe); each render (and demo) is run twice and must give the same bytes, since a reader
  applies it again (``| kubectl apply -f -``, ``-f rendered/local``) and a second apply must
  change nothing;
- checked against what the commands before it rendered, when it needs a cluster but names
  objects: ``kubectl create secret|namespace``, ``kubectl logs -n -l -c``;
- or classified, with the reason, when it needs the Pulumi CLI, a cluster, a cloud or the network
  (the e2e suite runs the Pulumi ones against a real engine: tests/e2e/README.md).

A command that fits none of these fails the test, so a new command in the docs needs a decision
here. The files are read in the order a reader meets them: the README, then the site's pages in
the order of mkdocs.yml's nav (every docs/*.md page must be in it).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from flux_minicluster.cli.curvecerts import STATE_ENV

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _nav_pages(nav: list[Any]) -> list[str]:
    out = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


NAV = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
# The README, then every page of the docs site in the order of its nav.
DOCS = [README, *(ROOT / "docs" / page for page in NAV)]

# First words -> why the command is not run here.
ELSEWHERE: dict[tuple[str, ...], str] = {
    ("make", "test"): "this test is part of make test",
    ("make", "venv"): "it made the .venv these tests run in",
    ("pulumi",): "the Pulumi CLI and a backend: tests/e2e runs preview/up/refresh/destroy, "
    "stack references, config and policy packs on the real engine",
    ("kubectl", "apply"): "applies a rendering: needs a cluster (tests/e2e applies renders)",
    ("kubectl", "port-forward"): "needs a running cluster",
    ("git",): "the reader's own repository",
    ("npm",): "the TypeScript program's dependencies: tests/e2e/test_multilanguage.py",
    ("pip", "install", "flux-restful-client"): "a client from PyPI, for a running cluster",
    ("flux-restful-cli",): "talks to a running RESTful server",
    ("export",): "sets the reader's shell: a passphrase, or a deployed stack's outputs",
}


@dataclass
class Context:
    """Where the commands of the README run, and what they rendered so far."""

    cwd: Path
    env: dict[str, str]
    rendered: list[dict[str, Any]] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    pending: list[list[str]] = field(default_factory=list)


def shell_blocks(text: str) -> list[list[str]]:
    """The commands of each ```sh block, in order, as typed (for bash to expand ``~`` and globs)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    out = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        commands = []
        for line in joined.splitlines():
            # a comment: a '#' at the start or after a space (none of the commands quotes one)
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            # one command per '&&' or '|'; a trailing '&' (in the background) is dropped
            line = re.sub(r"\s*&$", "", line)
            commands += [c.strip() for c in re.split(r"&&|\|", line) if c.strip()]
        out.append(commands)
    return out


def _reason(words: list[str]) -> str | None:
    for prefix, reason in ELSEWHERE.items():
        if tuple(words[: len(prefix)]) == prefix:
            return reason
    return None


def _objects_in(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    return [d for f in files for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]


def _record(ctx: Context, words: list[str], stdout: str) -> None:
    """What a render wrote (-d DIR) or printed (YAML or a JSON List) becomes the context."""
    if "render" not in words:
        return
    if "-d" in words:
        ctx.rendered += _objects_in(ctx.cwd / words[words.index("-d") + 1])
        return
    docs = [d for d in yaml.safe_load_all(stdout) if isinstance(d, dict)]
    for doc in docs:
        ctx.rendered += doc.get("items", [doc]) if doc.get("kind") == "List" else [doc]


def _pod_templates(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(namespace, pod template, job name) of every Job."""
    return [
        (o["metadata"].get("namespace", ""), o["spec"]["template"], o["metadata"]["name"])
        for o in objects
        if o.get("kind") == "Job" and "template" in o.get("spec", {})  # not a size patch
    ]


def _check_kubectl(ctx: Context, words: list[str]) -> None:
    """A kubectl command that needs a cluster, checked against the objects rendered before it."""
    assert ctx.rendered, f"nothing rendered before {shlex.join(words)!r} to check it against"
    options = dict(zip(words, [*words[1:], ""], strict=True))
    namespace = options.get("-n", "")
    if words[1:3] == ["create", "secret"]:
        name = words[4]
        mounted = {
            v["secret"]["secretName"]
            for ns, pod, _ in _pod_templates(ctx.rendered)
            if ns == namespace
            for v in pod["spec"].get("volumes", [])
            if "secret" in v
        }
        assert name in mounted, f"{shlex.join(words)}: the rendered pods mount {sorted(mounted)}"
        keys = [
            w.removeprefix("--from-file=").split("=", 1)[0]
            for w in words
            if w.startswith("--from-file=")
        ]
        assert keys == ["curve.cert"], f"{shlex.join(words)}: the pods read the key curve.cert"
    elif words[1:3] == ["create", "namespace"]:
        spaces = {o["metadata"].get("namespace") for o in ctx.rendered}
        assert words[3] in spaces, f"{shlex.join(words)}: the renders use {sorted(spaces)}"
    elif words[1] == "logs":
        key, _, value = options["-l"].partition("=")
        container = options.get("-c")
        matches = [
            (pod, job)
            for ns, pod, job in _pod_templates(ctx.rendered)
            if ns == namespace
            # job-name is the label the Job controller gives its pods
            and (
                pod["metadata"].get("labels", {}).get(key) == value
                or [key, value] == ["job-name", job]
            )
        ]
        assert matches, f"{shlex.join(words)}: no Job's pods in {namespace} match"
        names = {c["name"] for pod, _ in matches for c in pod["spec"]["containers"]}
        assert container in names, f"{shlex.join(words)}: the pods' containers are {names}"
    else:
        raise AssertionError(f"no check for {shlex.join(words)!r}: classify it in ELSEWHERE")
    ctx.checked.append(shlex.join(words))


def _render_stack_for(ctx: Context, words: list[str]) -> None:
    """`pulumi up -s STACK` runs elsewhere; what it creates is the stack rendered offline."""
    if words[:2] == ["pulumi", "up"] and "-s" in words:
        stack = words[words.index("-s") + 1]
        out = ctx.cwd / ".readme-stack"
        _run(ctx, shlex.join(["minicluster", "render", "--stack", stack, "-d", str(out)]))
        ctx.rendered += _objects_in(out / stack)


def _run(ctx: Context, command: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["bash", "-c", command],  # as typed: ~ and globs expand
        cwd=ctx.cwd,
        env=ctx.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{command}:\n{result.stdout}{result.stderr}"
    return result


def _folder_bytes(ctx: Context, words: list[str]) -> dict[str, bytes]:
    if "-d" not in words:
        return {}
    folder = ctx.cwd / words[words.index("-d") + 1]
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _assert_repeatable(ctx: Context, command: str, words: list[str], stdout: str) -> None:
    """The same render again: the same bytes on stdout (demo's table has timings) and in its
    folder."""
    before = _folder_bytes(ctx, words)
    again = _run(ctx, command)
    if "render" in words:
        assert again.stdout == stdout, f"{command}: a second render printed other objects"
    assert _folder_bytes(ctx, words) == before, f"{command}: a second render wrote other files"


def run_command(ctx: Context, command: str) -> str:
    """Run, check or classify one README command; what was done with it."""
    words = shlex.split(command)
    if words[0] == "cd":
        target = ctx.cwd / words[1]
        if not target.is_dir():
            return f"classified: cd into {words[1]}, the reader's own program"
        ctx.cwd = target
        return "run"
    if words == ["make", "demo"]:
        recipe = re.search(r"^demo:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
        assert recipe is not None
        assert recipe[1] == "$(BIN)/minicluster demo -d $(OUT)"
        command = "minicluster demo -d rendered"
        words = shlex.split(command)
    if words[0] in ("minicluster", ".venv/bin/minicluster"):
        result = _run(ctx, command)
        if {"render", "demo"} & set(words):
            _assert_repeatable(ctx, command, words, result.stdout)
        _record(ctx, words, result.stdout)
        return "run"
    if words[0] == "mkdir":
        _run(ctx, command)
        return "run"
    if words[0] == "kubectl" and _reason(words) is None:
        ctx.pending.append(words)  # checked once the block has rendered what it renders
        return "checked"
    if (reason := _reason(words)) is not None:
        _render_stack_for(ctx, words)
        return f"classified: {reason}"
    raise AssertionError(f"README command {command!r} is neither run, checked nor classified")


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Context:
    """A copy of the project as a reader has it, with a home of its own (no folder in it: the
    README makes what it uses) and the default state folder, in that home."""
    base = tmp_path_factory.mktemp("readme")
    project = base / "flux-minicluster"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, project / name)
    for name in ("stacks", "examples", "policies"):
        shutil.copytree(ROOT / name, project / name)
    bin_dir = Path(sys.executable).parent
    (project / ".venv").mkdir()
    (project / ".venv" / "bin").symlink_to(bin_dir)
    home = base / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    for name in (STATE_ENV, "XDG_STATE_HOME"):
        env.pop(name, None)
    return Context(cwd=project, env=env)


def run_file(reader: Context, path: Path) -> dict[str, list[str]]:
    """Run, check or classify every command of one file's ```sh blocks; what was done with each."""
    done: dict[str, list[str]] = {}
    start = reader.cwd
    for commands in shell_blocks(path.read_text()):
        reader.cwd = start
        reader.rendered = []
        for command in commands:
            done.setdefault(run_command(reader, command).split(":")[0], []).append(command)
        for words in reader.pending:
            _check_kubectl(reader, words)
        reader.pending = []
    reader.cwd = start
    return done


@pytest.fixture(scope="module")
def done_by_file() -> dict[Path, dict[str, list[str]]]:
    return {}


def test_every_docs_page_is_in_the_nav() -> None:
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages == sorted(NAV), "mkdocs.yml's nav and docs/*.md differ"


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_command_is_run_checked_or_classified(
    reader: Context, done_by_file: dict[Path, dict[str, list[str]]], path: Path
) -> None:
    done_by_file[path] = run_file(reader, path)


def test_the_offline_commands_ran_and_the_named_objects_were_checked(
    reader: Context, done_by_file: dict[Path, dict[str, list[str]]]
) -> None:
    """Over every file (those not run above, when a subset was selected, are run here, in order)."""
    assert sum(len(shell_blocks(path.read_text())) for path in DOCS) >= 10
    done: dict[str, list[str]] = {}
    for path in DOCS:
        if path not in done_by_file:
            done_by_file[path] = run_file(reader, path)
        for kind, commands in done_by_file[path].items():
            done.setdefault(kind, []).extend(commands)
    # the offline commands really ran, and the ones naming objects were checked
    assert len(done["run"]) >= 12, done["run"]
    assert any("create secret generic" in c for c in done["checked"]), done["checked"]
    assert any(c.startswith("kubectl logs") for c in done["checked"]), done["checked"]


def test_the_kubectl_section_names_the_namespace_of_every_example() -> None:
    """A reader creates the namespaces the section names before applying an example: each
    example's `metadata.namespace` must be one of them."""
    section = (ROOT / "docs" / "kubectl.md").read_text()
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            namespace = (doc.get("metadata") or {}).get("namespace")
            assert namespace is None or f"`{namespace}`" in section, f"{path.name}: {namespace}"
