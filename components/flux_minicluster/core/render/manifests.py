"""A MiniCluster as the ordered list of Kubernetes objects that run it, as plain dicts.

This is the single source of truth for what lands in a cluster: the Pulumi component registers
exactly these objects (camelCase dicts are what the typed pulumi_kubernetes classes accept), and
``minicluster render`` prints exactly these for kubectl or GitOps. So the output is plain JSON
data (no Pulumi types, ints as ints), and the same spec always gives the same bytes: a byte that
changes in a pod template replaces the Job.

The order is the operator's, with the certificate moved out of the ConfigMap into a Secret
(``Rendering`` has a field for each; ``APPLY_ORDER`` is the order by kind):

1. ConfigMap ``<name>-entrypoint`` (scripts, broker.toml, hostlist);
2. Secret ``<name>-curve`` (the CURVE certificate; the operator keeps it in the ConfigMap), unless
   the spec mounts its own (v1alpha1's ``curveCertSecret``);
3. v1alpha1: the Secrets of the RESTful server, the users' passwords and the munge key;
4. v1alpha1's operator-made volumes: each PersistentVolume, then its claim;
5. the NetworkPolicies: the brokers' mesh, and a bursting root's lead (unless opted out);
6. Pod ``<name>-services`` when ``spec.services`` is set;
7. the headless Service ``<headlessName>``;
8. with ``minimalService`` and services, the headless Service that names the services Pod;
9. a ClusterIP Service per sidecar container with ports;
10. v1alpha1: the Service to rank 0's RESTful API server;
11. the Indexed Job ``<name>``;
12. an elastic MiniCluster's scaler: its ServiceAccount (before the ConfigMap), Role and
    RoleBinding (``render/autoscale.py``; kinds ``APPLY_ORDER`` does not name, so after the Job).

A bursting root's lead Service is the stack's to create (``lead_service``), with the exposure
the stack chooses.

Improvements over the operator, each deliberate:

* the headless Service publishes not-ready addresses: brokers resolve each other while they
  start, before any pod is Ready, which is the known slow start of operator MiniClusters;
* with ``flux.minimalService`` the Service stays headless (only a headless Service gives
  ``<name>-0.<service>`` its DNS record) and selects rank 0 by the Job controller's
  ``batch.kubernetes.io/job-completion-index`` label, which needs no pod patching;
* ``cleanup: true`` becomes ``ttlSecondsAfterFinished: 0`` (the operator deletes itself).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import yaml

from flux_minicluster.core.base import layout, placeholders
from flux_minicluster.core.base.errors import Problem, SpecError, key_path
from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.kube import kubeversion, limits, queueing
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning.plan import MiniClusterPlan, Role
from flux_minicluster.core.render import (
    autoscale,
    broker,
    credentials,
    jobfields,
    kube,
    meta,
    network,
    pod,
    storage,
    volumes,
)
from flux_minicluster.core.render.scripts import entrypoint_data, entrypoint_digest
from flux_minicluster.core.spec.archive import GRACE_SECONDS as ARCHIVE_GRACE_SECONDS

__all__ = [
    "APPLY_ORDER",
    "Manifest",
    "Rendering",
    "apply_order",
    "kubernetes_order",
    "lead_service",
    "render",
    "size_problems",
    "to_json",
    "to_yaml",
]

Manifest = dict[str, Any]
# The order objects are applied in, by kind (kubectl applies a folder's files in name order, and
# ``render`` numbers them): what others refer to comes first, the Job, which mounts and names the
# rest, last. A PersistentVolume and its claim share a step: each volume is followed by its claim.
APPLY_ORDER: Final[tuple[tuple[str, ...], ...]] = (
    ("Namespace",),
    ("ServiceAccount",),
    ("ConfigMap",),
    ("Secret",),
    ("PersistentVolume", "PersistentVolumeClaim"),
    ("NetworkPolicy",),
    ("Pod",),
    ("Service",),
    ("Job",),
)
_STEP: Final = {kind: step for step, kinds in enumerate(APPLY_ORDER) for kind in kinds}


def apply_order(manifest: Mapping[str, Any]) -> int:
    """The step of ``APPLY_ORDER`` an object is applied in (an unknown kind: after every one)."""
    return _STEP.get(str(manifest.get("kind", "")), len(APPLY_ORDER))


# --- shared pieces --------------------------------------------------------------------------


def _burst_labels(plan: MiniClusterPlan) -> dict[str, str]:
    """Our labels plus the burst group (named after the lead) for a root or bursted cluster."""
    labels = meta.labels(plan)
    if plan.burst_group is not None:
        labels[lbl.BURST_GROUP_LABEL] = plan.burst_group
    return labels


def _broker_port() -> dict[str, Any]:
    return {
        "name": layout.BROKER_PORT_NAME,
        "port": layout.BROKER_PORT,
        "targetPort": layout.BROKER_PORT,
        "protocol": "TCP",
    }


def _rank0_selector(plan: MiniClusterPlan) -> dict[str, str]:
    return {lbl.JOB_NAME_LABEL: plan.name, lbl.COMPLETION_INDEX_LABEL: "0"}


# --- the objects ----------------------------------------------------------------------------


def _config_map(plan: MiniClusterPlan, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta.metadata(plan, plan.names.entrypoint, _burst_labels(plan)),
        "data": data,
    }


def _certificate(certificate: str | None) -> tuple[str, str]:
    """The certificate text and its public key, or the placeholders the Pulumi layer fills."""
    if certificate is None:
        return placeholders.CURVE_CERT, placeholders.CURVE_PUBLIC_KEY
    try:
        return certificate, certificates.parse(certificate).public_key
    except certificates.CertificateError as err:
        raise SpecError(Problem("curve certificate", str(err))) from None


def _curve_secret(plan: MiniClusterPlan, text: str, public_key: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta.metadata(
            plan,
            plan.names.curve_secret,
            _burst_labels(plan),
            {lbl.CURVE_PUBLIC_KEY_ANNOTATION: public_key},
        ),
        "type": "Opaque",
        "stringData": {layout.CURVE_FILE: text},
    }


def _services_pod(plan: MiniClusterPlan) -> dict[str, Any]:
    """The bare Pod that runs ``spec.services``, resolvable as ``<name>-services.<headless>``.

    It shares the pod-level settings that let it schedule and pull where the brokers do (service
    account, node selection, tolerations, DNS, runtime class, security context, pull secrets),
    but not the broker-only ones: no (anti)affinity to broker pods, no scheduler name (a gang
    scheduler would wait for a group this pod is not part of), no overhead, no host namespaces.
    """
    services = plan.spec.services
    metadata = meta.metadata(plan, plan.names.services_pod, pod.services_pod_labels(plan))
    if plan.spec.pod.annotations:
        metadata["annotations"] = dict(plan.spec.pod.annotations)
    spec: dict[str, Any] = {
        "hostname": plan.names.services_pod,
        "subdomain": _services_subdomain(plan),
        "setHostnameAsFQDN": False,
        **pod.common_pod_fields(plan, (c.image_pull_secret for c in services), brokers=False),
    }
    if affinity := pod.affinity(plan, brokers=False):
        spec["affinity"] = affinity
    spec["containers"] = [pod.service_container(c) for c in services]
    if user := volumes.user_volumes(services):
        spec["volumes"] = user
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _services_subdomain(plan: MiniClusterPlan) -> str:
    """The headless Service the services Pod resolves under.

    Normally the MiniCluster's own, as with the operator. With ``minimalService`` that Service
    selects rank 0 only, and a selector cannot also take in a pod that lacks the completion
    index label, so the services Pod gets a headless Service of its own, named like the pod:
    ``<name>-services.<ns>.svc`` (and ``<name>-services.<name>-services.<ns>.svc``) resolve.
    """
    return (
        plan.names.services_pod if plan.spec.flux.minimal_service else plan.names.headless_service
    )


def _headless_service(plan: MiniClusterPlan) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterIP": "None", "publishNotReadyAddresses": True}
    if plan.spec.flux.minimal_service:
        spec["selector"] = _rank0_selector(plan)
        spec["ports"] = [_broker_port()]
    else:
        spec["selector"] = {lbl.JOB_NAME_LABEL: plan.name}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta.metadata(plan, plan.names.headless_service, meta.labels(plan)),
        "spec": spec,
    }


def _services_headless_service(plan: MiniClusterPlan) -> dict[str, Any]:
    """With minimalService only: the headless Service that names the services Pod."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta.metadata(plan, plan.names.services_pod, meta.labels(plan)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {
                lbl.JOB_NAME_LABEL: plan.name,
                pod.COMPONENT_LABEL: pod.SERVICES_COMPONENT,
            },
        },
    }


def _sidecar_services(plan: MiniClusterPlan) -> list[dict[str, Any]]:
    """A ClusterIP Service per sidecar with ports, named after the container, as the operator.

    The operator selects ``app.kubernetes.io/name`` alone, which also takes in the services Pod
    (it carries that label and serves none of these ports); adding ``hpa-selector``, which only
    the broker pods carry, keeps the endpoints to the pods that run the sidecar.
    """
    out = []
    for container in plan.spec.containers:
        if container.run_flux or not container.ports:
            continue
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta.metadata(plan, container.name or "", meta.labels(plan)),
                "spec": {
                    "type": "ClusterIP",
                    "selector": {lbl.NAME_LABEL: plan.name, lbl.HPA_SELECTOR_LABEL: plan.name},
                    "ports": [
                        {"name": f"port-{p}", "port": p, "targetPort": p, "protocol": "TCP"}
                        for p in container.ports
                    ],
                },
            }
        )
    return out


def _job_pod_spec(plan: MiniClusterPlan, entrypoint_keys: list[str]) -> dict[str, Any]:
    s = plan.spec
    spec: dict[str, Any] = {
        # The Job controller sets hostname <name>-<index>; with this subdomain each broker
        # resolves as <name>-<i>.<headless>.<ns>.svc.cluster.local. `hostname` must stay short
        # (setHostnameAsFQDN false): the entrypoint compares it with <name>-0.
        "subdomain": plan.names.headless_service,
        "setHostnameAsFQDN": False,
        **pod.common_pod_fields(plan, pod.broker_pull_secrets(plan), brokers=True),
        "shareProcessNamespace": s.share_process_namespace,
    }
    if s.pod.scheduler_name:
        spec["schedulerName"] = s.pod.scheduler_name
    if plan.archive:
        # Room for rank 0's dump as it stops (core.spec.archive), beyond Kubernetes' 30 s.
        spec["terminationGracePeriodSeconds"] = ARCHIVE_GRACE_SECONDS
    if s.pod.host_pid:
        spec["hostPID"] = True
    if s.pod.host_ipc:
        spec["hostIPC"] = True
    if s.pod.resources:
        spec["overhead"] = {k: kube.quantity(v) for k, v in s.pod.resources.items()}
    if affinity := pod.affinity(plan, brokers=True):
        spec["affinity"] = affinity
    spec["initContainers"] = [pod.init_container(plan)]
    spec["containers"] = [pod.job_container(plan, i, c) for i, c in enumerate(s.containers)]
    spec["volumes"] = volumes.system_volumes(plan, entrypoint_keys) + volumes.user_volumes(
        s.containers
    )
    if plan.autoscale is not None:
        return autoscale.with_token(plan.autoscale, spec, plan.flux_index)
    return spec


def _job(plan: MiniClusterPlan, data: dict[str, str], public_key: str) -> dict[str, Any]:
    entrypoint_keys = list(data)
    s = plan.spec
    annotations = {
        lbl.MAX_SIZE_ANNOTATION: str(s.max_size),
        lbl.LIFECYCLE_ANNOTATION: "persistent" if plan.persistent else "ephemeral",
        lbl.ROLE_ANNOTATION: plan.role.value,
    }
    if plan.archive:
        annotations[lbl.ARCHIVE_ANNOTATION] = plan.archive
    # The certificate's public key on the pod template: a new certificate (a rotation) changes
    # the template, so every broker restarts with it together instead of a restarted pod holding
    # a certificate its peers do not. Public, so it may be shown.
    template_meta: dict[str, Any] = {
        "labels": pod.pod_labels(plan),
        "annotations": {
            **s.pod.annotations,
            lbl.CURVE_PUBLIC_KEY_ANNOTATION: public_key,
            lbl.BROKER_CONFIG_HASH_ANNOTATION: broker.config_digest(
                plan, data[layout.BROKER_TOML], data[layout.HOSTLIST]
            ),
            lbl.ENTRYPOINT_HASH_ANNOTATION: entrypoint_digest(plan),
        },
    }
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": s.size,
        "parallelism": s.size,
        # how the Job completes, retries and fails, as the target release serves it
        **jobfields.completion_fields(plan),
        "activeDeadlineSeconds": s.deadline_seconds,
    }
    if s.cleanup:
        # The operator deletes the whole MiniCluster when rank 0 finishes; the Job controller
        # can do the equivalent for the Job and its pods without anyone watching.
        spec["ttlSecondsAfterFinished"] = 0
    spec["template"] = {"metadata": template_meta, "spec": _job_pod_spec(plan, entrypoint_keys)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta.metadata(
            plan, plan.name, {**s.job_labels, **meta.labels(plan)}, annotations
        ),
        "spec": spec,
    }


# --- public API -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendering:
    """The Kubernetes objects of one MiniCluster, each in its own field.

    The component registers from these fields (the Job and the headless Service it needs by role,
    not by searching a list); ``objects()`` lists them in creation order for YAML and checks.
    """

    plan: MiniClusterPlan
    entrypoint: Manifest
    """ConfigMap ``<name>-entrypoint``: scripts, broker.toml, hostlist."""
    curve_secret: Manifest | None
    """None when the spec names its own (v1alpha1's ``curveCertSecret``)."""
    credentials: tuple[Manifest, ...]
    """v1alpha1: the RESTful server's, the users' and the munge key's Secrets."""
    volumes: tuple[Manifest, ...]
    """v1alpha1's operator-made volumes: each PersistentVolume, then its claim."""
    network_policies: tuple[Manifest, ...]
    """The mesh's NetworkPolicy, and a bursting root's lead policy (none when opted out)."""
    services_pod: Manifest | None
    headless_service: Manifest
    services_service: Manifest | None
    """With minimalService and services: the headless Service that names the services Pod."""
    sidecar_services: tuple[Manifest, ...]
    restful_service: Manifest | None
    """v1alpha1: the Service to rank 0's RESTful API server."""
    job: Manifest
    queue: queueing.QueueSettings | None = None
    """The LocalQueue that admits the Job (Kueue), when the MiniCluster is queued."""
    autoscaler: tuple[Manifest, ...] = ()
    """An elastic MiniCluster's ServiceAccount, Role and RoleBinding (``render/autoscale.py``)."""

    def objects(self) -> list[Manifest]:
        """Every object, in creation order (``APPLY_ORDER``; the Job last: it mounts what comes
        before it)."""
        return sorted(self._in_order(), key=apply_order)

    def _in_order(self) -> Iterator[Manifest]:
        yield self.entrypoint
        if self.curve_secret is not None:
            yield self.curve_secret
        yield from self.credentials
        yield from self.volumes
        yield from self.network_policies
        if self.services_pod is not None:
            yield self.services_pod
        yield self.headless_service
        if self.services_service is not None:
            yield self.services_service
        yield from self.sidecar_services
        if self.restful_service is not None:
            yield self.restful_service
        yield from self.autoscaler
        yield self.job


def render(
    plan: MiniClusterPlan,
    certificate: str | None = None,
    *,
    network_policy: bool = True,
    lead_source_ranges: Sequence[str] = (),
    queue: str | None = None,
    managed_by: str | None = None,
) -> Rendering:
    """Every object of the MiniCluster.

    ``network_policy``: the deployer's switch for the NetworkPolicies (the MiniCluster's own
    metadata may also opt out); ``lead_source_ranges``: who may reach a bursting root's rank 0
    (every address when empty), as its lead Service allows. ``queue`` (a LocalQueue, else the
    spec's ``jobLabels`` may name one) and ``managed_by`` make the Job a Kueue workload
    (``core.kube.queueing``).

    ``certificate`` is the CURVE certificate text. When it is None (the Pulumi layer, which holds
    the certificate as a secret Output) the Secret carries ``placeholders.CURVE_CERT`` and
    ``placeholders.CURVE_PUBLIC_KEY`` instead, to be replaced before registration. A spec's
    ``flux.curveCert`` is not picked up here: the caller passes it, so that where a secret comes
    from is always decided in one place. The objects carry no Pulumi annotations: the deploy
    layer adds what Pulumi needs (``deploy.awaiting``).
    """
    queued = queueing.settings(plan.spec.job_labels, queue, managed_by)
    if queued is not None and plan.autoscale is not None:
        raise SpecError(
            Problem(
                "queue" if queue is not None else "spec.jobLabels",
                f"a queued MiniCluster (LocalQueue {queued.queue}) cannot autoscale: Kueue "
                "suspends a running Job whose parallelism changes and queues it again, which "
                "would stop every broker at the first resize; use one or the other",
            )
        )
    if managed_by is not None and not kubeversion.serves(
        plan.kube_version, kubeversion.JobField.MANAGED_BY
    ):
        since = kubeversion.JOB_FIELDS[kubeversion.JobField.MANAGED_BY].rendered_from
        raise SpecError(
            Problem(
                "managed_by",
                f"Kubernetes {plan.kube_version} does not serve the Job's spec.managedBy "
                f"(rendered from {since}): name the cluster's release (kube_version, "
                "cluster.kubernetesVersion, --kube-version) or leave managed_by out",
            )
        )
    data = entrypoint_data(plan)
    text, public_key = _certificate(certificate)
    services = bool(plan.spec.services)
    rendering = Rendering(
        plan=plan,
        entrypoint=_config_map(plan, data),
        curve_secret=(
            None
            if plan.spec.flux.curve_cert_secret is not None
            else _curve_secret(plan, text, public_key)
        ),
        credentials=tuple(credentials.secrets(plan, certificate)),
        volumes=tuple(
            manifest
            for item in plan.operator_volumes
            for manifest in (storage.persistent_volume(plan, item), storage.claim(plan, item))
        ),
        network_policies=_network_policies(plan, network_policy, lead_source_ranges),
        services_pod=_services_pod(plan) if services else None,
        headless_service=_headless_service(plan),
        services_service=(
            _services_headless_service(plan)
            if services and plan.spec.flux.minimal_service
            else None
        ),
        sidecar_services=tuple(_sidecar_services(plan)),
        restful_service=(
            _restful_service(plan, plan.restful.port) if plan.restful is not None else None
        ),
        job=queueing.queued_job(_job(plan, data, public_key), queued),
        queue=queued,
        autoscaler=autoscale.objects(plan, plan.autoscale) if plan.autoscale else (),
    )
    if problems := size_problems(rendering):
        raise SpecError(problems)
    return rendering


def size_problems(rendering: Rendering) -> list[Problem]:
    """An object the API server would refuse as too large (``limits.size_problems``), at the
    spec field that made it so: refused here, before anything is created."""
    out = []
    spec: Any = None
    for obj in rendering.objects():
        found = limits.size_problems(obj)
        if not found:
            continue
        if spec is None:
            spec = rendering.plan.spec.model_dump(by_alias=True, exclude_defaults=True)
        text = json.dumps(obj, ensure_ascii=False)
        for where, message in found:
            field = (
                "spec.pod.annotations"
                if where.endswith("annotations")
                else _largest_field("spec", spec, text)
            )
            what = f"{obj['kind']} {obj['metadata']['name']}" + (f" ({where})" if where else "")
            out.append(Problem(field, f"makes {what} too large: {message}"))
    return out


def _largest_field(path: str, value: Any, text: str) -> str:
    """The field of ``value`` (at ``path``) that holds most of what ``text`` holds: the child
    holding at least half of its parent's bytes, as deep as there is one."""
    children: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        children = [(key_path(path, str(k)), v) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    sized = [(len(json.dumps(v, ensure_ascii=False)), p, v) for p, v in children]
    if not sized:
        return path
    size, child, child_value = max(sized, key=lambda c: c[0])
    if size * 2 < sum(c[0] for c in sized) or _longest_text(child_value) not in text:
        return path
    return _largest_field(child, child_value, text)


def _longest_text(value: Any) -> str:
    """The longest string in ``value``, escaped as JSON text holds it."""
    if isinstance(value, dict):
        texts = [_longest_text(v) for v in value.values()] + [str(k) for k in value]
    elif isinstance(value, list):
        texts = [_longest_text(v) for v in value]
    else:
        return json.dumps(value, ensure_ascii=False).strip('"')
    return max(texts, key=len, default="")


def _restful_service(plan: MiniClusterPlan, port: int) -> Manifest:
    """v1alpha1: rank 0's Flux RESTful API server, inside the cluster (the operator made none:
    users port-forwarded to the pod)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta.metadata(plan, plan.names.restful_service),
        "spec": {
            "type": "ClusterIP",
            "selector": _rank0_selector(plan),
            "ports": [{"name": "restful", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def _network_policies(
    plan: MiniClusterPlan, wanted: bool, lead_source_ranges: Sequence[str]
) -> tuple[Manifest, ...]:
    if not (wanted and plan.network_policy):
        return ()
    policies = [network.mesh_policy(plan)]
    if plan.role is Role.ROOT:
        policies.append(network.lead_policy(plan, lead_source_ranges))
    return tuple(policies)


def lead_service(
    plan: MiniClusterPlan,
    *,
    service_type: Literal["LoadBalancer", "NodePort"] = "LoadBalancer",
    annotations: dict[str, str] | None = None,
    port: int = layout.BROKER_PORT,
    node_port: int | None = None,
    source_ranges: Sequence[str] = (),
) -> dict[str, Any]:
    """Service ``<name>-lead``: rank 0's broker port, reachable from outside the cluster.

    A bursting root exposes it so that bursted clusters elsewhere can connect to their lead
    (their ``leadBroker.address``/``port``). It selects rank 0 by the Job controller's completion
    index label and forwards ``port`` to the broker's 8050. Cloud load balancers take their
    settings from ``annotations`` (internal LB, static IP, ...). ``source_ranges`` (CIDRs) are
    the only addresses a LoadBalancer lets in; a NodePort cannot be restricted by its Service.
    """
    if service_type not in ("LoadBalancer", "NodePort"):
        raise ValueError(f"service_type must be LoadBalancer or NodePort, got {service_type!r}")
    if not 1 <= port <= 65535:
        raise ValueError(f"port must be between 1 and 65535, got {port}")
    service_port = {**_broker_port(), "port": port}
    if node_port is not None:
        service_port["nodePort"] = node_port
    spec: dict[str, Any] = {
        "type": service_type,
        # The lead must be reachable while it starts, like within the cluster.
        "publishNotReadyAddresses": True,
        "selector": _rank0_selector(plan),
        "ports": [service_port],
    }
    if source_ranges:
        # The clients' own addresses must reach rank 0 for its NetworkPolicy to admit them by
        # range: the default (Cluster) would replace them with a node's on the way in.
        spec["externalTrafficPolicy"] = "Local"
        if service_type == "LoadBalancer":
            spec["loadBalancerSourceRanges"] = list(source_ranges)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta.metadata(
            plan, plan.names.lead_service, meta.labels(plan), dict(annotations or {})
        ),
        "spec": spec,
    }


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (scripts, configs) as readable ``|`` blocks."""


# What YAML 1.2's core schema reads as a number, a boolean or null, where PyYAML (YAML 1.1) reads
# a string and so writes it bare: a digest such as 74793576925972e0 (a float without a dot), 0o17,
# 0x1F, .Inf. Kubernetes' YAML readers (kubectl, the clouds' tools, kube-score) would then refuse
# a string field, or an annotation, holding a number.
_YAML12_NOT_STRING: Final = re.compile(
    r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|null|Null|NULL|~|true|True|TRUE|false|False|FALSE"
)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        style: str | None = "|"
    elif _YAML12_NOT_STRING.fullmatch(value):
        style = "'"
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


_HEAD: Final = ("apiVersion", "kind", "metadata")


def kubernetes_order(manifest: Mapping[str, Any]) -> Manifest:
    """The manifest with ``apiVersion``, ``kind``, ``metadata`` first, as Kubernetes writes them;
    every other key keeps its order (objects recorded from Pulumi arrive in another one)."""
    head = {key: manifest[key] for key in _HEAD if key in manifest}
    return {**head, **{k: v for k, v in manifest.items() if k not in head}}


def to_yaml(manifests: list[dict[str, Any]]) -> str:
    """A kubectl-ready multi-document stream, every document starting with ``---``.

    Keys keep Kubernetes' order at the top and the renderer's below, scripts stay readable, and
    the stream loads back to exactly ``manifests``.
    """
    return "".join(
        "---\n"
        + yaml.dump(
            kubernetes_order(m), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096
        )
        for m in manifests
    )


def to_json(manifests: list[dict[str, Any]]) -> str:
    """The objects as one JSON ``List``, as ``kubectl get -o json`` prints several."""
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [kubernetes_order(m) for m in manifests],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
