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

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypedDict

import pulumi
from pulumi_command import local

from flux_minicluster.core.base import placeholders
from flux_minicluster.core.base.errors import Problem, SpecError, bounded, unknown_key
from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning import autoscale as autoscaling
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading import documents
from flux_minicluster.core.reading.loading import (
    has_deferred_group,
    parse,
    revalidate,
    with_deferred_group,
    with_lead_address,
)
from flux_minicluster.core.render.manifests import Rendering, render
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import MiniClusterSpec
from flux_minicluster.deploy.component import deploytime, outputs, published, registration
from flux_minicluster.deploy.component.awaiting import WAIT_MODES, Wait
from flux_minicluster.deploy.component.burstgroup import BurstGroupArgs
from flux_minicluster.deploy.component.children import MiniClusterResources
from flux_minicluster.deploy.component.keygen import KeygenArgs, keygen_command, settings_from_args
from flux_minicluster.deploy.component.prepared import Prepared
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
_SOURCE: Final = "MiniClusterArgs"


class MiniClusterArgs(TypedDict, total=False):
    """Arguments of a MiniCluster; only ``spec`` is required."""

    spec: Mapping[str, Any] | str | Path | MiniClusterSpec | MiniClusterDefinition
    """The MiniCluster as the Flux Operator takes it: a whole ``flux-framework.org/v1alpha2``
    document or a bare spec (a dict, as from ``pulumi.Config().require_object``), the path of a
    YAML file holding one, a ``MiniClusterSpec`` model, or an already validated
    ``MiniClusterDefinition`` (whose name and namespace are then used as they are)."""

    namespace: str
    """Namespace of every object (default: the document's metadata.namespace, else default)."""

    name: str
    """MiniCluster name, overriding metadata.name; the Job, hostnames and Services derive from
    it. Default: metadata.name, else the component's resource name."""

    keygen: KeygenArgs
    """How the curve certificate is generated when neither ``curve_cert`` nor the spec's
    ``flux.curveCert`` gives one."""

    curve_cert: pulumi.Input[str]
    """The curve certificate to use (e.g. a root cluster's, from a StackReference); it wins over
    ``spec.flux.curveCert`` and keygen. It is checked with Flux's rules before it is deployed."""

    wait: Wait
    """How long ``pulumi up`` waits: ``ready`` (default) until every broker pod of an ephemeral
    cluster is Ready, ``complete`` until its Job completes, ``none`` not at all. A persistent
    cluster never completes and is never waited for."""

    lead_broker: pulumi.Input[str]
    """A bursted cluster's lead broker address (DNS name or IPv4), e.g. a root stack's output;
    it overrides ``spec.flux.bursting.leadBroker.address``. Without ``burst_group`` the spec must
    still declare ``leadBroker`` with the lead's ``name`` and ``size``, which shape the hostlist."""

    burst_group: pulumi.Input[BurstGroupArgs]
    """The bursting group this cluster joins, as its root publishes it (``lead_name``,
    ``lead_size``, ``lead_port``, ``clusters``), e.g. from a StackReference; needs
    ``lead_broker``. The rank order (broker.toml, the hostlist) is filled in from it once known,
    and the objects do not wait for it: a preview shows every one."""

    network_policy: bool
    """Whether to create the NetworkPolicies around the MiniCluster's pods (default true; a
    cluster whose CNI does not enforce them ignores them)."""

    lead_source_ranges: list[str]
    """A bursting root's: the addresses (CIDRs) its rank 0 admits the bursts from; every address
    when empty. Give the same ranges as the lead Service's loadBalancerSourceRanges."""

    # The docstring is the published schema's description (components/schema.json), kept as it
    # was: ``core.kubeversion`` is the module ``core.kube.kubeversion``.
    kube_version: str
    """The Kubernetes release of the cluster (``"1.33"``, as ``helm template --kube-version``):
    the Job carries only the fields that release serves (``core.kubeversion``: the success
    policy, the pod replacement and failure policies, the retry budget per index). Default 1.34
    (``core.kubeversion.DEFAULT``); releases older than 1.25 are refused."""

    queue: str
    """The Kueue LocalQueue (in the MiniCluster's namespace) that admits the Job: it is created
    suspended with the label ``kueue.x-k8s.io/queue-name``, and ``wait`` waits for admission
    first. The spec's ``jobLabels`` may name the queue instead."""

    managed_by: str
    """The Job's ``spec.managedBy`` (``kueue.x-k8s.io/multikueue`` for MultiKueue)."""

    wait_timeout: int
    """Seconds ``wait`` may take before ``pulumi up`` fails (default: pulumi-kubernetes' 10
    minutes); for a queued MiniCluster, admission included."""

    autoscale: bool | Mapping[str, int]
    """An elastic MiniCluster: ``True`` or ``{"interval_seconds": 10, "idle_seconds": 60}``
    (camelCase accepted). Rank 0 then grows and shrinks its own Job between ``minSize`` (else
    ``size``) and ``maxSize`` from its Flux queue; Pulumi creates the Job at ``size`` and leaves
    its size to the scaler. It wins over the document's autoscale annotation."""


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
    for warning in bounded(prepared.plan.definition.warnings, "warnings"):
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


# --- validation, before anything is registered ---------------------------------------------


def prepare(resource_name: str, args: MiniClusterArgs) -> Prepared:  # noqa: C901
    """The validated, planned and rendered MiniCluster; raises ``SpecError`` on bad input."""
    if not isinstance(args, Mapping):
        raise SpecError(
            Problem("", f"must be a MiniClusterArgs mapping, got {type(args).__name__}")
        )
    problems = [
        Problem(str(key), unknown_key(str(key), _ARG_KEYS, "argument"))
        for key in args
        if key not in _ARG_KEYS
    ]
    if "spec" not in args:
        problems.append(Problem("spec", "required: the MiniCluster spec, a file path or a model"))
    wait = args.get("wait", "ready")
    if wait not in WAIT_MODES:
        problems.append(Problem("wait", f"must be one of {', '.join(WAIT_MODES)}, got {wait!r}"))
    for key in ("namespace", "name"):
        value = args.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(Problem(key, f"must be a string, got {type(value).__name__}"))
    wait_timeout = args.get("wait_timeout")
    if wait_timeout is not None and (
        not isinstance(wait_timeout, int) or isinstance(wait_timeout, bool) or wait_timeout < 1
    ):
        problems.append(
            Problem("wait_timeout", f"must be a positive number of seconds, got {wait_timeout!r}")
        )
    lead_broker = args.get("lead_broker")
    if isinstance(lead_broker, str) and (problem := outputs.lead_address_problem(lead_broker)):
        problems.append(Problem("lead_broker", problem))
    burst_group = args.get("burst_group")
    if burst_group is not None and lead_broker is None:
        problems.append(
            Problem("burst_group", "needs lead_broker: the address of the lead the group joins")
        )
    curve_cert = args.get("curve_cert")
    if isinstance(curve_cert, str):
        try:
            certificates.parse(outputs.normalize_certificate(curve_cert))
        except certificates.CertificateError as err:
            problems.append(Problem("curve_cert", str(err)))
    if problems:
        raise SpecError(problems, source=_SOURCE)

    # With burst_group the whole group, address included, comes from the outputs; with only
    # lead_broker, the address stands in as a placeholder until the Output resolves.
    lead_placeholder = (
        placeholders.LEAD_ADDRESS if lead_broker is not None and burst_group is None else None
    )
    # With burst_group the group is deferred to it before the cross-field rules run (once).
    settle = _defer_group if burst_group is not None else None
    definition = _definition(resource_name, args["spec"], args, lead_placeholder, settle)
    if burst_group is None and has_deferred_group(definition.spec):
        raise SpecError(
            Problem("burst_group", "required: the spec defers its group to its root's outputs"),
            source=_SOURCE,
        )
    if "autoscale" in args:
        definition = _with_autoscale(definition, args["autoscale"])
    try:
        kube_version = kubeversion.parse(args.get("kube_version", kubeversion.DEFAULT))
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    plan = plans.build(definition, kube_version)
    if curve_cert is None and (
        message := plan.mounted_certificate_problem("curve_cert (stack config curveCert)")
    ):
        raise SpecError(Problem("curve_cert", message), source=_SOURCE)
    try:  # an object the API server would find too large is refused here, before any is created
        rendering = render(
            plan,
            None,
            network_policy=bool(args.get("network_policy", True)),
            lead_source_ranges=list(args.get("lead_source_ranges") or ()),
            queue=args.get("queue"),
            managed_by=args.get("managed_by"),
        )
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    keygen = settings_from_args(args.get("keygen"), plan)
    choice: tuple[pulumi.Input[str] | None, certificates.CertificateSource] = certificates.choose(
        curve_cert, definition.spec.flux.curve_cert
    )
    certificate, chosen = choice
    source = {
        certificates.CertificateSource.GIVEN: "the curve_cert argument",
        certificates.CertificateSource.SPEC: "spec.flux.curveCert",
        certificates.CertificateSource.NEW: f"the keygen Command (strategy {keygen.strategy!r})",
    }[chosen]
    return Prepared(
        plan=plan,
        rendering=rendering,
        keygen=keygen,
        wait=wait,
        certificate=certificate,
        certificate_source=source,
        lead_broker=lead_broker,
        burst_group=burst_group,
        wait_timeout=wait_timeout,
    )


_ARG_KEYS: Final = MiniClusterArgs.__optional_keys__


def _with_autoscale(definition: MiniClusterDefinition, value: Any) -> MiniClusterDefinition:
    """The definition with the ``autoscale`` argument in place of its document's annotation
    (the one place the plan reads it)."""
    try:
        chosen = autoscaling.settings(value, "autoscale")
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    text = "false" if chosen is None else autoscaling.annotation_value(chosen)
    return replace(
        definition,
        annotations={**definition.annotations, lbl.AUTOSCALE_ANNOTATION: text},
    )


def _defer_group(spec: MiniClusterSpec, name: str) -> MiniClusterSpec:
    """``loading.with_deferred_group``, once: a stack program's definition may have it already."""
    return spec if has_deferred_group(spec) else with_deferred_group(spec, name)


def _definition(
    resource_name: str,
    spec: Any,
    args: Mapping[str, Any],
    lead_address: str | None,
    settle: Callable[[MiniClusterSpec, str], MiniClusterSpec] | None,
) -> MiniClusterDefinition:
    """The validated MiniCluster, parsed exactly once from whatever form ``spec`` takes, with
    ``settle`` (a burst's deferred group) made before the cross-field rules run."""
    name, namespace = args.get("name"), args.get("namespace")
    if isinstance(spec, MiniClusterDefinition):
        given: MiniClusterDefinition = spec
        changed = given.spec
        if lead_address is not None:
            changed = with_lead_address(changed, lead_address)
        if settle is not None:
            try:
                changed = settle(changed, given.name)
            except SpecError as err:
                raise err.with_source(_SOURCE) from None
        if changed is not given.spec:  # validated already, unless changed here
            given = revalidate(given.with_spec(changed), source=_SOURCE)
        if name is not None or namespace is not None:
            raise SpecError(
                Problem(
                    "spec",
                    "a MiniClusterDefinition carries its name and namespace; pass name and "
                    "namespace only with a document or a spec",
                ),
                source=_SOURCE,
            )
        return given
    if isinstance(spec, MiniClusterSpec):
        return parse(
            spec,
            name=name or resource_name,
            namespace=namespace,
            lead_address=lead_address,
            settle=settle,
        )
    source = ""
    if isinstance(spec, str) and "\n" in spec:
        raise SpecError(
            Problem("spec", "a string is a file path, and this looks like YAML text: pass a dict"),
            source=_SOURCE,
        )
    if isinstance(spec, str | Path):
        source = str(spec)
        found = documents.read_file(spec)
        if len(found) != 1:
            raise SpecError(
                Problem("", f"expected one MiniCluster, found {len(found)} documents"),
                source=source,
            )
        spec = found[0]
    if not isinstance(spec, Mapping):
        raise SpecError(
            Problem("spec", f"must be a mapping, a file path or a MiniClusterSpec, got {spec!r}"),
            source=_SOURCE,
        )
    metadata = spec.get("metadata") if documents.is_document(spec) else None
    # Not a mapping: parse names the problem at metadata.
    has_name = isinstance(metadata, Mapping) and bool(metadata.get("name"))
    definition = parse(
        spec,
        name=name or (None if has_name else resource_name),
        namespace=namespace,
        source=source,
        lead_address=lead_address,
        settle=settle,
    )
    written = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    if namespace is not None and written not in (None, namespace):
        # The argument wins (the deployer's choice), but not silently: kubectl's -n refuses.
        said = Problem(
            "metadata.namespace",
            f"is {written!r} but the namespace argument is {namespace!r}, which wins: the "
            f"objects go to {namespace!r}",
        )
        definition = replace(definition, warnings=(*definition.warnings, said))
    return definition
