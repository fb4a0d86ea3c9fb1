"""The MiniCluster ComponentResource: a Flux MiniCluster on Kubernetes, without the operator.

One pipeline, each step once, each going down a floor:

1. ``prepare``: the arguments validated, the spec parsed, planned and rendered by the pure core
   (the single source of truth for what lands in the cluster), and the certificate's source
   chosen; an invalid input raises ``SpecError`` with the field path before anything is
   registered, and leaves no trace in the stack, not even the component;
2. ``expand``: the keygen Command when the certificate is made; every Output the rendering's
   placeholders wait for resolved and checked (``deploytime``: the certificate, a burst's lead
   and group); each rendered object registered once as its typed pulumi_kubernetes resource,
   with the options only Pulumi has (``registration``); the outputs published (``published``).

The curve certificate is a secret from end to end: a Command's output or a secret input, never a
plain file, and every object holding it or what derives from it is registered with secret data.
"""

from __future__ import annotations

from typing import Final

import pulumi
from pulumi_command import local

from flux_minicluster.core.base.errors import SpecError, bounded
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.render.manifests import Rendering
from flux_minicluster.deploy.component import deploytime, published, registration
from flux_minicluster.deploy.component.arguments import MiniClusterArgs
from flux_minicluster.deploy.component.children import MiniClusterResources
from flux_minicluster.deploy.component.keygen import keygen_command
from flux_minicluster.deploy.component.prepared import Prepared
from flux_minicluster.deploy.component.preparing import prepare
from flux_minicluster.deploy.component.published import OUTPUTS, MiniClusterOutputs
from flux_minicluster.deploy.component.registration import JOB_IGNORE_CHANGES
from flux_minicluster.deploy.component.usererror import as_run_error

__all__ = [
    "JOB_IGNORE_CHANGES",
    "OUTPUTS",
    "TYPE",
    "MiniCluster",
    "MiniClusterArgs",
    "MiniClusterResources",
    "Prepared",
    "expand",
    "prepare",
]

TYPE: Final = "minicluster:index:MiniCluster"


class MiniCluster(MiniClusterOutputs):
    """A Flux MiniCluster: an Indexed Job of brokers and every object it needs, as
    ``core.render.manifests`` renders them, registered as typed children (``resources``, one field
    each), with the JobPatches that own its size and wait and, when the certificate is generated,
    the keygen Command.

    Its outputs are declared on ``MiniClusterOutputs`` (``deploy.published``).
    """

    plan: plans.MiniClusterPlan
    """The validated MiniCluster and every fact derived from it (plain Python)."""
    rendering: Rendering
    """The rendered objects, with placeholder tokens where the certificate and a lead go (never
    the secret itself)."""
    keygen: local.Command | None
    """The keygen Command, when the certificate is generated (also ``resources.keygen``)."""
    resources: MiniClusterResources
    """The children as typed resources (``cluster.resources.job``), to depend on or export
    from; see ``deploy.component.children``."""

    def __init__(
        self,
        resource_name: str,
        args: MiniClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        try:  # raises before anything is registered
            prepared = prepare(resource_name, args)
        except SpecError as err:  # printed by `pulumi up` as its lines, without a traceback
            raise as_run_error(err) from None
        super().__init__(TYPE, resource_name, {}, opts)
        self.plan = prepared.plan
        self.rendering = prepared.rendering
        self.resources = expand(self, resource_name, prepared, opts)
        self.keygen = self.resources.keygen


def expand(
    component: pulumi.ComponentResource,
    resource_name: str,
    prepared: Prepared,
    opts: pulumi.ResourceOptions | None,
) -> MiniClusterResources:
    """Register a prepared MiniCluster's children under ``component`` and publish its outputs.

    Both faces of the component call this: the Python class and the one other languages reach
    through the component provider (``deploy.multilanguage``). One pass down: the keygen
    Command (when the certificate is made), every Output the rendering's placeholders wait for
    resolved (``deploytime``), every rendered object registered (``registration``), the outputs
    published (``published``). It sets every name of ``OUTPUTS`` on ``component`` and registers
    them; it returns the children it registered.
    """
    for warning in bounded(prepared.plan.warnings, "warnings"):
        pulumi.log.warn(str(warning), resource=component)
    parent = registration.Parent.of(component, opts)
    keygen = (
        keygen_command(resource_name, prepared.keygen, opts=parent.opts())
        if prepared.certificate is None
        else None
    )
    resolved = deploytime.resolve(
        prepared.plan,
        keygen.stdout if keygen is not None else prepared.certificate,
        prepared.certificate_source,
        prepared.lead_broker,
        prepared.burst_group,
    )
    children = registration.register(resource_name, prepared, resolved, parent, keygen)
    published.publish(component, prepared, children, resolved)
    return children
