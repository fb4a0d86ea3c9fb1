"""Values from the spec as Kubernetes JSON carries them.

The spec models mirror corev1 structs (security contexts, tolerations, resource claims) and
quantities; the objects we render carry them in the API's own encoding: camelCase keys, no unset
or empty fields, quantities as integers or strings, never floats.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from flux_minicluster.core.spec.models import QuantityValue

__all__ = ["dump", "quantity"]


def dump(model: BaseModel) -> dict[str, Any]:
    """A corev1 struct from the spec as Kubernetes JSON: camelCase, unset fields left out."""
    pruned: dict[str, Any] = _prune(model.model_dump(mode="json", by_alias=True, exclude_none=True))
    return pruned


def _prune(value: Any) -> Any:
    """Drop empty lists and mappings that pydantic defaults add (``capabilities: {add: []}``)."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def quantity(value: QuantityValue) -> int | str:
    """A quantity as Kubernetes JSON carries it: an integer, or a string (never a float)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else repr(value)
    return value
