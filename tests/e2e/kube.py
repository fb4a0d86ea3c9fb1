"""Reading what landed in a control plane, and comparing it with what we rendered."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane, object_path

from flux_minicluster.core.kube.quantity import parse_quantity

MANAGED_BY = "app.kubernetes.io/managed-by=flux-minicluster"
# What a MiniCluster creates, namespaced and not: checked for leftovers after a destroy.
NAMESPACED = (
    ("v1", "configmaps"),
    ("v1", "secrets"),
    ("v1", "services"),
    ("v1", "pods"),
    ("batch/v1", "jobs"),
    ("networking.k8s.io/v1", "networkpolicies"),
)


def live(cp: ControlPlane, obj: Mapping[str, Any]) -> Any:
    """The live object that ``obj`` (a rendered manifest) names, or None."""
    meta = obj.get("metadata", {})
    return cp.get(object_path(obj["kind"], meta["name"], meta.get("namespace"), obj["apiVersion"]))


def job(cp: ControlPlane, namespace: str, name: str) -> Any:
    return cp.get(object_path("Job", name, namespace, "batch/v1"))


def uid(cp: ControlPlane, kind: str, namespace: str, name: str, api: str = "v1") -> str | None:
    obj = cp.get(object_path(kind, name, namespace, api))
    return None if obj is None else str(obj["metadata"]["uid"])


def condition(obj: Mapping[str, Any], kind: str) -> str | None:
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def managed_objects(cp: ControlPlane) -> list[str]:
    """Every object in the cluster that carries our managed-by label, and every non-system
    namespace: what a destroy must leave behind is nothing."""
    out = []
    for api, plural in NAMESPACED:
        base = "/api/v1" if api == "v1" else f"/apis/{api}"
        for item in cp.items(f"{base}/{plural}", MANAGED_BY):
            meta = item["metadata"]
            out.append(f"{plural}/{meta.get('namespace')}/{meta['name']}")
    for item in cp.items("/api/v1/namespaces", MANAGED_BY):
        out.append(f"namespaces/{item['metadata']['name']}")
    return out


def wait_until(what: str, predicate: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def read_rendered(folder: Path) -> list[dict[str, Any]]:
    """The objects `minicluster render -d` wrote, in apply order (patches not included)."""
    return [
        doc
        for path in sorted(folder.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


def as_stored(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A rendered manifest as the server stores what it says: a Secret's stringData is data."""
    out = dict(obj)
    if obj.get("kind") == "Secret" and "stringData" in obj:
        data = dict(out.get("data") or {})
        for key, value in out.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        out["data"] = data
    return out


def differences(want: Any, got: Any, path: str = "") -> list[str]:
    """Where ``got`` (live) does not hold what ``want`` (rendered) sets: every field we set must
    be there with our value; the server may add defaults and status around it."""
    if isinstance(want, Mapping):
        if not isinstance(got, Mapping):
            return [f"{path}: want a mapping, live has {got!r}"]
        out = []
        for key, value in want.items():
            if key not in got:
                out.append(f"{path}.{key}: missing (rendered {value!r})"[:300])
            else:
                out += differences(value, got[key], f"{path}.{key}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{path}: rendered {len(want)} items, live has {got!r}"[:300]]
        pairs = enumerate(zip(want, got, strict=True))
        return [d for i, (w, g) in pairs for d in differences(w, g, f"{path}[{i}]")]
    if want == got:
        return []
    if _same_quantity(want, got):
        return []
    return [f"{path}: rendered {want!r}, live {got!r}"[:300]]


def _same_quantity(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    try:
        return parse_quantity(a) == parse_quantity(b)
    except (TypeError, ValueError):
        return False
