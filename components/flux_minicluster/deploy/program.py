"""The Pulumi program behind ``pulumi up``: stack config -> provider -> MiniCluster -> exports.

A stack is one Kubernetes cluster. A root stack also exposes its lead broker and declares the
clusters it bursts to; a burst stack reads all it needs from its root through a StackReference,
so bursting is configuration rather than the operator's hand-copied certificate and NodePort.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from flux_minicluster.core import labels
from flux_minicluster.core.render.manifests import lead_service
from flux_minicluster.deploy import stackconfig
from flux_minicluster.deploy.minicluster import MiniCluster, MiniClusterArgs
from flux_minicluster.deploy.stackconfig import PROJECT, StackConfig

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def read_config() -> StackConfig:
    """Every ``flux-minicluster:*`` config value, parsed and validated as one model."""
    raw: dict[str, Any] = {**pulumi.runtime.config.get_config_env(), **_explicit_config()}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        if namespace != PROJECT:
            continue
        values[name] = _decode(value)
    return stackconfig.parse_stack_config(values)


def _explicit_config() -> dict[str, Any]:
    return dict(pulumi.runtime.config.CONFIG.get())


def _decode(value: Any) -> Any:
    """Structured config arrives as JSON text; plain strings stay strings."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def make_provider(config: StackConfig) -> k8s.Provider:
    """One explicit provider per cluster: never the ambient kubeconfig by accident."""
    cluster = config.cluster
    kubeconfig = os.path.expanduser(cluster.kubeconfig) if cluster.kubeconfig else None
    return k8s.Provider(
        f"{pulumi.get_stack()}-k8s",
        kubeconfig=kubeconfig,
        context=cluster.context,
        cluster_identifier=cluster.cluster_identifier,
        # Size-dependent scripts change on resize; update the ConfigMap in place rather than
        # replacing it (its name is fixed, so a replace would delete it first).
        enable_config_map_mutable=True,
    )


def main() -> None:
    config = read_config()
    provider = make_provider(config)
    document = stackconfig.apply_cloud_defaults(config.load_spec(PROJECT_ROOT), config)
    opts = pulumi.ResourceOptions(provider=provider)
    depends: list[pulumi.Resource] = []
    if config.cluster.create_namespace:
        ns = k8s.core.v1.Namespace(
            f"{pulumi.get_stack()}-namespace",
            metadata={
                "name": config.cluster.namespace,
                "labels": {labels.MANAGED_BY_LABEL: labels.MANAGED_BY},
            },
            opts=opts,
        )
        depends.append(ns)
    child_opts = pulumi.ResourceOptions(provider=provider, depends_on=depends)

    role = config.bursting.role
    if role == "burst":
        _burst(config, document, child_opts)
    else:
        if role == "root":
            document = stackconfig.root_spec(document, config.bursting.clusters)
        cluster = _minicluster(config, document, child_opts, {})
        _export_cluster(cluster)
        if role == "root":
            _root_exports(config, cluster, child_opts)


def _args(
    config: StackConfig, document: Mapping[str, Any], extra: MiniClusterArgs
) -> MiniClusterArgs:
    args: MiniClusterArgs = {
        "spec": dict(document),
        "namespace": config.cluster.namespace,
        "wait": config.minicluster.wait,
        "keygen": {
            "strategy": config.keygen.strategy,
            "rotation": config.keygen.rotation,
        },
    }
    if config.minicluster.name:
        args["name"] = config.minicluster.name
    if config.cluster.kubeconfig:
        args["keygen"]["kubeconfig"] = os.path.expanduser(config.cluster.kubeconfig)
    if config.cluster.context:
        args["keygen"]["context"] = config.cluster.context
    if config.keygen.image:
        args["keygen"]["image"] = config.keygen.image
    if config.keygen.container_runtime:
        args["keygen"]["container_runtime"] = config.keygen.container_runtime
    args.update(extra)
    return args


def _minicluster(
    config: StackConfig,
    document: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    extra: MiniClusterArgs,
) -> MiniCluster:
    mc = stackconfig.resolve(document, config)  # validate with the stack's names first
    return MiniCluster(mc.name, _args(config, document, extra), opts=opts)


def _export_cluster(cluster: MiniCluster) -> None:
    pulumi.export("namespace", cluster.namespace)
    pulumi.export("jobName", cluster.job_name)
    pulumi.export("serviceName", cluster.service_name)
    pulumi.export("leadBrokerHost", cluster.lead_broker_host)
    pulumi.export("hostlist", cluster.hostlist)
    pulumi.export("size", cluster.size)
    pulumi.export("maxSize", cluster.max_size)
    pulumi.export("curvePublicKey", cluster.curve_public_key)
    pulumi.export("curveCert", cluster.curve_cert)


def _root_exports(config: StackConfig, cluster: MiniCluster, opts: pulumi.ResourceOptions) -> None:
    """Expose rank 0 to the burst clusters and publish what they need to join."""
    mc = cluster.definition
    cloud = config.cluster.cloud
    expose = config.bursting.expose or stackconfig.DEFAULT_EXPOSE[cloud]
    manifest = lead_service(
        mc,
        service_type=expose,
        annotations=stackconfig.LEAD_SERVICE_ANNOTATIONS[cloud]
        if expose == "LoadBalancer"
        else None,
        port=stackconfig.LEAD_PORT,
        node_port=config.bursting.node_port,
    )
    service = k8s.core.v1.Service(
        f"{mc.name}-lead",
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[cluster])),
    )
    if expose == "LoadBalancer":
        ingress = service.status.load_balancer.ingress
        address: pulumi.Output[str] = ingress.apply(_ingress_address)
        port: pulumi.Input[int] = stackconfig.LEAD_PORT
    else:
        if not config.bursting.lead_address:
            from flux_minicluster.core.errors import Problem, SpecError

            raise SpecError(
                Problem(
                    f"{PROJECT}:bursting.leadAddress",
                    "required with expose: NodePort (a node address the burst clusters can reach)",
                )
            )
        address = pulumi.Output.from_input(config.bursting.lead_address)
        port = config.bursting.node_port or service.spec.ports.apply(_node_port)
    pulumi.export("leadBrokerAddress", address)
    pulumi.export("leadBrokerPort", port)
    pulumi.export("leadName", mc.name)
    pulumi.export("leadSize", mc.spec.max_size)
    pulumi.export(
        "burstClusters", [{"name": c.name, "size": c.size} for c in config.bursting.clusters]
    )


def _ingress_address(ingress: Any) -> str:
    if not ingress:
        raise ValueError("the lead broker's load balancer has no address yet")
    first = ingress[0]
    address = _field(first, "ip") or _field(first, "hostname")
    if not address:
        raise ValueError("the lead broker's load balancer has neither an ip nor a hostname")
    return str(address)


def _node_port(ports: Any) -> int:
    value = _field(ports[0], "node_port") or _field(ports[0], "nodePort")
    if value is None:
        raise ValueError("the lead broker's NodePort Service has no node port yet")
    return int(value)


def _field(value: Any, name: str) -> Any:
    """A field of a typed output object or of the plain dict an apply may see instead."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _item(key: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda values: values[key]


def _burst(config: StackConfig, document: Mapping[str, Any], opts: pulumi.ResourceOptions) -> None:
    """Join the root's Flux instance: its certificate, its lead broker, its rank order."""
    root_stack = config.bursting.root_stack
    assert root_stack is not None
    ref = pulumi.StackReference(f"{pulumi.get_stack()}-root", stack_name=root_stack)

    def build(values: list[Any]) -> Any:
        lead_name, lead_size, lead_port, clusters = values
        # Membership first: "the root does not declare you" is the error a user can act on.
        own = stackconfig.resolve(document, config)
        stackconfig.validate_burst_membership(
            own.name, own.spec.max_size, list(clusters), root_stack
        )
        doc = stackconfig.burst_spec(
            document,
            lead_name=str(lead_name),
            lead_size=int(lead_size),
            lead_port=int(lead_port),
            clusters=list(clusters),
        )
        cluster = _minicluster(
            config,
            doc,
            opts,
            {
                "curve_cert": ref.require_output("curveCert"),
                "lead_broker": ref.require_output("leadBrokerAddress"),
            },
        )
        return {
            "namespace": cluster.namespace,
            "jobName": cluster.job_name,
            "serviceName": cluster.service_name,
            "leadBrokerHost": cluster.lead_broker_host,
            "hostlist": cluster.hostlist,
            "size": cluster.size,
            "maxSize": cluster.max_size,
            "curvePublicKey": cluster.curve_public_key,
        }

    built = pulumi.Output.all(
        ref.require_output("leadName"),
        ref.require_output("leadSize"),
        ref.require_output("leadBrokerPort"),
        ref.require_output("burstClusters"),
    ).apply(build)
    for key in (
        "namespace",
        "jobName",
        "serviceName",
        "leadBrokerHost",
        "hostlist",
        "size",
        "maxSize",
        "curvePublicKey",
    ):
        pulumi.export(key, built.apply(_item(key)))
    pulumi.export("rootStack", root_stack)
