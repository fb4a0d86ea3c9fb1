"""Kubernetes resource quantities (``500m``, ``1.5Gi``, ``1e3``), checked before the API server.

A bad quantity in a container's ``resources`` is only reported when the Job is created, after
Pulumi has already registered the rest of the MiniCluster. Parsing it here lets validation refuse
the spec up front, and gives exact values (``Decimal``, never float) for comparisons such as
"requests must not exceed limits".

The grammar is the one Kubernetes documents for ``resource.Quantity``::

    quantity ::= [+|-] number [suffix]
    number   ::= digits | digits "." digits | digits "." | "." digits
    suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei          (powers of 1024)
               | n | u | m | k | M | G | T | P | E   (powers of 1000)
               | (e|E) [+|-] digits                   (power of ten)

``1E`` is 10**18 (the E suffix) while ``1E3`` is 1000 (an exponent). The API server's parser also
lets a bare sign or ``.`` through as zero; those are refused here as the typos they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext
from typing import Any, Final

from flux_minicluster.core.kube import names

__all__ = ["parse_quantity", "resource_problems"]

# The resources a container may name without a domain (besides hugepages-<size>).
CONTAINER_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")

_QUANTITY_RE: Final = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)
_BINARY_FACTOR: Final[dict[str, int]] = {
    f"{letter}i": 1 << (10 * power) for power, letter in enumerate("KMGTPE", start=1)
}
_DECIMAL_EXPONENT: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
# Kubernetes keeps the exponent in an int32; anything beyond is not a quantity it can hold.
_MAX_EXPONENT: Final = 2**31 - 1


def _error(value: object) -> ValueError:
    return ValueError(f"{value!r} is not a Kubernetes quantity (examples: 500m, 2, 1.5Gi, 1e3)")


def parse_quantity(value: str | int | float) -> Decimal:
    """The exact amount a quantity denotes (``"500m"`` is 0.500, ``"1Ki"`` is 1024).

    Integers and finite floats, as YAML gives them for ``cpu: 2`` or ``cpu: 0.5``, are accepted
    as plain numbers; booleans are not (``cpu: yes`` is a mistake, not a quantity).
    """
    if isinstance(value, bool):
        raise _error(value)
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _error(value)
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise _error(value)
    match = _QUANTITY_RE.fullmatch(value)
    if match is None:
        raise _error(value)
    number = match.group("number")
    exponent = 0
    factor = 1
    if match.group("binary"):
        factor = _BINARY_FACTOR[match.group("binary")]
    elif match.group("decimal"):
        exponent = _DECIMAL_EXPONENT[match.group("decimal")]
    elif match.group("exponent"):
        exponent = int(match.group("exponent"))
        if abs(exponent) > _MAX_EXPONENT:
            raise _error(value)
    # Enough precision that nothing is ever rounded: the digits written plus 1024**6's.
    with localcontext() as ctx:
        ctx.prec = len(number) + 20
        ctx.Emax = MAX_EMAX
        ctx.Emin = MIN_EMIN
        return (Decimal(number) * factor).scaleb(exponent)


def resource_problems(limits: Mapping[str, Any], requests: Mapping[str, Any]) -> Iterator[str]:
    """What the API server refuses in a container's ``resources``, as ``<field>[<name>]: why``.

    Known resource names (or a fully qualified extended resource), quantities of at least 0, and
    no request above its limit. Spec validation and ``kubecheck`` both ask this, so that a spec
    that validates renders objects the API server takes.
    """
    amounts: dict[str, dict[str, tuple[Decimal, Any]]] = {}
    for field, values in (("limits", limits), ("requests", requests)):
        for name, value in values.items():
            if msg := _resource_name(str(name)):
                yield f"{field}[{name!r}]: {msg}"
            try:
                amount = parse_quantity(value)
            except (TypeError, ValueError):
                yield f"{field}[{name!r}]: {value!r} is not a Kubernetes quantity"
                continue
            if amount < 0:
                yield f"{field}[{name!r}]: must be at least 0, got {value!r}"
            amounts.setdefault(field, {})[str(name)] = (amount, value)
    for name, (request, shown) in amounts.get("requests", {}).items():
        limit = amounts.get("limits", {}).get(name)
        if limit is not None and request > limit[0]:
            yield (
                f"requests[{name!r}]: {shown!r} is more than the limit {limit[1]!r} "
                "(a request must be at most its limit)"
            )


def _resource_name(name: str) -> str | None:
    """Why a container may not request ``name`` (None when it may)."""
    if "/" not in name:
        if name in CONTAINER_RESOURCES or name.startswith("hugepages-"):
            return None
        return (
            "must be cpu, memory, ephemeral-storage, hugepages-<size> or a fully qualified "
            "extended resource such as nvidia.com/gpu"
        )
    return names.label_key(name)
