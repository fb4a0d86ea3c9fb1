"""Limits the Kubernetes API server enforces that a MiniCluster spec must stay within.

Validation refuses a spec past them before anything is rendered, and the API-server checker of
rendered objects (``kubecheck``) applies the same numbers, so both read them from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

# Kubernetes refuses an Indexed Job with more completions than this.
MAX_INDEXED_COMPLETIONS: Final = 100_000
# Durations and counts the API server stores as int64.
INT64_MAX: Final = 2**63 - 1
INT32_MAX: Final = 2**31 - 1
# Longest DNS label: a hostname, a Service name, a container name.
MAX_LABEL_LENGTH: Final = 63

# --- sizes: what the API server and its etcd refuse as too large ------------------------------
# The checks below take a manifest as plain data, so that rendering (which names the spec field
# that made an object large) and kubecheck (which names the object's own field) apply
# the same rule; tests/e2e/test_server_validation.py holds each against a real API server.

# A ConfigMap's data and binaryData, a Secret's data: at most 1 MiB in total (the API server's
# core.MaxSecretSize; a ConfigMap counts its values, a Secret its decoded values).
MAX_DATA_BYTES: Final = 1024 * 1024
# Every annotation of one object's metadata (key and value bytes): at most 256 KiB.
MAX_ANNOTATIONS_BYTES: Final = 256 * 1024
# What etcd stores in one request (its --max-request-bytes, 1.5 MiB by default): the object as
# the API server writes it, defaults and managedFields included.
MAX_STORED_BYTES: Final = 1536 * 1024


def data_bytes(manifest: Mapping[str, Any]) -> int:
    """The bytes of a ConfigMap's or Secret's data as the API server counts them."""
    import base64
    import binascii

    kind = manifest.get("kind")
    total = 0
    if kind == "ConfigMap":
        total += sum(len(str(v).encode()) for v in _mapping(manifest.get("data")).values())
    encoded = _mapping(manifest.get("binaryData" if kind == "ConfigMap" else "data"))
    plain = _mapping(manifest.get("stringData")) if kind == "Secret" else {}
    for key, value in encoded.items():
        if key in plain:
            continue  # stringData wins over data
        try:
            total += len(base64.b64decode(str(value), validate=True))
        except (binascii.Error, ValueError):
            total += len(str(value).encode())
    total += sum(len(str(v).encode()) for v in plain.values())
    return total


def annotations_bytes(metadata: Any) -> int:
    """The total bytes of one metadata's annotations, keys and values."""
    values = _mapping(_mapping(metadata).get("annotations"))
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in values.items())


# Plain `kubectl apply` (client-side apply) records the object it sends, as JSON, in this
# annotation, and the API server holds it to MAX_ANNOTATIONS_BYTES with the object's others: an
# object the server takes (a ConfigMap of large scripts, up to 1 MiB of data) can be refused to
# `kubectl apply`, and taken by `kubectl apply --server-side`, which records no such annotation.
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
# Characters Go's encoding/json writes as \u escapes (6 bytes) where Python's json.dumps writes
# them as they are: <, > and & (HTML-safe JSON), and the line and paragraph separators.
_GO_ESCAPED: Final = {"<": 5, ">": 5, "&": 5, "\u2028": 3, "\u2029": 3}


def client_apply_annotations_bytes(manifest: Mapping[str, Any]) -> int:
    """The bytes of ``manifest``'s annotations once `kubectl apply` (client-side) has added its
    last-applied annotation: the object's own, and that one, whose value is the object without
    it as kubectl encodes it (Go's encoding/json: compact, keys sorted, with the escapes of
    ``_GO_ESCAPED``, and a final newline)."""
    metadata = _mapping(manifest.get("metadata"))
    own = {
        k: v
        for k, v in _mapping(metadata.get("annotations")).items()
        if k != LAST_APPLIED_ANNOTATION
    }
    # kubectl writes the annotations it keeps back, an empty mapping when there are none.
    body = {**manifest, "metadata": {**metadata, "annotations": own}}
    text = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    escaped = sum(text.count(ch) * extra for ch, extra in _GO_ESCAPED.items())
    value = len(text.encode()) + escaped + 1
    return annotations_bytes(body.get("metadata")) + len(LAST_APPLIED_ANNOTATION) + value


def client_apply_problem(manifest: Mapping[str, Any]) -> str | None:
    """Why plain `kubectl apply` of ``manifest`` would be refused while the object itself is
    fine (``--server-side`` applies it), if it would."""
    size = client_apply_annotations_bytes(manifest)
    if size <= MAX_ANNOTATIONS_BYTES:
        return None
    return (
        f"too large for client-side `kubectl apply`: its {LAST_APPLIED_ANNOTATION} annotation "
        f"would bring its annotations to {size} bytes, and the API server accepts at most "
        f"{MAX_ANNOTATIONS_BYTES} (256 KiB); apply it with `kubectl apply --server-side` (or "
        "`kubectl create`)"
    )


# The managedFields field set of a value is at most this many times its compact JSON (UTF-8):
# each key costs its JSON plus 4 bytes against its JSON plus 2 in the object, a leaf 2 ({})
# against at least 1, and a list item at most its JSON twice escaped plus 8, or an index
# ("i:N") where the JSON has a falsy item of 1 or 2 bytes (0, "", [], {}), which is the worst:
# about 6.5 times for a long list of zeros. tests/core/test_sizes.py holds the bound.
FIELDSET_JSON_RATIO: Final = 8


def stored_bytes_may_exceed(text: str, limit: int = MAX_STORED_BYTES) -> bool:
    """Whether an object whose compact JSON is ``text`` could be past ``limit`` as stored: the
    object and its field set together are at most 1 + FIELDSET_JSON_RATIO times the JSON, so a
    small object needs no count at all (rendering counts every object it makes)."""
    return (1 + FIELDSET_JSON_RATIO) * len(text.encode()) > limit


def stored_bytes(manifest: Mapping[str, Any]) -> int:
    """An upper estimate of the bytes the API server asks etcd to store for ``manifest``.

    The server stores the object in protobuf, smaller than its JSON, plus the managedFields it
    records on every write: the field set of the object (``f:name``, ``k:{"name":"X"}``...) as
    JSON. This is the object's compact JSON plus that field set, spelled as the server does;
    the server's own defaults add a few hundred bytes per container, inside the margin protobuf
    leaves.
    """
    text = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode()) + _fieldset_bytes(manifest)


def _json_bytes(text: str) -> int:
    """``len(json.dumps(text))``: for printable ASCII (nearly every key and value), the quotes
    plus one backslash before each quote or backslash, counted without encoding; a manifest has
    thousands of keys, and writing each was a quarter of validating the operator's corpus."""
    if text.isascii() and text.isprintable():
        return len(text) + 2 + text.count('"') + text.count("\\")
    return len(json.dumps(text))


def _fieldset_bytes(value: Any) -> int:
    """The JSON bytes of the managedFields field set of ``value`` (FieldsV1)."""
    if isinstance(value, Mapping):
        # {"f:key":<child>,...}: the key's JSON, 2 for "f:", 1 for ':' and 1 for ','
        return 2 + sum(_json_bytes(str(k)) + 4 + _fieldset_bytes(v) for k, v in value.items())
    if isinstance(value, list):
        total = 2
        for index, item in enumerate(value):
            if isinstance(item, Mapping) and "name" in item:
                key = json.dumps({"name": item["name"]}, separators=(",", ":"))
                total += _json_bytes(key) + 4 + 7 + _fieldset_bytes(item)  # "k:...":{".":{},...}
            else:
                total += _json_bytes(f"v:{json.dumps(item)}" if item else f"i:{index}")
                total += 4
        return total
    return 2  # {}


def size_problems(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(field of the object, message)`` for each size the API server would refuse."""
    out = []
    kind = manifest.get("kind")
    if kind in ("ConfigMap", "Secret") and (size := data_bytes(manifest)) > MAX_DATA_BYTES:
        # The server names the whole object for a ConfigMap (data and binaryData together),
        # and data for a Secret (stringData is merged into it).
        out.append(
            (
                "" if kind == "ConfigMap" else "data",
                f"{size} bytes of data; the API server accepts at most {MAX_DATA_BYTES} "
                f"(1 MiB) in a {kind}",
            )
        )
    metas = [("metadata", manifest.get("metadata"))]
    template = _mapping(_mapping(manifest.get("spec")).get("template"))
    if template:
        metas.append(("spec.template.metadata", template.get("metadata")))
    for where, metadata in metas:
        if (size := annotations_bytes(metadata)) > MAX_ANNOTATIONS_BYTES:
            out.append(
                (
                    f"{where}.annotations",
                    f"{size} bytes of annotations; the API server accepts at most "
                    f"{MAX_ANNOTATIONS_BYTES} (256 KiB) in total",
                )
            )
    if (
        not out
        and stored_bytes_may_exceed(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False))
        and (size := stored_bytes(manifest)) > MAX_STORED_BYTES
    ):
        out.append(
            (
                "",
                f"about {size} bytes as the API server would store it; etcd stores at most "
                f"{MAX_STORED_BYTES} (1.5 MiB) per request (the server answers 'etcdserver: "
                "request is too large', and for a Job an error about its controller-uid labels)",
            )
        )
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
