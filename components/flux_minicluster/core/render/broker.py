"""The broker config (``broker.toml``) every broker of a MiniCluster reads, from its plan.

A Flux broker takes its rank from the position of its own hostname in ``[bootstrap] hosts``; the
plan decides that order (``plan.host_entries``), and this module only writes it down, with every
value escaped as a TOML string. In v1alpha1's multi-user mode it also names the IMP (``[exec]
imp``). ``flux.brokerConfig`` replaces the generated file entirely (it was checked when the spec
was validated).

The rank order is what a bursting group's brokers must agree on, so it is digested onto the pod
template (``config_digest``). A burst whose group is known only at deploy time has a deferred plan
(``MiniClusterPlan.rank_order_deferred``): its broker.toml, hostlist and digest are placeholder
tokens, and ``rank_order_values`` writes each token's text once the group is known, with the same
functions that write a known rank order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from flux_minicluster.core.base import layout, placeholders, templating
from flux_minicluster.core.planning.plan import HostEntry, MiniClusterPlan, with_burst_group
from flux_minicluster.core.spec.models import BurstedCluster, FluxBroker

__all__ = [
    "BROKER_TEMPLATE",
    "broker_config_hash",
    "broker_toml",
    "config_digest",
    "hostlist_file",
    "hosts_block",
    "rank_order_values",
]

BROKER_TEMPLATE = "broker.toml.j2"


def hosts_block(entries: Iterable[HostEntry]) -> str:
    """The lines inside ``hosts = [ ... ]``: one inline table per hostlist block, in rank order."""
    toml = templating.toml_string
    lines = []
    for entry in entries:
        fields = [f"host = {toml(entry.host)}"]
        if entry.bind:
            fields.append(f"bind = {toml(entry.bind)}")
        if entry.connect:
            fields.append(f"connect = {toml(entry.connect)}")
        lines.append("  { " + ", ".join(fields) + " },\n")
    return "".join(lines)


def broker_toml(plan: MiniClusterPlan) -> str:
    """The broker config: ``flux.brokerConfig`` verbatim, else the generated one; a deferred
    rank order's placeholder."""
    if plan.rank_order_deferred:
        return placeholders.BROKER_TOML
    if plan.spec.flux.broker_config is not None:
        return plan.spec.flux.broker_config
    return templating.render(
        BROKER_TEMPLATE,
        paths=plan.paths,
        port=layout.BROKER_PORT,
        default_bind=layout.BROKER_BIND,
        default_connect=f"tcp://%h.{plan.names.domain}:%p",
        hosts_block=hosts_block(plan.host_entries),
        queue_policy=plan.spec.flux.scheduler.queue_policy,
        simple=plan.spec.flux.scheduler.simple,
        imp=plan.imp.path if plan.imp is not None else "",
    )


def hostlist_file(hostlist: str) -> str:
    """The ``hostlist`` file's text (the entrypoint ConfigMap's key): the hosts and a newline."""
    return hostlist + "\n"


def broker_config_hash(broker_toml: str, hostlist: str, lead_address: str | None) -> str:
    """A digest of what every broker must agree on: the broker config and the rank order.

    On the pod template it makes a hostlist change (a new maxSize, a new burst cluster) replace
    the Job, so no broker runs with an old rank order. The entrypoint scripts are left out: their
    size-dependent values change on a resize, which must not restart the cluster (their own
    digest, ``scripts.entrypoint_digest``, is taken of them at one size). So is a burst
    cluster's lead address (it is digested as its placeholder), which the Pulumi layer fills in
    only once the root has one. ``hostlist`` is the file's text, as in the ConfigMap.
    """
    digest = hashlib.sha256()
    for key, text in ((layout.BROKER_TOML, broker_toml), (layout.HOSTLIST, hostlist)):
        if lead_address is not None:
            text = text.replace(lead_address, placeholders.LEAD_ADDRESS)
        digest.update(key.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()[:16]


def config_digest(plan: MiniClusterPlan, broker_toml: str, hostlist: str) -> str:
    """The pod template's broker-config digest of ``plan``'s broker.toml and hostlist file; a
    deferred rank order's placeholder."""
    if plan.rank_order_deferred:
        return placeholders.BROKER_CONFIG_HASH
    lead = plan.lead_broker
    return broker_config_hash(broker_toml, hostlist, lead.address if lead is not None else None)


def rank_order_values(
    plan: MiniClusterPlan, lead: FluxBroker, clusters: Sequence[BurstedCluster]
) -> dict[str, str]:
    """The text of each of a deferred plan's rank-order placeholders (and of the lead's name)
    once its group is known: ``lead`` (its address the real one) and ``clusters``, in rank order.

    Written from the plan with the group in it (``plan.with_burst_group``) by the functions that
    write any known rank order, so a burst deployed from its root's outputs carries the bytes a
    spec declaring the same group would.
    """
    known = with_burst_group(plan, lead, clusters)
    toml = broker_toml(known)
    return {
        placeholders.BROKER_TOML: toml,
        placeholders.RANK_ORDER_HOSTLIST: known.hostlist,
        placeholders.BROKER_CONFIG_HASH: config_digest(known, toml, hostlist_file(known.hostlist)),
        placeholders.LEAD_NAME: lead.name,
    }
