"""The compiled-template cache: a render is the same bytes with a cold cache, a warm one and
none at all (a cache root that cannot be created)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "hello-world.yaml"


def render(cache_root: Path, cert: Path) -> str:
    env = {**os.environ, "FLUX_MINICLUSTER_CACHE": str(cache_root)}
    command = ["render", str(EXAMPLE), "--curve-cert", str(cert)]
    proc = subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", *command],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return proc.stdout


def test_a_render_is_the_same_with_a_cold_a_warm_and_no_template_cache(tmp_path: Path) -> None:
    cert = tmp_path / "hello.cert"
    cache = tmp_path / "cache"
    cold = render(cache, cert)
    compiled = sorted((cache / "jinja2").iterdir())
    assert compiled, "the compiled templates were not kept"
    warm = render(cache, cert)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    uncached = render(blocked, cert)
    assert cold == warm == uncached
    assert sorted((cache / "jinja2").iterdir()) == compiled


PLANTED = """
import os, pathlib
pathlib.Path(os.environ["PLANTED_MARKER"]).write_text("ran")
"""


def _plant(folder: Path) -> None:
    """An entry for every template whose code, once loaded, leaves a marker: what another user
    with write access to the folder could put there."""
    import jinja2

    from flux_minicluster.core.base import templating

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templating.template_dir()))
    cache = jinja2.FileSystemBytecodeCache(str(folder))
    assert env.loader is not None
    for name in env.loader.list_templates():
        source, filename, _ = env.loader.get_source(env, name)
        bucket = cache.get_bucket(env, name, filename, source)
        bucket.code = compile(PLANTED, filename or name, "exec")
        cache.set_bucket(bucket)


@pytest.mark.parametrize(
    ("how", "used"),
    [
        ("the user's own, 0700", True),  # the control: a planted entry does run from there
        ("world-writable", False),
        ("group-writable", False),
        ("someone else's", False),
        ("a link to a folder", False),
        ("in a world-writable parent", False),
    ],
)
def test_compiled_templates_are_loaded_only_from_a_folder_no_one_else_can_write(
    tmp_path: Path, how: str, used: bool
) -> None:
    """An entry is code run as the user (an entry planted in a world-writable or restored CI
    cache ran ``id`` as root): the folder must be the user's own, or nothing is loaded."""
    root = tmp_path / "cache"
    folder = root / "jinja2"
    folder.mkdir(parents=True, mode=0o700)
    _plant(folder)
    if how == "world-writable":
        folder.chmod(0o777)
    elif how == "group-writable":
        folder.chmod(0o770)
    elif how == "someone else's":
        if os.getuid() != 0:
            pytest.skip("changing a folder's owner needs root")
        os.chown(folder, 4242, 4242)
    elif how == "a link to a folder":
        folder.rename(tmp_path / "elsewhere")
        folder.symlink_to(tmp_path / "elsewhere")
    elif how == "in a world-writable parent":
        root.chmod(0o777)
    marker = tmp_path / "marker"
    env = {**os.environ, "FLUX_MINICLUSTER_CACHE": str(root), "PLANTED_MARKER": str(marker)}
    subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", "validate", str(EXAMPLE)],
        capture_output=True,
        env=env,
        check=False,
    )
    assert marker.exists() == used
