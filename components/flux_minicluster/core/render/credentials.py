"""The Secrets of v1alpha1's multi-user mode and RESTful server, and where their values come from.

* ``<name>-restful``: the RESTful API server's user, token and session secret key;
* ``<name>-users``: each user's password (``password-<user>``), which the entrypoint gives to
  ``useradd`` and to the RESTful server's user database;
* ``<name>-munge``: the munge key, unless the spec names its own Secret (``flux.mungeSecret``).

A value the spec gives is used as it is; every other one is derived from the cluster's CURVE
certificate (core/flux/credentials.py). With the certificate known (``minicluster render``) the
values are written in; without it (the Pulumi component, which holds the certificate as a secret
Output) each is a placeholder token, and ``derivations`` says how the Pulumi layer computes it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from flux_minicluster.core.base import layout, placeholders
from flux_minicluster.core.flux import credentials
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import meta

__all__ = ["derivations", "secrets"]

Derivation = Callable[[str], str]


def derivations(plan: MiniClusterPlan) -> dict[str, Derivation]:
    """Each placeholder the plan's Secrets hold, and how to derive its value from the cert."""
    out: dict[str, Derivation] = {}
    restful = plan.restful
    if restful is not None:
        if restful.token is None:
            out[placeholders.RESTFUL_TOKEN] = credentials.restful_token
        if restful.secret_key is None:
            out[placeholders.RESTFUL_SECRET_KEY] = credentials.restful_secret_key
    if plan.multi_user is not None:
        for user in plan.multi_user.generated_passwords:
            out[placeholders.password(user)] = partial(_password, user=user)
    if plan.makes_munge_secret:
        out[placeholders.MUNGE_KEY] = credentials.munge_key
    return out


def _password(cert: str, *, user: str) -> str:
    return credentials.password(cert, user)


def secrets(plan: MiniClusterPlan, certificate: str | None) -> list[dict[str, Any]]:
    """The Secrets the plan needs, values derived from ``certificate`` (placeholders if None)."""
    derive = derivations(plan)

    def value(token: str, given: str | None) -> str:
        if given is not None:
            return given
        return derive[token](certificate) if certificate is not None else token

    out = []
    restful = plan.restful
    if restful is not None:
        data = {
            layout.RESTFUL_USER: str(plan.restful_user),
            layout.RESTFUL_TOKEN: value(placeholders.RESTFUL_TOKEN, restful.token),
            layout.RESTFUL_SECRET_KEY: value(placeholders.RESTFUL_SECRET_KEY, restful.secret_key),
        }
        out.append(_secret(plan, plan.names.restful_secret, data))
    if plan.multi_user is not None:
        given = {u.name: u.password for u in plan.spec.users}
        data = {
            layout.user_password(user): value(placeholders.password(user), given[user])
            for user in plan.multi_user.users
        }
        out.append(_secret(plan, plan.names.users_secret, data))
    if plan.makes_munge_secret:
        data = {layout.MUNGE_KEY: value(placeholders.MUNGE_KEY, None)}
        out.append(_secret(plan, plan.names.munge_secret, data))
    return out


def _secret(plan: MiniClusterPlan, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta.metadata(plan, name),
        "type": "Opaque",
        "stringData": data,
    }
