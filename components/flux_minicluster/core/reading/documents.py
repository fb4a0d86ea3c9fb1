"""MiniCluster documents as users keep them: files, whole documents and bare specs.

Users hold either the whole operator document (``apiVersion``/``kind``/``metadata``/``spec``) or
just its ``spec``, in a file, inline in a stack config or as a dict in a program. Which of the two
a mapping is, and how a file becomes documents, is decided here once, for the loader, the stack
program and the component alike.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.reading import yamlio

__all__ = [
    "HEADER_KEYS",
    "STDIN",
    "is_document",
    "read_bytes",
    "read_file",
    "read_text",
    "source_name",
]

# The top-level keys of a whole document (``status`` is what the operator writes back).
HEADER_KEYS: Final = ("apiVersion", "kind", "metadata", "spec", "status")
# The file name that means standard input, as with kubectl.
STDIN: Final = "-"


def source_name(path: str | Path) -> str:
    """What messages call a file: its path, or ``<stdin>`` for ``-``."""
    return "<stdin>" if str(path) == STDIN else str(path)


def is_document(data: Mapping[str, Any]) -> bool:
    """A whole document rather than a bare spec.

    ``apiVersion``, ``kind`` or ``metadata`` make it a document; so does ``spec`` beside no
    ``containers`` (a bare spec has ``containers`` at the top, and no field called ``spec``).
    """
    return any(k in data for k in ("apiVersion", "kind", "metadata")) or (
        "spec" in data and "containers" not in data
    )


def read_bytes(path: str | Path, limit: int = yamlio.MAX_BYTES) -> bytes:
    """A file's bytes (``-`` is standard input), at most ``limit`` of them; a SpecError on
    failure.

    The bound applies while reading: at most ``limit + 1`` bytes are ever read, so a huge input
    (a mistaken log, an endless pipe on standard input) is refused at once, not after it has
    filled memory. A path must name a regular file: a named pipe would block the command for
    ever (opening one waits for a writer) and a device never ends, so either is refused before
    it is opened, and checked again once opened (without waiting) in case it was swapped.
    """
    import sys

    source = source_name(path)
    try:
        if str(path) == STDIN:
            data = sys.stdin.buffer.read(limit + 1)
        else:
            _regular(os.stat(path).st_mode, source)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as handle:
                _regular(os.fstat(fd).st_mode, source)
                data = handle.read(limit + 1)
    except FileNotFoundError:
        raise SpecError(Problem("", "no such file"), source=source) from None
    except OSError as err:
        raise SpecError(Problem("", f"cannot read: {err.strerror}"), source=source) from None
    if len(data) > limit:
        raise SpecError(Problem("", f"larger than {limit} bytes, the most accepted"), source=source)
    return data


_NOT_REGULAR: Final = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _regular(mode: int, source: str) -> None:
    """Refuse what is not a regular file; a folder is said apart."""
    if stat.S_ISDIR(mode):
        raise SpecError(Problem("", "is a directory, not a file"), source=source)
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a file")
        raise SpecError(
            Problem("", f"is {what}, not a regular file; give a file, or '-' for standard input"),
            source=source,
        )


def read_text(path: str | Path) -> str:
    """A file's text (``-`` is standard input), decoded and size-checked; a SpecError on failure."""
    return yamlio.decode(read_bytes(path), source_name(path))


def read_file(path: str | Path) -> list[Any]:
    """Every YAML document in a file, loaded with the strict loader; errors name the file."""
    source = source_name(path)
    text = read_text(path)
    return yamlio.load_documents(text, source)
