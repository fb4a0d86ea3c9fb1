"""Facts between the objects of one set, which no single object's check can see.

A MiniCluster depends on them: unique names, the pod subdomain naming a headless Service of the
set, every Service selector selecting pods the set creates (with the labels the Job controller
adds), and every referenced ConfigMap or Secret key existing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.kubecheck.manifest import identity, items, mapping

# Labels the Job controller adds to every pod of a Job; a Service may select on them.
_JOB_NAME_LABELS: Final = ("job-name", "batch.kubernetes.io/job-name")


def _pod_label_sets(manifests: list[Mapping[str, Any]]) -> list[tuple[str, dict[str, str], int]]:
    """``(namespace, labels, completions)`` for every pod the set will create.

    A Job's pods get ``job-name`` and (Indexed) the completion index from the Job controller;
    ``completions`` is how many index values exist (0 for a bare Pod, which has none).
    """
    out = []
    for m in manifests:
        meta = mapping(m.get("metadata"))
        namespace = str(meta.get("namespace", "default"))
        if m.get("kind") == "Pod":
            out.append((namespace, dict(mapping(meta.get("labels"))), 0))
        elif m.get("kind") == "Job":
            spec = mapping(m.get("spec"))
            labels = dict(
                mapping(mapping(mapping(spec.get("template")).get("metadata")).get("labels"))
            )
            for key in _JOB_NAME_LABELS:
                labels[key] = str(meta.get("name", ""))
            indexed = spec.get("completionMode") == "Indexed"
            completions = spec.get("completions") if indexed else 0
            out.append((namespace, labels, completions if isinstance(completions, int) else 0))
    return out


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str], completions: int) -> bool:
    for key, value in selector.items():
        if key == lbl.COMPLETION_INDEX_LABEL and completions:
            if not (isinstance(value, str) and value.isdigit() and int(value) < completions):
                return False
        elif labels.get(key) != value:
            return False
    return True


def cross_object_errors(manifests: list[Mapping[str, Any]]) -> Iterator[str]:  # noqa: C901
    """Facts between objects: unique names, subdomains, selectors, referenced ConfigMap keys."""
    seen: set[tuple[str, str, str]] = set()
    headless: set[tuple[str, str]] = set()
    maps: dict[tuple[str, str, str], set[str]] = {}
    for m in manifests:
        meta = mapping(m.get("metadata"))
        ident = (str(m.get("kind")), str(meta.get("namespace", "default")), str(meta.get("name")))
        if ident in seen:
            yield f"{identity(m)}: metadata.name: another {ident[0]} in {ident[1]} has this name"
        seen.add(ident)
        spec = mapping(m.get("spec"))
        if m.get("kind") == "Service" and spec.get("clusterIP") == "None":
            headless.add((ident[1], ident[2]))
        if m.get("kind") in ("ConfigMap", "Secret"):
            keys = set(mapping(m.get("data"))) | set(mapping(m.get("stringData")))
            maps[ident] = keys | set(mapping(m.get("binaryData")))
    pods = _pod_label_sets(manifests)
    for m in manifests:
        meta = mapping(m.get("metadata"))
        namespace = str(meta.get("namespace", "default"))
        spec = mapping(m.get("spec"))
        if m.get("kind") == "Service":
            selector = mapping(spec.get("selector"))
            if selector and not any(
                ns == namespace and _selects(selector, labels, n) for ns, labels, n in pods
            ):
                yield (
                    f"{identity(m)}: spec.selector: selects no pod of this set ({dict(selector)})"
                )
        pod_spec, where = None, ""
        if m.get("kind") == "Job":
            pod_spec = mapping(mapping(spec.get("template")).get("spec"))
            where = "spec.template.spec"
        elif m.get("kind") == "Pod":
            pod_spec, where = spec, "spec"
        if pod_spec is None:
            continue
        subdomain = pod_spec.get("subdomain")
        if subdomain is not None and (namespace, str(subdomain)) not in headless:
            yield (
                f"{identity(m)}: {where}.subdomain: no headless Service named {subdomain!r} in "
                f"{namespace}; pod host names would not resolve"
            )
        for i, volume in enumerate(items(pod_spec.get("volumes"))):
            volume = mapping(volume)
            for source, kind, field in (
                ("configMap", "ConfigMap", "name"),
                ("secret", "Secret", "secretName"),
            ):
                ref = mapping(volume.get(source))
                known = maps.get((kind, namespace, str(ref.get(field))))
                if not ref or known is None:
                    continue  # an object that exists outside this set
                for j, item in enumerate(items(ref.get("items"))):
                    key = mapping(item).get("key")
                    if key not in known:
                        yield (
                            f"{identity(m)}: {where}.volumes[{i}].{source}.items[{j}].key: "
                            f"{key!r} is not a key of {kind} {ref.get(field)}"
                        )
