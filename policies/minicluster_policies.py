"""The MiniCluster rules as CrossGuard policies, for ``pulumi preview --policy-pack policies/``.

The rules live in ``flux_minicluster.policy`` (pure Python, shared with the offline checker); this
module only adapts them. Each policy turns Pulumi's props into the manifest dict a rule expects
(dicts and lists, integers back from floats, ``apiVersion``/``kind`` from the type token, secrets
unwrapped) and reports the rule's messages. Values Pulumi does not know yet (during preview, say
the certificate a keygen Command will print) keep Pulumi's semantics: a rule that reads one raises
``UnknownValueError``, which the analyzer turns into an advisory "can't run policy during preview"
note instead of a false verdict, and a rule that never reads it runs as usual.

A burst stack's StackReference to its root (``pulumi:pulumi:StackReference``, props ``name``,
``outputs``, ``secretOutputNames``) becomes the manifest ``stackref.stack_reference_manifest``
describes, so ``burst-group-consistent`` compares the burst's objects with the root's outputs
under ``pulumi preview`` too. Secret outputs (``curveCert``) arrive unwrapped like any secret;
the rule reads the certificate only when the root exports no ``curvePublicKey``.

Tests import this module directly (with ``policies/`` on ``sys.path``); never import
``__main__``, which starts the analyzer's server and blocks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Secret,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

# The pack runs with policies/ as its working directory; the rules are in the project's package,
# which lives in components/ (and is also installed in the pack's virtualenv).
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent / "components")
if _PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, _PACKAGE_ROOT)

from flux_minicluster.core.deployed import stackoutputs  # noqa: E402
from flux_minicluster.policy import manifest as mf  # noqa: E402
from flux_minicluster.policy import stackref  # noqa: E402
from flux_minicluster.policy.model import Manifest, Rule  # noqa: E402
from flux_minicluster.policy.rules import ALL_RULES  # noqa: E402

__all__ = ["ALL", "POLICIES", "policy_for", "to_manifest"]

_UNKNOWNS = frozenset(
    {
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_STRING_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_OBJECT_VALUE,
    }
)
_LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}


def _checked(value: Any, path: list[str]) -> Any:
    if isinstance(value, str) and value in _UNKNOWNS:
        raise UnknownValueError(value, path)
    return value


class _KnownDict(dict[str, Any]):
    """A plain dict (rules test ``isinstance(x, dict)``) that raises on reading an unknown value.

    This keeps Pulumi's own semantics: a policy is skipped during preview only when it actually
    reads a value that is not known yet, never because some unrelated field is unknown.
    """

    def __init__(self, items: dict[str, Any], path: list[str]) -> None:
        super().__init__(items)
        self._path = path

    def __getitem__(self, key: str) -> Any:
        return _checked(super().__getitem__(key), [*self._path, key])

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            return default
        return self[key]  # through __getitem__, which guards unknowns (dict.get would not)

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[k] for k in self]

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        return [(k, self[k]) for k in self]


class _KnownList(list[Any]):
    """The list counterpart of ``_KnownDict``."""

    def __init__(self, items: list[Any], path: list[str]) -> None:
        super().__init__(items)
        self._path = path

    def __getitem__(self, index: Any) -> Any:
        value = super().__getitem__(index)
        if isinstance(index, slice):
            return [_checked(v, [*self._path, "[]"]) for v in value]
        return _checked(value, [*self._path, str(index)])

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))


def _known(value: Any, path: list[str]) -> Any:
    """Props as rule input: proxies read through, secrets unwrapped, integral floats as ints.

    Unknown values stay in place as Pulumi's sentinels, guarded by ``_KnownDict``/``_KnownList``.
    """
    if isinstance(value, Secret):
        return _known(value.value, path)
    if isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key in list(value):
            try:
                item = value[key]
            except UnknownValueError as err:
                item = err.unknown_type_sentinel
            items[str(key)] = _known(item, [*path, str(key)])
        return _KnownDict(items, path)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        elems: list[Any] = []
        for i in range(len(value)):
            try:
                item = value[i]
            except UnknownValueError as err:
                item = err.unknown_type_sentinel
            elems.append(_known(item, [*path, str(i)]))
        return _KnownList(elems, path)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def to_manifest(resource_type: str, props: Mapping[str, Any]) -> Manifest | None:
    """The manifest a rule reads for a Pulumi resource; ``None`` for types rules do not judge.

    A Kubernetes resource becomes its object; a StackReference the manifest
    ``stackref.stack_reference_manifest`` builds, with its outputs read lazily: an output that is
    not known yet raises only when a rule reads it.
    """
    if resource_type == stackoutputs.STACK_REFERENCE_TYPE:
        return _stack_reference(props)
    parsed = mf.parse_type_token(resource_type)
    if parsed is None:
        return None
    manifest: Manifest = _known(props, [])
    if "apiVersion" not in manifest:
        manifest["apiVersion"] = parsed[0]
    if "kind" not in manifest:
        manifest["kind"] = parsed[1]
    return manifest


def _stack_reference(props: Mapping[str, Any]) -> Manifest:
    known: _KnownDict = _known(props, [])
    # dict.get: the raw values, so that an unknown one stays unread until a rule reads it.
    name = dict.get(known, "name")
    manifest = stackref.stack_reference_manifest(name if isinstance(name, str) else "", {})
    manifest["outputs"] = dict.get(known, "outputs", manifest["outputs"])
    return _KnownDict(manifest, [])


def _schema(rule: Rule) -> PolicyConfigSchema | None:
    if not rule.options:
        return None
    return PolicyConfigSchema(properties={o.name: o.schema() for o in rule.options})


def _resource_validator(rule: Rule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        manifest = to_manifest(args.resource_type, args.props)
        if manifest is None:
            return
        for message in rule.check_resource(manifest, args.get_config()):
            report_violation(message, None)

    return validate


def _stack_validator(rule: Rule) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        manifests: list[Manifest] = []
        urns: dict[int, str] = {}
        for resource in args.resources:
            manifest = to_manifest(resource.resource_type, resource.props)
            if manifest is not None:
                manifests.append(manifest)
                urns[id(manifest)] = resource.urn
        for obj, message in rule.check_stack(manifests, args.get_config()):
            report_violation(message, None if obj is None else urns.get(id(obj)))

    return validate


def policy_for(rule: Rule) -> ResourceValidationPolicy | StackValidationPolicy:
    """The CrossGuard policy that runs ``rule``: same id, level, description and remediation."""
    common: dict[str, Any] = {
        "name": rule.id,
        "description": rule.description,
        "enforcement_level": _LEVELS[rule.level],
        "config_schema": _schema(rule),
        "remediation_steps": rule.remediation,
    }
    if rule.is_stack:
        return StackValidationPolicy(validate=_stack_validator(rule), **common)
    return ResourceValidationPolicy(validate=_resource_validator(rule), **common)


POLICIES: dict[str, ResourceValidationPolicy | StackValidationPolicy] = {
    rule.id: policy_for(rule) for rule in ALL_RULES
}
ALL: list[ResourceValidationPolicy | StackValidationPolicy] = list(POLICIES.values())
