"""Secrets a MiniCluster needs besides its CURVE certificate, derived from that certificate.

v1alpha1's multi-user mode needs a munge key and user passwords, and its RESTful API server a
token and a secret key for its sessions; the spec may give some, and the rest must be made once,
stay the same across ``pulumi up`` and renders, stay out of any ConfigMap, and change when the
cluster's keys are rotated. Deriving them from the certificate's secret key (HKDF with SHA-256,
RFC 5869, one label per purpose) gives exactly that with nothing more to keep: the certificate is
already a secret in the stack's state and a Secret in the cluster, a rotation of it (the keygen's
``rotation``) rotates them, and no derived value reveals the key or another value.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import unicodedata
from typing import Final

from flux_minicluster.core.flux import certificate

__all__ = [
    "MUNGE_KEY_BYTES",
    "munge_key",
    "password",
    "password_problem",
    "restful_secret_key",
    "restful_token",
]

# munged wants at least 32 bytes of key; its own generator writes 1024.
MUNGE_KEY_BYTES: Final = 1024
_SALT: Final = b"flux-minicluster"


def _hkdf(secret: bytes, label: str, length: int) -> bytes:
    prk = hmac.new(_SALT, secret, hashlib.sha256).digest()
    out, block = b"", b""
    counter = 1
    while len(out) < length:
        block = hmac.new(prk, block + label.encode() + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def _secret_of(cert_text: str) -> bytes:
    return certificate.parse(cert_text).secret_key.encode("ascii")


def munge_key(cert_text: str) -> str:
    """A munge key (base64 text of 1024 bytes: munged takes the file's bytes as the key)."""
    raw = _hkdf(_secret_of(cert_text), "munge.key", MUNGE_KEY_BYTES)
    return base64.b64encode(raw).decode("ascii")


def restful_token(cert_text: str) -> str:
    return _hkdf(_secret_of(cert_text), "restful token", 24).hex()


def restful_secret_key(cert_text: str) -> str:
    return _hkdf(_secret_of(cert_text), "restful secret key", 32).hex()


def password(cert_text: str, user: str) -> str:
    """A user's password: 20 characters from a safe alphabet (no quoting needed anywhere)."""
    raw = _hkdf(_secret_of(cert_text), f"password {user}", 15)
    return base64.b32encode(raw).decode("ascii").lower()[:20]


def password_problem(value: str) -> str | None:
    """Why a password the spec gives cannot be set, if it cannot; the message never shows it.

    ``chpasswd`` reads ``name:password`` lines, so a newline in a password would start a line
    that sets another account's password (``pw\\nroot:chosen``); the RESTful server strips what
    it is given. A password is one line of printable text: every control character is refused.
    """
    bad = next((ch for ch in value if unicodedata.category(ch) == "Cc"), None)
    if bad is None:
        return None
    return (
        f"must not contain control characters such as a newline or a tab (found {bad!r}): a "
        "password is one line of printable characters"
    )
