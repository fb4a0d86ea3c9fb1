"""Stand-ins for values the renderer must not see or cannot know yet.

The Pulumi layer holds the CURVE certificate as a secret ``Output`` (from the keygen ``Command``,
from a StackReference or from the spec), and a bursted cluster learns its lead's address and
name from another stack; an ``Output`` cannot be placed inside the plain dicts the renderer
returns. So the renderer writes these tokens where those values belong, and the Pulumi layer swaps
each token for its ``Output`` before registering the resource. Nothing secret ever passes through
the pure core, and a manifest rendered with tokens is still complete and schema-valid.

The certificate tokens are letters, digits and underscores: they survive YAML and JSON without
quoting, a substring search finds them, and they cannot be mistaken for a real certificate (which
has ``metadata``/``curve`` sections) or a Z85 key (40 characters from a wider alphabet). The lead
tokens are lowercase letters only, because they stand where a DNS name goes (a hostlist, a label
value, broker.toml), must pass the same checks as the real value, and contain no digit that the
hostlist compressor could split.

A burst stack's rank order (broker.toml, the hostlist and their digest on the pod template) is
known only once its root's outputs are: the plan of such a burst says so
(``MiniClusterPlan.rank_order_deferred``), the renderer writes the ``RANK_ORDER`` tokens where
that text goes, and ``render.broker.rank_order_values`` writes the text for each token once the
group is known, with the same functions that write a known rank order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

__all__ = [
    "ALL",
    "BROKER_CONFIG_HASH",
    "BROKER_TOML",
    "CURVE_CERT",
    "CURVE_PUBLIC_KEY",
    "LEAD_ADDRESS",
    "LEAD_NAME",
    "MUNGE_KEY",
    "RANK_ORDER",
    "RANK_ORDER_HOSTLIST",
    "RESTFUL_SECRET_KEY",
    "RESTFUL_TOKEN",
    "find",
    "password",
]

# The whole certificate text: the curve Secret's ``stringData["curve.cert"]``.
CURVE_CERT: Final = "MINICLUSTER_PLACEHOLDER_CURVE_CERT"
# The certificate's public key: the curve Secret's public-key annotation.
CURVE_PUBLIC_KEY: Final = "MINICLUSTER_PLACEHOLDER_CURVE_PUBLIC_KEY"

# A bursted cluster's lead broker address (DNS name or IPv4), e.g. a root stack's output.
LEAD_ADDRESS: Final = "fluxminiclusterleadaddress"
# A bursted cluster's lead MiniCluster name, when it comes from the root stack's outputs.
LEAD_NAME: Final = "fluxminiclusterleadname"

# A burst's rank order while its group is not known: broker.toml (a ConfigMap value), the
# hostlist (without the file's final newline) and the broker-config digest (a pod annotation).
BROKER_TOML: Final = "MINICLUSTER_PLACEHOLDER_BROKER_TOML"
RANK_ORDER_HOSTLIST: Final = "MINICLUSTER_PLACEHOLDER_RANK_ORDER_HOSTLIST"
BROKER_CONFIG_HASH: Final = "MINICLUSTER_PLACEHOLDER_BROKER_CONFIG_HASH"
RANK_ORDER: Final = (BROKER_TOML, RANK_ORDER_HOSTLIST, BROKER_CONFIG_HASH)

# v1alpha1's secrets derived from the certificate (core/flux/credentials.py), while it is an Output.
RESTFUL_TOKEN: Final = "MINICLUSTER_PLACEHOLDER_RESTFUL_TOKEN"
RESTFUL_SECRET_KEY: Final = "MINICLUSTER_PLACEHOLDER_RESTFUL_SECRET_KEY"
MUNGE_KEY: Final = "MINICLUSTER_PLACEHOLDER_MUNGE_KEY"
PASSWORD_PREFIX: Final = "MINICLUSTER_PLACEHOLDER_PASSWORD_"


def password(user: str) -> str:
    """The token for ``user``'s generated password (the name hex-encoded: any user name fits)."""
    return PASSWORD_PREFIX + user.encode().hex()


ALL: Final = (
    CURVE_CERT,
    CURVE_PUBLIC_KEY,
    LEAD_ADDRESS,
    LEAD_NAME,
    *RANK_ORDER,
    RESTFUL_TOKEN,
    RESTFUL_SECRET_KEY,
    MUNGE_KEY,
)


def find(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(dotted path, token)`` for every string in ``value`` that holds a placeholder.

    For the Pulumi layer (which must replace each one) and for tests and checks that must prove
    none is left in what reaches a cluster.
    """
    if isinstance(value, str):
        for token in ALL:
            # CURVE_CERT is a prefix of no other token, but CURVE_PUBLIC_KEY must be matched
            # as a whole word so that one token is never reported as the other.
            if _contains_token(value, token):
                yield path, token
        start = value.find(PASSWORD_PREFIX)
        if start != -1:
            end = start + len(PASSWORD_PREFIX)
            while end < len(value) and value[end] in "0123456789abcdef":
                end += 1
            yield path, value[start:end]
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from find(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from find(item, f"{path}[{i}]")


def _contains_token(text: str, token: str) -> bool:
    start = text.find(token)
    while start != -1:
        end = start + len(token)
        if end == len(text) or not (text[end].isalnum() or text[end] == "_"):
            return True
        start = text.find(token, start + 1)
    return False
