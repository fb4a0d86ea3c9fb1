"""Rules that need several objects at once: a MiniCluster's parts, or a whole burst group.

A broker finds its rank by looking its own hostname up in ``[bootstrap] hosts`` and reaches its
parent through ``default_connect``; both live in the entrypoint ConfigMap while the hostnames
come from the Job and the DNS names from the headless Service. Only a check that sees all three
together can tell that they agree. Across a burst group, every cluster must share the certificate
and the rank order; that again is a property of several objects, in several stacks. A burst
stack sees its root only through a StackReference (``stackref``): its objects are then compared
with the root's outputs.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from flux_minicluster.core.base import layout
from flux_minicluster.core.deployed import stackoutputs as so
from flux_minicluster.core.flux import certificate, hostlist
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning.plan import Role
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy import stackref
from flux_minicluster.policy.model import Manifest, Rule, Settings
from flux_minicluster.policy.resource_rules import is_minicluster_job

Finding = tuple[Manifest | None, str]
Keyed = tuple[Manifest, str]
"""A curve Secret and the public key its annotation names."""
Expanded = tuple[Manifest, list[str]]
"""A ConfigMap and its hostlist, expanded host by host."""

_ROOT_ROLES = frozenset({Role.STANDALONE.value, Role.ROOT.value})


def _preview(hosts: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f", ... ({len(hosts)} in all)" if len(hosts) > limit else "")


def _same_namespace(a: Manifest, b: Manifest) -> bool:
    return mf.effective_namespace(a) == mf.effective_namespace(b)


# --- hostlist-covers-max-size --------------------------------------------------------------------


def _max_size(job: Manifest) -> tuple[int | None, str | None]:
    """How many ranks the hostlist must cover: the Job's real ``spec.completions`` (each index is
    a pod whose hostname must be listed) or the maxSize annotation, whichever is larger, since the
    annotation is only a record and an edited Job may run past it; or a problem."""
    completions = mf.dig(job, "spec", "completions")
    real = (
        completions
        if isinstance(completions, int) and not isinstance(completions, bool) and completions >= 1
        else None
    )
    written = mf.annotations_of(job).get(lbl.MAX_SIZE_ANNOTATION)
    if written is not None:
        try:
            value = int(written.strip())
        except ValueError:
            value = 0
        if value < 1:
            return (
                None,
                f"annotation {lbl.MAX_SIZE_ANNOTATION} is {written!r}, not a positive integer",
            )
        return max(value, real or 0), None
    if real is not None:
        return real, None
    return None, (
        f"cannot tell the cluster's maxSize: the Job has neither a {lbl.MAX_SIZE_ANNOTATION} "
        "annotation nor a positive spec.completions"
    )


def _entrypoint_configmap(job: Manifest, manifests: Sequence[Manifest]) -> Manifest | None:
    """The ConfigMap holding the Job's broker.toml: one its pods mount, else its cluster's."""
    candidates = [
        m
        for m in manifests
        if mf.kind(m) == "ConfigMap"
        and _same_namespace(m, job)
        and layout.BROKER_TOML in mf.as_dict(m.get("data"))
    ]
    mounted = {
        mf.dig(v, "configMap", "name")
        for v in mf.as_list(mf.as_dict(mf.pod_spec(job)).get("volumes"))
        if isinstance(v, dict)
    }
    cluster = mf.cluster_of(job)
    for m in candidates:
        if mf.name(m) in mounted:
            return m
    for m in candidates:
        if cluster is not None and mf.cluster_of(m) == cluster:
            return m
    return None


def _bootstrap_hosts(toml_text: str) -> tuple[dict[str, Any], list[str]] | str:
    """``([bootstrap] table, expanded hosts)`` from broker.toml text, or what is wrong with it."""
    try:
        doc = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as err:
        return (
            f"{layout.BROKER_TOML!r} is not valid TOML ({err}); a broker refuses such a config "
            "or, if it ends inside an unclosed array, hangs at 100% CPU"
        )
    bootstrap = doc.get("bootstrap")
    if not isinstance(bootstrap, dict):
        return f"{layout.BROKER_TOML!r} has no [bootstrap] table, so brokers cannot find each other"
    entries = bootstrap.get("hosts")
    if not isinstance(entries, list) or not entries:
        return f'{layout.BROKER_TOML!r} [bootstrap] has no hosts = [ {{ host = "..." }}, ... ]'
    hosts: list[str] = []
    for i, entry in enumerate(entries):
        host = entry.get("host") if isinstance(entry, dict) else None
        if not isinstance(host, str):
            return f'{layout.BROKER_TOML!r} [bootstrap] hosts[{i}] has no host = "..." string'
        try:
            hosts.extend(hostlist.expand(host))
        except ValueError as err:
            return f"{layout.BROKER_TOML!r} [bootstrap] hosts[{i}]: {err}"
    return bootstrap, hosts


def _run_problem(hosts: list[str], own: list[str], root: bool) -> str | None:
    """Why ``own`` is not one contiguous, in-order run of ``hosts`` (at rank 0 for a root)."""
    first: dict[str, int] = {}
    for rank, host in enumerate(hosts):
        first.setdefault(host, rank)
    missing = [h for h in own if h not in first]
    if missing:
        return (
            f"lacks {len(missing)} of the Job's {len(own)} hostnames ({_preview(missing)}); "
            f"a pod whose hostname is not listed fails at once with '<host> not found in hosts'"
        )
    start = first[own[0]]
    if hosts[start : start + len(own)] != own:
        return (
            f"does not list the Job's hostnames {own[0]}..{own[-1]} in order as one run; "
            "ranks of one cluster must be consecutive"
        )
    if root and start != 0:
        return f"starts with {hosts[0]!r}, but rank 0 of this cluster must be {own[0]!r}"
    return None


def _check_cluster_hosts(job: Manifest, manifests: Sequence[Manifest]) -> list[Finding]:  # noqa: C901
    out: list[Finding] = []
    job_name = mf.name(job)
    size, problem = _max_size(job)
    if problem is not None:
        out.append((job, problem))
    spec = mf.as_dict(mf.pod_spec(job))
    subdomain = spec.get("subdomain")
    if not isinstance(subdomain, str) or not subdomain:
        out.append(
            (
                job,
                "spec.template.spec.subdomain is not set: the pods get no DNS names under the "
                "headless Service, so brokers cannot reach each other by hostname",
            )
        )
        subdomain = None
    else:
        service = next(
            (
                m
                for m in manifests
                if mf.kind(m) == "Service" and mf.name(m) == subdomain and _same_namespace(m, job)
            ),
            None,
        )
        if service is None:
            out.append(
                (
                    job,
                    f"no Service named {subdomain!r} in namespace {mf.effective_namespace(job)!r} "
                    f"(the pod template's subdomain): {job_name}-0.{subdomain} will not resolve",
                )
            )
        elif mf.dig(service, "spec", "clusterIP") != "None":
            out.append(
                (
                    service,
                    f"Service {subdomain!r} is the Job's subdomain but is not headless "
                    "(it needs spec.clusterIP: None), so the pods get no per-pod DNS records",
                )
            )

    cm = _entrypoint_configmap(job, manifests)
    if cm is None:
        out.append(
            (
                job,
                f"no ConfigMap with a {layout.BROKER_TOML!r} key found for this Job (neither "
                f"mounted by its pods nor labelled {lbl.CLUSTER_LABEL}={mf.cluster_of(job)})",
            )
        )
        return out
    parsed = _bootstrap_hosts(str(mf.as_dict(cm.get("data"))[layout.BROKER_TOML]))
    if isinstance(parsed, str):
        out.append((cm, parsed))
        return out
    bootstrap, hosts = parsed

    if size is not None and size > len(hosts):
        out.append(
            (
                cm,
                f"[bootstrap] hosts ({_preview(hosts)}) lists {len(hosts)} hosts, fewer than the "
                f"Job's maxSize {size}: pods {job_name}-{len(hosts)} and up would fail at once "
                "with '<host> not found in hosts'",
            )
        )
    elif size is not None:
        own = [f"{job_name}-{i}" for i in range(size)]
        root = mf.annotations_of(job).get(lbl.ROLE_ANNOTATION) in _ROOT_ROLES
        run = _run_problem(hosts, own, root)
        if run is not None:
            out.append((cm, f"[bootstrap] hosts ({_preview(hosts)}) {run}"))
    duplicates = sorted(h for h, n in Counter(hosts).items() if n > 1)
    if duplicates:
        out.append(
            (
                cm,
                f"[bootstrap] hosts lists {_preview(duplicates)} more than once; a broker takes "
                "the rank of its hostname's first position, so later ranks never come up",
            )
        )

    written = mf.as_dict(cm.get("data")).get(layout.HOSTLIST)
    if isinstance(written, str):
        try:
            listed = hostlist.expand(written.strip())
        except ValueError as err:
            out.append((cm, f"{layout.HOSTLIST!r}: {err}"))
        else:
            if listed != hosts:
                out.append(
                    (
                        cm,
                        f"{layout.HOSTLIST!r} ({written.strip()}) and [bootstrap] hosts in "
                        f"{layout.BROKER_TOML!r} expand to different lists; the resource set "
                        "(R) is encoded from the former and ranks from the latter",
                    )
                )

    connect = bootstrap.get("default_connect")
    if not isinstance(connect, str):
        out.append(
            (
                cm,
                "[bootstrap] has no default_connect, so brokers do not know how to reach "
                "their parent (expected tcp://%h.<service>.<namespace>.svc.cluster.local:%p)",
            )
        )
    elif subdomain is not None and f".{subdomain}." not in connect:
        ns = mf.effective_namespace(job)
        out.append(
            (
                cm,
                f"[bootstrap] default_connect {connect!r} does not go through the Job's "
                f"subdomain {subdomain!r}; expected tcp://%h.{subdomain}.{ns}.svc.cluster.local:%p",
            )
        )
    return out


def check_hostlist_covers_max_size(manifests: Sequence[Manifest], s: Settings) -> list[Finding]:
    out: list[Finding] = []
    for job in manifests:
        if is_minicluster_job(job):
            out.extend(_check_cluster_hosts(job, manifests))
    return out


# --- burst-group-consistent ----------------------------------------------------------------------
#
# Two sources can stand for the group's root: its own objects, when the root's and the bursts'
# objects are checked together offline, or its stack outputs, through the StackReference a burst
# stack reads them by (under ``pulumi preview`` that is all a burst stack sees of its root). The
# outputs win when both are there: they are what the burst's program actually used.


def _reference(group: str, members: list[Manifest]) -> Manifest:
    """The member the others are compared with: the lead cluster's, else the first."""
    return next((m for m in members if mf.cluster_of(m) == group), members[0])


def _is_burst(m: Manifest, group: str) -> bool:
    """Whether ``m`` belongs to a burst cluster of ``group`` rather than to its root."""
    return mf.cluster_of(m) != group


def _root_references(manifests: Sequence[Manifest], groups: set[str]) -> dict[str, Manifest]:
    """The StackReference to each group's root stack, by group (its ``leadName`` output)."""
    out: dict[str, Manifest] = {}
    for m in manifests:
        if stackref.is_stack_reference(m):
            lead = stackref.lead_name(m)
            if lead in groups:
                out.setdefault(lead, m)
    return out


def _keyed_secrets(group: str, members: list[Manifest]) -> tuple[list[Finding], list[Keyed]]:
    """The group's curve Secrets with their public-key annotation, and what is wrong with them."""
    out: list[Finding] = []
    keyed: list[Keyed] = []
    for secret in members:
        if mf.kind(secret) != "Secret":
            continue
        notes = mf.annotations_of(secret)
        text = mf.data_items(secret).get(layout.CURVE_FILE)
        if lbl.CURVE_PUBLIC_KEY_ANNOTATION not in notes and text is None:
            continue  # not a curve Secret
        key = notes.get(lbl.CURVE_PUBLIC_KEY_ANNOTATION)
        if not key:
            out.append(
                (
                    secret,
                    f"the curve Secret of burst group {group!r} has no "
                    f"{lbl.CURVE_PUBLIC_KEY_ANNOTATION} annotation, so its certificate cannot "
                    "be compared with the group's",
                )
            )
            continue
        actual = certificate.public_key_in(text) if text is not None else None
        if actual is not None and actual != key:
            out.append(
                (
                    secret,
                    f"annotation {lbl.CURVE_PUBLIC_KEY_ANNOTATION} ({key}) does not match the "
                    f"public key in {layout.CURVE_FILE!r} ({actual})",
                )
            )
        keyed.append((secret, key))
    return out, keyed


def _check_group_certificates(group: str, members: list[Manifest]) -> list[Finding]:
    out, keyed = _keyed_secrets(group, members)
    if keyed:
        ref = _reference(group, [m for m, _ in keyed])
        ref_key = next(k for m, k in keyed if m is ref)
        for secret, key in keyed:
            if key != ref_key:
                out.append(
                    (
                        secret,
                        f"curve public key {key} differs from {ref_key} of {mf.identity(ref)} "
                        f"in burst group {group!r}: the brokers cannot authenticate each other",
                    )
                )
    return out


def _root_public_key(reference: Manifest) -> tuple[str, str] | None:
    """``(public key, output it is from)``: ``curvePublicKey``, else the key in ``curveCert``."""
    outputs = stackref.outputs_of(reference)
    key = outputs.get(so.CURVE_PUBLIC_KEY)
    if isinstance(key, str) and key:
        return key, so.CURVE_PUBLIC_KEY
    cert = outputs.get(so.CURVE_CERT)  # a secret: read only when there is no public key
    key = certificate.public_key_in(cert) if isinstance(cert, str) else None
    return None if key is None else (key, so.CURVE_CERT)


def _check_certificates_against_root(
    group: str, members: list[Manifest], reference: Manifest
) -> list[Finding]:
    out, keyed = _keyed_secrets(group, members)
    if not keyed:
        return out
    stack = mf.name(reference)
    found = _root_public_key(reference)
    if found is None:
        out.append(
            (
                reference,
                f"the root stack {stack!r} of burst group {group!r} exports neither "
                f"{so.CURVE_PUBLIC_KEY} nor a {so.CURVE_CERT} with a public key, so "
                "the group's certificate cannot be checked; run 'pulumi up' on the root stack",
            )
        )
        return out
    root_key, output = found
    for secret, key in keyed:
        if key != root_key:
            out.append(
                (
                    secret,
                    f"curve public key {key} differs from {root_key} in the {output} output "
                    f"of the root stack {stack!r} of burst group {group!r}: the brokers "
                    "cannot authenticate each other",
                )
            )
    return out


def _expanded_hostlists(members: list[Manifest]) -> tuple[list[Finding], list[Expanded]]:
    """Every member ConfigMap's hostlist, expanded host by host, and those that do not parse."""
    out: list[Finding] = []
    expanded: list[Expanded] = []
    for cm in members:
        if mf.kind(cm) != "ConfigMap":
            continue
        written = mf.as_dict(cm.get("data")).get(layout.HOSTLIST)
        if not isinstance(written, str):
            continue
        try:
            expanded.append((cm, hostlist.expand(written.strip())))
        except ValueError as err:
            out.append((cm, f"{layout.HOSTLIST!r}: {err}"))
    return out, expanded


def _first_difference(hosts: list[str], ref_hosts: list[str], start: int) -> int | None:
    return next((i for i in range(start, len(hosts)) if hosts[i] != ref_hosts[i]), None)


def _check_group_hostlists(group: str, members: list[Manifest]) -> list[Finding]:
    out, expanded = _expanded_hostlists(members)
    if not expanded:
        return out
    ref = _reference(group, [m for m, _ in expanded])
    ref_hosts = next(h for m, h in expanded if m is ref)
    for cm, hosts in expanded:
        if cm is ref:
            continue
        if len(hosts) != len(ref_hosts):
            out.append(
                (
                    cm,
                    f"hostlist has {len(hosts)} hosts but {mf.identity(ref)} of burst group "
                    f"{group!r} has {len(ref_hosts)}: every member must list the same ranks",
                )
            )
            continue
        rank = _first_difference(hosts, ref_hosts, 1)
        if rank is not None:
            out.append(
                (
                    cm,
                    f"hostlist differs from {mf.identity(ref)} of burst group {group!r} at rank "
                    f"{rank} ({hosts[rank]!r} vs {ref_hosts[rank]!r}); from rank 1 on every "
                    "member must list the same hosts in the same order",
                )
            )
    return out


def _root_output(reference: Manifest, output: str) -> str | None:
    """A text output of the root stack, stripped; ``None`` when it has none."""
    value = stackref.outputs_of(reference).get(output)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _no_output(reference: Manifest, group: str, output: str, what: str) -> Finding:
    return (
        reference,
        f"the root stack {mf.name(reference)!r} of burst group {group!r} exports no {output} "
        f"output, so {what} cannot be checked; run 'pulumi up' on the root stack",
    )


def _check_hostlists_against_root(
    group: str, members: list[Manifest], reference: Manifest
) -> list[Finding]:
    """Each member's hostlist against the root's: equal host by host, except at a burst's rank 0.

    A burst lists the root's lead address (``leadBrokerAddress``) where the root lists its own
    rank 0: root ``flux-root-[0-1],eks-burst-[0-1]``, a burst of it
    ``192.0.2.10,flux-root-[1],eks-burst-[0-1]``.
    """
    out, expanded = _expanded_hostlists(members)
    if not expanded:
        return out
    stack = mf.name(reference)
    written = _root_output(reference, so.HOSTLIST)
    if written is None:
        return [*out, _no_output(reference, group, so.HOSTLIST, "the group's rank order")]
    where = f"the {so.HOSTLIST} output of the root stack {stack!r}"
    try:
        root_hosts = hostlist.expand(written)
    except ValueError as err:
        return [*out, (reference, f"{where}: {err}")]
    where += f" ({written})"
    lead: str | None = None
    if any(_is_burst(cm, group) for cm, _ in expanded):
        lead = _root_output(reference, so.LEAD_BROKER_ADDRESS)
        if lead is None:
            out.append(_no_output(reference, group, so.LEAD_BROKER_ADDRESS, "the bursts' rank 0"))
    for cm, hosts in expanded:
        burst = _is_burst(cm, group)
        if len(hosts) != len(root_hosts):
            out.append(
                (
                    cm,
                    f"hostlist has {len(hosts)} hosts but {where} has {len(root_hosts)}: every "
                    f"member of burst group {group!r} must list the same ranks",
                )
            )
            continue
        if burst and lead is not None and hosts[0] != lead:
            out.append(
                (
                    cm,
                    f"hostlist starts with {hosts[0]!r}, but rank 0 of a burst cluster must be "
                    f"the root's lead address {lead!r} (the {so.LEAD_BROKER_ADDRESS} output "
                    f"of the root stack {stack!r}): the brokers connect to their lead through it",
                )
            )
        rank = _first_difference(hosts, root_hosts, 1 if burst else 0)
        if rank is not None:
            rule = (
                "from rank 1 on a burst must list the root's hosts in the root's order"
                if burst
                else "the root's objects must list the hosts its stack exports"
            )
            out.append(
                (
                    cm,
                    f"hostlist differs from {where} at rank {rank} ({hosts[rank]!r} vs "
                    f"{root_hosts[rank]!r}); {rule}",
                )
            )
    return out


def check_burst_group_consistent(manifests: Sequence[Manifest], s: Settings) -> list[Finding]:
    groups: dict[str, list[Manifest]] = {}
    for m in manifests:
        group = mf.labels_of(m).get(lbl.BURST_GROUP_LABEL)
        if group:
            groups.setdefault(group, []).append(m)
    if not groups:
        return []
    references = _root_references(manifests, set(groups))
    out: list[Finding] = []
    for group, members in groups.items():
        reference = references.get(group)
        if reference is None:
            out.extend(_check_group_certificates(group, members))
            out.extend(_check_group_hostlists(group, members))
        else:
            out.extend(_check_certificates_against_root(group, members, reference))
            out.extend(_check_hostlists_against_root(group, members, reference))
    return out


# --- the rules -----------------------------------------------------------------------------------

HOSTLIST_COVERS_MAX_SIZE = Rule(
    id="hostlist-covers-max-size",
    description=(
        "A MiniCluster's broker.toml lists every hostname its Job can create, in order, and "
        "connects through the Job's headless Service."
    ),
    level="mandatory",
    remediation=(
        "Render broker.toml from the spec again (do not edit it by hand): [bootstrap] hosts must "
        "expand to <name>-0..<name>-(maxSize-1) as one run, and default_connect must be "
        "tcp://%h.<subdomain>.<namespace>.svc.cluster.local:%p with a headless Service <subdomain>."
    ),
    stack_check=check_hostlist_covers_max_size,
)

BURST_GROUP_CONSISTENT = Rule(
    id="burst-group-consistent",
    description=(
        "The clusters of a burst group share one CURVE certificate and one rank order "
        "(hostlist identical from rank 1 on; a burst's rank 0 is the root's lead address), "
        "checked against the root stack's outputs when a burst stack references them."
    ),
    level="mandatory",
    remediation=(
        "Give every burst child the root's certificate and the same bursting.clusters list in "
        "the same order as the root. Files: 'minicluster render' keeps one certificate per "
        "group, which the root and its bursts share on one machine; elsewhere give every render "
        "and check the same --curve-cert FILE (or the spec's flux.curveCert). Stacks: "
        "a burst reads the root stack's outputs; after changing the root, run 'pulumi up' on "
        "the root stack first, then on each burst stack."
    ),
    stack_check=check_burst_group_consistent,
)
