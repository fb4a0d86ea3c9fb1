"""What a MiniCluster learns only as it deploys: the certificate, a burst's lead and its group.

The core renders every object once, with placeholder tokens where values that are Pulumi
Outputs go (``core.base.placeholders``): the curve certificate a keygen Command prints or another
stack holds, and a bursted cluster's lead address and group, read from its root's outputs. This
module resolves those Outputs, all of them and only here, and has the core check them and write
each token's text (``core.render.fillins``); ``registration`` then puts the text into the
objects as it registers them (``outputs.substitute``). Resolving is done in two Outputs that do
not wait for each other, so a preview shows what it can:

* the certificate's: secret (its public key excepted), known once the Command has run;
* the lead's: its address, then, with a group, the rank order, known once the root's are.

A refusal (a certificate Flux would not read, a lead address broker.toml cannot hold, a group
that does not declare this burst) fails the deployment with the argument named, without a
traceback (``usererror``); a burst's objects all wait for its checked group (``gate``), so none is
created for a cluster its root does not declare.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi

from flux_minicluster.core.base import placeholders
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import fillins
from flux_minicluster.deploy.component.usererror import ApplyError, in_apply

__all__ = ["Resolved", "resolve"]

T = TypeVar("T")


@dataclass(frozen=True)
class Resolved:
    """Every placeholder's text as an Output, and what the lead's resolution tells the outputs."""

    replacements: Mapping[str, pulumi.Output[str]]
    """Each token the rendering holds, by the Output of its text."""
    lead_host: pulumi.Input[str]
    """Rank 0's name inside the cluster, or the lead broker a burst joins."""
    hostlist: pulumi.Input[str]
    """Every broker host in rank order, as the ``hostlist`` file has it."""
    gate: pulumi.Output[Any] | None
    """A burst's checked group: no object may be created for a cluster its root does not
    declare."""
    rank_order: Mapping[str, pulumi.Output[str]]
    """A deferred group's rank-order tokens: the Job's hash covers them, as it covers a known
    rank order."""


def resolve(
    plan: MiniClusterPlan,
    certificate: pulumi.Input[str | None],
    certificate_source: str,
    lead_broker: pulumi.Input[str] | None,
    burst_group: pulumi.Input[Any] | None,
) -> Resolved:
    """The placeholders of ``plan``'s rendering, resolved from the certificate (named by
    ``certificate_source`` when it is refused) and, for a burst, its lead and group."""
    replacements = _certificate(plan, certificate, certificate_source)
    if lead_broker is None:
        return Resolved(replacements, plan.names.lead_fqdn, plan.hostlist, None, {})
    lead_texts = pulumi.Output.from_input(lead_broker).apply(
        lambda given: _checked(fillins.lead_values, given)
    )
    lead = _split(lead_texts, (placeholders.LEAD_ADDRESS,))
    address = lead[placeholders.LEAD_ADDRESS]
    if burst_group is None:
        hostlist = lead_texts.apply(lambda known: fillins.hostlist(plan, known))
        return Resolved({**replacements, **lead}, address, hostlist, None, {})
    group_texts = pulumi.Output.all(address, burst_group).apply(
        lambda known: _checked(fillins.group_values, plan, *known)
    )
    group = _split(group_texts, fillins.GROUP)
    rank_order = {token: group[token] for token in placeholders.RANK_ORDER}
    # The group's hostlist is the whole hostlist; every object waits for it: it fails for a
    # group that does not declare this burst.
    hostlist = group[placeholders.RANK_ORDER_HOSTLIST]
    return Resolved({**replacements, **lead, **group}, address, hostlist, hostlist, rank_order)


def _certificate(
    plan: MiniClusterPlan, raw: pulumi.Input[str | None], source: str
) -> dict[str, pulumi.Output[str]]:
    """The certificate's tokens: secret Outputs, its public key excepted."""

    def values(text: str | None) -> dict[str, str]:
        if not isinstance(text, str) or not text.strip():
            raise ApplyError(
                f"the curve certificate from {source} is empty: it printed no certificate. "
                "Under Pulumi's mocks (pulumi.runtime.set_mocks) nothing runs a Command: use "
                "flux_minicluster.testing.MiniClusterMocks, which answers it, or pass curve_cert"
            )
        try:
            return fillins.certificate_values(plan, text)
        except certificates.CertificateError as err:
            raise ApplyError(
                f"the curve certificate from {source} is not one Flux accepts: {err}"
            ) from None

    resolved: pulumi.Output[dict[str, str]] = pulumi.Output.from_input(raw).apply(values)
    texts: pulumi.Output[dict[str, str]] = pulumi.Output.secret(resolved)
    split = _split(texts, fillins.certificate_tokens(plan))
    return {
        token: pulumi.Output.unsecret(text) if token in fillins.PUBLIC else text
        for token, text in split.items()
    }


def _split(
    texts: pulumi.Output[dict[str, str]], tokens: tuple[str, ...]
) -> dict[str, pulumi.Output[str]]:
    """One Output per token of an Output of all their texts."""

    def text_of(token: str) -> pulumi.Output[str]:
        return texts.apply(lambda known: known[token])

    return {token: text_of(token) for token in tokens}


def _checked(check: Callable[..., T], *args: Any) -> T:
    """``check(*args)``, a refusal said as ``pulumi up`` says a user's mistake."""
    try:
        return check(*args)
    except SpecError as err:
        raise in_apply(err) from err
