"""What a policy rule is, independent of where it runs.

A rule is a plain function over Kubernetes manifest dicts plus the metadata a user needs to act on
a violation (id, level, remediation) and the options it reads. Keeping the rule free of Pulumi lets
the same function judge ``pulumi preview`` resources (through the CrossGuard pack) and manifests on
disk (through the offline checker), so the two can never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Manifest: TypeAlias = dict[str, Any]
"""A Kubernetes object as ``kubectl`` prints it (camelCase), after ``manifest.normalize``."""

Settings: TypeAlias = Mapping[str, Any]
"""A rule's options after defaults are applied (see ``Rule.settings``)."""

Level: TypeAlias = Literal["mandatory", "advisory"]
ConfigLevel: TypeAlias = Literal["mandatory", "advisory", "disabled"]
OptionType: TypeAlias = Literal["integer", "boolean", "string", "array"]

ResourceCheck: TypeAlias = Callable[[Manifest, Settings], list[str]]
"""One object in, one message per problem out."""

StackCheck: TypeAlias = Callable[[Sequence[Manifest], Settings], list[tuple[Manifest | None, str]]]
"""All objects in, ``(object the problem is about, or None for the stack, message)`` out."""

ENFORCEMENT_KEY = "enforcementLevel"
"""The key Pulumi's policy config uses for the level; never a rule option."""

_RULE_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Option:
    """One configurable knob of a rule, with the default used when config does not set it."""

    name: str
    type: OptionType
    default: Any
    description: str

    def schema(self) -> dict[str, Any]:
        """The JSON-schema fragment Pulumi's ``PolicyConfigSchema`` expects for this option."""
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            out["items"] = {"type": "string"}
        out["default"] = list(self.default) if isinstance(self.default, tuple) else self.default
        return out

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (as JSON, YAML or Pulumi's float-typed config gives it) fits."""
        if self.type == "integer":
            if isinstance(value, bool):
                return False
            return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if self.type == "boolean":
            return isinstance(value, bool)
        if self.type == "string":
            return isinstance(value, str)
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)

    def coerce(self, value: Any) -> Any:
        """The value in its Python type: Pulumi hands integers over as floats."""
        if self.type == "integer" and isinstance(value, float):
            return int(value)
        if self.type == "array":
            return tuple(value)
        return value


@dataclass(frozen=True)
class Rule:
    """A policy: metadata plus exactly one of a resource check or a stack check.

    ``engine_only`` marks a rule about how the Pulumi engine deploys an object (its awaits):
    it judges resources of a stack and MiniClusters checked as the component registers them, but
    not manifests that are applied as they are (``kubectl apply``, GitOps), which no engine
    awaits."""

    id: str
    description: str
    level: Level
    remediation: str
    resource_check: ResourceCheck | None = None
    stack_check: StackCheck | None = None
    options: tuple[Option, ...] = field(default_factory=tuple)
    engine_only: bool = False

    def __post_init__(self) -> None:
        if not _RULE_ID.match(self.id):
            raise ValueError(f"rule id {self.id!r} is not kebab-case")
        if (self.resource_check is None) == (self.stack_check is None):
            raise ValueError(f"rule {self.id} needs exactly one of resource_check, stack_check")
        if self.engine_only and self.stack_check is not None:
            raise ValueError(f"rule {self.id}: only a resource check can be engine_only")
        if ENFORCEMENT_KEY in {o.name for o in self.options}:
            raise ValueError(f"rule {self.id}: {ENFORCEMENT_KEY} is not an option name")

    @property
    def is_stack(self) -> bool:
        return self.stack_check is not None

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def settings(self, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Option values: the code-side defaults overlaid with ``config`` (this rule's section).

        Unknown keys and ``enforcementLevel`` are ignored here; ``config.validate`` reports them.
        A value of the wrong type falls back to the default so that a policy never crashes the
        Pulumi analyzer (the CLI validates config against the schema before it gets here).
        """
        out = {o.name: o.coerce(o.default) for o in self.options}
        for key, value in (config or {}).items():
            opt = self.option(key)
            if opt is not None and opt.accepts(value):
                out[key] = opt.coerce(value)
        return out

    def check_resource(
        self, manifest: Manifest, config: Mapping[str, Any] | None = None
    ) -> list[str]:
        """Messages for one object; empty for a stack rule or a compliant object."""
        if self.resource_check is None:
            return []
        return self.resource_check(manifest, self.settings(config))

    def check_stack(
        self, manifests: Sequence[Manifest], config: Mapping[str, Any] | None = None
    ) -> list[tuple[Manifest | None, str]]:
        """``(object or None, message)`` pairs over all objects; empty for a resource rule."""
        if self.stack_check is None:
            return []
        return self.stack_check(manifests, self.settings(config))
