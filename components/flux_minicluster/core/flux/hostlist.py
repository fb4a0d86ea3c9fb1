"""Flux hostlists (RFC 29): the compact host names in broker.toml and the ``hostlist`` file.

Flux's bootstrap maps rank N to the N-th host of the ``[bootstrap] hosts`` list, so the order of a
hostlist is load-bearing: every broker of a MiniCluster (and every cluster of a bursting group)
must expand the same string to the same ordered list, or ranks stop lining up. This module parses
that format the way flux-core does, so that a custom ``bursting.hostlist`` is checked before it
reaches a broker, and writes it back without ever sorting or de-duplicating.

Rules, as flux-core's ``hostlist_decode`` applies them:

* a hostlist is comma-separated terms; ``""`` is the empty list;
* a term is ``prefix[idlist]suffix`` or a plain host; prefix and suffix are printable ASCII
  without whitespace, ``[``, ``]`` or ``,``;
* an idlist is comma-separated ``N`` or ``N-M`` (``N <= M``), in the written order, repeats kept;
* zero padding comes from the low bound as written: ``[001-003]`` is 001, 002, 003 and
  ``[00-2]`` is 00, 01, 02, while ``[8-10]`` is 8, 9, 10;
* one range may hold at most 2**20 hosts (flux-core refuses larger ones).

Deliberately stricter than flux-core, which silently skips them: empty terms (``a,,b``),
whitespace, and a second bracket group in one term (flux would take it as a literal suffix and
produce host names nobody meant).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = [
    "MAX_RANGE",
    "HostlistError",
    "block",
    "compress",
    "count",
    "expand",
    "iter_hosts",
]

MAX_RANGE = 1 << 20
"""flux-core's limit on the hosts in one ``N-M`` range; anything larger it treats as a typo."""

# Printable ASCII without space and without the three characters the syntax reserves.
_AFFIX_RE = re.compile(r"[!-+\--Z\\^-~]*")
_DIGITS_RE = re.compile(r"[0-9]+")
_RANGE_RE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


class HostlistError(ValueError):
    """A hostlist Flux would refuse or misread; the message names the offending term."""

    def __init__(self, hostlist: str, term: str, reason: str) -> None:
        self.hostlist = hostlist
        self.term = term
        self.reason = reason
        where = (
            f"term {term!r} in hostlist {hostlist!r}"
            if term and term != hostlist
            else f"hostlist {hostlist!r}"
        )
        super().__init__(f"bad {where}: {reason}")


@dataclass(frozen=True)
class _Range:
    lo: int
    hi: int
    width: int

    def __len__(self) -> int:
        return self.hi - self.lo + 1

    def text(self, n: int) -> str:
        return str(n).zfill(self.width)


@dataclass(frozen=True)
class _Term:
    """One parsed term; ``ranges is None`` means a plain host (``prefix`` is the whole name)."""

    prefix: str
    ranges: tuple[_Range, ...] | None
    suffix: str

    def size(self) -> int:
        return 1 if self.ranges is None else sum(len(r) for r in self.ranges)

    def hosts(self) -> Iterator[str]:
        if self.ranges is None:
            yield self.prefix
            return
        for r in self.ranges:
            for n in range(r.lo, r.hi + 1):
                yield f"{self.prefix}{r.text(n)}{self.suffix}"


def _split_terms(hostlist: str) -> list[str]:
    """Split at the commas outside brackets, checking bracket balance on the way."""
    terms: list[str] = []
    start = 0
    depth = 0

    def term_at(i: int) -> str:
        comma = hostlist.find(",", i)
        return hostlist[start : len(hostlist) if comma < 0 else comma]

    for i, ch in enumerate(hostlist):
        if ch == "[":
            if depth:
                raise HostlistError(hostlist, term_at(i), "brackets cannot be nested")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(hostlist, term_at(i), "']' without a matching '['")
            depth = 0
        elif ch == "," and not depth:
            terms.append(hostlist[start:i])
            start = i + 1
    if depth:
        raise HostlistError(hostlist, hostlist[start:], "'[' is never closed with ']'")
    terms.append(hostlist[start:])
    return terms


def _parse_term(hostlist: str, term: str, position: int) -> _Term:
    if not term:
        raise HostlistError(
            hostlist,
            "",
            f"term {position + 1} is empty (a leading, trailing or doubled comma)",
        )
    open_at = term.find("[")
    if open_at < 0:
        _check_affix(hostlist, term, term)
        return _Term(term, None, "")
    close_at = term.index("]", open_at)  # balance was checked by _split_terms
    prefix, body, suffix = term[:open_at], term[open_at + 1 : close_at], term[close_at + 1 :]
    if "[" in suffix:
        raise HostlistError(hostlist, term, "only one [...] group is allowed per term")
    _check_affix(hostlist, term, prefix)
    _check_affix(hostlist, term, suffix)
    ranges = tuple(_parse_range(hostlist, term, item) for item in body.split(","))
    return _Term(prefix, ranges, suffix)


def _check_affix(hostlist: str, term: str, affix: str) -> None:
    if not _AFFIX_RE.fullmatch(affix):
        bad = next(ch for ch in affix if not _AFFIX_RE.fullmatch(ch))
        raise HostlistError(
            hostlist,
            term,
            f"{bad!r} is not allowed in a host name (printable ASCII only, no whitespace)",
        )


def _parse_range(hostlist: str, term: str, item: str) -> _Range:
    match = _RANGE_RE.fullmatch(item)
    if not match:
        what = "an empty entry" if not item else f"{item!r}"
        raise HostlistError(
            hostlist, term, f"{what} inside [...]: use numbers N or ranges N-M, e.g. [0-3,7]"
        )
    lo_text, hi_text = match.group(1), match.group(2)
    lo = int(lo_text)
    hi = lo if hi_text is None else int(hi_text)
    if hi < lo:
        raise HostlistError(
            hostlist, term, f"reversed range {item!r}: write the low bound first ({hi}-{lo})"
        )
    if hi - lo + 1 > MAX_RANGE:
        raise HostlistError(
            hostlist, term, f"range {item!r} has more than {MAX_RANGE} hosts, Flux refuses it"
        )
    return _Range(lo, hi, len(lo_text))


def _parse(hostlist: str) -> list[_Term]:
    if not hostlist:
        return []
    return [_parse_term(hostlist, t, n) for n, t in enumerate(_split_terms(hostlist))]


def iter_hosts(hostlist: str) -> Iterator[str]:
    """The hosts one at a time, so a 65536-rank list can be walked without building it.

    The whole string is checked before the first host is produced: a caller never sees a prefix
    of a list that turns out to be malformed.
    """
    terms = _parse(hostlist)
    return (host for term in terms for host in term.hosts())


def expand(hostlist: str) -> list[str]:
    """Every host in rank order, repeats kept, exactly as a Flux broker would list them."""
    return list(iter_hosts(hostlist))


def count(hostlist: str) -> int:
    """Number of hosts (the instance size a hostlist implies), from the ranges alone."""
    return sum(term.size() for term in _parse(hostlist))


def block(prefix: str, size: int) -> str:
    """The hostlist of one MiniCluster's pods, ``<prefix>[0-<size-1>]``, as the operator writes it.

    One host stays bracketed (``name-[0]``): that is what the Flux Operator writes and Flux
    accepts, so the rendered config matches the operator's byte for byte.
    """
    if size < 1:
        raise ValueError(f"a hostlist block needs at least one host, got size {size}")
    if size > MAX_RANGE:
        raise ValueError(f"a hostlist block holds at most {MAX_RANGE} hosts, got size {size}")
    text = f"{prefix}[0]" if size == 1 else f"{prefix}[0-{size - 1}]"
    _check_affix(text, text, prefix)
    return text


def _check_host(host: str) -> None:
    if not host:
        raise HostlistError(host, host, "a host name cannot be empty")
    _check_affix(host, host, host)


def _numeric_splits(host: str) -> dict[tuple[str, str], str]:
    """Each way to read ``host`` as prefix + number + suffix, keyed by (prefix, suffix).

    Later (rightmost) digit groups come first so that, on a tie, compress varies the last
    number, as flux and pdsh do.
    """
    splits: dict[tuple[str, str], str] = {}
    for match in reversed(list(_DIGITS_RE.finditer(host))):
        splits[(host[: match.start()], host[match.end() :])] = match.group()
    return splits


def _idlist(numbers: list[str]) -> str:
    """Shortest idlist for these digit strings, in order: consecutive runs become N-M.

    A number may join the current range only if the range's padding (the width of its low
    bound) reproduces it exactly, so ``9,10`` becomes ``9-10`` but ``9,010`` stays apart.
    """
    parts: list[str] = []
    i = 0
    while i < len(numbers):
        lo_text = numbers[i]
        width = len(lo_text)
        hi = int(lo_text)
        j = i + 1
        while j < len(numbers) and numbers[j] == str(hi + 1).zfill(width):
            hi += 1
            j += 1
        parts.append(lo_text if j == i + 1 else f"{lo_text}-{str(hi).zfill(width)}")
        i = j
    return ",".join(parts)


def compress(hosts: Iterable[str]) -> str:
    """A short hostlist that expands back to exactly ``hosts``, in the same order.

    Runs of neighbouring hosts that differ only in one number become one ``prefix[...]suffix``
    term; nothing is sorted or de-duplicated, because order is rank. A run is kept as plain
    names when brackets would not be shorter (``a1,a2`` beats ``a[1-2]``), so the result is never
    longer than ``",".join(hosts)``. For names with a single number (all that this project
    generates) the result is the shortest possible; with several numbers per name each run
    varies the number that covers the most neighbours.
    """
    names = list(hosts)
    for host in names:
        _check_host(host)
    splits = [_numeric_splits(host) for host in names]

    # run_end[i][key]: last index j such that hosts i..j all read as key's prefix/suffix.
    run_end: list[dict[tuple[str, str], int]] = [{} for _ in names]
    for i in range(len(names) - 1, -1, -1):
        for key in splits[i]:
            nxt = run_end[i + 1].get(key) if i + 1 < len(names) else None
            run_end[i][key] = nxt if nxt is not None else i

    terms: list[str] = []
    i = 0
    while i < len(names):
        best_key: tuple[str, str] | None = None
        best_end = i
        for key, end in run_end[i].items():
            if end > best_end:
                best_key, best_end = key, end
        if best_key is None:
            terms.append(names[i])
            i += 1
            continue
        prefix, suffix = best_key
        run = names[i : best_end + 1]
        numbers = [splits[k][best_key] for k in range(i, best_end + 1)]
        bracketed = f"{prefix}[{_idlist(numbers)}]{suffix}"
        plain = ",".join(run)
        terms.append(bracketed if len(bracketed) < len(plain) else plain)
        i = best_end + 1
    return ",".join(terms)
