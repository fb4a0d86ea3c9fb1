"""The entry points: what an API server would refuse in a set of objects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from flux_minicluster.kubecheck.crossobject import cross_object_errors
from flux_minicluster.kubecheck.manifest import identity
from flux_minicluster.kubecheck.objectrules import object_errors
from flux_minicluster.kubecheck.schemas import DEFAULT_VERSION, schema_errors


def semantic_errors(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the API server would refuse, or what would leave a MiniCluster unable to start.

    Each line is ``Kind/name: path: message``. The set is checked as a whole: a subdomain must
    name a headless Service in it, and a Service selector must select pods it creates (the Job
    controller's ``job-name`` and completion-index labels count as present on a Job's pods).
    """
    objects = list(manifests)
    out: list[str] = []
    for m in objects:
        prefix = identity(m)
        out += [f"{prefix}: {line}" for line in object_errors(m)]
    out += list(cross_object_errors(objects))
    return out


def refusals(
    manifests: Iterable[Mapping[str, Any]], versions: Iterable[str] = (DEFAULT_VERSION,)
) -> list[str]:
    """Everything an API server would refuse in this set of objects; empty when it accepts them.

    Each object's strict-schema errors for every release in ``versions`` (none: the schemas are
    not checked), as ``Kind/name (k8s 1.34): path: message``, then the set's
    ``semantic_errors``.
    """
    objects = list(manifests)
    out = [
        f"{identity(m)} (k8s {version}): {error}"
        for m in objects
        for version in versions
        for error in schema_errors(m, version)
    ]
    return out + semantic_errors(objects)
