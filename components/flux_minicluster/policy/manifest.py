"""Reading Kubernetes manifests the same way whatever produced them.

Rules see objects from three sources: the renderer, YAML or JSON on disk, and Pulumi resource
props. Pulumi's props differ from ``kubectl`` YAML in small ways (integers arrive as floats,
``apiVersion``/``kind`` may be missing and only the type token says what the object is), so every
object is normalised once, here, and the rules read it through tolerant accessors that never
raise on a malformed object: a policy reports problems, it does not crash on them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

from flux_minicluster.core.base import jsonvalues
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.policy.model import Manifest

CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "RuntimeClass",
        "IngressClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
        "CSIDriver",
        "VolumeAttachment",
    }
)

# Kinds whose ``spec.template`` is a pod template.
_TEMPLATED_WORKLOADS = frozenset(
    {"Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController"}
)
CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")


def normalize(obj: Mapping[str, Any], type_token: str | None = None) -> Manifest:
    """A plain-dict copy of ``obj``: integral floats become ints, tuples lists, keys strings.

    ``type_token`` is Pulumi's resource type (``kubernetes:batch/v1:Job``); it fills in
    ``apiVersion`` and ``kind`` when the props lack them.
    """
    out: Manifest = jsonvalues.plain(obj)
    if type_token is not None:
        parsed = parse_type_token(type_token)
        if parsed is not None:
            out.setdefault("apiVersion", parsed[0])
            out.setdefault("kind", parsed[1])
    return out


def parse_type_token(token: str) -> tuple[str, str] | None:
    """``("batch/v1", "Job")`` from ``kubernetes:batch/v1:Job``; ``None`` for non-Kubernetes types.

    The core group is spelled ``core/v1`` in type tokens and ``v1`` in manifests.
    """
    parts = token.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return None
    group, _, version = parts[1].partition("/")
    if not group or not version or not parts[2]:
        return None
    return (version if group == "core" else f"{group}/{version}"), parts[2]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dig(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...`` or ``None`` as soon as a step is missing or not a mapping."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def kind(m: Manifest) -> str:
    value = m.get("kind")
    return value if isinstance(value, str) else ""


def name(m: Manifest) -> str:
    value = dig(m, "metadata", "name")
    return value if isinstance(value, str) else ""


def namespace(m: Manifest) -> str | None:
    """The namespace as written; ``None`` when absent (the API server then uses ``default``)."""
    value = dig(m, "metadata", "namespace")
    return value if isinstance(value, str) and value else None


def effective_namespace(m: Manifest) -> str:
    return namespace(m) or "default"


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_dict(value).items() if v is not None}


def labels_of(m: Manifest) -> dict[str, str]:
    return _strings(dig(m, "metadata", "labels"))


def annotations_of(m: Manifest) -> dict[str, str]:
    return _strings(dig(m, "metadata", "annotations"))


def identity(m: Manifest) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when no namespace is written), for messages."""
    ns = namespace(m)
    parts = [kind(m) or "<no kind>", *([ns] if ns else []), name(m) or "<unnamed>"]
    return "/".join(parts)


def is_namespaced(m: Manifest) -> bool:
    return kind(m) not in CLUSTER_SCOPED_KINDS


def is_minicluster_object(m: Manifest) -> bool:
    """Whether we rendered ``m``: it carries the cluster label or our managed-by value."""
    found = labels_of(m)
    return lbl.CLUSTER_LABEL in found or found.get(lbl.MANAGED_BY_LABEL) == lbl.MANAGED_BY


def cluster_of(m: Manifest) -> str | None:
    """The MiniCluster ``m`` belongs to, from the cluster label."""
    return labels_of(m).get(lbl.CLUSTER_LABEL)


def minicluster_name(m: Manifest) -> str | None:
    """The MiniCluster name allow-lists match on: ``app.kubernetes.io/name``, then fallbacks."""
    for source in (labels_of(m), _strings(dig(pod_template(m), "metadata", "labels"))):
        for key in (lbl.NAME_LABEL, lbl.CLUSTER_LABEL):
            if source.get(key):
                return source[key]
    return None


def pod_template(m: Manifest) -> dict[str, Any] | None:
    """The pod template (``metadata`` + ``spec``) of a workload, or a Pod itself."""
    k = kind(m)
    if k == "Pod":
        return m
    if k in _TEMPLATED_WORKLOADS:
        return as_dict(dig(m, "spec", "template"))
    if k == "CronJob":
        return as_dict(dig(m, "spec", "jobTemplate", "spec", "template"))
    return None


def pod_spec(m: Manifest) -> dict[str, Any] | None:
    """The PodSpec of a Pod or of a workload's pod template; ``None`` for other kinds."""
    template = pod_template(m)
    return None if template is None else as_dict(template.get("spec"))


def pod_spec_path(m: Manifest) -> str:
    """Where ``pod_spec`` lives, for messages (``spec.template.spec``)."""
    k = kind(m)
    if k == "Pod":
        return "spec"
    if k == "CronJob":
        return "spec.jobTemplate.spec.template.spec"
    return "spec.template.spec"


def containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("containers[0]", container)`` for every init, regular and ephemeral container."""
    for fld in CONTAINER_FIELDS:
        for i, container in enumerate(as_list(spec.get(fld))):
            if isinstance(container, dict):
                yield f"{fld}[{i}]", container


def data_items(m: Manifest) -> dict[str, str]:
    """A ConfigMap's or Secret's text values: ``data`` (base64-decoded for a Secret) and the rest.

    Values that are not text after decoding are left out.
    """
    out: dict[str, str] = {}
    decode_data = kind(m) == "Secret"
    fields = ("data", "binaryData", "stringData")
    for fld in fields:
        for key, value in as_dict(m.get(fld)).items():
            if not isinstance(value, str):
                continue
            if fld == "binaryData" or (fld == "data" and decode_data):
                try:
                    value = base64.b64decode(value, validate=True).decode("utf-8")
                except (binascii.Error, UnicodeDecodeError):
                    continue
            out[str(key)] = value
    return out
