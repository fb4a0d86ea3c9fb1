"""Pulumi's policy-config shape, read the same way offline as the Pulumi CLI reads it.

``pulumi preview --policy-pack-config cfg.json`` takes ``{"all": <level>, "<policy-id>":
{"enforcementLevel": <level>, ...options}}``, where a bare level string is shorthand for
``{"enforcementLevel": <level>}``. The offline checker accepts the very same file, so one config
drives CI with and without the Pulumi CLI. Unlike the Pulumi SDK (which leaves validation to the
CLI), a typo here is an error with a suggestion, not a silently ignored key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from flux_minicluster.core.base.errors import Problem, SpecError, unknown_key
from flux_minicluster.policy.model import ENFORCEMENT_KEY, ConfigLevel, Rule

ALL_KEY = "all"
LEVELS = ("advisory", "mandatory", "remediate", "disabled")
"""Levels Pulumi accepts; ``remediate`` acts as ``mandatory`` here (no rule remediates)."""

PolicyConfig = dict[str, dict[str, Any]]


def validate(config: Mapping[str, Any] | None, rules: Iterable[Rule]) -> PolicyConfig:
    """``config`` with shorthand levels expanded; ``SpecError`` listing every problem in it."""
    by_id = {rule.id: rule for rule in rules}
    out: PolicyConfig = {}
    problems: list[Problem] = []
    if config is not None and not isinstance(config, Mapping):
        raise SpecError("a policy config must be a mapping of policy ids to settings")
    for key, raw in (config or {}).items():
        key = str(key)
        section: Any = {ENFORCEMENT_KEY: raw} if isinstance(raw, str) else raw
        if not isinstance(section, Mapping):
            problems.append(Problem(key, "must be a level string or a mapping of settings"))
            continue
        rule = by_id.get(key)
        if key != ALL_KEY and rule is None:
            problems.append(
                Problem(
                    key,
                    unknown_key(str(key), [ALL_KEY, *by_id], "policy"),
                )
            )
            continue
        for name, value in section.items():
            path = f"{key}.{name}"
            if name == ENFORCEMENT_KEY:
                if value not in LEVELS:
                    problems.append(Problem(path, f"{value!r} is not one of {', '.join(LEVELS)}"))
            elif rule is None:
                problems.append(Problem(path, f"'{ALL_KEY}' takes only {ENFORCEMENT_KEY}"))
            elif (opt := rule.option(str(name))) is None:
                known = [o.name for o in rule.options]
                message = unknown_key(str(name), known, "option") if known else "it has no options"
                problems.append(Problem(path, message))
            elif not opt.accepts(value):
                problems.append(Problem(path, f"{value!r} is not a valid {opt.type}"))
        out[key] = {str(k): v for k, v in section.items()}
    if problems:
        raise SpecError(problems)
    return out


def level_for(rule: Rule, config: Mapping[str, Mapping[str, Any]]) -> ConfigLevel:
    """The level a rule runs at: its own config entry, else ``all``, else the rule's default."""
    for key in (rule.id, ALL_KEY):
        level = config.get(key, {}).get(ENFORCEMENT_KEY)
        if level == "remediate":
            return "mandatory"
        if level in ("advisory", "mandatory", "disabled"):
            return cast(ConfigLevel, level)
    return rule.level


def options_for(rule: Rule, config: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The rule's own config entry without the level: what ``args.get_config()`` gives a policy."""
    return {k: v for k, v in config.get(rule.id, {}).items() if k != ENFORCEMENT_KEY}
