"""The output folder of `render -d`: hazards a real folder holds, and no file of the user's lost.

Each test puts something of the user's into the folder (a file named like one the render
writes, a symbolic link, a hand-edited index, a render killed half-way, a second render at the
same time) and checks that the user's files are byte for byte what they were, that nothing is
written outside the folder, and that the folder holds one cluster's files that its index lists.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import minicluster

from flux_minicluster.cli import folders
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.planning.plan import build
from flux_minicluster.core.reading.loading import load_file
from flux_minicluster.core.render.manifests import render

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "examples" / "hello-world.yaml"
SIDECARS = ROOT / "examples" / "services-sidecar.yaml"
USER_TEXT = "resources: []  # the user's own\n"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return minicluster("render", *args, cwd=cwd, timeout=120)


def objects(path: Path, curve_cert: str) -> list[dict[str, Any]]:
    (definition,) = load_file(path)
    return render(build(definition), curve_cert).objects()


def snapshot(*roots: Path) -> dict[str, bytes | str]:
    """Every entry below ``roots``: a file's bytes, a link's target."""
    out: dict[str, bytes | str] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                out[str(path)] = f"-> {os.readlink(path)}"
            elif path.is_file():
                out[str(path)] = path.read_bytes()
    return out


def index_of(folder: Path) -> set[str]:
    lines = (folder / folders.INDEX).read_text().splitlines()
    return {line.split("  ", 1)[1] for line in lines if not line.startswith("#")}


def assert_one_render(folder: Path, expected: list[str]) -> None:
    """The folder's objects are exactly ``expected``, each listed with its current hash."""
    found = sorted(p.name for p in folder.glob("*.yaml") if p.name != "kustomization.yaml")
    assert found == sorted(expected)
    entries = {}
    for line in (folder / folders.INDEX).read_text().splitlines():
        if not line.startswith("#"):
            digest, rel = line.split("  ", 1)
            entries[rel] = digest
    for name in expected:
        assert entries[name] == hashlib.sha256((folder / name).read_bytes()).hexdigest()


@pytest.fixture
def hello_names(tmp_path: Path, curve_cert: str) -> list[str]:
    return [p.name for p in folders.write_folder(tmp_path / "names", objects(HELLO, curve_cert))]


def test_a_file_named_like_a_rendered_one_is_refused_with_its_name(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "02-secret-flux-hello-curve.yaml"
    mine.write_text(USER_TEXT)
    before = snapshot(tmp_path)
    result = run(str(HELLO), "-d", str(out))
    assert result.returncode == 2
    assert f"{mine}: a file the last render here did not write" in result.stderr
    assert "Traceback" not in result.stderr
    # Refused before anything was written: only the lock is new.
    assert snapshot(tmp_path) == {**before, str(out / folders.LOCK): b""}


def test_a_file_named_like_a_stacks_outputs_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "local.outputs.json").write_text('{"mine": true}\n')
    result = run("--stack", "local", "-d", str(out))
    assert result.returncode == 2
    assert f"{out / 'local' / '..' / 'local.outputs.json'}: a file the last" in result.stderr
    assert (out / "local.outputs.json").read_text() == '{"mine": true}\n'
    assert not list((out / "local").glob("*.yaml"))


@pytest.mark.parametrize("link", ["02-secret-flux-hello-curve.yaml", folders.LOCK, folders.PATCHES])
def test_a_symbolic_link_in_the_folder_is_refused_never_followed(
    tmp_path: Path, curve_cert: str, link: str
) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "target").write_text(USER_TEXT)
    (out / link).symlink_to(elsewhere if link == folders.PATCHES else elsewhere / "target")
    before = snapshot(elsewhere)
    patch = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "size"}}
    with pytest.raises(SpecError, match=re.escape(str(out / link))):
        folders.write_folder(out, objects(HELLO, curve_cert), [patch])
    assert snapshot(elsewhere) == before
    assert (out / link).is_symlink()
    assert not [p for p in out.glob("*.yaml") if not p.is_symlink()]


@pytest.mark.parametrize("command", ["render", "demo"])
def test_a_stacks_folder_that_is_a_symbolic_link_is_refused_never_followed(
    tmp_path: Path, command: str
) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "victim" / "inner"
    out.mkdir()
    elsewhere.mkdir(parents=True)
    (out / "local").symlink_to(elsewhere)
    before = snapshot(tmp_path / "victim")
    args = ("--stack", "local", "-d", str(out)) if command == "render" else ("-d", str(out))
    result = minicluster(command, *args, cwd=ROOT, timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"{out / 'local'}: a symbolic link (never followed)" in result.stderr
    assert snapshot(tmp_path / "victim") == before
    assert (out / "local").is_symlink()


def test_a_symbolic_link_in_place_of_the_index_is_neither_read_nor_written_through(
    tmp_path: Path, curve_cert: str
) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "mine.yaml").write_text(USER_TEXT)
    digest = hashlib.sha256(USER_TEXT.encode()).hexdigest()
    (elsewhere / "index").write_text(f"{digest}  ../elsewhere/mine.yaml\n")
    (out / folders.INDEX).symlink_to(elsewhere / "index")
    before = snapshot(elsewhere)
    written = folders.write_folder(out, objects(HELLO, curve_cert))
    assert snapshot(elsewhere) == before
    assert_one_render(out, [p.name for p in written])


@pytest.mark.parametrize(
    "poison",
    [
        "kustomization.yaml",  # the index of earlier versions: names only
        "0" * 64 + "  kustomization.yaml",  # a hash the file does not hold
        "{digest}  kustomization.yaml",  # the file's own hash: a name no render writes
        "{digest}  ../outside.yaml",
        "{digest}  /{tmp}/outside.yaml",
        "{digest}  ../../outside.yaml",
        "{digest}  patches/../../outside.yaml",
    ],
)
def test_a_poisoned_index_deletes_nothing_of_the_users(
    tmp_path: Path, curve_cert: str, poison: str
) -> None:
    out = tmp_path / "a" / "out"
    folders.write_folder(out, objects(SIDECARS, curve_cert))
    (out / "kustomization.yaml").write_text(USER_TEXT)
    for where in (tmp_path / "outside.yaml", tmp_path / "a" / "outside.yaml"):
        where.write_text(USER_TEXT)
    digest = hashlib.sha256(USER_TEXT.encode()).hexdigest()
    with (out / folders.INDEX).open("a") as index:
        index.write(poison.format(digest=digest, tmp=str(tmp_path).strip("/")) + "\n")
    users = {p: p.read_bytes() for p in tmp_path.rglob("*.yaml") if "outside" in p.name}
    users[out / "kustomization.yaml"] = USER_TEXT.encode()
    names = folders.write_folder(out, objects(HELLO, curve_cert))
    assert {p: p.read_bytes() for p in users} == users
    assert_one_render(out, [p.name for p in names])


def test_a_poisoned_index_of_the_current_folder_deletes_no_dotfile_beside_it(
    tmp_path: Path, curve_cert: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-d .` has no name for files beside it to be named after: ``../.<dotfile>`` is not one
    (it was deleted, its digest in the index)."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    folders.write_folder(Path("."), objects(SIDECARS, curve_cert))
    dotfile = tmp_path / ".profile"
    dotfile.write_text(USER_TEXT)
    digest = hashlib.sha256(USER_TEXT.encode()).hexdigest()
    with (out / folders.INDEX).open("a") as index:
        index.write(f"{digest}  ../.profile\n")
    names = folders.write_folder(Path("."), objects(HELLO, curve_cert))
    assert dotfile.read_text() == USER_TEXT
    assert_one_render(out, [p.name for p in names])


def test_a_folder_whose_index_held_names_only_renders_again_when_nothing_changed(
    tmp_path: Path, curve_cert: str
) -> None:
    out = tmp_path / "out"
    written = folders.write_folder(out, objects(HELLO, curve_cert))
    # The index of earlier versions: one name a line, no hash.
    (out / folders.INDEX).write_text("".join(f"{p.name}\n" for p in written))
    again = folders.write_folder(out, objects(HELLO, curve_cert))
    assert_one_render(out, [p.name for p in again])


def test_a_rendered_file_the_user_edited_is_kept_and_named(tmp_path: Path, curve_cert: str) -> None:
    out = tmp_path / "out"
    (first, *_) = folders.write_folder(out, objects(HELLO, curve_cert))
    first.write_text(first.read_text() + "# my note\n")
    before = snapshot(tmp_path)
    with pytest.raises(SpecError, match="a file the last render here did not write"):
        folders.write_folder(out, objects(HELLO, curve_cert))
    assert snapshot(tmp_path) == before


MUTATIONS = ("replace", "unlink", "rmdir")


def killed_at(step: int, action: Callable[[], object]) -> int:
    """Run ``action`` in a child that dies (SIGKILL-like, no cleanup) at its ``step``-th
    change to the file system; the number of changes it made when it ran to the end."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        count = 0

        def dying(name: str) -> Callable[..., Any]:
            real = getattr(os, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                nonlocal count
                if count == step:
                    os._exit(9)
                count += 1
                return real(*args, **kwargs)

            return call

        for name in MUTATIONS:
            setattr(os, name, dying(name))
        try:
            action()
        finally:
            os.write(write, str(count).encode())
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        made = pipe.read()
    return int(made) if made else -os.waitstatus_to_exitcode(status)


def test_a_render_killed_at_any_point_leaves_a_folder_the_next_one_cleans(
    tmp_path: Path, curve_cert: str
) -> None:
    sidecars, hello = objects(SIDECARS, curve_cert), objects(HELLO, curve_cert)
    patch = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "size"}}]
    steps = killed_at(10**6, lambda: folders.write_folder(tmp_path / "dry", sidecars, patch))
    assert steps > len(sidecars)
    for step in range(steps + 1):
        out = tmp_path / f"kill-{step}"
        folders.write_folder(out, hello, patch)
        (out / "kustomization.yaml").write_text(USER_TEXT)
        # Killed while replacing hello's files (and patches) with sidecars' (without).
        killed_at(step, lambda out=out: folders.write_folder(out, sidecars))  # type: ignore[misc]
        listed = index_of(out)
        leftovers = {str(p.relative_to(out)) for p in out.rglob("*.yaml")} - listed
        assert leftovers == {"kustomization.yaml"}, f"step {step}: unlisted {leftovers}"
        written = folders.write_folder(out, hello)
        assert_one_render(out, [p.name for p in written])
        assert not (out / folders.PATCHES).exists()
        assert (out / "kustomization.yaml").read_text() == USER_TEXT
        assert not [p for p in out.iterdir() if p.name.endswith(".minicluster-tmp")], step


def test_a_render_while_another_holds_the_folder_is_refused(
    tmp_path: Path, hello_names: list[str]
) -> None:
    out = tmp_path / "out"
    assert run(str(SIDECARS), "-d", str(out)).returncode == 0
    before = snapshot(out)
    with (out / folders.LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = run(str(HELLO), "-d", str(out))
    assert result.returncode == 2
    assert "another render is writing into this folder" in result.stderr
    assert snapshot(out) == before


def test_two_renders_at_once_leave_one_clusters_files(
    tmp_path: Path, curve_cert: str, hello_names: list[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "kustomization.yaml").write_text(USER_TEXT)
    (tmp_path / "hello.cert").write_text(curve_cert)
    sidecar_names = [
        p.name for p in folders.write_folder(tmp_path / "s", objects(SIDECARS, curve_cert))
    ]
    command = [sys.executable, "-m", "flux_minicluster.cli.main", "render", "-d", str(out)]
    for _ in range(3):
        runs = [
            subprocess.Popen(
                [*command, "--curve-cert", str(tmp_path / "hello.cert"), str(spec)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for spec in (HELLO, SIDECARS)
        ]
        results = [(p.wait(timeout=120), p.communicate()[1]) for p in runs]
        for code, stderr in results:
            assert code == 0 or (code == 2 and "another render is writing" in stderr), stderr
        found = sorted(p.name for p in out.glob("*.yaml") if p.name != "kustomization.yaml")
        assert found in (sorted(hello_names), sorted(sidecar_names))
        assert_one_render(out, found)
        assert (out / "kustomization.yaml").read_text() == USER_TEXT
