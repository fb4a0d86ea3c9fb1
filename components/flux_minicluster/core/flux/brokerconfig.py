"""A Flux broker config (TOML), as far as a MiniCluster needs to check and read one.

Two callers need the same reading of the same text: validation, which refuses a user's
``flux.brokerConfig`` that a broker would refuse or hang on, and the plan, which takes from it the
hosts (the rank order, for R and the ``hostlist`` file), the ``[resource] path`` and the
``[bootstrap] curve_cert`` path. Both live here so that what is checked is what is read.

A real broker given a config that ends inside an unclosed array hangs at 100% CPU and ignores
SIGTERM, and it refuses unknown ``[bootstrap]`` keys; so the text must parse as TOML and only
the keys Flux knows are allowed.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.flux import hostlist

__all__ = ["BOOTSTRAP_KEYS", "HOST_KEYS", "UserConfig", "check", "read"]

BOOTSTRAP_KEYS: Final = frozenset(
    {"enable_ipv6", "curve_cert", "default_port", "default_bind", "default_connect", "hosts"}
)
HOST_KEYS: Final = frozenset({"host", "bind", "connect", "parent"})


def check(text: str, path: str) -> Iterator[Problem]:
    """Every reason a broker would refuse (or hang on) ``text``; ``path`` names it in messages."""
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        yield Problem(path, f"not valid TOML ({err}); a broker would refuse it or hang")
        return
    bootstrap = config.get("bootstrap", {})
    if not isinstance(bootstrap, dict):
        yield Problem(path, "[bootstrap] must be a table")
        return
    for key in bootstrap:
        if key not in BOOTSTRAP_KEYS:
            yield Problem(
                path,
                f"[bootstrap] has unknown key {key!r}; the broker refuses it "
                f"(known: {', '.join(sorted(BOOTSTRAP_KEYS))})",
            )
    hosts = bootstrap.get("hosts", [])
    if not isinstance(hosts, list):
        yield Problem(path, "[bootstrap] hosts must be an array of tables")
        return
    for i, entry in enumerate(hosts):
        if not isinstance(entry, dict) or "host" not in entry:
            yield Problem(path, f"[bootstrap] hosts[{i}] must be a table with a host key")
            continue
        for key in entry:
            if key not in HOST_KEYS:
                yield Problem(path, f"[bootstrap] hosts[{i}] has unknown key {key!r}")
        try:
            hostlist.count(str(entry["host"]))
        except hostlist.HostlistError as err:
            yield Problem(path, f"[bootstrap] hosts[{i}].host: {err}")


@dataclass(frozen=True)
class UserConfig:
    """What the entrypoint needs from a user's broker config: its hosts and two paths."""

    hosts: tuple[str, ...]
    resource: str | None
    curve_cert: str | None


@functools.lru_cache(maxsize=64)
def read(text: str) -> UserConfig:
    """The hosts and paths of a broker config; a SpecError for one a broker would not take.

    Validation checks ``brokerConfig`` when the spec is parsed; checking again here keeps a
    definition built some other way from ever shipping a config that hangs a broker.
    """
    problems = list(check(text, "spec.flux.brokerConfig"))
    if problems:
        raise SpecError(problems)
    config = tomllib.loads(text)
    bootstrap = config.get("bootstrap", {})
    resource = config.get("resource", {})
    hosts = tuple(
        str(entry["host"])
        for entry in bootstrap.get("hosts", [])
        if isinstance(entry, dict) and "host" in entry
    )
    return UserConfig(
        hosts=hosts,
        resource=_string_or_none(resource.get("path") if isinstance(resource, dict) else None),
        curve_cert=_string_or_none(bootstrap.get("curve_cert")),
    )


def _string_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
