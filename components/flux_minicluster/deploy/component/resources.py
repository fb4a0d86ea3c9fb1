"""A rendered manifest as the typed pulumi_kubernetes resource that manages it.

Registering typed resources (rather than a YAML bundle) is what makes ``pulumi preview`` show a
per-object, per-field diff, and lets the provider apply its per-kind rules (which fields replace,
how to await). The typed classes accept the renderer's camelCase dicts as they are, so each
top-level field of a manifest maps to one constructor argument and nothing is translated.

A manifest field this module does not know is an error rather than silently dropped: what the
renderer produced and what Pulumi registers must be the same object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import pulumi
import pulumi_kubernetes as k8s

__all__ = ["KINDS", "Kind", "kind_of", "logical_name", "register", "register_as"]

Factory = Callable[..., pulumi.CustomResource]
R = TypeVar("R", bound=pulumi.CustomResource)


@dataclass(frozen=True)
class Kind:
    """One Kubernetes kind: its typed class and which manifest field feeds which argument."""

    api_version: str
    kind: str
    factory: Factory
    fields: Mapping[str, str]  # manifest field (camelCase) -> constructor argument


_META_SPEC: Final = {"metadata": "metadata", "spec": "spec"}

KINDS: Final[tuple[Kind, ...]] = (
    Kind(
        "v1",
        "ConfigMap",
        k8s.core.v1.ConfigMap,
        {
            "metadata": "metadata",
            "data": "data",
            "binaryData": "binary_data",
            "immutable": "immutable",
        },
    ),
    Kind(
        "v1",
        "Secret",
        k8s.core.v1.Secret,
        {
            "metadata": "metadata",
            "type": "type",
            "data": "data",
            "stringData": "string_data",
            "immutable": "immutable",
        },
    ),
    Kind("v1", "Service", k8s.core.v1.Service, _META_SPEC),
    Kind("v1", "Pod", k8s.core.v1.Pod, _META_SPEC),
    Kind("v1", "Namespace", k8s.core.v1.Namespace, _META_SPEC),
    Kind("v1", "PersistentVolume", k8s.core.v1.PersistentVolume, _META_SPEC),
    Kind("v1", "PersistentVolumeClaim", k8s.core.v1.PersistentVolumeClaim, _META_SPEC),
    Kind(
        "v1",
        "ServiceAccount",
        k8s.core.v1.ServiceAccount,
        {
            "metadata": "metadata",
            "automountServiceAccountToken": "automount_service_account_token",
            "imagePullSecrets": "image_pull_secrets",
            "secrets": "secrets",
        },
    ),
    Kind("batch/v1", "Job", k8s.batch.v1.Job, _META_SPEC),
    Kind(
        "rbac.authorization.k8s.io/v1",
        "Role",
        k8s.rbac.v1.Role,
        {"metadata": "metadata", "rules": "rules"},
    ),
    Kind(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        k8s.rbac.v1.RoleBinding,
        {"metadata": "metadata", "roleRef": "role_ref", "subjects": "subjects"},
    ),
    Kind("networking.k8s.io/v1", "NetworkPolicy", k8s.networking.v1.NetworkPolicy, _META_SPEC),
)
_BY_KEY: Final = {(k.api_version, k.kind): k for k in KINDS}


def kind_of(manifest: Mapping[str, Any]) -> Kind:
    """The registration rules for a manifest's apiVersion/kind; a clear error for any other."""
    key = (manifest.get("apiVersion"), manifest.get("kind"))
    found = _BY_KEY.get(key)  # type: ignore[arg-type]  # a bad key just misses
    if found is None:
        known = ", ".join(f"{k.api_version} {k.kind}" for k in KINDS)
        raise ValueError(f"cannot register {key[0]} {key[1]}: known kinds are {known}")
    return found


def logical_name(resource_name: str, manifest: Mapping[str, Any]) -> str:
    """``<resource>-<kind>-<object name>``: stable, and unique among a component's children."""
    name = manifest.get("metadata", {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a {manifest.get('kind')} without metadata.name cannot be registered")
    return f"{resource_name}-{str(manifest['kind']).lower()}-{name}"


def register(
    resource_name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    """Register ``manifest`` (whose values may be Outputs) as its typed resource."""
    kind = kind_of(manifest)
    unknown = sorted(set(manifest) - {"apiVersion", "kind"} - set(kind.fields))
    if unknown:
        raise ValueError(
            f"{kind.kind} {manifest.get('metadata', {}).get('name')!r}: cannot register "
            f"field(s) {', '.join(unknown)}"
        )
    arguments = {
        kind.fields[field]: value for field, value in manifest.items() if field in kind.fields
    }
    return kind.factory(logical_name(resource_name, manifest), opts=opts, **arguments)


def register_as(
    cls: type[R], resource_name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> R:
    """``register``, for a manifest the caller knows the typed class of (the Job, a Service)."""
    resource = register(resource_name, manifest, opts)
    if not isinstance(resource, cls):
        raise TypeError(
            f"{manifest.get('kind')} registers as {type(resource).__name__}, not {cls.__name__}"
        )
    return resource
