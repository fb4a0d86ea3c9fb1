"""Every use of the Pulumi SDK beyond its public API, in one place, each with its reason.

The product reads two things the SDK does not expose publicly:

* every config value of the stack, to refuse a misspelt ``flux-minicluster:*`` key instead of
  ignoring it (the public ``pulumi.Config`` reads one known key at a time);
* the resource options of each registration under the mock monitor (parent, dependencies,
  ignoreChanges, ...), which the offline stack renderer and the tests record; the public
  ``Mocks.new_resource`` receives only the type, name and inputs.

Both read SDK internals that may change in a release. ``tests/deploy/test_sdkinternals.py``
exercises each against the installed SDK, so an upgrade that breaks one fails loudly there, and
pyproject.toml pins the range of SDK versions they were checked with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi.runtime

__all__ = ["RegistrationOptions", "config_values", "registration_options"]


def config_values() -> dict[str, Any]:
    """Every config value the program was given, ``project:key`` -> value (JSON decoded).

    The engine hands config to a Python program in ``PULUMI_CONFIG`` (read by the public
    ``get_config_env``) and through ``set_all_config``, whose store is private (``CONFIG``).
    """
    from pulumi.runtime.config import CONFIG

    raw: dict[str, Any] = {**pulumi.runtime.get_config_env(), **CONFIG.get()}
    return {key: _decode(value) for key, value in raw.items()}


def _decode(value: Any) -> Any:
    """Structured config arrives as JSON text; plain strings stay strings."""
    import json

    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


@dataclass(frozen=True)
class RegistrationOptions:
    """The resource options the engine would act on, as the program sent them."""

    parent: str = ""
    dependencies: tuple[str, ...] = ()
    property_dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    additional_secret_outputs: tuple[str, ...] = ()
    delete_before_replace: bool | None = None
    deleted_with: str = ""
    retain_on_delete: bool | None = None
    protect: bool | None = None


def registration_options(request: Any) -> RegistrationOptions:
    """The options of a ``RegisterResourceRequest`` or ``ReadResourceRequest`` (the protocol's
    message, as the mock monitor receives it)."""
    if not hasattr(request, "ignoreChanges"):  # a read: only parent, dependencies, secrets
        return RegistrationOptions(
            parent=request.parent,
            dependencies=tuple(request.dependencies),
            additional_secret_outputs=tuple(request.additionalSecretOutputs),
        )
    return RegistrationOptions(
        parent=request.parent,
        dependencies=tuple(request.dependencies),
        property_dependencies={
            key: tuple(deps.urns) for key, deps in request.propertyDependencies.items()
        },
        ignore_changes=tuple(request.ignoreChanges),
        replace_on_changes=tuple(request.replaceOnChanges),
        additional_secret_outputs=tuple(request.additionalSecretOutputs),
        delete_before_replace=(
            request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None
        ),
        deleted_with=request.deletedWith,
        retain_on_delete=request.retainOnDelete if request.HasField("retainOnDelete") else None,
        protect=request.protect if request.HasField("protect") else None,
    )
