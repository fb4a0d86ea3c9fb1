"""The broker config (``broker.toml``) every broker of a MiniCluster reads, from its plan.

A Flux broker takes its rank from the position of its own hostname in ``[bootstrap] hosts``; the
plan decides that order (``plan.host_entries``), and this module only writes it down, with every
value escaped as a TOML string. In v1alpha1's multi-user mode it also names the IMP (``[exec]
imp``). ``flux.brokerConfig`` replaces the generated file entirely (it was checked when the spec
was validated).
"""

from __future__ import annotations

from collections.abc import Iterable

from flux_minicluster.core import layout, templating
from flux_minicluster.core.plan import HostEntry, MiniClusterPlan

__all__ = ["BROKER_TEMPLATE", "broker_toml", "hosts_block"]

BROKER_TEMPLATE = "broker.toml.j2"


def hosts_block(entries: Iterable[HostEntry]) -> str:
    """The lines inside ``hosts = [ ... ]``: one inline table per hostlist block, in rank order.

    (A bursted cluster whose rank order is known only once its root's outputs are gets the whole
    file again, from its plan with the group in it: ``plan.with_burst_group``.)
    """
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
    """The broker config: ``flux.brokerConfig`` verbatim, else the generated one."""
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
