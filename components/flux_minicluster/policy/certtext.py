"""Just enough of ZeroMQ's ZPL certificate text for policy checks to find the keys in it.

A Flux CURVE certificate is ZPL: top-level sections (``metadata``, ``curve``) with indented
``key = "value"`` entries. The policies need two facts without trusting where the text came from:
whether some text carries a secret key (it must then live in a Secret) and which public key a
certificate has (every member of a burst group must share it). Indentation decides membership, and
the section itself may be indented, as when a certificate is pasted into a heredoc in a script.
"""

from __future__ import annotations

import re

_ENTRY = re.compile(r"^(?P<key>[A-Za-z0-9._-]+)\s*=\s*(?P<value>.*)$")


def curve_entries(text: str) -> list[tuple[str, str]]:
    """``(key, value)`` for every entry under a ``curve`` section, quotes stripped."""
    out: list[tuple[str, str]] = []
    curve_indent: int | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip())
        if curve_indent is not None and indent <= curve_indent:
            curve_indent = None
        if stripped == "curve":
            curve_indent = indent
            continue
        match = _ENTRY.match(stripped) if curve_indent is not None else None
        if match:
            out.append((match["key"], match["value"].strip().strip('"')))
    return out


def holds_secret_key(text: str) -> bool:
    """Whether ``text`` contains a ``curve`` section with a ``secret-key = ...`` entry."""
    return any(key == "secret-key" for key, _ in curve_entries(text))


def public_key(text: str) -> str | None:
    """The ``curve`` section's ``public-key``, or ``None`` when the text has none."""
    return next((value for key, value in curve_entries(text) if key == "public-key"), None)
