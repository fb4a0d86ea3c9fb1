"""MiniCluster documents as users keep them: files, whole documents and bare specs.

Users hold either the whole operator document (``apiVersion``/``kind``/``metadata``/``spec``) or
just its ``spec``, in a file, inline in a stack config or as a dict in a program. Which of the two
a mapping is, and how a file becomes documents, is decided here once, for the loader, the stack
program and the component alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from flux_minicluster.core import yamlio
from flux_minicluster.core.errors import Problem, SpecError

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

    The bound applies while reading: at most ``limit + 1`` bytes are ever read, so an endless
    or huge input (``/dev/zero``, a mistaken device or log) is refused at once, not after it
    has filled memory.
    """
    import sys

    source = source_name(path)
    try:
        if str(path) == STDIN:
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
    except FileNotFoundError:
        raise SpecError(Problem("", "no such file"), source=source) from None
    except IsADirectoryError:
        raise SpecError(Problem("", "is a directory, not a file"), source=source) from None
    except OSError as err:
        raise SpecError(Problem("", f"cannot read: {err.strerror}"), source=source) from None
    if len(data) > limit:
        raise SpecError(Problem("", f"larger than {limit} bytes, the most accepted"), source=source)
    return data


def read_text(path: str | Path) -> str:
    """A file's text (``-`` is standard input), decoded and size-checked; a SpecError on failure."""
    return yamlio.decode(read_bytes(path), source_name(path))


def read_file(path: str | Path) -> list[Any]:
    """Every YAML document in a file, loaded with the strict loader; errors name the file."""
    source = source_name(path)
    text = read_text(path)
    return yamlio.load_documents(text, source)
