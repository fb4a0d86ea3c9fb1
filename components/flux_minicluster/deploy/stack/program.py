"""The Pulumi program behind ``pulumi up``: stack config -> provider -> MiniCluster -> exports.

A stack is one Kubernetes cluster. A root stack also exposes its lead broker and declares the
clusters it bursts to; a burst stack reads all it needs from its root through a StackReference,
so bursting is configuration rather than the operator's hand-copied certificate and NodePort.

The spec is parsed once, with the stack's role settled before the cross-field rules run
(``StackConfig.settle``), and every resource is declared at
the top level of the program: the root's values reach a burst as Outputs inside its objects'
text, never by creating resources inside an ``apply``, so a preview shows every object.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.deployed import stackoutputs as so
from flux_minicluster.core.kube import labels
from flux_minicluster.core.render.manifests import lead_service
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.deploy.component.burstgroup import BurstGroupArgs
from flux_minicluster.deploy.component.minicluster import OUTPUTS, MiniCluster, MiniClusterArgs
from flux_minicluster.deploy.component.usererror import as_run_error, in_apply
from flux_minicluster.deploy.offline import sdkinternals
from flux_minicluster.deploy.stack import stackconfig
from flux_minicluster.deploy.stack.stackconfig import PROJECT, StackConfig


def read_config() -> StackConfig:
    """Every ``flux-minicluster:*`` config value, parsed and validated as one model."""
    values = {
        key.partition(":")[2]: value
        for key, value in sdkinternals.config_values().items()
        if key.partition(":")[0] == PROJECT
    }
    return stackconfig.parse_stack_config(values)


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


def main(project_root: Path | None = None) -> None:
    """The program of ``project_root`` (default: the project's root directory). A mistake in the
    stack's config or spec is raised as a ``pulumi.RunError`` (``usererror``): ``pulumi up``
    prints its lines, naming the config key, and no traceback."""
    try:
        _program(project_root or Path(pulumi.get_root_directory() or os.getcwd()))
    except SpecError as err:
        raise as_run_error(err) from None


def _program(root: Path) -> None:
    config = read_config()
    definition = config.definition(root)
    provider = make_provider(config)
    role = config.bursting.role
    root_outputs: dict[str, pulumi.Output[Any]] | None = None
    gate: pulumi.Output[Any] | None = None
    if role == stackconfig.ROLE_BURST:
        root_stack = config.bursting.root_stack
        assert root_stack is not None
        reference = pulumi.StackReference(f"{pulumi.get_stack()}-root", stack_name=root_stack)
        # Everything a burst reads of its root, and nothing else (so.ROOT_OUTPUTS).
        root_outputs = {name: reference.require_output(name) for name in so.ROOT_OUTPUTS}
        gate = _checked_group(root_outputs, definition, root_stack)

    opts = pulumi.ResourceOptions(provider=provider)
    depends: list[pulumi.Resource] = []
    if config.cluster.create_namespace:
        ns = k8s.core.v1.Namespace(
            f"{pulumi.get_stack()}-namespace",
            metadata={
                "name": config.cluster.namespace,
                "labels": {labels.MANAGED_BY_LABEL: labels.MANAGED_BY},
            },
            # A burst creates nothing, not even its namespace, for a group that refuses it.
            opts=opts
            if gate is None
            else pulumi.ResourceOptions(provider=provider, depends_on=gate.apply(lambda _: [])),
        )
        depends.append(ns)
    child_opts = pulumi.ResourceOptions(provider=provider, depends_on=depends)

    extra: MiniClusterArgs = {}
    if (curve_cert := config.checked_curve_cert()) is not None:
        extra = {"curve_cert": pulumi.Output.secret(curve_cert)}
    if root_outputs is not None and gate is not None:
        extra = {
            "curve_cert": root_outputs[so.CURVE_CERT],
            "lead_broker": root_outputs[so.LEAD_BROKER_ADDRESS],
            "burst_group": gate,
        }
    cluster = MiniCluster(definition.name, _args(config, definition, extra), opts=child_opts)
    for attribute in OUTPUTS:
        if root_outputs is not None and attribute == "curve_cert":
            continue  # the root's certificate: the root publishes it
        if attribute.startswith("restful_") and cluster.plan.restful is None:
            continue  # only a v1alpha1 cluster without a command serves the RESTful API
        if attribute == "queue" and cluster.rendering.queue is None:
            continue  # only a queued MiniCluster has a LocalQueue
        pulumi.export(so.stack_output_name(attribute), getattr(cluster, attribute))
    if role == stackconfig.ROLE_ROOT:
        _root_exports(config, cluster, child_opts)
    if config.bursting.root_stack is not None:
        pulumi.export(so.ROOT_STACK, config.bursting.root_stack)


def _checked_group(
    root_outputs: dict[str, pulumi.Output[Any]], mc: MiniClusterDefinition, root_stack: str
) -> pulumi.Output[BurstGroupArgs]:
    """The group the root publishes, once it declares this burst with its size; else an error."""

    def check(values: list[Any]) -> BurstGroupArgs:
        lead_name, lead_size, lead_port, clusters = values
        declared = [dict(c) for c in clusters or []]
        try:
            stackconfig.validate_burst_membership(mc.name, mc.spec.max_size, declared, root_stack)
        except SpecError as err:
            raise in_apply(err) from err
        return {
            "lead_name": str(lead_name),
            "lead_size": int(lead_size),
            "lead_port": int(lead_port),
            "clusters": [{"name": str(c["name"]), "size": int(c["size"])} for c in declared],
        }

    return pulumi.Output.all(
        root_outputs[so.LEAD_NAME],
        root_outputs[so.LEAD_SIZE],
        root_outputs[so.LEAD_BROKER_PORT],
        root_outputs[so.BURST_CLUSTERS],
    ).apply(check)


def _args(
    config: StackConfig, definition: MiniClusterDefinition, extra: MiniClusterArgs
) -> MiniClusterArgs:
    """The component's arguments: those the stack config takes as they are
    (``StackConfig.arguments``), and those made of its other keys."""
    args = config.arguments()
    args["spec"] = definition
    args["lead_source_ranges"] = list(config.bursting.source_ranges)
    args["keygen"] = {"strategy": config.keygen.strategy, "rotation": config.keygen.rotation}
    if config.cluster.kubernetes_version is not None:
        args["kube_version"] = config.cluster.kubernetes_version
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


def _root_exports(config: StackConfig, cluster: MiniCluster, opts: pulumi.ResourceOptions) -> None:
    """Expose rank 0 to the burst clusters and publish what they need to join."""
    plan = cluster.plan
    cloud = config.cluster.cloud
    expose = config.bursting.expose or stackconfig.DEFAULT_EXPOSE[cloud]
    manifest = lead_service(
        plan,
        service_type=expose,
        annotations=stackconfig.LEAD_SERVICE_ANNOTATIONS[cloud]
        if expose == "LoadBalancer"
        else None,
        port=layout.BROKER_PORT,
        node_port=config.bursting.node_port,
        source_ranges=config.bursting.source_ranges,
    )
    if expose == "LoadBalancer" and cloud == "generic":
        pulumi.log.warn(
            f"{PROJECT}:cluster.cloud: generic: whether the lead's load balancer keeps the bursts' "
            f"source addresses is its own; one that rewrites them makes the "
            f"{plan.names.cluster}-lead NetworkPolicy drop every burst. Then put its own source "
            "addresses in bursting.sourceRanges (docs/stacks.md's per-cloud table says more)"
        )
    service = k8s.core.v1.Service(
        plan.names.lead_service,
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[cluster])),
    )
    if expose == "LoadBalancer":
        ingress = service.status.load_balancer.ingress
        address: pulumi.Output[str] = ingress.apply(_ingress_address)
        port: pulumi.Input[int] = layout.BROKER_PORT
    else:
        if not config.bursting.lead_address:
            raise SpecError(
                Problem(
                    f"{PROJECT}:bursting.leadAddress",
                    "required with expose: NodePort (a node address the burst clusters can reach)",
                )
            )
        address = pulumi.Output.from_input(config.bursting.lead_address)
        port = config.bursting.node_port or service.spec.ports.apply(_node_port)
    pulumi.export(so.LEAD_BROKER_ADDRESS, address)
    pulumi.export(so.LEAD_BROKER_PORT, port)
    pulumi.export(so.LEAD_NAME, plan.name)
    pulumi.export(so.LEAD_SIZE, plan.spec.max_size)
    pulumi.export(
        so.BURST_CLUSTERS, [{"name": c.name, "size": c.size} for c in config.bursting.clusters]
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
