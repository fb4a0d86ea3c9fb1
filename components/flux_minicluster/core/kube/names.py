"""The name rules the Kubernetes API server enforces, checked before anything is sent to it.

A MiniCluster's name becomes pod host names, Service names and label values, and a bad one is
otherwise reported by the API server halfway through a ``pulumi up``. Each check returns None when
the value is fine or one sentence saying what is allowed, so callers can wrap it in a ``Problem``
with the field path in front. The rules and limits follow ``k8s.io/apimachinery``'s
``validation`` package.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "env_var_name",
    "host_address",
    "label_key",
    "label_value",
    "port",
    "shell_variable",
]

_LABEL_PART: Final = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE: Final = re.compile(_LABEL_PART)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(rf"{_LABEL_PART}(?:\.{_LABEL_PART})*")
_QUALIFIED_NAME_RE: Final = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_ENV_VAR_RE: Final = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")

LABEL_MAX: Final = 63
SUBDOMAIN_MAX: Final = 253

_LABEL_RULE: Final = (
    "must be a DNS-1123 label: at most 63 lowercase letters, digits or '-', "
    "starting and ending with a letter or digit"
)
_SUBDOMAIN_RULE: Final = (
    "must be a DNS-1123 subdomain: at most 253 characters, dot-separated parts of lowercase "
    "letters, digits or '-', each starting and ending with a letter or digit"
)
_NAME_RULE: Final = (
    "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)
_LABEL_VALUE_RULE: Final = f"must be a label value: empty, or {_NAME_RULE}"
_LABEL_KEY_RULE: Final = (
    f"must be a label key: an optional DNS-1123 subdomain prefix and '/', then a name of "
    f"{_NAME_RULE}"
)
_ENV_VAR_RULE: Final = (
    "must be an environment variable name: letters, digits, '-', '_' or '.', "
    "not starting with a digit"
)


def _too_long(value: str, limit: int) -> str:
    return f" (it has {len(value)} characters)" if len(value) > limit else ""


def dns1123_label(value: str) -> str | None:
    """Names that become host names: MiniCluster and Service names, pod host names."""
    if len(value) <= LABEL_MAX and _DNS1123_LABEL_RE.fullmatch(value):
        return None
    return _LABEL_RULE + _too_long(value, LABEL_MAX)


def iana_service_name(value: str) -> str | None:
    """Container port names: IANA service names, at most 15 characters with a letter (a
    Service's ports are named with DNS-1123 labels instead, up to 63 characters)."""
    if (
        len(value) <= 15
        and _DNS1123_LABEL_RE.fullmatch(value)
        and "--" not in value
        and re.search("[a-z]", value)
    ):
        return None
    return (
        "must be an IANA service name: at most 15 lowercase letters, digits or '-', with a "
        "letter, no '--', starting and ending with a letter or digit"
    )


_CONFIG_KEY_RE: Final = re.compile(r"[-._a-zA-Z0-9]+")


def config_key(value: str) -> str | None:
    """ConfigMap and Secret keys (file names in the mounted volume)."""
    if len(value) <= 253 and _CONFIG_KEY_RE.fullmatch(value):
        return None
    return "a key must be at most 253 letters, digits, '-', '_' or '.'"


_DNS1035_LABEL_RE: Final = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")
_SHELL_VAR_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IPV4_RE: Final = re.compile(
    r"(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
)


def dns1035_label(value: str) -> str | None:
    """Service names: a DNS-1123 label that also starts with a letter."""
    if len(value) <= LABEL_MAX and _DNS1035_LABEL_RE.fullmatch(value):
        return None
    return (
        "must be a DNS-1035 label (a Service name): at most 63 lowercase letters, digits or '-', "
        "starting with a letter and ending with a letter or digit" + _too_long(value, LABEL_MAX)
    )


def shell_variable(value: str) -> str | None:
    """Names exported in generated bash: letters, digits and '_', not starting with a digit."""
    if _SHELL_VAR_RE.fullmatch(value):
        return None
    return "must be a shell variable name: letters, digits or '_', not starting with a digit"


def host_address(value: str) -> str | None:
    """One host a broker can dial: an IPv4 address or a DNS name (no port, list or spaces)."""
    if _IPV4_RE.fullmatch(value) or dns1123_subdomain(value) is None:
        return None
    return "must be one IPv4 address or DNS name (no port, comma, brackets or spaces)"


def dns1123_subdomain(value: str) -> str | None:
    """Names of most objects (ConfigMaps, Secrets, Jobs) and label-key prefixes."""
    if len(value) <= SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return None
    return _SUBDOMAIN_RULE + _too_long(value, SUBDOMAIN_MAX)


def csi_driver(value: str) -> str | None:
    """A CSI driver's name: a DNS-1123 subdomain of at most 63 characters."""
    if len(value) <= LABEL_MAX and dns1123_subdomain(value) is None:
        return None
    return (
        "must be a DNS-1123 subdomain of at most 63 characters (a CSI driver's name, e.g. "
        "csi.example.com): dot-separated parts of lowercase letters, digits or '-', each "
        "starting and ending with a letter or digit" + _too_long(value, LABEL_MAX)
    )


def label_value(value: str) -> str | None:
    """Label values; empty is allowed, as Kubernetes allows it."""
    if not value or (len(value) <= LABEL_MAX and _QUALIFIED_NAME_RE.fullmatch(value)):
        return None
    return _LABEL_VALUE_RULE + _too_long(value, LABEL_MAX)


def label_key(value: str) -> str | None:
    """Label and annotation keys: ``[prefix/]name`` with a DNS-subdomain prefix."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return f"{_LABEL_KEY_RULE}; the prefix before '/' is empty"
    if "/" in prefix:
        return f"{_LABEL_KEY_RULE}; it has more than one '/'"
    if slash and dns1123_subdomain(prefix):
        return f"{_LABEL_KEY_RULE}; the prefix {prefix!r} is not a DNS-1123 subdomain"
    if not name:
        return f"{_LABEL_KEY_RULE}; the name part is empty"
    if len(name) > LABEL_MAX or not _QUALIFIED_NAME_RE.fullmatch(name):
        return _LABEL_KEY_RULE + _too_long(name, LABEL_MAX)
    return None


def env_var_name(value: str) -> str | None:
    """Environment variable names in a container's ``environment`` map."""
    if not _ENV_VAR_RE.fullmatch(value):
        return _ENV_VAR_RULE
    if value in (".", "..") or value.startswith(".."):
        return f"{_ENV_VAR_RULE}, and not '.', '..' or starting with '..'"
    return None


_USER_NAME_RE: Final = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


def user_name(value: str) -> str | None:
    """v1alpha1 users: a name ``useradd`` takes in any image (its portable subset, at most 32
    characters) that is also a Secret key once prefixed (``password-<name>``)."""
    if _USER_NAME_RE.fullmatch(value):
        return None
    return (
        "must be a Linux user name: at most 32 lowercase letters, digits, '_' or '-', "
        "starting with a letter or '_'"
    )


def port(value: object) -> str | None:
    """Container and Service ports; takes any object because YAML may hand over "8050"."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return None
    return "must be a port number: an integer from 1 to 65535"


def image_reference(value: str) -> str | None:
    """A container image reference (``ubuntu:24.04``, ``ghcr.io/org/app@sha256:...``): one word.

    The API server refuses only leading and trailing whitespace; a space inside
    (``ubuntu:24.04 latest``) is accepted there and fails every pull (``InvalidImageName``), so it
    is refused here, before anything is created.
    """
    if not value.strip():
        return "must not be empty"
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        return (
            f"{value!r} is not an image reference: it has a space or a control character "
            "(an image is one word, such as ubuntu:24.04 or ghcr.io/org/app@sha256:...)"
        )
    return None
