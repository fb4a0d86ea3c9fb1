"""The Jinja2 environment every rendered script and config comes from.

Why one shared, cached environment with these settings:

* ``StrictUndefined``: a misspelt variable must fail the render, not silently become an empty
  string inside a shell script or a broker config that real brokers then misread.
* ``keep_trailing_newline`` and trimmed blocks: the bytes we render land in a ConfigMap, and any
  byte that changes there replaces the pods, so the output must be exactly what the template
  says, with no stray blank lines from ``{% if %}`` lines.
* no autoescape: the output is bash and TOML, never HTML. Values are escaped for their target
  explicitly instead, with ``shquote`` (a single shell word) and ``toml_string`` (a TOML basic
  string), so that a quote, a newline or ``$(...)`` in a name or path cannot break or inject.
* compiled once per process: rendering a MiniCluster must stay in the low milliseconds at any
  size (the benchmark allows 20 ms), so templates are parsed once and never re-checked on disk.
* compiled once per machine: compiling the templates costs about 40 ms of CPU, paid by every
  ``pulumi up``, ``preview`` and ``minicluster render`` (each a new process), so the compiled
  code is kept in Jinja2's bytecode cache under ``$FLUX_MINICLUSTER_CACHE`` (default
  ``$XDG_CACHE_HOME/flux-minicluster``, else ``~/.cache/flux-minicluster``), in ``jinja2/``.
  An entry is keyed by the template's name and the checksum of its source, so an edited or
  upgraded template is compiled again; where that folder cannot be created, nothing is cached.
  An entry is Python code that runs when it is loaded, so the folder is used only when it is
  the user's own: a real folder (not a link), owned by the user and writable by nobody else,
  in a parent nobody else may rename it in (as Jinja2's own default cache folder is checked).
  Otherwise another user (a world-writable ``$FLUX_MINICLUSTER_CACHE``, a CI cache restored
  with its owner or mode) could plant code that the next ``minicluster validate`` runs as this
  user. The cache saves some 75-110 ms of CPU per process (17 templates: 79-116 ms compiled,
  4-6 ms loaded), a sixth of a ``validate``, so it stays, where it is safe.

Templates live in the repository's ``templates/`` folder; the wheel ships the same folder as
``flux_minicluster/_templates`` (see ``force-include`` in pyproject.toml), so a checkout and an
installed package render identical bytes.
"""

from __future__ import annotations

import functools
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import jinja2

__all__ = ["environment", "render", "shquote", "template_dir", "toml_string"]

# A template every version of the folder has; used to tell a real templates folder from an
# unrelated directory that happens to be called "templates".
_MARKER = "wait.sh.j2"

# TOML basic strings must escape the quote, the backslash and every control character except
# tab; we escape tab too so the value reads the same on one line.
_TOML_ESCAPES: dict[int, str] = {code: f"\\u{code:04X}" for code in (*range(0x20), 0x7F)}
_TOML_ESCAPES.update(
    {
        ord('"'): '\\"',
        ord("\\"): "\\\\",
        ord("\b"): "\\b",
        ord("\t"): "\\t",
        ord("\n"): "\\n",
        ord("\f"): "\\f",
        ord("\r"): "\\r",
    }
)


def shquote(value: object) -> str:
    """One POSIX shell word that expands to exactly ``value`` (numbers are written as text)."""
    return shlex.quote(value if isinstance(value, str) else str(value))


def toml_string(value: object) -> str:
    """A TOML basic string (double-quoted, escaped) whose parsed value is exactly ``value``."""
    text = value if isinstance(value, str) else str(value)
    return '"' + text.translate(_TOML_ESCAPES) + '"'


def template_dir() -> Path:
    """The folder the templates are read from: the checkout's, else the installed package's."""
    here = Path(__file__).resolve()
    checkout = here.parents[4] / "templates"  # <repo>/components/flux_minicluster/core/base/...
    if (checkout / _MARKER).is_file():
        return checkout
    return here.parents[2] / "_templates"  # <site-packages>/flux_minicluster/_templates


def cache_dir() -> Path:
    """Where compiled templates are kept (the same cache root as the e2e toolchain's)."""
    explicit = os.environ.get("FLUX_MINICLUSTER_CACHE")
    root = (
        Path(explicit)
        if explicit
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flux-minicluster"
    )
    return root / "jinja2"


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        directory = cache_dir()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        private = _only_mine(directory.lstat()) and _only_mine(directory.parent.stat(), parent=True)
    except (OSError, RuntimeError):  # no home, a read-only file system: compile every time
        return None
    # Someone else's, or writable by others: its entries may be anyone's code; compile instead.
    return jinja2.FileSystemBytecodeCache(str(directory)) if private else None


def _only_mine(info: os.stat_result, *, parent: bool = False) -> bool:
    """A folder of this user's that no one else may write into. A ``parent`` may also be
    root's, or shared if it is sticky (``/tmp``): no one else may rename what is in it."""
    if not stat.S_ISDIR(info.st_mode):
        return False
    if parent and info.st_mode & stat.S_ISVTX:
        return True
    owners = (os.getuid(), 0) if parent else (os.getuid(),)
    return info.st_uid in owners and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@functools.cache
def environment() -> jinja2.Environment:
    """The shared environment, built once; its templates are compiled on first use only."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        # Never stat the template files again: a process renders with the templates it started
        # with, and rendering stays fast.
        auto_reload=False,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["shquote"] = shquote
    env.filters["toml_string"] = toml_string
    return env


def render(template: str, /, **context: Any) -> str:
    """Render one template from the templates folder with ``context``."""
    return environment().get_template(template).render(**context)
