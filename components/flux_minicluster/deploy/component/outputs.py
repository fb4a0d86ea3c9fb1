"""Where rendered manifests meet Pulumi Outputs: placeholder tokens become Outputs.

The renderer is pure and never sees a secret, so where the certificate, its public key or a
bursted cluster's lead address belong it writes plain tokens (their Outputs are resolved by
``deploytime``). Before a manifest is registered, every string holding a token is swapped for an
``Output`` of the same string with the token replaced, so the structure of each object stays
exactly what the renderer produced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

__all__ = ["substitute"]


def substitute(value: Any, replacements: Mapping[str, pulumi.Output[str]]) -> Any:
    """``value`` with each string that holds a token turned into an Output of the replaced text.

    Dicts and lists are rebuilt around the Outputs (the typed resources accept Outputs nested in
    plain dicts); everything without a token is returned unchanged, so plain values stay plain.
    """
    if isinstance(value, str):
        return _substitute_text(value, replacements)
    if isinstance(value, dict):
        return {k: substitute(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, replacements) for v in value]
    return value


def _substitute_text(text: str, replacements: Mapping[str, pulumi.Output[str]]) -> Any:
    # Longest token first, so a token that contains another is replaced whole.
    found = sorted((t for t in replacements if t in text), key=len, reverse=True)
    if not found:
        return text

    def replace(values: list[Any]) -> str:
        out = text
        for token, replacement in zip(found, values, strict=True):
            out = out.replace(token, str(replacement))
        return out

    return pulumi.Output.all(*(replacements[t] for t in found)).apply(replace)
