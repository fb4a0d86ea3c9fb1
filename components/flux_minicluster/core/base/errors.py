"""The one error type a user sees for a bad spec, config or file.

Every check in the project reports problems the same way: a dotted field path in the operator's
camelCase spelling (``spec.containers[0].volumes.data``) and a message that says what is allowed.
Collecting them into one exception lets the CLI print one line per problem and lets the Pulumi
layer refuse a spec before a single resource is registered. A problem said twice is said once,
and at most ``MAX_REPORTED`` are shown, then how many more there are: a generated file with
95,000 unknown keys deserves its first screenful, not 95,000 lines (or a 10 MB JSON report).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Problems shown (printed, or listed in a JSON report) before "and N more problems".
MAX_REPORTED = 100


def key_path(path: str, key: str) -> str:
    """A mapping key appended to a path: ``.data`` when plain, ``['app.kubernetes.io/x']``."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def format_path(prefix: str, loc: Iterable[int | str]) -> str:
    """``spec`` + ``("containers", 0, "name")`` -> ``spec.containers[0].name``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = key_path(out, part)
    return out


def short_repr(value: Any, limit: int = 60) -> str:
    """A value for a message, cut short: the input may be huge (a whole line, expanded aliases)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the input, at one place."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def moved(self, origins: Mapping[str, str]) -> Problem:
        """The problem at the path the user wrote, when it lies at or under a field a conversion
        moved (``origins``: converted path -> written path), so the user is sent to their line."""
        for converted, written in origins.items():
            rest = self.path.removeprefix(converted)
            if rest != self.path and (not rest or rest[0] in ".["):
                return Problem(written + rest, self.message)
        return self


def bounded(problems: Sequence[Problem], noun: str = "problems") -> list[Problem]:
    """The first ``MAX_REPORTED`` of ``problems``, then one saying how many more ``noun``
    there are: what every surface shows of an error's problems or a definition's warnings."""
    more = len(problems) - MAX_REPORTED
    if more <= 0:
        return list(problems)
    return [*problems[:MAX_REPORTED], Problem("", f"and {more} more {noun}")]


class SpecError(ValueError):
    """A MiniCluster spec (or a stack config, or a file) that must not be deployed."""

    def __init__(self, problems: Iterable[Problem] | Problem | str, *, source: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem("", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        # In the order found, each once (a union's members report one failure several times).
        self.problems: list[Problem] = list(dict.fromkeys(problems))
        self.source = source
        super().__init__(self._text())

    def reported(self) -> list[Problem]:
        """The problems to show: the first ``MAX_REPORTED``, then one saying how many more."""
        return bounded(self.problems)

    def _text(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "\n".join(prefix + str(p) for p in self.reported()) or prefix + "invalid input"

    def with_source(self, source: str) -> SpecError:
        """The same problems, attributed to a file or stack so the CLI can name it."""
        return SpecError(self.problems, source=source)

    def lines(self) -> list[str]:
        """One printable line per problem reported, as the CLI shows them."""
        return self._text().splitlines()


def unknown_key(key: str, known: Iterable[str], noun: str = "field") -> str:
    """The message for a key nobody reads: the likeliest intended one, else every allowed one.

    A case-insensitive match wins, then the closest spelling; specs, stack config keys and
    component arguments all say it the same way.
    """
    import difflib

    choices = sorted(known)
    lower = {k.lower(): k for k in choices}
    guess = lower.get(key.lower()) or next(
        iter(difflib.get_close_matches(key, choices, n=1, cutoff=0.6)), None
    )
    if guess:
        return f"unknown {noun}; did you mean {guess!r}?"
    return f"unknown {noun}; allowed: " + ", ".join(choices)
