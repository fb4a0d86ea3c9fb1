"""Rules that judge one Kubernetes object at a time.

Each check reads a normalised manifest (see ``manifest.normalize``) and the rule's settings, and
returns one message per problem, each naming the field and what to change. They back both the
CrossGuard ``ResourceValidationPolicy`` objects and the offline checker.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from flux_minicluster.core.base import layout
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy.model import Manifest, Option, Rule, Settings

ANY = "*"
"""In an allow-list, matches every MiniCluster."""

# --- curve-cert-in-secret ------------------------------------------------------------------------


def check_curve_cert_in_secret(m: Manifest, s: Settings) -> list[str]:
    """A CURVE secret key (or a munge key, its multi-user counterpart) in a ConfigMap."""
    if mf.kind(m) != "ConfigMap":
        return []
    namespace = mf.effective_namespace(m)
    out = [
        f"data key {key!r} holds a CURVE secret key (a 'curve' section with 'secret-key = '): "
        f"anyone allowed to read ConfigMaps in namespace {namespace!r} can join "
        "or impersonate the Flux instance"
        for key, text in sorted(mf.data_items(m).items())
        if certificate.holds_secret_key(text)
    ]
    out += [
        f"data key {key!r} is a munge key: anyone allowed to read ConfigMaps in namespace "
        f"{namespace!r} can forge credentials as any user of the Flux instance"
        for key in sorted(mf.data_items(m))
        if key.rsplit("/", 1)[-1] == layout.MUNGE_KEY
    ]
    return out


# --- pinned-images -------------------------------------------------------------------------------

_SHA256_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def image_problem(image: Any) -> str | None:
    """Why ``image`` is not pinned, or ``None`` when it has a version tag or a sha256 digest."""
    if not isinstance(image, str) or not image.strip():
        return "has no image"
    if "@" in image:
        digest = image.split("@", 1)[1]
        if _SHA256_DIGEST.fullmatch(digest):
            return None
        return f"image {image!r} has digest {digest!r}, which is not 'sha256:' and 64 hex digits"
    last = image.rsplit("/", 1)[-1]  # a registry port ("host:5000/img") is not a tag
    tag = last.split(":", 1)[1] if ":" in last else ""
    if not tag:
        return f"image {image!r} has no tag, so Kubernetes pulls ':latest'"
    if tag == "latest":
        return f"image {image!r} uses the tag 'latest'"
    return None


def check_pinned_images(m: Manifest, s: Settings) -> list[str]:
    spec = mf.pod_spec(m)
    if spec is None:
        return []
    base = mf.pod_spec_path(m)
    out = []
    for path, container in mf.containers(spec):
        problem = image_problem(container.get("image"))
        if problem is not None:
            out.append(
                f"{base}.{path} ({container.get('name', '?')}): {problem}; the pods of one "
                "cluster can then run different images, and a restart can pick up a new one"
            )
    return out


# --- no-privileged -------------------------------------------------------------------------------


def _allowed(m: Manifest, allow: Any) -> bool:
    names = set(allow or ())
    if ANY in names:
        return True
    cluster = mf.minicluster_name(m)
    return cluster is not None and cluster in names


def check_no_privileged(m: Manifest, s: Settings) -> list[str]:
    spec = mf.pod_spec(m)
    if spec is None:
        return []
    base = mf.pod_spec_path(m)
    who = mf.minicluster_name(m) or mf.name(m) or "<unnamed>"
    out = []
    if not _allowed(m, s["allowPrivileged"]):
        for path, container in mf.containers(spec):
            if mf.dig(container, "securityContext", "privileged") is True:
                out.append(
                    f"{base}.{path}.securityContext.privileged is true: the container has every "
                    f"capability on the node (allow it with allowPrivileged: [{who!r}])"
                )
    for fld, option in (("hostPID", "allowHostPID"), ("hostIPC", "allowHostIPC")):
        if spec.get(fld) is True and not _allowed(m, s[option]):
            out.append(
                f"{base}.{fld} is true: the pods share the node's {fld[4:]} namespace "
                f"(allow it with {option}: [{who!r}])"
            )
    if not _allowed(m, s["allowHostPath"]):
        for i, volume in enumerate(mf.as_list(spec.get("volumes"))):
            if isinstance(volume, dict) and "hostPath" in volume:
                path = mf.dig(volume, "hostPath", "path")
                out.append(
                    f"{base}.volumes[{i}] ({volume.get('name', '?')}) mounts hostPath "
                    f"{path!r} from the node (allow it with allowHostPath: [{who!r}])"
                )
    return out


# --- flux-container-resources --------------------------------------------------------------------

_WAIT_SCRIPT = re.compile(r"/flux_operator/wait-\d+\.sh\b")


def is_flux_container(container: dict[str, Any]) -> bool:
    """Whether ``container`` runs a Flux broker: its command runs ``/flux_operator/wait-<i>.sh``."""
    words = [*mf.as_list(container.get("command")), *mf.as_list(container.get("args"))]
    return any(isinstance(w, str) and _WAIT_SCRIPT.search(w) for w in words)


def check_flux_container_resources(m: Manifest, s: Settings) -> list[str]:
    spec = mf.pod_spec(m)
    if spec is None:
        return []
    base = mf.pod_spec_path(m)
    out = []
    for i, container in enumerate(mf.as_list(spec.get("containers"))):
        if not isinstance(container, dict) or not is_flux_container(container):
            continue
        resources = mf.as_dict(container.get("resources"))
        requests, limits = (
            mf.as_dict(resources.get("requests")),
            mf.as_dict(resources.get("limits")),
        )
        # The API server defaults a missing request to the limit, so a limit alone is enough.
        missing = [r for r in ("cpu", "memory") if r not in requests and r not in limits]
        if missing:
            out.append(
                f"{base}.containers[{i}] ({container.get('name', '?')}) runs a Flux broker but "
                f"sets no {' or '.join(missing)} request: the scheduler may pack brokers onto "
                "one node, and Flux then advertises cores and memory the pods cannot use"
            )
    return out


# --- job-bounds ----------------------------------------------------------------------------------


def is_minicluster_job(m: Manifest) -> bool:
    return mf.kind(m) == "Job" and (
        mf.is_minicluster_object(m) or lbl.MAX_SIZE_ANNOTATION in mf.annotations_of(m)
    )


def _bound_problem(spec: dict[str, Any], fld: str, low: int, high: int, why: str) -> str | None:
    value = spec.get(fld)
    if value is None:
        return f"spec.{fld} is not set: {why}; set it to at most {high}"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"spec.{fld} is {value!r}, not an integer"
    if not low <= value <= high:
        return f"spec.{fld} is {value}, outside the allowed {low}..{high}"
    return None


def check_job_bounds(m: Manifest, s: Settings) -> list[str]:
    if not is_minicluster_job(m):
        return []
    spec = mf.as_dict(m.get("spec"))
    problems = (
        _bound_problem(
            spec,
            "activeDeadlineSeconds",
            1,
            s["maxActiveDeadlineSeconds"],
            "a hung cluster then holds its nodes forever",
        ),
        # a budget per index (core.kube.completion) stands in for the Job-wide one
        _bound_problem(
            spec,
            "backoffLimitPerIndex" if "backoffLimitPerIndex" in spec else "backoffLimit",
            0,
            s["maxBackoffLimit"],
            "the Job then retries failed brokers only 6 times (the Kubernetes default)",
        ),
    )
    return [p for p in problems if p is not None]


# --- persistent-no-hang --------------------------------------------------------------------------


def _persistent_job_notes(m: Manifest) -> dict[str, str] | None:
    """The annotations of a persistent MiniCluster's Job (``lifecycle: persistent``), or None."""
    if mf.kind(m) != "Job":
        return None
    notes = mf.annotations_of(m)
    return notes if notes.get(lbl.LIFECYCLE_ANNOTATION) == "persistent" else None


def check_persistent_no_hang(m: Manifest, s: Settings) -> list[str]:
    notes = _persistent_job_notes(m)
    if notes is None:
        return []
    if notes.get(lbl.SKIP_AWAIT_ANNOTATION, "").strip().lower() == "true":
        return []
    if notes.get(lbl.WAIT_FOR_ANNOTATION, "").strip():
        return []
    return [
        f"the Job is persistent ({lbl.LIFECYCLE_ANNOTATION}: persistent) and never completes, but "
        f"has neither {lbl.SKIP_AWAIT_ANNOTATION}: 'true' nor {lbl.WAIT_FOR_ANNOTATION}: "
        "'pulumi up' would wait for completion until it times out"
    ]


# --- persistent-keeps-its-queue ------------------------------------------------------------------


def check_persistent_keeps_its_queue(m: Manifest, s: Settings) -> list[str]:
    notes = _persistent_job_notes(m)
    # a burst's brokers hold no content of their own: the root's archive keeps it
    if notes is None or notes.get(lbl.ROLE_ANNOTATION) == "burst":
        return []
    if notes.get(lbl.ARCHIVE_ANNOTATION, "").strip():
        return []
    return [
        f"the Job is persistent ({lbl.LIFECYCLE_ANNOTATION}: persistent) and keeps no archive "
        f"({lbl.ARCHIVE_ANNOTATION}): its queue and job history are lost whenever rank 0's pod is "
        "replaced (a new pod template, a drained node, a destroy)"
    ]


# --- headless-publishes-not-ready ----------------------------------------------------------------


def check_headless_publishes_not_ready(m: Manifest, s: Settings) -> list[str]:
    if mf.kind(m) != "Service" or lbl.CLUSTER_LABEL not in mf.labels_of(m):
        return []
    spec = mf.as_dict(m.get("spec"))
    if spec.get("clusterIP") != "None" or spec.get("publishNotReadyAddresses") is True:
        return []
    return [
        "the headless Service does not set spec.publishNotReadyAddresses: true, so a broker's "
        "hostname only resolves once its pod is Ready, and brokers that start early cannot find "
        "each other"
    ]


# --- namespace-not-default -----------------------------------------------------------------------


def check_namespace_not_default(m: Manifest, s: Settings) -> list[str]:
    if not mf.is_minicluster_object(m) or not mf.is_namespaced(m):
        return []
    ns = mf.effective_namespace(m)
    if ns not in set(s["forbiddenNamespaces"]):
        return []
    written = (
        "has no metadata.namespace, so it lands in 'default'"
        if mf.namespace(m) is None
        else (f"is in namespace {ns!r}")
    )
    return [f"the object {written}, shared with unrelated workloads"]


# --- lead-open-to-all ---------------------------------------------------------------------------

SOURCE_RANGES_KEY = "flux-minicluster:bursting.sourceRanges"
"""The stack config key that becomes the lead Service's ``spec.loadBalancerSourceRanges``."""
SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
"""The older annotation Kubernetes reads when ``spec.loadBalancerSourceRanges`` is empty."""
# Annotations (value, lowercased) that make a cloud's load balancer internal: reachable from the
# cluster's network only, not from the internet.
_INTERNAL_LOAD_BALANCER = {
    "networking.gke.io/load-balancer-type": "internal",
    "cloud.google.com/load-balancer-type": "internal",
    "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
    "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
}


def selects_rank_0(m: Manifest) -> bool:
    """Whether a Service selects rank 0 of an Indexed Job: its completion index "0" and job-name."""
    selector = mf.as_dict(mf.dig(m, "spec", "selector"))
    return str(selector.get(lbl.COMPLETION_INDEX_LABEL)) == "0" and bool(
        selector.get(lbl.JOB_NAME_LABEL)
    )


def _source_ranges(m: Manifest) -> list[str]:
    """The load balancer's allowed source CIDRs: the spec field, else the older annotation."""
    written = [r for r in mf.as_list(mf.dig(m, "spec", "loadBalancerSourceRanges")) if r]
    if written:
        return [str(r).strip() for r in written]
    note = mf.annotations_of(m).get(SOURCE_RANGES_ANNOTATION, "")
    return [r.strip() for r in note.split(",") if r.strip()]


def _is_everywhere(cidr: str) -> bool:
    try:
        return ipaddress.ip_network(cidr, strict=False).prefixlen == 0
    except ValueError:
        return False  # the API server refuses it; not this policy's business


def _is_internal(m: Manifest) -> bool:
    notes = {k: v.strip().lower() for k, v in mf.annotations_of(m).items()}
    return any(notes.get(key) == value for key, value in _INTERNAL_LOAD_BALANCER.items())


def check_lead_open_to_all(m: Manifest, s: Settings) -> list[str]:
    if mf.kind(m) != "Service" or not selects_rank_0(m) or _allowed(m, s["allowOpen"]):
        return []
    spec = mf.as_dict(m.get("spec"))
    ports = [p for p in mf.as_list(spec.get("ports")) if isinstance(p, dict)]
    shown = ", ".join(str(p.get("port")) for p in ports) or "?"
    what = f"rank 0's broker (port {shown})"
    kind = spec.get("type")
    if kind == "LoadBalancer":
        if _is_internal(m):
            return []
        ranges = _source_ranges(m)
        if not ranges:
            return [
                f"the Service exposes {what} through a LoadBalancer without "
                "spec.loadBalancerSourceRanges: every address on the internet can connect to it"
            ]
        everywhere = [r for r in ranges if _is_everywhere(r)]
        if everywhere:
            return [
                f"the Service exposes {what} through a LoadBalancer whose source ranges include "
                f"{', '.join(everywhere)}: every address on the internet can connect to it"
            ]
        return []
    if kind == "NodePort":
        node_ports = ", ".join(str(p["nodePort"]) for p in ports if p.get("nodePort"))
        on = f"node port {node_ports}" if node_ports else "a node port"
        return [
            f"the Service exposes {what} on {on} of every node: a Service cannot restrict who "
            "connects to a NodePort, so every address that reaches a node can, unless a "
            "NetworkPolicy or the cloud firewall stops it"
        ]
    return []


# --- the rules -----------------------------------------------------------------------------------

CURVE_CERT_IN_SECRET = Rule(
    id="curve-cert-in-secret",
    description="A ZeroMQ CURVE secret key (or a munge key) is kept in a Secret, never in a "
    "ConfigMap.",
    level="mandatory",
    remediation=(
        f"Put the certificate in a Secret (key {layout.CURVE_FILE!r}; a munge key under "
        f"{layout.MUNGE_KEY!r}) and mount it from there; then rotate it, since ConfigMap "
        "contents are readable by anyone who can list ConfigMaps."
    ),
    resource_check=check_curve_cert_in_secret,
)

PINNED_IMAGES = Rule(
    id="pinned-images",
    description="Every container image names a version tag other than 'latest', or a digest.",
    level="advisory",
    remediation="Use a version tag (repo/image:1.2.3) or a digest (repo/image@sha256:...).",
    resource_check=check_pinned_images,
)

NO_PRIVILEGED = Rule(
    id="no-privileged",
    description="No privileged containers, hostPID, hostIPC or hostPath volumes unless allowed.",
    level="mandatory",
    remediation=(
        "Remove the privileged setting, or allow-list the MiniCluster by name (or '*') in this "
        "policy's config: allowPrivileged, allowHostPID, allowHostIPC, allowHostPath."
    ),
    resource_check=check_no_privileged,
    options=tuple(
        Option(
            name,
            "array",
            (),
            f"MiniCluster names (label {lbl.NAME_LABEL}) allowed {what}; '*' allows all.",
        )
        for name, what in (
            ("allowPrivileged", "privileged containers"),
            ("allowHostPath", "hostPath volumes"),
            ("allowHostPID", "hostPID"),
            ("allowHostIPC", "hostIPC"),
        )
    ),
)

FLUX_CONTAINER_RESOURCES = Rule(
    id="flux-container-resources",
    description="The Flux broker container requests CPU and memory.",
    level="advisory",
    remediation=(
        "Set resources.requests.cpu and .memory (or limits) on the MiniCluster container that "
        "runs Flux, sized to one node's share."
    ),
    resource_check=check_flux_container_resources,
)

JOB_BOUNDS = Rule(
    id="job-bounds",
    description="A MiniCluster Job sets activeDeadlineSeconds and backoffLimit within bounds.",
    level="advisory",
    remediation=(
        "Set the MiniCluster's spec.deadlineSeconds and spec.backoffLimit (the Job's "
        "activeDeadlineSeconds and backoffLimit) within this policy's maxActiveDeadlineSeconds "
        "and maxBackoffLimit."
    ),
    resource_check=check_job_bounds,
    options=(
        Option(
            "maxActiveDeadlineSeconds",
            "integer",
            31_536_000,
            "Largest spec.activeDeadlineSeconds allowed (seconds; default one year).",
        ),
        Option("maxBackoffLimit", "integer", 100, "Largest spec.backoffLimit allowed."),
    ),
)

PERSISTENT_NO_HANG = Rule(
    id="persistent-no-hang",
    description="A persistent MiniCluster's Job tells Pulumi not to wait for it to complete.",
    level="mandatory",
    remediation=(
        f"Annotate the Job with {lbl.SKIP_AWAIT_ANNOTATION}: 'true', or with "
        f"{lbl.WAIT_FOR_ANNOTATION}: 'jsonpath={{.status.ready}}=<size>' to wait for ready pods."
    ),
    resource_check=check_persistent_no_hang,
    engine_only=True,
)

PERSISTENT_KEEPS_ITS_QUEUE = Rule(
    id="persistent-keeps-its-queue",
    description=(
        "A persistent MiniCluster keeps its Flux queue and job history in an archive that "
        "outlives rank 0's pod."
    ),
    level="advisory",
    remediation=(
        "Mount a PersistentVolumeClaim in the Flux container (the archive then defaults to "
        "<its path>/flux-archives/<name>.tgz), or set spec.archive.path on a volume that outlives "
        "the pod."
    ),
    resource_check=check_persistent_keeps_its_queue,
)

HEADLESS_PUBLISHES_NOT_READY = Rule(
    id="headless-publishes-not-ready",
    description="A MiniCluster's headless Service publishes not-ready addresses.",
    level="advisory",
    remediation="Set spec.publishNotReadyAddresses: true on the headless Service.",
    resource_check=check_headless_publishes_not_ready,
)

NAMESPACE_NOT_DEFAULT = Rule(
    id="namespace-not-default",
    description="MiniCluster objects live in their own namespace, not 'default' or 'kube-system'.",
    level="advisory",
    remediation="Set the MiniCluster's metadata.namespace (or the stack's namespace) to its own.",
    resource_check=check_namespace_not_default,
    options=(
        Option(
            "forbiddenNamespaces",
            "array",
            ("default", "kube-system"),
            "Namespaces MiniCluster objects must not use (a missing namespace counts as default).",
        ),
    ),
)

LEAD_OPEN_TO_ALL = Rule(
    id="lead-open-to-all",
    description=(
        "A bursting root's lead Service (a LoadBalancer or NodePort selecting rank 0) does not "
        "let every address on the internet reach the lead broker."
    ),
    level="advisory",
    remediation=(
        f"Set the stack config key {SOURCE_RANGES_KEY} to the CIDRs the burst clusters connect "
        "from; it becomes the lead Service's spec.loadBalancerSourceRanges. A NodePort cannot be "
        "restricted by the Service: let only the burst clusters in with a NetworkPolicy (it sees "
        "their addresses with externalTrafficPolicy: Local) or the cloud firewall, then "
        "allow-list the MiniCluster in this policy's allowOpen."
    ),
    resource_check=check_lead_open_to_all,
    options=(
        Option(
            "allowOpen",
            "array",
            (),
            f"MiniCluster names (label {lbl.NAME_LABEL}) whose lead Service may stay open to all "
            "addresses, e.g. because a cloud firewall restricts it; '*' allows all.",
        ),
    ),
)
