"""The MiniCluster ComponentResource: a Flux MiniCluster on Kubernetes, without the operator.

The component validates the spec, renders it with the pure core (the single source of truth for
what lands in the cluster) and registers each rendered object as its typed pulumi_kubernetes
resource, under one component, with the certificate and a bursted cluster's lead address filled
in from Outputs. It adds lifecycle rules only Pulumi can express:

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

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict, cast

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from flux_minicluster.core import certificate as certificates
from flux_minicluster.core import labels as lbl
from flux_minicluster.core import yamlio
from flux_minicluster.core.definition import MiniClusterDefinition
from flux_minicluster.core.definition import parse as parse_definition
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.render import placeholders
from flux_minicluster.core.render.broker import hostlist_for
from flux_minicluster.core.render.manifests import WAIT_MODES, Wait, render
from flux_minicluster.core.spec import MiniClusterSpec
from flux_minicluster.deploy import outputs, resources
from flux_minicluster.deploy.keygen import (
    KeygenArgs,
    KeygenSettings,
    keygen_command,
    settings_from_args,
)

__all__ = [
    "JOB_HASH_ANNOTATION",
    "JOB_IGNORE_CHANGES",
    "TYPE",
    "MiniCluster",
    "MiniClusterArgs",
    "job_registration",
]

TYPE: Final = "minicluster:index:MiniCluster"
# On the JobPatch (and so on the live Job): a digest of the Job as registered, without its size.
# It changes exactly when the Job is replaced or updated, which makes the patch apply again to
# the new Job; the patch would otherwise be left unchanged and the new Job keep its first size.
JOB_HASH_ANNOTATION: Final = f"{lbl.DOMAIN}/job-hash"
PATCH_FORCE_ANNOTATION: Final = "pulumi.com/patchForce"
JOB_IGNORE_CHANGES: Final = ("spec.parallelism", "spec.completions")
_SOURCE: Final = "MiniClusterArgs"


class MiniClusterArgs(TypedDict, total=False):
    """Arguments of a MiniCluster; only ``spec`` is required."""

    spec: Mapping[str, Any] | str | Path | MiniClusterSpec
    """The MiniCluster as the Flux Operator takes it: a whole ``flux-framework.org/v1alpha2``
    document or a bare spec (a dict, as from ``pulumi.Config().require_object``), the path of a
    YAML file holding one, or a ``MiniClusterSpec`` model."""

    namespace: str
    """Namespace of every object (default: the document's metadata.namespace, else default)."""

    name: str
    """MiniCluster name, overriding metadata.name; the Job, hostnames and Services derive from
    it."""

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
    it overrides ``spec.flux.bursting.leadBroker.address``. The spec must still declare
    ``leadBroker`` with the lead's ``name`` and ``size``, which shape the hostlist."""


@dataclass(frozen=True)
class _Plan:
    """Everything decided before a single resource is registered."""

    definition: MiniClusterDefinition
    manifests: list[dict[str, Any]]
    keygen: KeygenSettings
    certificate: pulumi.Input[str] | None  # None: the keygen Command makes one
    certificate_source: str
    lead_broker: pulumi.Input[str] | None


class MiniCluster(pulumi.ComponentResource):
    """A Flux MiniCluster: entrypoint ConfigMap, curve Secret, Services, an Indexed Job."""

    job_name: pulumi.Output[str]
    """Name of the Indexed Job (and the prefix of every broker's hostname)."""
    service_name: pulumi.Output[str]
    """Name of the headless Service the brokers resolve each other through."""
    namespace: pulumi.Output[str]
    lead_broker_host: pulumi.Output[str]
    """Rank 0's fully qualified name inside the cluster."""
    hostlist: pulumi.Output[str]
    """Every broker host in rank order (the ``hostlist`` file), bursted clusters included."""
    size: pulumi.Output[int]
    max_size: pulumi.Output[int]
    curve_public_key: pulumi.Output[str]
    """The certificate's public key (not secret): compare certificates across clusters with it."""
    curve_cert: pulumi.Output[str]
    """The whole curve certificate, secret: hand it to the clusters this one bursts to."""

    definition: MiniClusterDefinition
    """The validated MiniCluster (plain Python, for programs that need names or the spec)."""
    manifests: list[dict[str, Any]]
    """The rendered objects, with placeholder tokens where the certificate and a lead address
    go (never the secret itself)."""
    keygen: local.Command | None
    """The keygen Command, when the certificate is generated."""

    def __init__(
        self,
        resource_name: str,
        args: MiniClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        plan = _plan(args)  # raises before anything is registered
        super().__init__(TYPE, resource_name, {}, opts)
        self.definition = plan.definition
        self.manifests = plan.manifests
        mc = plan.definition

        # The caller's depends_on applies to every child: a keygen pod or a Pod must not start
        # before, say, the Namespace the caller created for it.
        caller = pulumi.ResourceOptions(depends_on=opts.depends_on if opts else None)

        def child_opts(**options: Any) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(
                caller, pulumi.ResourceOptions(parent=self, **options)
            )

        if plan.certificate is None:
            self.keygen = keygen_command(resource_name, plan.keygen, opts=child_opts())
            raw_certificate: pulumi.Input[str | None] = self.keygen.stdout
        else:
            self.keygen = None
            raw_certificate = plan.certificate
        certificate = outputs.checked_certificate(raw_certificate, plan.certificate_source)
        public_key = outputs.public_key_of(certificate)
        replacements = {
            placeholders.CURVE_CERT: certificate,
            placeholders.CURVE_PUBLIC_KEY: public_key,
        }
        if plan.lead_broker is not None:
            replacements[outputs.LEAD_ADDRESS_PLACEHOLDER] = outputs.check_lead_address(
                plan.lead_broker, "lead_broker"
            )

        before_job: list[pulumi.Resource] = [] if self.keygen is None else [self.keygen]
        job_manifest: dict[str, Any] | None = None
        service: pulumi.CustomResource | None = None
        for manifest in plan.manifests:
            if manifest["kind"] == "Job":
                job_manifest = manifest
                continue
            registered = resources.register(
                resource_name,
                _secret_data(outputs.substitute(manifest, replacements)),
                child_opts(delete_before_replace=True),
            )
            before_job.append(registered)
            if manifest["kind"] == "Service" and manifest["metadata"]["name"] == mc.headless_name:
                service = registered
        if job_manifest is None or service is None:  # the renderer always makes both
            raise AssertionError("the rendered MiniCluster has no Job or no headless Service")

        job_registered, patch_await = job_registration(job_manifest)
        job = resources.register(
            resource_name,
            outputs.substitute(job_registered, replacements),
            child_opts(
                depends_on=before_job,
                delete_before_replace=True,
                replace_on_changes=["spec.template"],
                ignore_changes=list(JOB_IGNORE_CHANGES),
            ),
        )
        size = mc.spec.size
        k8s.batch.v1.JobPatch(
            f"{resource_name}-size",
            metadata={
                "name": mc.name,
                "namespace": mc.namespace,
                "annotations": {
                    PATCH_FORCE_ANNOTATION: "true",
                    JOB_HASH_ANNOTATION: _job_hash(job_registered),
                    **patch_await,
                },
            },
            spec={"parallelism": size, "completions": size},
            # deleted_with: on destroy the Job goes anyway. Deleting the patch first would
            # relinquish parallelism/completions, and an Indexed Job without completions is
            # refused by the API server, failing the destroy.
            opts=child_opts(depends_on=[job], deleted_with=job),
        )

        hostlist = outputs.substitute(hostlist_for(mc), replacements)
        # Tied to the resources, so that a consumer of these names waits for the objects.
        self.job_name = cast(k8s.batch.v1.Job, job).metadata.apply(lambda meta: str(meta.name))
        self.service_name = cast(k8s.core.v1.Service, service).metadata.apply(
            lambda meta: str(meta.name)
        )
        self.namespace = pulumi.Output.from_input(mc.namespace)
        self.lead_broker_host = pulumi.Output.from_input(mc.lead_fqdn)
        self.hostlist = pulumi.Output.from_input(hostlist)
        self.size = pulumi.Output.from_input(size)
        self.max_size = pulumi.Output.from_input(mc.spec.max_size)
        self.curve_public_key = public_key
        self.curve_cert = certificate
        self.register_outputs(
            {
                "job_name": self.job_name,
                "service_name": self.service_name,
                "namespace": self.namespace,
                "lead_broker_host": self.lead_broker_host,
                "hostlist": self.hostlist,
                "size": self.size,
                "max_size": self.max_size,
                "curve_public_key": self.curve_public_key,
                "curve_cert": self.curve_cert,
            }
        )


def job_registration(job: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The rendered Job as the component registers it, and the await annotations of its JobPatch.

    A ``waitFor`` (it names the size) moves to the JobPatch and the Job gets ``skipAwait`` in its
    place; everything else is the rendered Job, unchanged. A Job without ``waitFor`` keeps its
    await annotations and the patch skips awaiting: the Job itself already waited (or skips).
    """
    metadata = dict(job["metadata"])
    annotations = dict(metadata.get("annotations") or {})
    wait_for = annotations.pop(lbl.WAIT_FOR_ANNOTATION, None)
    if wait_for is None:
        return dict(job), {lbl.SKIP_AWAIT_ANNOTATION: "true"}
    annotations[lbl.SKIP_AWAIT_ANNOTATION] = "true"
    metadata["annotations"] = annotations
    return {**job, "metadata": metadata}, {lbl.WAIT_FOR_ANNOTATION: wait_for}


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


def _plan(args: MiniClusterArgs) -> _Plan:
    if not isinstance(args, Mapping):
        raise SpecError(
            Problem("", f"must be a MiniClusterArgs mapping, got {type(args).__name__}")
        )
    problems = [
        Problem(str(key), f"unknown argument (known: {', '.join(sorted(_ARG_KEYS))})")
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
    curve_cert = args.get("curve_cert")
    if isinstance(curve_cert, str):
        try:
            certificates.parse(outputs.normalize_certificate(curve_cert))
        except certificates.CertificateError as err:
            problems.append(Problem("curve_cert", str(err)))
    if problems:
        raise SpecError(problems, source=_SOURCE)

    definition = _definition(args["spec"], args, lead_broker is not None)
    manifests = render(definition, None, wait=wait)
    keygen = settings_from_args(args.get("keygen"), definition)
    certificate: pulumi.Input[str] | None
    if curve_cert is not None:
        certificate, source = curve_cert, "the curve_cert argument"
    elif definition.spec.flux.curve_cert is not None:
        certificate, source = definition.spec.flux.curve_cert, "spec.flux.curveCert"
    else:
        certificate, source = None, f"the keygen Command (strategy {keygen.strategy!r})"
    return _Plan(
        definition=definition,
        manifests=manifests,
        keygen=keygen,
        certificate=certificate,
        certificate_source=source,
        lead_broker=lead_broker,
    )


_ARG_KEYS: Final = MiniClusterArgs.__optional_keys__


def _definition(
    spec: Any, args: Mapping[str, Any], lead_placeholder: bool
) -> MiniClusterDefinition:
    name, namespace = args.get("name"), args.get("namespace")
    if isinstance(spec, MiniClusterSpec):
        if lead_placeholder:
            spec = spec.model_copy(deep=True)
            lead = spec.flux.bursting.lead_broker
            if lead is None:
                raise SpecError(_LEAD_REQUIRED)
            lead.address = outputs.LEAD_ADDRESS_PLACEHOLDER
        return parse_definition(spec, name=name, namespace=namespace)
    source = ""
    if isinstance(spec, str) and "\n" in spec:
        raise SpecError(
            Problem("spec", "a string is a file path, and this looks like YAML text: pass a dict"),
            source=_SOURCE,
        )
    if isinstance(spec, str | Path):
        source = str(spec)
        spec = _load_document(Path(spec))
    if not isinstance(spec, Mapping):
        raise SpecError(
            Problem("spec", f"must be a mapping, a file path or a MiniClusterSpec, got {spec!r}"),
            source=_SOURCE,
        )
    document = copy.deepcopy(dict(spec))
    if lead_placeholder:
        _set_lead_placeholder(document, source)
    return parse_definition(document, name=name, namespace=namespace, source=source)


_LEAD_REQUIRED: Final = Problem(
    "spec.flux.bursting.leadBroker",
    "required with the lead_broker argument: the lead's name and size shape the hostlist",
)


def _set_lead_placeholder(document: dict[str, Any], source: str) -> None:
    """Put the placeholder where the lead's address goes, in a whole document or a bare spec."""
    inner = document.get("spec")
    lead: Any = inner if isinstance(inner, dict) and "containers" not in document else document
    for key in ("flux", "bursting", "leadBroker"):
        lead = lead.get(key) if isinstance(lead, dict) else None
    if not isinstance(lead, dict):
        raise SpecError(_LEAD_REQUIRED, source=source)
    lead["address"] = outputs.LEAD_ADDRESS_PLACEHOLDER


def _load_document(path: Path) -> Any:
    """The single YAML document in ``path``, with the core's strict loader."""
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SpecError(Problem("", f"cannot read: {err.strerror}"), source=source) from None
    documents = yamlio.load_documents(yamlio.decode(data, source), source)
    if len(documents) != 1:
        raise SpecError(
            Problem("", f"expected one MiniCluster, found {len(documents)} documents"),
            source=source,
        )
    return documents[0]
