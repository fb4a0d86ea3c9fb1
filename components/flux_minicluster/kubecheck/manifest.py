"""Reading a manifest that may be malformed: a wrong type reads as empty, never raises.

The rules of ``objectrules`` and ``crossobject`` read objects nobody has checked yet (the schema
check may not even run), so every field is read through these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def identity(manifest: Mapping[str, Any]) -> str:
    return f"{manifest.get('kind', '?')}/{mapping(manifest.get('metadata')).get('name', '?')}"
