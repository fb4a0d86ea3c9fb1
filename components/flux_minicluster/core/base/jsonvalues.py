"""Plain JSON values back from what they became on the way through Pulumi or YAML.

Numbers cross Pulumi's wire as protobuf doubles (``4`` comes back as ``4.0``), tuples and
read-only mappings stand in for lists and dicts, and a manifest must compare equal to the one the
renderer wrote. One function restores them, for the recorder of Pulumi registrations and for the
policy rules alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["plain"]


def plain(value: Any) -> Any:
    """``value`` with mappings as dicts (keys as strings), sequences as lists, 4.0 as 4."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
