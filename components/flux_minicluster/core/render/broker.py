"""The broker config (``broker.toml``) and ``hostlist`` file every broker of a MiniCluster reads.

A Flux broker takes its rank from the position of its own hostname in ``[bootstrap] hosts``, so
every broker of a MiniCluster, and every cluster of a bursting group, must read the same hosts in
the same order. This module is the one place that order is decided:

* a root cluster lists its own ``maxSize`` pods, then each cluster it declares in
  ``flux.bursting.clusters``, in order;
* a bursted child lists the lead broker's external address first (rank 0 of the whole instance,
  reached through that address rather than the child's own headless Service), then the lead's
  other ranks, then the same ``bursting.clusters`` list as the lead, so ranks line up;
* a custom ``bursting.hostlist`` is used verbatim, and ``flux.brokerConfig`` replaces the
  generated file entirely.

Each block stays a hostlist range (``name-[0-65535]``), never an enumeration, so the config is
the same size at 2 pods and at 65536, and a real broker parses it in constant time.

The Flux Operator's version of this (``pkg/flux/view.go``) renders a bursted child's host block
with a broken ``Sprintf`` (``%!s(MISSING)``) and never applies the ``clusters`` defaults; both are
fixed here. The paths a broker reads (R, the certificate copy) are decided here too, and the
entrypoint scripts take them from ``config_paths`` so the two can never disagree.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass

from flux_minicluster.core import hostlist
from flux_minicluster.core.definition import MiniClusterDefinition
from flux_minicluster.core.errors import SpecError
from flux_minicluster.core.render import templates
from flux_minicluster.core.validation import check_broker_config

__all__ = [
    "BROKER_TEMPLATE",
    "DEFAULT_BIND",
    "DEFAULT_PORT",
    "ConfigPaths",
    "HostEntry",
    "broker_toml",
    "config_paths",
    "host_entries",
    "hostlist_for",
]

BROKER_TEMPLATE = "broker.toml.j2"
DEFAULT_PORT = 8050
# eth0 is the pod's interface; %p is replaced by Flux with the host's port.
DEFAULT_BIND = "tcp://eth0:%p"


@dataclass(frozen=True)
class HostEntry:
    """One table of ``[bootstrap] hosts``: a hostlist block plus optional endpoint overrides."""

    host: str
    bind: str | None = None
    connect: str | None = None


@dataclass(frozen=True)
class ConfigPaths:
    """Where the flux view and the broker's files live inside a pod (all absolute)."""

    view_base: str  # the flux-view emptyDir (spec.flux.container.mountPath)
    view_root: str  # the copied spack view (bin/, lib/, etc/)
    software: str  # the copied spack software tree, restored into /opt/software
    config_root: str  # configs and runtime state written by the init and entrypoint scripts
    config_dir: str  # the broker's --config-path: holds broker.toml only
    broker_toml: str
    system_dir: str
    hostlist: str
    cron_dir: str
    resource: str  # R, written by `flux R encode` at start; [resource] path
    curve_cert: str  # the 0600 copy of the Secret's certificate; [bootstrap] curve_cert
    state_dir: str
    run_dir: str
    socket: str  # the broker's local socket (rundir/local): sidecars wait for it
    archive_db: str
    done_marker: str  # touched by the init container when the view is in place
    complete_marker: str  # touched by the Flux container when it is done


def config_paths(mc: MiniClusterDefinition) -> ConfigPaths:
    """The pod paths for ``mc``; with ``flux.brokerConfig``, R and the certificate go where it says.

    The operator hard-codes ``/mnt/flux/config`` in its init script even when ``mountPath``
    differs; everything here follows ``mountPath``.
    """
    base = mc.spec.flux.container.mount_path.rstrip("/") or "/"
    root = _join(base, "config")
    system = f"{root}/etc/flux/system"
    config_dir = f"{root}/etc/flux/config"
    run_dir = f"{root}/run/flux"
    resource = f"{system}/R"
    curve_cert = f"{root}/curve/curve.cert"
    if mc.spec.flux.broker_config is not None:
        user = _user_config(mc.spec.flux.broker_config)
        resource = user.resource or resource
        curve_cert = user.curve_cert or curve_cert
    return ConfigPaths(
        view_base=base,
        view_root=_join(base, "view"),
        software=_join(base, "software"),
        config_root=root,
        config_dir=config_dir,
        broker_toml=f"{config_dir}/broker.toml",
        system_dir=system,
        hostlist=f"{system}/hostlist",
        cron_dir=f"{system}/cron.d",
        resource=resource,
        curve_cert=curve_cert,
        state_dir=f"{root}/var/lib/flux",
        run_dir=run_dir,
        socket=f"{run_dir}/local",
        archive_db=f"{root}/var/lib/flux/job-archive.sqlite",
        done_marker=_join(base, "flux-operator-done.txt"),
        complete_marker=_join(base, "flux-operator-complete.txt"),
    )


def host_entries(mc: MiniClusterDefinition) -> list[HostEntry]:
    """The ``[bootstrap] hosts`` tables of the generated config, in rank order."""
    bursting = mc.spec.flux.bursting
    lead = bursting.lead_broker
    lead_entry = (
        HostEntry(
            host=lead.address,
            bind=f"tcp://eth0:{lead.port}",
            connect=f"tcp://{lead.address}:{lead.port}",
        )
        if lead is not None
        else None
    )
    if bursting.hostlist:
        custom = bursting.hostlist
        # A child's custom list that starts with the lead's address still needs the lead's
        # endpoint: the default connect would look the address up under this cluster's domain.
        if lead_entry is not None and lead is not None:
            if custom == lead.address:
                return [lead_entry]
            if custom.startswith(lead.address + ","):
                return [lead_entry, HostEntry(custom[len(lead.address) + 1 :])]
        return [HostEntry(custom)]

    entries: list[HostEntry] = []
    if lead is not None and lead_entry is not None:
        entries.append(lead_entry)
        if lead.size > 1:
            rest = f"[1-{lead.size - 1}]" if lead.size > 2 else "[1]"
            entries.append(HostEntry(f"{lead.name}-{rest}"))
    else:
        entries.append(HostEntry(hostlist.block(f"{mc.name}-", mc.spec.max_size)))
    for cluster in bursting.clusters:
        # The spec model fills in the operator's intended defaults (burst-<i>, spec.size).
        name = cluster.name or ""
        size = cluster.size if cluster.size is not None else mc.spec.size
        entries.append(HostEntry(hostlist.block(f"{name}-", size)))
    return entries


def hostlist_for(mc: MiniClusterDefinition) -> str:
    """Every broker's host in rank order, as one hostlist (the ``hostlist`` file, R's hosts).

    With ``flux.brokerConfig`` the hosts are the ones that config lists, so that R (encoded from
    this hostlist) describes the same ranks the brokers bootstrap with.
    """
    if mc.spec.flux.broker_config is not None:
        user = _user_config(mc.spec.flux.broker_config)
        if user.hosts:
            return ",".join(user.hosts)
    return ",".join(entry.host for entry in host_entries(mc))


def broker_toml(mc: MiniClusterDefinition) -> str:
    """The broker config: ``flux.brokerConfig`` verbatim, else the generated one."""
    if mc.spec.flux.broker_config is not None:
        _user_config(mc.spec.flux.broker_config)  # refuse a config a broker would hang on
        return mc.spec.flux.broker_config
    return templates.render(
        BROKER_TEMPLATE,
        paths=config_paths(mc),
        port=DEFAULT_PORT,
        default_bind=DEFAULT_BIND,
        default_connect=f"tcp://%h.{mc.domain}:%p",
        hosts=host_entries(mc),
        queue_policy=mc.spec.flux.scheduler.queue_policy,
    )


# --- a user's brokerConfig ------------------------------------------------------------------


@dataclass(frozen=True)
class _UserConfig:
    hosts: tuple[str, ...]
    resource: str | None
    curve_cert: str | None


@functools.lru_cache(maxsize=64)
def _user_config(text: str) -> _UserConfig:
    """What the scripts need from a user's broker config; refuses one a broker would not take.

    Validation checks ``brokerConfig`` when the spec is parsed; checking again here keeps a
    definition built some other way from ever shipping a config that hangs a broker.
    """
    problems = list(check_broker_config(text, "spec.flux.brokerConfig"))
    if problems:
        raise SpecError(problems)
    config = tomllib.loads(text)
    bootstrap = config.get("bootstrap", {})
    resource = config.get("resource", {})
    hosts = tuple(
        str(entry["host"])
        for entry in bootstrap.get("hosts", [])
        if isinstance(entry, dict) and "host" in entry
    )
    return _UserConfig(
        hosts=hosts,
        resource=_string_or_none(resource.get("path") if isinstance(resource, dict) else None),
        curve_cert=_string_or_none(bootstrap.get("curve_cert")),
    )


def _string_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _join(base: str, name: str) -> str:
    return f"{base}{name}" if base.endswith("/") else f"{base}/{name}"
