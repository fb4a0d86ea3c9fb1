"""The MiniCluster ComponentResource: a Flux MiniCluster on Kubernetes, without the operator.

The component validates the spec, plans and renders it with the pure core (the single source of
truth for what lands in the cluster) and registers each rendered object as its typed
pulumi_kubernetes resource, under one component, with the certificate and a bursted cluster's
lead filled in from Outputs. It adds lifecycle rules only Pulumi can express:

* validation happens before anything is registered: an invalid spec raises ``SpecError`` with the
  field path and leaves no trace in the stack, not even the component;
* object names are fixed (hostnames derive from them), so every replacement deletes first, and
  a pod template change replaces the Job deliberately instead of failing on an immutable field;
* a resize within ``maxSize`` never replaces the Job. pulumi-kubernetes replaces a Job whose
  ``parallelism``/``completions`` change, so the Job ignores those fields after creation and a
  ``JobPatch`` (``<resource>-size``) owns them: it sets both to ``size`` with server-side apply.
  The size-dependent readiness gate (``waitFor: .status.ready=<size>``) moves from the Job to that
  patch too: left on the Job, a resize would update the Job and wait for pods that only the
  patch, which runs after the Job, can create;
* the curve certificate is a secret from end to end: it is never a component input, and the
  Secret's data is a secret Output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, TypedDict, cast

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from flux_minicluster.core import certificate as certificates
from flux_minicluster.core import documents, placeholders
from flux_minicluster.core import labels as lbl
from flux_minicluster.core import plan as plans
from flux_minicluster.core.definition import MiniClusterDefinition
from flux_minicluster.core.errors import Problem, SpecError, unknown_key
from flux_minicluster.core.loading import parse, revalidate, with_lead_address
from flux_minicluster.core.render import credentials
from flux_minicluster.core.render.manifests import WAIT_MODES, Rendering, Wait, render
from flux_minicluster.core.spec import MiniClusterSpec
from flux_minicluster.deploy import burstgroup, outputs, resources
from flux_minicluster.deploy.burstgroup import BurstGroupArgs
from flux_minicluster.deploy.keygen import (
    KeygenArgs,
    KeygenSettings,
    keygen_command,
    settings_from_args,
)
from flux_minicluster.deploy.published import OUTPUTS, MiniClusterOutputs

__all__ = [
    "JOB_HASH_ANNOTATION",
    "JOB_IGNORE_CHANGES",
    "OUTPUTS",
    "TYPE",
    "MiniCluster",
    "MiniClusterArgs",
    "Prepared",
    "child_registration",
    "expand",
    "job_registration",
    "prepare",
]

TYPE: Final = "minicluster:index:MiniCluster"
# On the JobPatch (and so on the live Job): a digest of the Job as registered, without its size.
# It changes exactly when the Job is replaced or updated, which makes the patch apply again to
# the new Job; the patch would otherwise be left unchanged and the new Job keep its first size.
JOB_HASH_ANNOTATION: Final = f"{lbl.DOMAIN}/job-hash"
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"
JOB_IGNORE_CHANGES: Final = ("spec.parallelism", "spec.completions")
# How pulumi-kubernetes deletes an object (its default is foreground propagation).
# * Every child but the Job: background. None has dependents that matter (a Service's
#   EndpointSlices), but with foreground each waits for the garbage collector to take its
#   deletion finalizer off, and on `pulumi destroy` the collector is busy deleting the Job's
#   pods (20 requests a second by default): the objects, then the namespace after them, waited
#   for the pods. With background they go at once and the namespace is deleted next (64
#   brokers: destroy 11 s -> 9 s; at 256 and 1,024 the namespace controller's own waits
#   dominate either way: the README's Performance section).
# * A Job that skips awaiting: background too. pulumi-kubernetes then also skips waiting for its
#   deletion (metadata.allowsSkipAwaitWithDelete), so a replacement (delete-before-replace, a
#   fixed name) would apply the new Job to the old one while its foreground deletion runs: a
#   field conflict, or a "new" Job that disappears with the old one (found by
#   tests/e2e/test_local_stack.py). With background the old Job object goes at once.
# * A Job that is awaited keeps foreground: its replacement then waits until the old pods are
#   gone, so old and new brokers never share a hostname.
DELETION_PROPAGATION_ANNOTATION: Final = "pulumi.com/deletionPropagationPolicy"
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


class MiniCluster(MiniClusterOutputs):
    """A Flux MiniCluster: entrypoint ConfigMap, curve Secret, Services, an Indexed Job.

    Its outputs are declared on ``MiniClusterOutputs`` (``deploy.published``).
    """

    plan: plans.MiniClusterPlan
    """The validated MiniCluster and every fact derived from it (plain Python)."""
    rendering: Rendering
    """The rendered objects, with placeholder tokens where the certificate and a lead go (never
    the secret itself)."""
    keygen: local.Command | None
    """The keygen Command, when the certificate is generated."""

    def __init__(
        self,
        resource_name: str,
        args: MiniClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        prepared = prepare(resource_name, args)  # raises before anything is registered
        super().__init__(TYPE, resource_name, {}, opts)
        self.plan = prepared.plan
        self.rendering = prepared.rendering
        self.keygen = expand(self, resource_name, prepared, opts)


@dataclass(frozen=True)
class Prepared:
    """Everything decided before a single resource is registered."""

    plan: plans.MiniClusterPlan
    rendering: Rendering
    keygen: KeygenSettings
    certificate: pulumi.Input[str] | None  # None: the keygen Command makes one
    certificate_source: str
    lead_broker: pulumi.Input[str] | None
    burst_group: pulumi.Input[BurstGroupArgs] | None


def expand(
    component: pulumi.ComponentResource,
    resource_name: str,
    prepared: Prepared,
    opts: pulumi.ResourceOptions | None,
) -> local.Command | None:
    """Register a prepared MiniCluster's children under ``component`` and publish its outputs.

    Both faces of the component call this: the Python class and the one other languages reach
    through the component provider (``deploy.multilanguage``). It sets every name of ``OUTPUTS``
    on ``component`` and registers them; it returns the keygen Command, if one was created.
    """
    plan = prepared.plan
    rendering = prepared.rendering

    def child_opts(
        gate: pulumi.Output[Any] | None = None,
        *,
        extra_depends_on: list[pulumi.Resource] | None = None,
        **options: Any,
    ) -> pulumi.ResourceOptions:
        """Options of a child: parented here, after the caller's dependencies and the gate.

        The caller's ``depends_on`` applies to every child: a keygen pod or a Pod must not start
        before, say, the Namespace the caller created for it. A ``gate`` is an Output every
        child waits for (a burst's checked group), so nothing is created when it fails.
        """
        depends: list[pulumi.Resource] = [*caller, *(extra_depends_on or [])]
        depends_on: pulumi.Input[list[pulumi.Resource]] = depends
        if gate is not None:
            depends_on = gate.apply(lambda _: depends)
        return pulumi.ResourceOptions(parent=component, depends_on=depends_on, **options)

    caller = _depends_on(opts)
    keygen: local.Command | None = None
    if prepared.certificate is None:
        keygen = keygen_command(resource_name, prepared.keygen, opts=child_opts())
        raw_certificate: pulumi.Input[str | None] = keygen.stdout
    else:
        raw_certificate = prepared.certificate
    certificate = outputs.checked_certificate(raw_certificate, prepared.certificate_source)
    public_key = outputs.public_key_of(certificate)
    replacements: dict[str, pulumi.Output[str]] = {
        placeholders.CURVE_CERT: certificate,
        placeholders.CURVE_PUBLIC_KEY: public_key,
    }
    # v1alpha1's generated secrets (munge key, passwords, RESTful token) derive from the
    # certificate: secret Outputs too, computed only once it is known.
    for token, derive in credentials.derivations(plan).items():
        replacements[token] = pulumi.Output.secret(certificate.apply(derive))
    for warning in plan.definition.warnings:
        pulumi.log.warn(str(warning), resource=component)
    hostlist: pulumi.Input[str] = plan.hostlist
    lead_host: pulumi.Input[str] = plan.names.lead_fqdn
    gate: pulumi.Output[Any] | None = None
    if prepared.lead_broker is not None:
        address = outputs.check_lead_address(prepared.lead_broker, "lead_broker")
        replacements[placeholders.LEAD_ADDRESS] = address
        lead_host = address
        hostlist = outputs.substitute(plan.hostlist, replacements)
    if prepared.burst_group is not None:
        group = burstgroup.resolve(
            plan, rendering, prepared.burst_group, replacements[placeholders.LEAD_ADDRESS]
        )
        rendering = burstgroup.apply(rendering, group)
        hostlist = group.hostlist
        replacements[placeholders.LEAD_NAME] = group.lead_name
        # No object may be created for a cluster its root does not declare.
        gate = group.hostlist

    # v1alpha1's `delete: false`: the volume and its claim outlive `pulumi destroy`.
    kept = {
        name
        for item in plan.operator_volumes
        if not item.volume.delete
        for name in (item.persistent_volume, item.claim)
    }
    before_job: list[pulumi.Resource] = [] if keygen is None else [keygen]
    registered: dict[int, pulumi.CustomResource] = {}
    for manifest in rendering.objects():
        if manifest is rendering.job:
            continue
        retain = manifest["metadata"]["name"] in kept and manifest["kind"] in (
            "PersistentVolume",
            "PersistentVolumeClaim",
        )
        resource = resources.register(
            resource_name,
            _secret_data(outputs.substitute(child_registration(manifest), replacements)),
            child_opts(gate, delete_before_replace=True, retain_on_delete=retain or None),
        )
        registered[id(manifest)] = resource
        before_job.append(resource)
    service = registered[id(rendering.headless_service)]

    job_registered, patch_await = job_registration(rendering.job)
    job = resources.register(
        resource_name,
        outputs.substitute(job_registered, replacements),
        child_opts(
            gate,
            extra_depends_on=before_job,
            delete_before_replace=True,
            replace_on_changes=["spec.template"],
            ignore_changes=list(JOB_IGNORE_CHANGES),
        ),
    )
    size = plan.spec.size
    k8s.batch.v1.JobPatch(
        f"{resource_name}-size",
        metadata={
            "name": plan.names.cluster,
            "namespace": plan.namespace,
            "annotations": {
                PATCH_FORCE_ANNOTATION: "true",
                # An Output: a burst's Job holds text that is known once its root's is.
                JOB_HASH_ANNOTATION: pulumi.Output.from_input(job_registered).apply(_job_hash),
                **patch_await,
            },
        },
        spec={"parallelism": size, "completions": size},
        # deleted_with: on destroy the Job goes anyway. Deleting the patch first would
        # relinquish parallelism/completions, and an Indexed Job without completions is
        # refused by the API server, failing the destroy.
        opts=child_opts(None, extra_depends_on=[job], deleted_with=job),
    )

    published: dict[str, pulumi.Output[Any]] = {
        # Tied to the resources, so that a consumer of these names waits for the objects.
        "job_name": cast(k8s.batch.v1.Job, job).metadata.apply(lambda meta: str(meta.name)),
        "service_name": cast(k8s.core.v1.Service, service).metadata.apply(
            lambda meta: str(meta.name)
        ),
        "namespace": pulumi.Output.from_input(plan.namespace),
        "lead_broker_host": pulumi.Output.from_input(lead_host),
        "hostlist": pulumi.Output.from_input(hostlist),
        "size": pulumi.Output.from_input(size),
        "max_size": pulumi.Output.from_input(plan.spec.max_size),
        "curve_public_key": public_key,
        "curve_cert": certificate,
        **_restful_outputs(plan, replacements),
    }
    for name, value in published.items():
        setattr(component, name, value)
    component.register_outputs(published)
    return keygen


def _depends_on(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    """The caller's ``depends_on`` as a list (it may be one resource, a list, or nothing)."""
    value = opts.depends_on if opts is not None else None
    if value is None:
        return []
    if isinstance(value, pulumi.Resource):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, pulumi.Resource)]
    raise SpecError(
        Problem("opts.depends_on", "must be a resource or a list of resources, not an Output"),
        source=_SOURCE,
    )


def _restful_outputs(
    plan: plans.MiniClusterPlan, replacements: Mapping[str, pulumi.Output[str]]
) -> dict[str, pulumi.Output[str | None]]:
    """The RESTful server's URL and user, and its token and secret key (secret); None without
    the server. A client needs all four (flux-restful-client: FLUX_USER, FLUX_TOKEN and
    FLUX_SECRET_KEY, which signs the request for an access token)."""
    restful = plan.restful
    names = ("restful_url", "restful_user", "restful_token", "restful_secret_key")
    if restful is None:
        return {name: pulumi.Output.from_input(None) for name in names}
    url = f"http://{plan.names.restful_service}.{plan.namespace}.svc.cluster.local:{restful.port}"
    token: pulumi.Input[str] = (
        restful.token if restful.token is not None else replacements[placeholders.RESTFUL_TOKEN]
    )
    secret_key: pulumi.Input[str] = (
        restful.secret_key
        if restful.secret_key is not None
        else replacements[placeholders.RESTFUL_SECRET_KEY]
    )
    return {
        "restful_url": pulumi.Output.from_input(url),
        "restful_user": pulumi.Output.from_input(
            restful.username or credentials.DEFAULT_RESTFUL_USER
        ),
        "restful_token": pulumi.Output.secret(token),
        "restful_secret_key": pulumi.Output.secret(secret_key),
    }


def child_registration(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A rendered object other than the Job as the component registers it: deleted with
    background propagation (``DELETION_PROPAGATION_ANNOTATION``)."""
    metadata = dict(manifest["metadata"])
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        DELETION_PROPAGATION_ANNOTATION: "background",
    }
    return {**manifest, "metadata": metadata}


def job_registration(job: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The rendered Job as the component registers it, and the await annotations of its JobPatch.

    A ``waitFor`` (it names the size) moves to the JobPatch and the Job gets ``skipAwait`` in its
    place. A Job without ``waitFor`` keeps its await annotations and the patch skips awaiting: the
    Job itself already waited (or skips). A Job that skips awaiting is deleted with background
    propagation (``DELETION_PROPAGATION_ANNOTATION``); everything else is the rendered Job.
    """
    metadata = dict(job["metadata"])
    annotations = dict(metadata.get("annotations") or {})
    wait_for = annotations.pop(lbl.WAIT_FOR_ANNOTATION, None)
    patch_await = (
        {lbl.SKIP_AWAIT_ANNOTATION: "true"}
        if wait_for is None
        else {lbl.WAIT_FOR_ANNOTATION: wait_for}
    )
    if wait_for is not None:
        annotations[lbl.SKIP_AWAIT_ANNOTATION] = "true"
    if annotations.get(lbl.SKIP_AWAIT_ANNOTATION) == "true":
        annotations[DELETION_PROPAGATION_ANNOTATION] = "background"
    metadata["annotations"] = annotations
    return {**job, "metadata": metadata}, patch_await


def _job_hash(job: Mapping[str, Any]) -> str:
    spec = {k: v for k, v in job["spec"].items() if k not in ("parallelism", "completions")}
    canonical = json.dumps({**job, "spec": spec}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _secret_data(manifest: dict[str, Any]) -> dict[str, Any]:
    """A Secret's data as a secret Output, whatever it holds; other objects unchanged."""
    if manifest["kind"] != "Secret":
        return manifest
    return {
        key: pulumi.Output.secret(value) if key in ("data", "stringData") else value
        for key, value in manifest.items()
    }


# --- validation, before anything is registered ---------------------------------------------


def prepare(resource_name: str, args: MiniClusterArgs) -> Prepared:
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
    definition = _definition(resource_name, args["spec"], args, lead_placeholder)
    if burst_group is not None:
        definition = revalidate(burstgroup.deferred(definition), source=_SOURCE)
    plan = plans.build(definition)
    if curve_cert is None and (
        message := plan.mounted_certificate_problem("curve_cert (stack config curveCert)")
    ):
        raise SpecError(Problem("curve_cert", message), source=_SOURCE)
    try:  # an object the API server would find too large is refused here, before any is created
        rendering = render(
            plan,
            None,
            wait=wait,
            network_policy=bool(args.get("network_policy", True)),
            lead_source_ranges=list(args.get("lead_source_ranges") or ()),
        )
    except SpecError as err:
        raise err.with_source(_SOURCE) from None
    keygen = settings_from_args(args.get("keygen"), plan)
    certificate: pulumi.Input[str] | None
    if curve_cert is not None:
        certificate, source = curve_cert, "the curve_cert argument"
    elif definition.spec.flux.curve_cert is not None:
        certificate, source = definition.spec.flux.curve_cert, "spec.flux.curveCert"
    else:
        certificate, source = None, f"the keygen Command (strategy {keygen.strategy!r})"
    return Prepared(
        plan=plan,
        rendering=rendering,
        keygen=keygen,
        certificate=certificate,
        certificate_source=source,
        lead_broker=lead_broker,
        burst_group=burst_group,
    )


_ARG_KEYS: Final = MiniClusterArgs.__optional_keys__


def _definition(
    resource_name: str, spec: Any, args: Mapping[str, Any], lead_address: str | None
) -> MiniClusterDefinition:
    """The validated MiniCluster, parsed exactly once from whatever form ``spec`` takes."""
    name, namespace = args.get("name"), args.get("namespace")
    if isinstance(spec, MiniClusterDefinition):
        given: MiniClusterDefinition = spec
        if lead_address is not None:
            given = revalidate(given.with_spec(with_lead_address(given.spec, lead_address)))
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
            spec, name=name or resource_name, namespace=namespace, lead_address=lead_address
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
    metadata = (spec.get("metadata") or {}) if documents.is_document(spec) else {}
    has_name = bool(metadata.get("name"))
    definition = parse(
        spec,
        name=name or (None if has_name else resource_name),
        namespace=namespace,
        source=source,
        lead_address=lead_address,
    )
    written = metadata.get("namespace")
    if namespace is not None and written not in (None, namespace):
        # The argument wins (the deployer's choice), but not silently: kubectl's -n refuses.
        said = Problem(
            "metadata.namespace",
            f"is {written!r} but the namespace argument is {namespace!r}, which wins: the "
            f"objects go to {namespace!r}",
        )
        definition = replace(definition, warnings=(*definition.warnings, said))
    return definition
