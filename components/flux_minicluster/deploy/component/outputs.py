"""Where rendered manifests meet Pulumi Outputs: placeholder tokens become Outputs.

The renderer is pure and never sees a secret, so where the certificate, its public key or a
bursted cluster's lead address belong it writes plain tokens. Before a manifest is registered,
every string holding a token is swapped for an ``Output`` of the same string with the token
replaced, so the structure of each object stays exactly what the renderer produced.

The certificate is checked here, in an ``apply``, because it may only become known at deploy time
(a keygen Command's stdout, another stack's output): a text Flux would refuse fails the
deployment with the source named, instead of reaching brokers that would never connect. Such a
failure is an ``ApplyError`` (``usererror``), which ``pulumi up`` prints without a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.kube import names
from flux_minicluster.deploy.component.usererror import ApplyError

__all__ = [
    "check_lead_address",
    "checked_certificate",
    "lead_address_problem",
    "normalize_certificate",
    "public_key_of",
    "substitute",
]


def substitute(value: Any, replacements: Mapping[str, pulumi.Output[str]]) -> Any:
    """``value`` with each string that holds a token turned into an Output of the replaced text.

    Dicts and lists are rebuilt around the Outputs (the typed resources accept Outputs nested in
    plain dicts); everything without a token is returned unchanged, so plain values stay plain.
    """
    if isinstance(value, str):
        return _substitute_text(value, replacements)
    if isinstance(value, dict):
        return {k: substitute(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, replacements) for v in value]
    return value


def _substitute_text(text: str, replacements: Mapping[str, pulumi.Output[str]]) -> Any:
    # Longest token first, so a token that contains another is replaced whole.
    found = sorted((t for t in replacements if t in text), key=len, reverse=True)
    if not found:
        return text

    def replace(values: list[Any]) -> str:
        out = text
        for token, replacement in zip(found, values, strict=True):
            out = out.replace(token, str(replacement))
        return out

    return pulumi.Output.all(*(replacements[t] for t in found)).apply(replace)


def normalize_certificate(text: str) -> str:
    """A certificate as a file: pulumi-command trims stdout's final newline; put it back."""
    return text.rstrip() + "\n"


def checked_certificate(text: pulumi.Input[str | None], source: str) -> pulumi.Output[str]:
    """The certificate text, secret, once Flux's rules accept it; else fail naming ``source``."""

    def check(value: str | None) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ApplyError(
                f"the curve certificate from {source} is empty: it printed no certificate. "
                "Under Pulumi's mocks (pulumi.runtime.set_mocks) nothing runs a Command: use "
                "flux_minicluster.testing.MiniClusterMocks, which answers it, or pass curve_cert"
            )
        normalized = normalize_certificate(value)
        try:
            certificates.parse(normalized)
        except certificates.CertificateError as err:
            raise ApplyError(
                f"the curve certificate from {source} is not one Flux accepts: {err}"
            ) from None
        return normalized

    return pulumi.Output.secret(pulumi.Output.from_input(text).apply(check))


def public_key_of(certificate: pulumi.Output[str]) -> pulumi.Output[str]:
    """The certificate's public key, deliberately not secret: checks compare it across clusters."""
    return pulumi.Output.unsecret(
        certificate.apply(lambda text: certificates.parse(text).public_key)
    )


def check_lead_address(address: pulumi.Input[str], source: str) -> pulumi.Output[str]:
    """The lead broker's address, once it is a DNS name or IPv4 address; else fail naming it."""

    def check(value: str | None) -> str:
        if not isinstance(value, str):
            raise ApplyError(f"{source}: the lead broker address must be a string, got {value!r}")
        problem = lead_address_problem(value)
        if problem:
            raise ApplyError(f"{source}: the lead broker address {problem}")
        return value.strip()

    return pulumi.Output.from_input(address).apply(check)


def lead_address_problem(address: str) -> str | None:
    """Why a plain lead address cannot be used (None when it can), for checks before deploying.

    It goes into broker.toml (a TOML string and a tcp:// host) and the hostlist, so it must be one
    DNS name or IPv4 address: brackets, commas, quotes or spaces would change what brokers read.
    """
    problem = names.host_address(address.strip())
    return None if problem is None else f"{problem}, got {address!r}"
