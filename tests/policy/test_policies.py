"""Policy rules: each one catches what it should, and CrossGuard and the offline checker agree.

Fixtures are built here in the shape the renderer produces (see the manifest contract in the
policy issue); the CrossGuard policies are fed the same objects the way Pulumi hands them over
(integers as floats, no ``apiVersion``/``kind``, a type token), so a drift between the two runners
shows up as a failed equivalence test.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
POLICIES_DIR = ROOT / "policies"
for _path in (str(ROOT), str(POLICIES_DIR)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import minicluster_policies  # noqa: E402
from pulumi_policy import (  # noqa: E402
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Secret,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import (  # noqa: E402
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    unknown_checking_proxy,
)

from flux_minicluster.core.base import exitcodes, layout  # noqa: E402
from flux_minicluster.core.base.errors import SpecError  # noqa: E402
from flux_minicluster.core.deployed import stackoutputs as so  # noqa: E402
from flux_minicluster.core.kube import labels as lbl  # noqa: E402
from flux_minicluster.policy import checker  # noqa: E402
from flux_minicluster.policy import manifest as mf  # noqa: E402
from flux_minicluster.policy.model import Manifest  # noqa: E402
from flux_minicluster.policy.resource_rules import SOURCE_RANGES_ANNOTATION  # noqa: E402
from flux_minicluster.policy.rules import ALL_RULES  # noqa: E402
from flux_minicluster.policy.stackref import stack_reference_manifest  # noqa: E402

RULES = {rule.id: rule for rule in ALL_RULES}

NAME = "flux-sample"
NS = "ns"
PUBLIC_KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
OTHER_KEY = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
CERT = (
    "#  ZeroMQ CURVE **Secret** Certificate\n"
    "#  DO NOT DISTRIBUTE\n"
    "\n"
    "metadata\n"
    f'    name = "{NAME}-0"\n'
    f'    keygen.hostname = "{NAME}-0"\n'
    "curve\n"
    f'    public-key = "{PUBLIC_KEY}"\n'
    '    secret-key = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"\n'
)
LEAD_ADDRESS = "34.1.2.3"


# --- fixtures in the renderer's shape ------------------------------------------------------------


def metadata(
    name: str,
    cluster: str = NAME,
    ns: str | None = NS,
    burst: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    labels = {
        lbl.NAME_LABEL: cluster,
        lbl.MANAGED_BY_LABEL: lbl.MANAGED_BY,
        lbl.CLUSTER_LABEL: cluster,
    }
    if burst is not None:
        labels[lbl.BURST_GROUP_LABEL] = burst
    out: dict[str, Any] = {"name": name, "labels": labels}
    if ns is not None:
        out["namespace"] = ns
    if annotations:
        out["annotations"] = annotations
    return out


def broker_toml(name: str = NAME, ns: str = NS, hosts: str | None = None) -> str:
    hosts = hosts or f'[ {{ host = "{name}-[0-3]" }} ]'
    return f"""[access]
allow-guest-user = true
allow-root-owner = true

[bootstrap]
curve_cert = "/mnt/flux/config/curve/curve.cert"
default_port = 8050
default_bind = "tcp://eth0:%p"
default_connect = "tcp://%h.{name}.{ns}.svc.cluster.local:%p"
hosts = {hosts}
"""


def entrypoint(
    name: str = NAME,
    ns: str = NS,
    hosts_toml: str | None = None,
    hostlist: str | None = None,
    burst: str | None = None,
) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(f"{name}-entrypoint", name, ns, burst),
        "data": {
            "flux-init.sh": "#!/bin/bash\nset -euo pipefail\n",
            "wait-0.sh": "#!/bin/bash\nexec flux start\n",
            layout.BROKER_TOML: broker_toml(name, ns, hosts_toml),
            layout.HOSTLIST: hostlist or f"{name}-[0-3]",
        },
    }


def curve_secret(
    name: str = NAME, ns: str = NS, key: str = PUBLIC_KEY, burst: str | None = None
) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata(
            f"{name}-curve", name, ns, burst, {lbl.CURVE_PUBLIC_KEY_ANNOTATION: key}
        ),
        "stringData": {layout.CURVE_FILE: CERT.replace(PUBLIC_KEY, key)},
    }


def headless_service(name: str = NAME, ns: str = NS) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, name, ns),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {lbl.JOB_NAME_LABEL: name},
        },
    }


def job(
    name: str = NAME,
    ns: str = NS,
    max_size: int = 4,
    lifecycle: str = "ephemeral",
    role: str = "standalone",
    image: str = "ghcr.io/rse-ops/lammps-matrix:mpich",
) -> Manifest:
    notes = {
        lbl.MAX_SIZE_ANNOTATION: str(max_size),
        lbl.LIFECYCLE_ANNOTATION: lifecycle,
        lbl.ROLE_ANNOTATION: role,
    }
    if lifecycle == "persistent":
        notes[lbl.SKIP_AWAIT_ANNOTATION] = "true"
        notes[lbl.ARCHIVE_ANNOTATION] = f"/data/flux-archives/{name}.tgz"
    else:
        notes[lbl.WAIT_FOR_ANNOTATION] = f"jsonpath={{.status.ready}}={max_size}"
    # as the renderer makes it for 1.29 and newer: failed work (rank 0's code) fails the Job too
    work = lifecycle == "ephemeral" and role != "burst"
    codes = [*exitcodes.CONFIGURATION_ERRORS, *([exitcodes.WORK_FAILED] if work else [])]
    failure_policy = {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": name, "operator": "In", "values": codes},
            },
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        ]
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(name, name, ns, annotations=notes),
        "spec": {
            "completionMode": "Indexed",
            "completions": max_size,
            "parallelism": max_size,
            "backoffLimit": 100,
            "activeDeadlineSeconds": 31_500_000,
            "podFailurePolicy": failure_policy,
            "template": {
                "metadata": {"labels": {lbl.NAME_LABEL: name, lbl.CLUSTER_LABEL: name}},
                "spec": {
                    "subdomain": name,
                    "restartPolicy": "Never",
                    "initContainers": [
                        {
                            "name": "flux-view",
                            "image": "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble",
                            "command": ["/bin/bash", "/flux_operator/flux-init.sh"],
                        }
                    ],
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            "command": ["/bin/bash", "/flux_operator/wait-0.sh"],
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        }
                    ],
                    "volumes": [
                        {
                            "name": f"{name}-entrypoint",
                            "configMap": {"name": f"{name}-entrypoint", "defaultMode": 0o755},
                        },
                        {"name": "curve", "secret": {"secretName": f"{name}-curve"}},
                    ],
                },
            },
        },
    }


def minicluster(name: str = NAME, ns: str = NS, **job_args: Any) -> list[Manifest]:
    return [
        entrypoint(name, ns),
        curve_secret(name, ns),
        headless_service(name, ns),
        job(name, ns, **job_args),
    ]


def burst_group(child_hosts: str | None = None, child_key: str = PUBLIC_KEY) -> list[Manifest]:
    """A root ``flux-sample`` (maxSize 4) that bursts to ``burst-0`` (maxSize 4)."""
    lead = [
        entrypoint(
            NAME,
            hosts_toml='[ { host = "flux-sample-[0-3]" }, { host = "burst-0-[0-3]" } ]',
            hostlist="flux-sample-[0-3],burst-0-[0-3]",
            burst=NAME,
        ),
        curve_secret(NAME, burst=NAME),
        headless_service(NAME),
        job(NAME, role="root"),
    ]
    hosts = child_hosts or "flux-sample-[1-3],burst-0-[0-3]"
    child_toml = (
        f'[ {{ host = "{LEAD_ADDRESS}", bind = "tcp://eth0:8050", '
        f'connect = "tcp://{LEAD_ADDRESS}:8050" }}, '
        + ", ".join(f'{{ host = "{h}" }}' for h in _split_terms(hosts))
        + " ]"
    )
    child = [
        entrypoint(
            "burst-0", hosts_toml=child_toml, hostlist=f"{LEAD_ADDRESS},{hosts}", burst=NAME
        ),
        curve_secret("burst-0", key=child_key, burst=NAME),
        headless_service("burst-0"),
        job("burst-0", role="burst"),
    ]
    return lead + child


def _split_terms(hostlist: str) -> list[str]:
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(hostlist):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(hostlist[start:i])
            start = i + 1
    return [*terms, hostlist[start:]]


ROOT_STACK = "organization/flux-minicluster/flux-sample-root"
_ABSENT = object()


def root_outputs(**changes: Any) -> dict[str, Any]:
    """What ``burst_group``'s root stack exports (``deploy/stack/program.py``); ``_ABSENT``
    drops one."""
    outputs: dict[str, Any] = {
        "jobName": NAME,
        "hostlist": "flux-sample-[0-3],burst-0-[0-3]",
        "curvePublicKey": PUBLIC_KEY,
        "curveCert": CERT,
        "leadBrokerAddress": LEAD_ADDRESS,
        "leadBrokerPort": 8050,
        "leadName": NAME,
        "leadSize": 4,
        "burstClusters": [{"name": "burst-0", "size": 4}],
    }
    outputs.update(changes)
    return {k: v for k, v in outputs.items() if v is not _ABSENT}


def burst_stack(
    child_hosts: str | None = None, child_key: str = PUBLIC_KEY, **outputs: Any
) -> list[Manifest]:
    """What a burst stack's policy run sees: its own objects and the StackReference to its root."""
    child = burst_group(child_hosts, child_key)[4:]
    return [*child, stack_reference_manifest(ROOT_STACK, root_outputs(**outputs))]


def lead_service(
    kind: str = "LoadBalancer",
    ranges: list[str] | None = None,
    annotations: dict[str, str] | None = None,
    node_port: int | None = None,
) -> Manifest:
    """A bursting root's ``<name>-lead`` Service (core/render/manifests.py ``lead_service``)."""
    port: dict[str, Any] = {"name": "broker", "port": 8050, "targetPort": 8050}
    if node_port is not None:
        port["nodePort"] = node_port
    spec: dict[str, Any] = {
        "type": kind,
        "publishNotReadyAddresses": True,
        "selector": {lbl.JOB_NAME_LABEL: NAME, lbl.COMPLETION_INDEX_LABEL: "0"},
        "ports": [port],
    }
    if ranges is not None:
        spec["loadBalancerSourceRanges"] = ranges
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(f"{NAME}-lead", annotations=annotations),
        "spec": spec,
    }


def changed(objs: list[Manifest], index: int, edit: Callable[[Manifest], object]) -> list[Manifest]:
    """A deep copy of ``objs`` with ``edit`` applied to the object at ``index``."""
    out = copy.deepcopy(objs)
    edit(out[index])
    return out


def container(objs: list[Manifest], index: int = 3) -> dict[str, Any]:
    return objs[index]["spec"]["template"]["spec"]["containers"][0]


def pod(objs: list[Manifest], index: int = 3) -> dict[str, Any]:
    return objs[index]["spec"]["template"]["spec"]


def bare_pod(image: str, **spec: Any) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata(f"{NAME}-services"),
        "spec": {"containers": [{"name": "svc", "image": image}], **spec},
    }


def _set(path: list[str], value: Any) -> Callable[[Manifest], None]:
    def edit(m: Manifest) -> None:
        target = m
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return edit


_DELETE = object()


# --- the cases: (rule, passing objects, failing objects) -----------------------------------------

GOOD = minicluster()
QUEUED = changed(
    GOOD,
    3,
    lambda m: (
        m["metadata"].setdefault("labels", {}).update({"kueue.x-k8s.io/queue-name": "team-a"}),
        m["spec"].update({"suspend": True}),
    ),
)
FAILURE_POLICY = {
    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
}


def on_failure(objs: list[Manifest]) -> list[Manifest]:
    """``objs`` as rendered with restartPolicy OnFailure (or for a release before 1.29): no
    failure policy, the Job-wide budget."""
    return changed(
        changed(objs, 3, _set(["spec", "podFailurePolicy"], _DELETE)),
        3,
        _set(["spec", "template", "spec", "restartPolicy"], "OnFailure"),
    )


ON_FAILURE = on_failure(GOOD)
CASES: list[tuple[str, str, list[Manifest], list[Manifest]]] = [
    (
        "queued-job-suspended",
        "queue label, not suspended",
        QUEUED,
        changed(QUEUED, 3, _set(["spec", "suspend"], _DELETE)),
    ),
    (
        "queued-job-suspended",
        "queue label, suspend false",
        QUEUED,
        changed(QUEUED, 3, _set(["spec", "suspend"], False)),
    ),
    (
        "curve-cert-in-secret",
        "cert in a ConfigMap",
        GOOD,
        changed(GOOD, 0, lambda m: m["data"].update({layout.CURVE_FILE: CERT})),
    ),
    (
        "curve-cert-in-secret",
        "munge key in a ConfigMap",
        GOOD,
        changed(GOOD, 0, lambda m: m["data"].update({layout.MUNGE_KEY: "c2VjcmV0"})),
    ),
    (
        "curve-cert-in-secret",
        "cert heredoc in a script",
        GOOD,
        changed(
            GOOD,
            0,
            lambda m: m["data"].update(
                {"flux-init.sh": "cat > c <<EOF\n" + CERT.replace("\n", "\n  ") + "\nEOF\n"}
            ),
        ),
    ),
    (
        "pinned-images",
        "latest tag",
        [*GOOD, bare_pod("registry.local:5000/flux/svc:1.2@sha256:" + "a" * 64)],
        minicluster(image="ghcr.io/rse-ops/lammps-matrix:latest"),
    ),
    (
        "pinned-images",
        "no tag",
        [bare_pod("localhost:5000/svc:0.3")],
        [bare_pod("localhost:5000/svc")],
    ),
    (
        "pinned-images",
        "untagged init container",
        GOOD,
        changed(GOOD, 3, lambda m: pod([m], 0)["initContainers"][0].update({"image": "busybox"})),
    ),
    (
        "no-privileged",
        "privileged container",
        GOOD,
        changed(
            GOOD, 3, lambda m: container([m], 0).update({"securityContext": {"privileged": True}})
        ),
    ),
    (
        "no-privileged",
        "hostPID",
        GOOD,
        changed(GOOD, 3, lambda m: pod([m], 0).update({"hostPID": True})),
    ),
    ("no-privileged", "hostIPC", [bare_pod("a:1", hostIPC=False)], [bare_pod("a:1", hostIPC=True)]),
    (
        "no-privileged",
        "hostPath volume",
        GOOD,
        changed(
            GOOD,
            3,
            lambda m: pod([m], 0)["volumes"].append({"name": "dev", "hostPath": {"path": "/dev"}}),
        ),
    ),
    (
        "flux-container-resources",
        "no requests",
        GOOD,
        changed(GOOD, 3, lambda m: container([m], 0).pop("resources")),
    ),
    (
        "flux-container-resources",
        "a limit counts, a missing cpu does not",
        changed(
            GOOD,
            3,
            lambda m: container([m], 0).update(
                {"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}}
            ),
        ),
        changed(
            GOOD,
            3,
            lambda m: container([m], 0).update({"resources": {"requests": {"memory": "1Gi"}}}),
        ),
    ),
    (
        "job-bounds",
        "no deadline",
        GOOD,
        changed(GOOD, 3, _set(["spec", "activeDeadlineSeconds"], _DELETE)),
    ),
    ("job-bounds", "backoff too high", GOOD, changed(GOOD, 3, _set(["spec", "backoffLimit"], 101))),
    (
        "job-bounds",
        "per-index budget too high",
        GOOD,
        changed(
            changed(GOOD, 3, _set(["spec", "backoffLimit"], _DELETE)),
            3,
            _set(["spec", "backoffLimitPerIndex"], 101),
        ),
    ),
    (
        "burst-no-success-policy",
        "success policy on a burst's index 0",
        minicluster(role="burst"),
        changed(
            minicluster(role="burst"),
            3,
            _set(["spec", "successPolicy"], {"rules": [{"succeededIndexes": "0"}]}),
        ),
    ),
    (
        "failure-policy-needs-never",
        "podFailurePolicy with restartPolicy OnFailure",
        changed(GOOD, 3, _set(["spec", "podFailurePolicy"], FAILURE_POLICY)),
        changed(
            changed(GOOD, 3, _set(["spec", "podFailurePolicy"], FAILURE_POLICY)),
            3,
            _set(["spec", "template", "spec", "restartPolicy"], "OnFailure"),
        ),
    ),
    (
        "failed-work-fails-job",
        "restartPolicy OnFailure, no failure policy",
        GOOD,
        ON_FAILURE,
    ),
    (
        "failed-work-fails-job",
        "a failure policy without the failed work's code",
        GOOD,
        changed(
            GOOD,
            3,
            lambda m: m["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"].update(
                {"values": list(exitcodes.CONFIGURATION_ERRORS)}
            ),
        ),
    ),
    (
        "failed-work-fails-job",
        "persistent or a burst: rank 0 runs no work (good), OnFailure (bad)",
        [
            *on_failure(minicluster(lifecycle="persistent")),
            *on_failure(minicluster(role="burst")),
        ],
        ON_FAILURE,
    ),
    (
        "job-bounds",
        "deadline too long",
        GOOD,
        changed(GOOD, 3, _set(["spec", "activeDeadlineSeconds"], 31_536_001)),
    ),
    (
        "persistent-keeps-its-queue",
        "persistent without an archive",
        minicluster(lifecycle="persistent"),
        changed(
            minicluster(lifecycle="persistent"),
            3,
            lambda m: m["metadata"]["annotations"].pop(lbl.ARCHIVE_ANNOTATION),
        ),
    ),
    (
        "persistent-no-hang",
        "persistent without skipAwait",
        minicluster(lifecycle="persistent"),
        changed(
            minicluster(lifecycle="persistent"),
            3,
            lambda m: m["metadata"]["annotations"].pop(lbl.SKIP_AWAIT_ANNOTATION),
        ),
    ),
    (
        "persistent-no-hang",
        "persistent with waitFor",
        changed(
            minicluster(lifecycle="persistent"),
            3,
            lambda m: m["metadata"]["annotations"].update(
                {
                    lbl.SKIP_AWAIT_ANNOTATION: "false",
                    lbl.WAIT_FOR_ANNOTATION: "jsonpath={.status.ready}=4",
                }
            ),
        ),
        changed(
            minicluster(lifecycle="persistent"),
            3,
            lambda m: m["metadata"]["annotations"].update({lbl.SKIP_AWAIT_ANNOTATION: "false"}),
        ),
    ),
    (
        "headless-publishes-not-ready",
        "not publishing",
        GOOD,
        changed(GOOD, 2, _set(["spec", "publishNotReadyAddresses"], _DELETE)),
    ),
    (
        "hostlist-covers-max-size",
        "hostlist too short",
        GOOD,
        changed(
            GOOD,
            0,
            lambda m: m["data"].update(
                {
                    layout.BROKER_TOML: broker_toml(hosts='[ { host = "flux-sample-[0-2]" } ]'),
                    layout.HOSTLIST: "flux-sample-[0-2]",
                }
            ),
        ),
    ),
    (
        "hostlist-covers-max-size",
        "maxSize above the hostlist",
        GOOD,
        changed(
            GOOD, 3, lambda m: m["metadata"]["annotations"].update({lbl.MAX_SIZE_ANNOTATION: "5"})
        ),
    ),
    (
        "hostlist-covers-max-size",
        "completions above the hostlist, under a maxSize annotation that trusts it",
        GOOD,
        changed(GOOD, 3, _set(["spec", "completions"], 8)),
    ),
    (
        "hostlist-covers-max-size",
        "unparsable broker.toml",
        GOOD,
        changed(
            GOOD,
            0,
            lambda m: m["data"].update({layout.BROKER_TOML: broker_toml()[:-3]}),
        ),
    ),
    (
        "hostlist-covers-max-size",
        "connect through another service",
        GOOD,
        changed(
            GOOD,
            0,
            lambda m: m["data"].update(
                {layout.BROKER_TOML: broker_toml().replace(".flux-sample.ns.", ".other.ns.")}
            ),
        ),
    ),
    ("hostlist-covers-max-size", "no Service", GOOD, [GOOD[0], GOOD[1], GOOD[3]]),
    (
        "hostlist-covers-max-size",
        "burst child out of order",
        burst_group(),
        burst_group(child_hosts="flux-sample-[1-3],burst-0-[0-1],burst-0-3,burst-0-2"),
    ),
    (
        "burst-group-consistent",
        "different certificate",
        burst_group(),
        burst_group(child_key=OTHER_KEY),
    ),
    (
        "burst-group-consistent",
        "different rank order",
        burst_group(),
        changed(
            burst_group(),
            4,
            lambda m: m["data"].update(
                {layout.HOSTLIST: f"{LEAD_ADDRESS},burst-0-[0-3],flux-sample-[1-3]"}
            ),
        ),
    ),
    (
        "burst-group-consistent",
        "different size",
        burst_group(),
        changed(
            burst_group(),
            4,
            lambda m: m["data"].update(
                {layout.HOSTLIST: f"{LEAD_ADDRESS},flux-sample-[1-3],burst-0-[0-4]"}
            ),
        ),
    ),
    (
        "hostlist-covers-max-size",
        "hostlist file disagrees with broker.toml",
        GOOD,
        changed(GOOD, 0, lambda m: m["data"].update({layout.HOSTLIST: "flux-sample-[0-4]"})),
    ),
    (
        "hostlist-covers-max-size",
        "a host listed twice",
        changed(GOOD, 3, lambda m: m["metadata"]["annotations"].pop(lbl.MAX_SIZE_ANNOTATION)),
        changed(
            GOOD,
            0,
            lambda m: m["data"].update(
                {
                    layout.BROKER_TOML: broker_toml(hosts='[ { host = "flux-sample-[0-3,0]" } ]'),
                    layout.HOSTLIST: "flux-sample-[0-3,0]",
                }
            ),
        ),
    ),
    (
        "hostlist-covers-max-size",
        "a root whose rank 0 is someone else",
        GOOD,
        changed(
            GOOD,
            0,
            lambda m: m["data"].update(
                {
                    layout.BROKER_TOML: broker_toml(
                        hosts='[ { host = "login-0" }, { host = "flux-sample-[0-3]" } ]'
                    ),
                    layout.HOSTLIST: "login-0,flux-sample-[0-3]",
                }
            ),
        ),
    ),
    (
        "hostlist-covers-max-size",
        "no subdomain",
        GOOD,
        changed(GOOD, 3, lambda m: pod([m], 0).pop("subdomain")),
    ),
    (
        "hostlist-covers-max-size",
        "Service not headless",
        GOOD,
        changed(GOOD, 2, _set(["spec", "clusterIP"], "10.0.0.7")),
    ),
    (
        "hostlist-covers-max-size",
        "bad maxSize annotation",
        GOOD,
        changed(
            GOOD,
            3,
            lambda m: m["metadata"]["annotations"].update({lbl.MAX_SIZE_ANNOTATION: "four"}),
        ),
    ),
    ("hostlist-covers-max-size", "no entrypoint ConfigMap", GOOD, GOOD[1:]),
    (
        "burst-group-consistent",
        "annotation does not match the certificate",
        burst_group(),
        changed(
            burst_group(),
            5,
            lambda m: m["stringData"].update(
                {layout.CURVE_FILE: CERT.replace(PUBLIC_KEY, OTHER_KEY)}
            ),
        ),
    ),
    (
        "burst-group-consistent",
        "no public-key annotation",
        burst_group(),
        changed(burst_group(), 5, lambda m: m["metadata"].pop("annotations")),
    ),
    (
        "namespace-not-default",
        "default namespace",
        GOOD,
        minicluster(ns="default"),
    ),
    (
        "namespace-not-default",
        "no namespace",
        GOOD,
        changed(GOOD, 2, lambda m: m["metadata"].pop("namespace")),
    ),
    # A burst stack under `pulumi preview` sees its root only through the StackReference.
    (
        "burst-group-consistent",
        "per stack: another certificate than the root's outputs",
        burst_stack(),
        burst_stack(child_key=OTHER_KEY),
    ),
    (
        "burst-group-consistent",
        "per stack: the key from curveCert when the root exports no curvePublicKey",
        burst_stack(curvePublicKey=_ABSENT),
        burst_stack(child_key=OTHER_KEY, curvePublicKey=_ABSENT),
    ),
    (
        "burst-group-consistent",
        "per stack: the root exports no certificate at all",
        burst_stack(),
        burst_stack(curvePublicKey=_ABSENT, curveCert=_ABSENT),
    ),
    (
        "burst-group-consistent",
        "per stack: rank 0 is not the root's lead address",
        burst_stack(),
        burst_stack(leadBrokerAddress="34.9.9.9"),
    ),
    (
        "burst-group-consistent",
        "per stack: another rank order than the root's",
        burst_stack(),
        burst_stack(child_hosts="burst-0-[0-3],flux-sample-[1-3]"),
    ),
    (
        "burst-group-consistent",
        "per stack: another size than the root's",
        burst_stack(),
        burst_stack(hostlist="flux-sample-[0-3],burst-0-[0-4]"),
    ),
    (
        "burst-group-consistent",
        "per stack: the root exports no hostlist",
        burst_stack(),
        burst_stack(hostlist=_ABSENT),
    ),
    (
        "burst-group-consistent",
        "the root's outputs win over its objects",
        [*burst_group(), stack_reference_manifest(ROOT_STACK, root_outputs())],
        [
            *burst_group(),
            stack_reference_manifest(ROOT_STACK, root_outputs(curvePublicKey=OTHER_KEY)),
        ],
    ),
    (
        "lead-open-to-all",
        "LoadBalancer without source ranges",
        [lead_service(ranges=["198.51.100.0/24"]), *GOOD],
        [lead_service()],
    ),
    (
        "lead-open-to-all",
        "source ranges that include every address",
        [lead_service(ranges=["198.51.100.0/24", "203.0.113.7/32"])],
        [lead_service(ranges=["198.51.100.0/24", "::/0"])],
    ),
    (
        "lead-open-to-all",
        "source ranges by the older annotation",
        [lead_service(annotations={SOURCE_RANGES_ANNOTATION: "198.51.100.0/24"})],
        [lead_service(annotations={SOURCE_RANGES_ANNOTATION: "0.0.0.0/0"})],
    ),
    (
        "lead-open-to-all",
        "an internal load balancer is not on the internet",
        [lead_service(annotations={"networking.gke.io/load-balancer-type": "Internal"})],
        [lead_service(annotations={"networking.gke.io/load-balancer-type": "External"})],
    ),
    (
        "lead-open-to-all",
        "NodePort",
        [lead_service(ranges=["198.51.100.0/24"])],
        [lead_service("NodePort", node_port=30850)],
    ),
]


def findings(
    rule_id: str, objs: list[Manifest], config: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``(object, message)`` pairs the rule reports, straight from the pure rule."""
    rule = RULES[rule_id]
    normal = [mf.normalize(m) for m in objs]
    if rule.is_stack:
        return sorted(
            ("stack" if m is None else mf.identity(m), msg)
            for m, msg in rule.check_stack(normal, config)
        )
    return sorted((mf.identity(m), msg) for m in normal for msg in rule.check_resource(m, config))


def offline(
    rule_id: str, objs: list[Manifest], options: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``(object, message)`` pairs the offline checker reports with only ``rule_id`` enabled."""
    level = RULES[rule_id].level
    config = {"all": "disabled", rule_id: {"enforcementLevel": level, **(options or {})}}
    report = checker.check(objs, config)
    assert report.policies == (rule_id,)
    return sorted((v.object, v.message) for v in report.violations)


def _case_id(case: tuple[str, str, list[Manifest], list[Manifest]]) -> str:
    return f"{case[0]}:{case[1]}"


def test_every_rule_has_cases() -> None:
    assert {case[0] for case in CASES} == {rule.id for rule in ALL_RULES}


def test_renderer_shaped_cluster_is_clean() -> None:
    for objs in (GOOD, burst_group(), minicluster(lifecycle="persistent")):
        report = checker.check(objs)
        assert report.violations == (), report.format()
        assert report.exit_code == 0


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_rule_passes_and_fails(case: tuple[str, str, list[Manifest], list[Manifest]]) -> None:
    rule_id, _, good, bad = case
    assert findings(rule_id, good) == []
    found = findings(rule_id, bad)
    assert found, f"{rule_id} let a bad case through"
    assert all(msg.strip() for _, msg in found)


# --- CrossGuard gives the same verdicts ----------------------------------------------------------

_TYPES = {
    "ConfigMap": "kubernetes:core/v1:ConfigMap",
    "Secret": "kubernetes:core/v1:Secret",
    "Service": "kubernetes:core/v1:Service",
    "Pod": "kubernetes:core/v1:Pod",
    "Job": "kubernetes:batch/v1:Job",
    "Namespace": "kubernetes:core/v1:Namespace",
    "StackReference": "pulumi:pulumi:StackReference",
}


def _as_pulumi(value: Any) -> Any:
    """How Pulumi hands props over: every number a float."""
    if isinstance(value, dict):
        return {k: _as_pulumi(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_pulumi(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _props(m: Manifest) -> dict[str, Any]:
    """The props Pulumi hands a policy: a StackReference's as its resource has them."""
    if m["kind"] == "StackReference":
        outputs = _as_pulumi(copy.deepcopy(m["outputs"]))
        if isinstance(outputs, dict) and isinstance(outputs.get("curveCert"), str):
            outputs["curveCert"] = Secret(outputs["curveCert"])
        return {
            "name": m["metadata"]["name"],
            "outputs": outputs,
            "secretOutputNames": ["curveCert"],
        }
    props = _as_pulumi(copy.deepcopy(m))
    del props["apiVersion"], props["kind"]
    return props


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


def _urn(m: Manifest) -> str:
    return f"urn:pulumi:test::minicluster::{_TYPES[m['kind']]}::{mf.identity(m)}"


def _run(policy: Any, args: Any) -> list[tuple[str, str | None]]:
    reported: list[tuple[str, str | None]] = []
    result = policy.validate(args, lambda msg, urn=None: reported.append((msg, urn)))
    if inspect.isawaitable(result):
        asyncio.new_event_loop().run_until_complete(result)
    return reported


def crossguard(
    rule_id: str, objs: list[Manifest], config: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``(object, message)`` pairs the CrossGuard policy reports for the same objects."""
    policy = minicluster_policies.POLICIES[rule_id]
    if isinstance(policy, StackValidationPolicy):
        resources = [
            PolicyResource(
                _TYPES[m["kind"]],
                unknown_checking_proxy(_props(m)),
                _urn(m),
                m["metadata"]["name"],
                _opts(),
                None,
                None,
                [],
                {},
            )
            for m in objs
        ]
        by_urn = {_urn(m): mf.identity(m) for m in objs}
        reported = _run(policy, StackValidationArgs(resources, config))
        return sorted(("stack" if urn is None else by_urn[urn], msg) for msg, urn in reported)
    out = []
    for m in objs:
        args = ResourceValidationArgs(
            _TYPES[m["kind"]],
            unknown_checking_proxy(_props(m)),
            _urn(m),
            m["metadata"]["name"],
            _opts(),
            None,
            config,
        )
        out.extend((mf.identity(m), msg) for msg, _ in _run(policy, args))
    return sorted(out)


def test_policies_mirror_rules() -> None:
    assert [p.name for p in minicluster_policies.ALL] == [r.id for r in ALL_RULES]
    for rule, policy in zip(ALL_RULES, minicluster_policies.ALL, strict=True):
        kind = StackValidationPolicy if rule.is_stack else ResourceValidationPolicy
        assert isinstance(policy, kind)
        assert policy.description == rule.description
        assert policy.remediation_steps == rule.remediation
        assert policy.enforcement_level == EnforcementLevel(rule.level)
        declared = policy.config_schema.properties if policy.config_schema else {}
        assert set(declared) == {o.name for o in rule.options}


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_crossguard_agrees_with_checker(
    case: tuple[str, str, list[Manifest], list[Manifest]],
) -> None:
    rule_id, _, good, bad = case
    for objs in (good, bad):
        assert crossguard(rule_id, objs) == offline(rule_id, objs) == findings(rule_id, objs)
    assert crossguard(rule_id, bad)


def test_crossguard_unwraps_secrets() -> None:
    leaked = entrypoint()
    props = _props(leaked)
    props["data"] = {layout.CURVE_FILE: Secret(CERT)}
    args = ResourceValidationArgs(_TYPES["ConfigMap"], props, _urn(leaked), "cm", _opts(), None)
    reported = _run(minicluster_policies.POLICIES["curve-cert-in-secret"], args)
    assert len(reported) == 1
    assert "CURVE secret key" in reported[0][0]


def test_crossguard_defers_verdicts_on_unknown_values() -> None:
    """During preview a value may be unknown: no false violation, but 'cannot run' instead."""
    bad = job(image=UNKNOWN_STRING_VALUE)
    args = ResourceValidationArgs(
        _TYPES["Job"], unknown_checking_proxy(_props(bad)), _urn(bad), NAME, _opts(), None
    )
    with pytest.raises(UnknownValueError):
        _run(minicluster_policies.POLICIES["pinned-images"], args)
    # Unknown values a rule's verdict does not turn on change nothing.
    assert _run(minicluster_policies.POLICIES["job-bounds"], args) == []

    # A stack policy that reads an unknown value is deferred as a whole; one that does not, runs.
    objs = burst_group(child_key=OTHER_KEY)
    objs[1]["metadata"]["annotations"][lbl.CURVE_PUBLIC_KEY_ANNOTATION] = UNKNOWN_STRING_VALUE
    objs[1]["stringData"][layout.CURVE_FILE] = UNKNOWN_STRING_VALUE
    with pytest.raises(UnknownValueError) as err:
        crossguard("burst-group-consistent", objs)
    assert "can't be known during preview" in err.value.message
    assert crossguard("hostlist-covers-max-size", objs) == []


# --- a burst stack checked against its root's outputs --------------------------------------------


def test_stack_reference_manifest() -> None:
    """The documented shape, and the same dict from Pulumi's StackReference props."""
    outputs = root_outputs()
    expected = {"kind": "StackReference", "metadata": {"name": ROOT_STACK}, "outputs": outputs}
    assert stack_reference_manifest(ROOT_STACK, outputs) == expected
    props = _props(expected)
    assert isinstance(props["outputs"]["curveCert"], Secret)
    assert minicluster_policies.to_manifest("pulumi:pulumi:StackReference", props) == expected


def test_the_rules_read_only_outputs_the_root_program_exports() -> None:
    from flux_minicluster.core.deployed.stackoutputs import ROOT_OUTPUTS, stack_output_name
    from flux_minicluster.deploy.component.minicluster import OUTPUTS

    exported = {*ROOT_OUTPUTS, *(stack_output_name(o) for o in OUTPUTS)}
    read = {so.LEAD_NAME, so.HOSTLIST, so.LEAD_BROKER_ADDRESS, so.CURVE_PUBLIC_KEY, so.CURVE_CERT}
    assert read <= exported
    assert set(root_outputs()) <= exported


@pytest.mark.parametrize(
    "objs",
    [
        burst_stack(),
        [*burst_group(), stack_reference_manifest(ROOT_STACK, root_outputs())],
        # A reference to a stack that leads another group (or none) changes nothing.
        [*burst_group(), stack_reference_manifest("org/p/other", root_outputs(leadName="other"))],
        [*GOOD, stack_reference_manifest("org/p/plain", {"jobName": "x"})],
    ],
    ids=["burst-and-its-root", "whole-group-and-root", "another-group", "not-a-root"],
)
def test_a_stack_reference_passes_every_other_rule(objs: list[Manifest]) -> None:
    report = checker.check(objs)
    assert report.violations == (), report.format()
    assert report.objects == len(objs) - 1, "the reference is not a Kubernetes object checked"
    assert all(crossguard(rule.id, objs) == [] for rule in ALL_RULES)


@pytest.mark.parametrize(
    ("edit", "unread_path"),
    [
        (lambda out: out.update(curvePublicKey=UNKNOWN_STRING_VALUE), ".outputs.curvePublicKey"),
        (lambda out: out.update(hostlist=UNKNOWN_STRING_VALUE), ".outputs.hostlist"),
        (
            lambda out: out.update(curvePublicKey=None, curveCert=UNKNOWN_STRING_VALUE),
            ".outputs.curveCert",
        ),
    ],
    ids=["public-key", "hostlist", "secret-certificate"],
)
def test_an_unknown_root_output_defers_the_group_verdict(
    edit: Callable[[dict[str, Any]], None], unread_path: str
) -> None:
    """Under preview an output the rule needs may be unknown: 'cannot run', never a verdict."""
    objs = burst_stack()
    edit(objs[4]["outputs"])
    with pytest.raises(UnknownValueError) as err:
        crossguard("burst-group-consistent", objs)
    assert f"at {unread_path} can't be known during preview" in err.value.message
    assert crossguard("hostlist-covers-max-size", objs) == []


def test_unknown_outputs_of_a_reference_no_group_needs_are_not_read() -> None:
    unknown = stack_reference_manifest(ROOT_STACK, {})
    unknown["outputs"] = UNKNOWN_OBJECT_VALUE
    assert crossguard("burst-group-consistent", [*GOOD, unknown]) == []
    with pytest.raises(UnknownValueError):
        crossguard("burst-group-consistent", [*burst_stack()[:4], unknown])


# --- lead-open-to-all ----------------------------------------------------------------------------


def test_lead_open_to_all_says_how_to_restrict_the_lead() -> None:
    remediation = RULES["lead-open-to-all"].remediation
    for words in (
        "flux-minicluster:bursting.sourceRanges",
        "spec.loadBalancerSourceRanges",
        "A NodePort cannot be restricted by the Service",
        "NetworkPolicy",
        "cloud firewall",
        "allowOpen",
    ):
        assert words in remediation


@pytest.mark.parametrize(
    ("config", "level"),
    [
        ({}, "advisory"),
        ({"lead-open-to-all": "mandatory"}, "mandatory"),
        ({"all": "mandatory"}, "mandatory"),
        ({"lead-open-to-all": {"allowOpen": ["other"]}}, "advisory"),
        ({"lead-open-to-all": {"allowOpen": [NAME]}}, None),
        ({"lead-open-to-all": {"enforcementLevel": "mandatory", "allowOpen": ["*"]}}, None),
        ({"lead-open-to-all": "disabled"}, None),
    ],
)
def test_lead_open_to_all_config(config: dict[str, Any], level: str | None) -> None:
    objs = [*GOOD, lead_service("NodePort", node_port=30850)]
    report = checker.check(objs, config)
    found = [(v.policy, v.level, v.object) for v in report.violations]
    assert found == ([("lead-open-to-all", level, f"Service/ns/{NAME}-lead")] if level else [])
    assert report.exit_code == (1 if level == "mandatory" else 0)
    section = config.get("lead-open-to-all")
    if isinstance(section, dict):  # CrossGuard honours the options the same way
        options = {k: v for k, v in section.items() if k != "enforcementLevel"}
        assert crossguard("lead-open-to-all", objs, options) == offline(
            "lead-open-to-all", objs, options
        )


def test_crossguard_ignores_non_kubernetes_resources() -> None:
    args = ResourceValidationArgs(
        "command:local:Command", {"create": "flux keygen"}, "urn:x", "keygen", _opts(), None
    )
    for policy in minicluster_policies.ALL:
        if isinstance(policy, ResourceValidationPolicy):
            assert _run(policy, args) == []


# --- configuration -------------------------------------------------------------------------------


def test_advisory_made_mandatory() -> None:
    objs = minicluster(image="ubuntu:latest")
    default = checker.check(objs)
    assert [v.policy for v in default.violations] == ["pinned-images"]
    assert default.violations[0].level == "advisory"
    assert default.exit_code == 0

    strict = checker.check(objs, {"pinned-images": {"enforcementLevel": "mandatory"}})
    assert strict.violations[0].level == "mandatory"
    assert strict.exit_code == 1
    assert checker.check(objs, {"all": "mandatory"}).exit_code == 1
    # A policy's own entry wins over "all".
    assert checker.check(objs, {"all": "mandatory", "pinned-images": "advisory"}).exit_code == 0


def test_disabled_rules_are_skipped() -> None:
    objs = minicluster(image="ubuntu:latest")
    report = checker.check(objs, {"pinned-images": "disabled"})
    assert report.violations == ()
    assert "pinned-images" not in report.policies
    assert checker.check(objs, {"all": {"enforcementLevel": "disabled"}}).policies == ()


@pytest.mark.parametrize(
    ("allow", "passes"),
    [([], False), ([NAME], True), (["other"], False), (["*"], True)],
)
def test_privileged_allow_list(allow: list[str], passes: bool) -> None:
    objs = changed(
        GOOD, 3, lambda m: container([m], 0).update({"securityContext": {"privileged": True}})
    )
    objs = changed(
        objs,
        3,
        lambda m: pod([m], 0)["volumes"].append({"name": "d", "hostPath": {"path": "/dev"}}),
    )
    config = {"allowPrivileged": allow, "allowHostPath": allow}
    report = checker.check(objs, {"no-privileged": config})
    assert (report.exit_code == 0) is passes
    assert (crossguard("no-privileged", objs, config) == []) is passes
    assert crossguard("no-privileged", objs, config) == offline("no-privileged", objs, config)


def test_options_arrive_as_floats_from_pulumi() -> None:
    objs = changed(GOOD, 3, _set(["spec", "backoffLimit"], 50))
    config = {"maxBackoffLimit": 10.0}
    assert crossguard("job-bounds", objs, config) == offline(
        "job-bounds", objs, {"maxBackoffLimit": 10}
    )
    assert len(crossguard("job-bounds", objs, config)) == 1
    report = checker.check(objs, {"job-bounds": {"maxBackoffLimit": 10}})
    assert "spec.backoffLimit is 50" in report.violations[0].message


def test_namespace_option() -> None:
    objs = minicluster(ns="hpc")
    assert checker.check(
        objs, {"namespace-not-default": {"forbiddenNamespaces": ["hpc"]}}
    ).violations


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"pinned-image": "mandatory"}, "did you mean 'pinned-images'"),
        ({"pinned-images": "strict"}, "'strict' is not one of"),
        ({"no-privileged": {"allowPriviledged": ["x"]}}, "did you mean 'allowPrivileged'"),
        ({"job-bounds": {"maxBackoffLimit": "ten"}}, "not a valid integer"),
        ({"all": {"maxBackoffLimit": 3}}, "takes only enforcementLevel"),
    ],
)
def test_bad_config_is_refused(config: dict[str, Any], expected: str) -> None:
    with pytest.raises(SpecError, match=expected):
        checker.check(GOOD, config)


def test_load_config_json_and_yaml(tmp_path: Path) -> None:
    as_json = tmp_path / "policy.json"
    as_json.write_text(json.dumps({"all": "mandatory", "job-bounds": {"maxBackoffLimit": 5}}))
    assert checker.load_config(as_json) == {
        "all": {"enforcementLevel": "mandatory"},
        "job-bounds": {"maxBackoffLimit": 5},
    }
    as_yaml = tmp_path / "policy.yaml"
    as_yaml.write_text("no-privileged:\n  allowHostPath: ['*']\n")
    assert checker.load_config(as_yaml) == {"no-privileged": {"allowHostPath": ["*"]}}
    assert checker.load_config(None) == {}
    bad = tmp_path / "bad.yaml"
    bad.write_text("nosuch-policy: disabled\n")
    with pytest.raises(SpecError, match=r"bad\.yaml"):
        checker.load_config(bad)


# --- the offline checker -------------------------------------------------------------------------


def bad_set() -> list[Manifest]:
    objs = minicluster(image="ubuntu:latest")
    objs[0]["data"][layout.CURVE_FILE] = CERT
    container(objs)["securityContext"] = {"privileged": True}
    return objs


def test_bad_set_fails_and_names_each_policy() -> None:
    report = checker.check(bad_set())
    assert report.exit_code == 1
    assert {v.policy for v in report.violations} == {
        "curve-cert-in-secret",
        "pinned-images",
        "no-privileged",
    }
    text = report.format()
    for policy_id, level in (
        ("curve-cert-in-secret", "mandatory"),
        ("pinned-images", "advisory"),
        ("no-privileged", "mandatory"),
    ):
        assert any(policy_id in line and level in line for line in text.splitlines()), text
    assert "ConfigMap/ns/flux-sample-entrypoint" in text
    assert "Job/ns/flux-sample" in text
    assert text.splitlines()[-1].startswith("policy check FAILED: 2 mandatory, 1 advisory")


def clusters(count: int, **job_args: Any) -> list[Manifest]:
    """``count`` MiniClusters ``c0``, ``c1``, ... side by side."""
    return [o for i in range(count) for o in minicluster(f"c{i}", **job_args)]


def test_an_advisory_on_many_objects_is_reported_once() -> None:
    """``pinned-images`` on 11 Jobs is one finding naming all 11, not 11 findings."""
    report = checker.check(clusters(11, image="ubuntu:latest"))
    assert len(report.advisory) == 11
    assert report.exit_code == 0
    text = report.format()
    lines = text.splitlines()
    (header,) = [i for i, line in enumerate(lines) if "[advisory]" in line]
    assert lines[header].startswith("[advisory] pinned-images on 11 objects: Job/ns/c0, ")
    listing = [lines[header]]
    for line in lines[header + 1 :]:
        if not line.startswith("    "):  # wrapped lines of the list; messages are indented less
            break
        listing.append(line.strip())
    named = " ".join(listing).split(": ", 1)[1].split(", ")
    assert named == [f"Job/ns/c{i}" for i in range(11)]
    fix = next(i for i, line in enumerate(lines) if line.strip().startswith("fix:"))
    assert fix - header == len(listing) + 3 + 1, "the objects, three messages, how many more"
    assert lines[fix - 1] == "  ... and 8 more messages like these"
    assert not any(line.startswith("Job/") for line in lines), "no per-object heading"
    assert text.count("fix:") == 1
    assert lines[-1] == (
        "policy check passed: 0 mandatory, 11 advisory violation(s) in 44 object(s), "
        f"{len(ALL_RULES)} policies checked; advisory: pinned-images (11 objects)"
    )
    # Every message is still there for whoever wants them all.
    expanded = report.format(group_advisories=False)
    assert expanded.count("[advisory] pinned-images") == 11


def test_report_format() -> None:
    """Mandatory findings one by one under their object; an advisory once, alike messages once."""
    objs = clusters(3)
    for i in range(3):
        del objs[4 * i + 3]["spec"]["activeDeadlineSeconds"]
    container(objs, 7)["securityContext"] = {"privileged": True}
    container(objs, 11)["securityContext"] = {"privileged": True}
    fix = RULES["no-privileged"].remediation
    message = (
        "spec.template.spec.containers[0].securityContext.privileged is true: the container has "
        "every capability on the node (allow it with allowPrivileged: ['{}'])"
    )
    assert checker.check(objs).format().splitlines() == [
        "Job/ns/c1",
        f"  [mandatory] no-privileged: {message.format('c1')}",
        f"      fix: {fix}",
        "Job/ns/c2",
        f"  [mandatory] no-privileged: {message.format('c2')}",
        f"      fix: {fix}",
        "",
        "[advisory] job-bounds on 3 objects: Job/ns/c0, Job/ns/c1, Job/ns/c2",
        "  spec.activeDeadlineSeconds is not set: a hung cluster then holds its nodes forever; "
        "set it to at most 31536000",
        f"      fix: {RULES['job-bounds'].remediation}",
        "",
        "policy check FAILED: 2 mandatory, 3 advisory violation(s) in 12 object(s), "
        f"{len(ALL_RULES)} policies checked; advisory: job-bounds (3 objects)",
    ]
    assert checker.check(GOOD).format() == (
        f"policy check passed: 0 mandatory, 0 advisory violation(s) in 4 object(s), "
        f"{len(ALL_RULES)} policies checked"
    )


def test_stack_violations_name_the_object() -> None:
    objs = burst_group(child_key=OTHER_KEY)
    report = checker.check(objs)
    (violation,) = report.violations
    assert violation.policy == "burst-group-consistent"
    assert violation.object == "Secret/ns/burst-0-curve"
    assert OTHER_KEY in violation.message
    assert PUBLIC_KEY in violation.message


def test_load_manifests(tmp_path: Path) -> None:
    objs = minicluster()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "cluster.yaml").write_text(
        yaml.safe_dump_all([objs[0], None, objs[1], "a comment document"])
    )
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "a" / "b" / "svc.yml").write_text(yaml.safe_dump(objs[2]))
    (tmp_path / "job.json").write_text(json.dumps(objs[3]))
    (tmp_path / "outputs.json").write_text(json.dumps({"leadAddress": LEAD_ADDRESS}))
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "list.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [bare_pod("a:1")]})
    )
    loaded = checker.load_manifests([tmp_path])
    assert sorted(mf.identity(m) for m in loaded) == sorted(
        [*(mf.identity(m) for m in objs), "Pod/ns/flux-sample-services"]
    )
    assert checker.load_manifests([tmp_path / "job.json"]) == [objs[3]]
    assert (
        checker.check(checker.load_manifests([tmp_path / "a", tmp_path / "job.json"])).exit_code
        == 0
    )


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("broken.yaml", "kind: [unclosed\n", "invalid YAML"),
        # as validate reads it: not the last of two keys silently winning over the first
        ("twice.yaml", "apiVersion: v1\nkind: Pod\nkind: Job\n", "duplicate key 'kind'"),
        ("broken.json", "{", "not valid JSON"),
        ("nokind.yaml", "metadata: {name: x}\n", "not a Kubernetes object"),
        ("manifest.txt", "kind: Pod\n", "not a manifest file"),
    ],
)
def test_bad_manifest_file_names_the_file(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError, match=expected) as err:
        checker.load_manifests([path])
    assert str(path) in str(err.value)
    with pytest.raises(SpecError, match="no such file"):
        checker.load_manifests([tmp_path / "missing.yaml"])


def test_pulumi_shaped_props_normalise() -> None:
    props = _props(job())
    normal = mf.normalize(props, "kubernetes:batch/v1:Job")
    assert normal == job()
    assert mf.parse_type_token("kubernetes:core/v1:ConfigMap") == ("v1", "ConfigMap")
    assert mf.parse_type_token("kubernetes:apps/v1:Deployment") == ("apps/v1", "Deployment")
    assert mf.parse_type_token("pulumi:providers:kubernetes") is None


# --- the pack's wiring ---------------------------------------------------------------------------


def test_pack_main_only_wires() -> None:
    """``policies/__main__.py`` must stay thin; it is read, never imported (it would block)."""
    source = (POLICIES_DIR / "__main__.py").read_text()
    tree = ast.parse(source)
    body = [
        n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
    ]
    assert all(isinstance(n, ast.ImportFrom) for n in body[:-1])
    assert {n.module for n in body[:-1]} == {"pulumi_policy", "minicluster_policies"}
    (call,) = [n for n in body if isinstance(n, ast.Expr)]
    assert isinstance(call.value, ast.Call)
    assert ast.unparse(call.value.func) == "PolicyPack"
    kwargs = {k.arg: ast.unparse(k.value) for k in call.value.keywords}
    assert kwargs == {
        "name": "'minicluster-policies'",
        "policies": "ALL",
        "enforcement_level": "EnforcementLevel.ADVISORY",
    }


def test_pack_project_file() -> None:
    project = yaml.safe_load((POLICIES_DIR / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"] == "../.venv"
    assert (POLICIES_DIR / project["runtime"]["options"]["virtualenv"]).resolve() == ROOT / ".venv"
    assert project["description"]
    assert project["version"]
