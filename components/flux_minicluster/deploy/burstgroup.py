"""A bursted cluster whose rank order comes from its root's outputs, known only at deploy time.

A burst stack reads its root's lead name and size, the lead's port and the list of clusters the
root bursts to through a StackReference: Outputs. They change text inside the burst's objects
(broker.toml's hosts, the ``hostlist`` file, the broker-config digest on the pod template, the
burst-group label), never which objects exist: those follow from the burst's own name and size.
So the component renders the burst once, with placeholders for the lead, registers every object
(a preview shows them all), and fills the text in here once the root's values are known. The same
core functions that write a known rank order write this one.

A cluster the root does not declare, or declares with another size, fails before any object is
created: every object waits for the checked group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import pulumi

from flux_minicluster.core import jsonvalues, layout, names, placeholders
from flux_minicluster.core import labels as lbl
from flux_minicluster.core import plan as plans
from flux_minicluster.core.definition import MiniClusterDefinition
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.render import broker
from flux_minicluster.core.render.manifests import Rendering, broker_config_hash
from flux_minicluster.core.spec import BurstedCluster, Bursting, FluxBroker
from flux_minicluster.core.validation import burst_membership_problem

__all__ = ["BurstClusterArgs", "BurstGroupArgs", "ResolvedGroup", "apply", "deferred", "resolve"]

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


@dataclass(frozen=True)
class ResolvedGroup:
    """The burst's group-dependent text, each piece an Output that fails for a bad group."""

    lead_name: pulumi.Output[str]
    broker_toml: pulumi.Output[str]
    hostlist: pulumi.Output[str]
    config_hash: pulumi.Output[str]


def deferred(definition: MiniClusterDefinition) -> MiniClusterDefinition:
    """The burst with placeholders for its lead, and itself as the one cluster it knows of.

    The result passes the same validation as any bursted cluster; only the group's text is left
    to fill in. A spec that declares its own ``flux.bursting`` is refused: the group replaces it.
    """
    spec = definition.spec
    bursting = spec.flux.bursting
    if bursting.lead_broker is not None or bursting.clusters or bursting.hostlist:
        raise SpecError(
            Problem(
                "spec.flux.bursting",
                "leave it out with burst_group: the group comes from the root's outputs",
            ),
            source="MiniClusterArgs",
        )
    group = Bursting(
        lead_broker=FluxBroker(
            address=placeholders.LEAD_ADDRESS,
            name=placeholders.LEAD_NAME,
            size=1,
            port=layout.BROKER_PORT,
        ),
        clusters=[BurstedCluster(name=definition.name, size=spec.max_size)],
    )
    flux = spec.flux.model_copy(update={"bursting": group})
    return definition.with_spec(spec.model_copy(update={"flux": flux}))


def resolve(
    plan: plans.MiniClusterPlan,
    group: pulumi.Input[BurstGroupArgs],
    address: pulumi.Output[str],
) -> ResolvedGroup:
    """The group-dependent text of the rendering once ``group`` and the lead ``address`` resolve:
    written by the core from the plan with the group in it (``plan.with_burst_group``)."""

    def texts(values: list[Any]) -> dict[str, str]:
        lead_address, raw = values
        lead, clusters = _parse(raw, plan)
        grouped = plans.with_burst_group(
            plan, lead.model_copy(update={"address": lead_address}), clusters
        )
        hostlist = grouped.hostlist
        broker_toml = broker.broker_toml(grouped)
        return {
            "lead_name": lead.name,
            "broker_toml": broker_toml,
            "hostlist": hostlist,
            "config_hash": broker_config_hash(broker_toml, hostlist + "\n", lead_address),
        }

    resolved = pulumi.Output.all(address, group).apply(texts)
    return ResolvedGroup(
        lead_name=resolved.apply(lambda t: t["lead_name"]),
        broker_toml=resolved.apply(lambda t: t["broker_toml"]),
        hostlist=resolved.apply(lambda t: t["hostlist"]),
        config_hash=resolved.apply(lambda t: t["config_hash"]),
    )


def apply(rendering: Rendering, group: ResolvedGroup) -> Rendering:
    """``rendering`` with the group's text in the ConfigMap and the Job's pod template."""
    data = dict(rendering.entrypoint["data"])
    data[layout.BROKER_TOML] = group.broker_toml
    data[layout.HOSTLIST] = group.hostlist.apply(lambda hosts: hosts + "\n")
    entrypoint = {**rendering.entrypoint, "data": data}
    job = dict(rendering.job)
    spec = dict(job["spec"])
    template = dict(spec["template"])
    metadata = dict(template["metadata"])
    annotations = dict(metadata["annotations"])
    annotations[lbl.BROKER_CONFIG_HASH_ANNOTATION] = group.config_hash
    template["metadata"] = {**metadata, "annotations": annotations}
    spec["template"] = template
    job["spec"] = spec
    return replace(rendering, entrypoint=entrypoint, job=job)


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
