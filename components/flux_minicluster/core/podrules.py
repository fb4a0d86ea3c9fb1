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

__all__ = ["LOCALHOST", "claims_problem", "profile_problem"]

LOCALHOST: Final = "Localhost"


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
