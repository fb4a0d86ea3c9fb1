"""A bursted cluster whose rank order comes from its root's outputs, known only at deploy time.

A burst stack reads its root's lead name and size, the lead's port and the list of clusters the
root bursts to through a StackReference: Outputs. They change text inside the burst's objects
(broker.toml's hosts, the ``hostlist`` file, the broker-config digest on the pod template, the
burst-group label), never which objects exist: those follow from the burst's own name and size.
So the core plans the burst with its group deferred (``loading.with_deferred_group``): the
rendering carries a placeholder wherever the group's text goes, and every object is registered
(a preview shows them all). Here the group's Outputs are resolved and checked, and the core
writes each placeholder's text from them (``render.broker.rank_order_values``), which the
component substitutes like any other placeholder.

A cluster the root does not declare, or whose maxSize is larger than the size the root declares
for it (``crossfield.burst_membership_problem``, the one rule), fails before any object is
created: every object waits for the checked group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import pulumi

from flux_minicluster.core.base import jsonvalues, placeholders
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.kube import names
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.render import broker
from flux_minicluster.core.spec.models import BurstedCluster, FluxBroker
from flux_minicluster.core.validation.crossfield import burst_membership_problem
from flux_minicluster.deploy.component.usererror import in_apply

__all__ = ["BurstClusterArgs", "BurstGroupArgs", "resolve"]

_WHERE = "burst_group"


class BurstClusterArgs(TypedDict):
    name: str
    size: int


class BurstGroupArgs(TypedDict):
    """The bursting group as a root publishes it (its stack outputs)."""

    lead_name: str
    """The root MiniCluster's name: its ranks other than 0 are ``<lead_name>-[1-...]``."""
    lead_size: int
    """The root's maxSize: how many ranks it holds before the burst clusters."""
    lead_port: int
    """The port the lead's rank 0 is reached on from outside its cluster."""
    clusters: list[BurstClusterArgs]
    """Every cluster the root bursts to, in rank order; this one must be among them."""


def resolve(
    plan: plans.MiniClusterPlan,
    group: pulumi.Input[BurstGroupArgs],
    address: pulumi.Output[str],
) -> dict[str, pulumi.Output[str]]:
    """The text of each of ``plan``'s group placeholders (``placeholders.RANK_ORDER`` and the
    lead's name), once ``group`` and the lead ``address`` resolve and the group is checked:
    written by the core (``broker.rank_order_values``). Each Output fails for a bad group."""

    def values(resolved: list[Any]) -> dict[str, str]:
        lead_address, raw = resolved
        try:
            lead, clusters = _parse(raw, plan)
        except SpecError as err:  # said by `pulumi up` as its lines, without a traceback
            raise in_apply(err) from err
        return broker.rank_order_values(
            plan, lead.model_copy(update={"address": lead_address}), clusters
        )

    texts = pulumi.Output.all(address, group).apply(values)

    def text_of(token: str) -> pulumi.Output[str]:
        return texts.apply(lambda t: t[token])

    return {token: text_of(token) for token in (*placeholders.RANK_ORDER, placeholders.LEAD_NAME)}


def _parse(raw: Any, plan: plans.MiniClusterPlan) -> tuple[FluxBroker, list[BurstedCluster]]:
    """The group's values, checked; a SpecError naming ``burst_group.<field>`` otherwise."""
    value = jsonvalues.plain(raw)
    if not isinstance(value, Mapping):
        raise SpecError(Problem(_WHERE, f"must be a mapping, got {type(value).__name__}"))
    problems: list[Problem] = []
    lead_name = value.get("lead_name")
    if not isinstance(lead_name, str) or not lead_name:
        problems.append(Problem(f"{_WHERE}.lead_name", "required: the root MiniCluster's name"))
    elif problem := names.dns1123_label(lead_name):
        problems.append(Problem(f"{_WHERE}.lead_name", problem))
    elif lead_name == plan.name:
        problems.append(
            Problem(f"{_WHERE}.lead_name", "names this cluster itself; a burst needs its own name")
        )
    lead_size = _positive(value.get("lead_size"), "lead_size", problems)
    lead_port = _positive(value.get("lead_port"), "lead_port", problems)
    if lead_port is not None and lead_port > 65535:
        problems.append(Problem(f"{_WHERE}.lead_port", f"must be at most 65535, got {lead_port}"))
    clusters: list[BurstedCluster] = []
    raw_clusters = value.get("clusters")
    if not isinstance(raw_clusters, list):
        problems.append(Problem(f"{_WHERE}.clusters", "must be a list of {name, size}"))
        raw_clusters = []
    for i, entry in enumerate(raw_clusters):
        where = f"clusters[{i}]"
        name = entry.get("name") if isinstance(entry, Mapping) else None
        size = _positive(
            entry.get("size") if isinstance(entry, Mapping) else None, f"{where}.size", problems
        )
        if not isinstance(name, str) or names.dns1123_label(name):
            problems.append(Problem(f"{_WHERE}.{where}.name", "must be a DNS label"))
        elif size is not None:
            clusters.append(BurstedCluster(name=name, size=size))
    if not problems:
        membership = burst_membership_problem(plan.name, plan.spec.max_size, clusters)
        if membership is not None:
            problems.append(Problem(f"{_WHERE}.clusters", membership[1]))
    if problems or not isinstance(lead_name, str) or lead_size is None or lead_port is None:
        raise SpecError(problems)
    lead = FluxBroker(
        address=placeholders.LEAD_ADDRESS, name=lead_name, size=lead_size, port=lead_port
    )
    return lead, clusters


def _positive(value: Any, field: str, problems: list[Problem]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(Problem(f"{_WHERE}.{field}", f"must be a whole number >= 1, got {value!r}"))
        return None
    return value
