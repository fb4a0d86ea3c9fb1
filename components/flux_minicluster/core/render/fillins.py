"""The text of every placeholder a rendering holds, once the values only a deployment knows arrive.

The renderer writes placeholder tokens (``core.base.placeholders``) where the curve certificate,
what is derived from it, a bursted cluster's lead address and a deferred rank order go, because
those values are Pulumi Outputs when the component renders: a keygen Command's stdout, another
stack's outputs. When they resolve, the Pulumi layer hands them here, in one call per kind, and
substitutes the text this module writes. So the rules about those values (Flux's certificate
format, a lead address fit for broker.toml, a group that declares this burst) and the text they
become are the core's, checked and written in one place, without Pulumi:

* ``certificate_values``: the certificate (as Flux reads the file), its public key and v1alpha1's
  credentials derived from it; all secret but the public key (``PUBLIC``);
* ``lead_values``: a burst's lead address;
* ``group_values``: when a burst's group comes from its root's outputs, the group's rank order,
  written by the functions that write a known one (``broker.rank_order_values``).

Each raises ``SpecError`` naming the argument a user must fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flux_minicluster.core.base import jsonvalues, placeholders
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.kube import names
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import broker, credentials
from flux_minicluster.core.spec.models import BurstedCluster, FluxBroker
from flux_minicluster.core.validation.crossfield import burst_membership_problem

__all__ = [
    "GROUP",
    "LEAD",
    "PUBLIC",
    "certificate_tokens",
    "certificate_values",
    "group_values",
    "hostlist",
    "lead_address_problem",
    "lead_values",
    "normalize_certificate",
]

PUBLIC: Final = frozenset({placeholders.CURVE_PUBLIC_KEY})
"""The certificate-derived tokens whose text is not secret: checks compare public keys across
clusters."""
GROUP: Final = (*placeholders.RANK_ORDER, placeholders.LEAD_NAME)
"""The tokens ``group_values`` writes."""
LEAD: Final = "lead_broker"
_GROUP_ARG: Final = "burst_group"


def normalize_certificate(text: str) -> str:
    """A certificate as a file: pulumi-command trims stdout's final newline; put it back."""
    return text.rstrip() + "\n"


def certificate_tokens(plan: MiniClusterPlan) -> tuple[str, ...]:
    """The tokens ``certificate_values`` writes for ``plan``, known before the certificate is."""
    return (
        placeholders.CURVE_CERT,
        placeholders.CURVE_PUBLIC_KEY,
        *credentials.derivations(plan),
    )


def certificate_values(plan: MiniClusterPlan, text: str) -> dict[str, str]:
    """The certificate, its public key and the credentials derived from it, by token.

    Raises ``certificates.CertificateError`` when Flux would refuse the text."""
    normalized = normalize_certificate(text)
    parsed = certificates.parse(normalized)
    values = {
        placeholders.CURVE_CERT: normalized,
        placeholders.CURVE_PUBLIC_KEY: parsed.public_key,
    }
    for token, derive in credentials.derivations(plan).items():
        values[token] = derive(normalized)
    return values


def lead_address_problem(address: str) -> str | None:
    """Why a plain lead address cannot be used (None when it can).

    It goes into broker.toml (a TOML string and a tcp:// host) and the hostlist, so it must be one
    DNS name or IPv4 address: brackets, commas, quotes or spaces would change what brokers read.
    """
    problem = names.host_address(address.strip())
    return None if problem is None else f"{problem}, got {address!r}"


def lead_values(address: Any) -> dict[str, str]:
    """A bursted cluster's lead address (``lead_broker``), checked, by its token.

    Raises ``SpecError`` at ``lead_broker``."""
    if not isinstance(address, str):
        raise SpecError(Problem(LEAD, f"the lead broker address must be a string, got {address!r}"))
    if problem := lead_address_problem(address):
        raise SpecError(Problem(LEAD, f"the lead broker address {problem}"))
    return {placeholders.LEAD_ADDRESS: address.strip()}


def hostlist(plan: MiniClusterPlan, values: Mapping[str, str]) -> str:
    """The ``hostlist`` (every broker host in rank order) with the deploy-time ``values`` written
    in: a burst's lead address, or its whole deferred rank order."""
    text = plan.hostlist
    for token, value in values.items():
        text = text.replace(token, value)
    return text


def group_values(plan: MiniClusterPlan, lead_address: str, group: Any) -> dict[str, str]:
    """A deferred plan's rank order (``GROUP``'s tokens) once ``group`` (as a root publishes it)
    and the lead's checked address are known. Raises ``SpecError`` at ``burst_group.<field>``."""
    lead, clusters = _parse_group(group, plan)
    known = lead.model_copy(update={"address": lead_address})
    return broker.rank_order_values(plan, known, clusters)


def _parse_group(raw: Any, plan: MiniClusterPlan) -> tuple[FluxBroker, list[BurstedCluster]]:
    """The group's values, checked; a SpecError naming ``burst_group.<field>`` otherwise.

    A cluster the root does not declare, or whose maxSize is larger than the size the root
    declares for it, is refused by the one rule of membership
    (``crossfield.burst_membership_problem``)."""
    value = jsonvalues.plain(raw)
    if not isinstance(value, Mapping):
        raise SpecError(Problem(_GROUP_ARG, f"must be a mapping, got {type(value).__name__}"))
    problems: list[Problem] = []
    lead_name = _lead_name(value.get("lead_name"), plan, problems)
    lead_size = _positive(value.get("lead_size"), "lead_size", problems)
    lead_port = _positive(value.get("lead_port"), "lead_port", problems)
    if lead_port is not None and lead_port > 65535:
        problems.append(
            Problem(f"{_GROUP_ARG}.lead_port", f"must be at most 65535, got {lead_port}")
        )
    clusters = _clusters(value.get("clusters"), problems)
    if not problems:
        membership = burst_membership_problem(plan.name, plan.spec.max_size, clusters)
        if membership is not None:
            problems.append(Problem(f"{_GROUP_ARG}.clusters", membership[1]))
    if problems or lead_name is None or lead_size is None or lead_port is None:
        raise SpecError(problems)
    lead = FluxBroker(
        address=placeholders.LEAD_ADDRESS, name=lead_name, size=lead_size, port=lead_port
    )
    return lead, clusters


def _lead_name(value: Any, plan: MiniClusterPlan, problems: list[Problem]) -> str | None:
    where = f"{_GROUP_ARG}.lead_name"
    if not isinstance(value, str) or not value:
        problems.append(Problem(where, "required: the root MiniCluster's name"))
    elif problem := names.dns1123_label(value):
        problems.append(Problem(where, problem))
    elif value == plan.name:
        problems.append(Problem(where, "names this cluster itself; a burst needs its own name"))
    else:
        return value
    return None


def _clusters(raw: Any, problems: list[Problem]) -> list[BurstedCluster]:
    if not isinstance(raw, list):
        problems.append(Problem(f"{_GROUP_ARG}.clusters", "must be a list of {name, size}"))
        return []
    clusters: list[BurstedCluster] = []
    for i, entry in enumerate(raw):
        where = f"clusters[{i}]"
        name = entry.get("name") if isinstance(entry, Mapping) else None
        size = _positive(
            entry.get("size") if isinstance(entry, Mapping) else None, f"{where}.size", problems
        )
        if not isinstance(name, str) or names.dns1123_label(name):
            problems.append(Problem(f"{_GROUP_ARG}.{where}.name", "must be a DNS label"))
        elif size is not None:
            clusters.append(BurstedCluster(name=name, size=size))
    return clusters


def _positive(value: Any, field: str, problems: list[Problem]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(
            Problem(f"{_GROUP_ARG}.{field}", f"must be a whole number >= 1, got {value!r}")
        )
        return None
    return value
