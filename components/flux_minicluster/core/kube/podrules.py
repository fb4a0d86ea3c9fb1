"""Rules of the Kubernetes pod API that a MiniCluster spec can break, written once.

The spec passes a container's ``resources`` and the security profiles through to the pods as
given; the API server then refuses a few shapes of them that its schema allows. Each rule here
is applied twice, from the same function: to the spec by validation (so the problem is named at
the spec field, before anything is created) and to rendered objects by ``kubecheck``, whose
rules the e2e suite holds against a real API server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from flux_minicluster.core.kube import names
from flux_minicluster.core.kube.limits import INT32_MAX

__all__ = [
    "JOB_CONTROLLER_LABELS",
    "LOCALHOST",
    "MAX_ID",
    "claims_problem",
    "id_problem",
    "profile_problem",
    "toleration_problems",
]

LOCALHOST: Final = "Localhost"
MAX_ID: Final = INT32_MAX
"""The largest user or group ID the API server takes (``runAsUser``, ``fsGroup``...)."""
JOB_CONTROLLER_LABELS: Final = (
    "job-name",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-completion-index",
)
"""The labels the Job controller sets on its pods: the Job's generated selector is made of them,
and the API server refuses a pod template that gives one another value."""
NO_EXECUTE: Final = "NoExecute"


def profile_problem(profile: Mapping[str, Any]) -> str | None:
    """A seccomp or AppArmor profile (``{type, localhostProfile}``): the server wants the
    profile's name exactly when the type is Localhost."""
    kind, name = profile.get("type"), profile.get("localhostProfile")
    if kind == LOCALHOST and not name:
        return "localhostProfile: required when type is Localhost (the profile to load)"
    if kind != LOCALHOST and name is not None:
        return f"localhostProfile: set only when type is Localhost (the type is {kind!r})"
    return None


def claims_problem(claims: Iterable[Mapping[str, Any]], pod_claims: Iterable[str]) -> str | None:
    """A container's ``resources.claims``: each must name one of the pod's ``resourceClaims``.
    A MiniCluster's pod declares none, so no container claim can be met."""
    declared = set(pod_claims)
    unknown = [str(c.get("name")) for c in claims if c.get("name") not in declared]
    if not unknown:
        return None
    why = "which a MiniCluster's pod does not declare" if not declared else "which has none"
    return f"claims: {', '.join(unknown)} must name a claim of the pod's resourceClaims, {why}"


def id_problem(value: object) -> str | None:
    """A user or group ID (``runAsUser``, ``runAsGroup``, ``fsGroup``, a supplemental group)."""
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_ID:
        return f"must be between 0 and {MAX_ID}, got {value}"
    return None


def toleration_problems(toleration: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(field, message)`` for what the API server refuses in one toleration (``{key,
    operator, value, effect, tolerationSeconds}``, Kubernetes' spelling) beyond its schema."""
    key, value = toleration.get("key"), toleration.get("value")
    operator = toleration.get("operator") or "Equal"
    problems = []
    if key and (msg := names.label_key(str(key))):
        problems.append(("key", msg))
    if operator == "Exists" and value:
        problems.append(("value", "must be empty with operator Exists"))
    elif isinstance(value, str) and value and (msg := names.label_value(value)):
        problems.append(("value", msg))
    if not key and operator != "Exists":
        problems.append(("operator", "must be Exists when the key is empty"))
    if toleration.get("tolerationSeconds") is not None and toleration.get("effect") != NO_EXECUTE:
        problems.append(("effect", f"must be {NO_EXECUTE} when tolerationSeconds is set"))
    return problems
