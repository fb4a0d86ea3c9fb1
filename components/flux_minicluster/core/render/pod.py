"""Containers and pod-level fields shared by the Job's pod template and the services Pod.

Field by field this follows the operator (``containers.go``, ``job.go``, ``pods.go``) so that an
operator user finds the pod they know, with its bugs fixed:

* the whole ``pod.securityContext`` is applied, not just ``fsGroup``;
* lifecycle hooks run through ``/bin/sh -c``, because the operator's single-element argv cannot
  run a command with arguments (``["echo hi"]`` looks for a binary named "echo hi");
* pull secrets are deduplicated, so two containers naming one secret give one entry.

Every mapping is built in a fixed order from the spec, so the same spec gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from flux_minicluster.core.base import layout
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import hardening, readiness, volumes
from flux_minicluster.core.render.kube import dump, quantity
from flux_minicluster.core.spec.models import DEFAULT_RESTART_POLICY, Container, PodSpec, Resources
from flux_minicluster.core.spec.placement import guaranteed_containers

__all__ = [
    "COMPONENT_LABEL",
    "DEFAULT_RESTART_POLICY",
    "affinity",
    "common_pod_fields",
    "init_container",
    "job_container",
    "pod_labels",
    "service_container",
    "services_pod_labels",
]

# Kubernetes' recommended label for the role of a workload; the services Pod carries
# "services" so that a Service can select it apart from the broker pods.
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
SERVICES_COMPONENT: Final = "services"
ZONE_TOPOLOGY: Final = "topology.kubernetes.io/zone"
HOST_TOPOLOGY: Final = "kubernetes.io/hostname"


def resources(spec: Resources | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    out: dict[str, Any] = {}
    if spec.limits:
        out["limits"] = {k: quantity(v) for k, v in spec.limits.items()}
    if spec.requests:
        out["requests"] = {k: quantity(v) for k, v in spec.requests.items()}
    if spec.claims:
        out["claims"] = [dump(c) for c in spec.claims]
    return out or None


def _env(container: Container) -> list[dict[str, Any]]:
    """``environment`` entries, then ``secrets`` as secretKeyRef, each in spec order.

    Spec order (not sorted) so that a value may refer to an earlier one with ``$(NAME)``.
    """
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in container.environment.items()
    ]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
        for name, ref in container.secrets.items()
    ]
    return env


def _lifecycle(container: Container) -> dict[str, Any] | None:
    hooks = container.life_cycle
    if hooks is None:
        return None
    out: dict[str, Any] = {}
    # The operator passes the string as a one-element argv, which only works for a bare binary
    # path; through a shell, "flux queue stop --all" and friends work as users expect.
    for field, command in (("postStart", hooks.post_start_exec), ("preStop", hooks.pre_stop_exec)):
        if command:
            out[field] = {"exec": {"command": ["/bin/sh", "-c", command]}}
    return out or None


def _container(
    name: str,
    container: Container,
    command: list[str] | None,
    mounts: list[dict[str, Any]],
    security: dict[str, Any] | None = None,
    readiness: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A container from the spec; ``security`` replaces the spec's own securityContext (a
    hardened one that already holds the user's settings)."""
    out: dict[str, Any] = {
        "name": name,
        "image": container.image,
        "imagePullPolicy": container.pull_policy,
    }
    if command is not None:
        out["command"] = command
    if container.working_dir:
        out["workingDir"] = container.working_dir
    if env := _env(container):
        out["env"] = env
    if container.ports:
        out["ports"] = [{"containerPort": p, "protocol": "TCP"} for p in container.ports]
    if res := resources(container.resources):
        out["resources"] = res
    if security is not None:
        out["securityContext"] = security
    elif container.security_context is not None:
        out["securityContext"] = dump(container.security_context)
    if lifecycle := _lifecycle(container):
        out["lifecycle"] = lifecycle
    if readiness is not None:
        out["readinessProbe"] = readiness
    # The operator gives every container a TTY and stdin: `kubectl attach -it` to a broker works.
    out["stdin"] = True
    out["tty"] = True
    out["volumeMounts"] = mounts
    return out


def init_container(plan: MiniClusterPlan) -> dict[str, Any]:
    """The flux view: copies Flux into the shared emptyDir and writes the broker config."""
    view = plan.spec.flux.container
    out: dict[str, Any] = {
        "name": view.name,
        "image": view.image,
        "imagePullPolicy": "Always" if view.pull_always else "IfNotPresent",
        "command": ["/bin/bash", f"{layout.ENTRYPOINT_DIR}/{layout.INIT_SCRIPT}"],
    }
    if view.working_dir:
        out["workingDir"] = view.working_dir
    beside = plan.flux_container.resources if guaranteed_containers(plan.spec) else None
    out["resources"] = hardening.init_resources(view.resources, resources(view.resources), beside)
    pod_context = plan.spec.pod.security_context
    out["securityContext"] = hardening.init_context(
        view.security_context, pod_context.run_as_user if pod_context else None
    )
    out["stdin"] = True
    out["tty"] = True
    out["volumeMounts"] = volumes.init_mounts(plan)
    return out


def job_container(plan: MiniClusterPlan, index: int, container: Container) -> dict[str, Any]:
    """Container ``index`` of the Job pod: the Flux broker, or a sidecar."""
    script: str | None
    if container.run_flux:
        name, script = plan.name, layout.wait_script(index)
    else:
        name = container.name or ""
        script = layout.start_script(index) if container.wrapped else None
    command = ["/bin/bash", f"{layout.ENTRYPOINT_DIR}/{script}"] if script else None
    security = (
        hardening.flux_context(container.security_context, setuid=plan.multi_user is not None)
        if container.run_flux
        else hardening.application_context(container.security_context)
    )
    probe = readiness.broker_probe(plan) if container.run_flux else None
    return _container(
        name, container, command, volumes.container_mounts(plan, container), security, probe
    )


def service_container(container: Container) -> dict[str, Any]:
    """A ``services[]`` container: its image's own entrypoint, no Flux mounts, its own volumes."""
    security = hardening.application_context(container.security_context)
    return _container(
        container.name or "", container, None, volumes.user_mounts(container), security
    )


def pod_labels(plan: MiniClusterPlan) -> dict[str, str]:
    """The Job pod template's labels: the user's, then the operator's (which win)."""
    return {
        **plan.spec.pod.labels,
        "namespace": plan.namespace,
        lbl.OPERATOR_POD_LABELS_APP[0]: lbl.OPERATOR_POD_LABELS_APP[1],
        lbl.NAME_LABEL: plan.name,
        lbl.HPA_SELECTOR_LABEL: plan.name,
        lbl.CLUSTER_LABEL: plan.name,
    }


def services_pod_labels(plan: MiniClusterPlan) -> dict[str, str]:
    """The services Pod's labels.

    ``job-name`` puts it into the headless Service, as with the operator. It carries no
    ``hpa-selector``: that label counts broker pods (the scale selector), and it is what keeps
    sidecar port Services from sending traffic to this pod, which does not serve those ports.
    """
    return {
        **plan.spec.pod.labels,
        "namespace": plan.namespace,
        lbl.OPERATOR_POD_LABELS_APP[0]: lbl.OPERATOR_POD_LABELS_APP[1],
        lbl.NAME_LABEL: plan.name,
        lbl.MANAGED_BY_LABEL: lbl.MANAGED_BY,
        lbl.CLUSTER_LABEL: plan.name,
        COMPONENT_LABEL: SERVICES_COMPONENT,
        lbl.JOB_NAME_LABEL: plan.name,
    }


def _node_affinity(pod: PodSpec) -> dict[str, Any] | None:
    if not pod.node_affinity:
        return None
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": key, "operator": "In", "values": list(values)}
                        for key, values in pod.node_affinity.items()
                    ]
                }
            ]
        }
    }


def _preferred(plan: MiniClusterPlan, topology_key: str) -> dict[str, Any]:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": lbl.NAME_LABEL, "operator": "In", "values": [plan.name]}
                        ]
                    },
                    "topologyKey": topology_key,
                },
            }
        ]
    }


def affinity(plan: MiniClusterPlan, *, brokers: bool) -> dict[str, Any] | None:
    """Soft "same zone, different nodes" for brokers (unless disabled), plus pod.nodeAffinity.

    Both pod rules are preferences, as with the operator: pods pack onto fewer nodes when the
    cluster is short of nodes rather than stay Pending.
    """
    out: dict[str, Any] = {}
    if brokers and not plan.spec.network.disable_affinity:
        out["podAffinity"] = _preferred(plan, ZONE_TOPOLOGY)
        out["podAntiAffinity"] = _preferred(plan, HOST_TOPOLOGY)
    if node := _node_affinity(plan.spec.pod):
        out["nodeAffinity"] = node
    return out or None


def broker_pull_secrets(plan: MiniClusterPlan) -> list[str | None]:
    """The Secrets a broker pod pulls its images with: each container's, then the flux view's.

    The operator ignores ``flux.container.imagePullSecret``, so a view image in a private
    registry never pulls there; here it is one more of the pod's ``imagePullSecrets``.
    """
    return [
        *(c.image_pull_secret for c in plan.spec.containers),
        plan.spec.flux.container.image_pull_secret,
    ]


def image_pull_secrets(names: Iterable[str | None]) -> list[dict[str, str]]:
    """The pod's ``imagePullSecrets``: each Secret named once, in the order given."""
    return [{"name": name} for name in dict.fromkeys(names) if name]


def common_pod_fields(
    plan: MiniClusterPlan, pull_secrets: Iterable[str | None], *, brokers: bool
) -> dict[str, Any]:
    """Pod fields the broker pods and the services Pod share, each only when the spec sets it.

    ``automountServiceAccountToken`` is always written (false by default), as the operator does:
    brokers do not talk to the API server, so they get no token unless asked. ``restartPolicy``:
    the broker pods' is the plan's (``core.kube.completion.restart_policy``); the services Pod's
    the spec's, else the operator's ``OnFailure`` (a service that crashes starts again).
    """
    pod = plan.spec.pod
    restart = plan.job.restart_policy if brokers else pod.restart_policy or DEFAULT_RESTART_POLICY
    out: dict[str, Any] = {"restartPolicy": restart}
    if pod.service_account_name:
        out["serviceAccountName"] = pod.service_account_name
    out["automountServiceAccountToken"] = pod.automount_service_account_token
    if pod.node_selector:
        out["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        out["tolerations"] = [dump(t) for t in pod.tolerations]
    if pod.dns_policy:
        out["dnsPolicy"] = pod.dns_policy
    if pod.runtime_class_name:
        out["runtimeClassName"] = pod.runtime_class_name
    user = dump(pod.security_context) if pod.security_context is not None else None
    out["securityContext"] = hardening.pod_seccomp(user)
    if secrets := image_pull_secrets(pull_secrets):
        out["imagePullSecrets"] = secrets
    return out
