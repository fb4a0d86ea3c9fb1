"""A MiniCluster prepared: everything decided before a single resource is registered.

``prepare`` checks the arguments (each by its declaration, ``arguments``), reads the spec once in
whatever form it is given, plans it and renders it; a bad input raises ``SpecError`` here, before
the component itself is registered. Both faces of the component call it: the Python class and
the one other languages reach (``multilanguage``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi

from flux_minicluster.core.base import placeholders
from flux_minicluster.core.base.errors import Problem, SpecError
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
from flux_minicluster.deploy.component import arguments
from flux_minicluster.deploy.component.arguments import SOURCE, MiniClusterArgs
from flux_minicluster.deploy.component.keygen import KeygenSettings, settings_from_args
from flux_minicluster.deploy.component.prepared import Prepared

__all__ = ["prepare"]


def prepare(resource_name: str, args: MiniClusterArgs) -> Prepared:
    """The validated, planned and rendered MiniCluster; raises ``SpecError`` on bad input."""
    if not isinstance(args, Mapping):
        raise SpecError(
            Problem("", f"must be a MiniClusterArgs mapping, got {type(args).__name__}")
        )
    if problems := arguments.problems(args):
        raise SpecError(problems, source=SOURCE)
    plan = plans.build(
        _settled(resource_name, args),
        kubeversion.parse(args.get("kube_version", kubeversion.DEFAULT)),  # checked
    )
    curve_cert = args.get("curve_cert")
    if curve_cert is None and (
        message := plan.mounted_certificate_problem("curve_cert (stack config curveCert)")
    ):
        raise SpecError(Problem("curve_cert", message), source=SOURCE)
    keygen = settings_from_args(args.get("keygen"), plan)
    certificate, source = _certificate(curve_cert, plan, keygen)
    return Prepared(
        plan=plan,
        rendering=_rendering(plan, args),
        keygen=keygen,
        wait=args.get("wait", "ready"),
        certificate=certificate,
        certificate_source=source,
        lead_broker=args.get("lead_broker"),
        burst_group=args.get("burst_group"),
        wait_timeout=args.get("wait_timeout"),
    )


def _settled(resource_name: str, args: MiniClusterArgs) -> MiniClusterDefinition:
    """The definition with the lead and the group as the arguments give them, and autoscale."""
    lead_broker, burst_group = args.get("lead_broker"), args.get("burst_group")
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
            source=SOURCE,
        )
    if "autoscale" in args:
        definition = _with_autoscale(definition, args["autoscale"])
    return definition


def _rendering(plan: plans.MiniClusterPlan, args: MiniClusterArgs) -> Rendering:
    """The rendered objects; one the API server would find too large is refused here, before
    any is created."""
    try:
        return render(
            plan,
            None,
            network_policy=bool(args.get("network_policy", True)),
            lead_source_ranges=list(args.get("lead_source_ranges") or ()),
            queue=args.get("queue"),
            managed_by=args.get("managed_by"),
        )
    except SpecError as err:
        raise err.with_source(SOURCE) from None


def _certificate(
    curve_cert: pulumi.Input[str] | None, plan: plans.MiniClusterPlan, keygen: KeygenSettings
) -> tuple[pulumi.Input[str] | None, str]:
    """The certificate given (None: the keygen Command makes one), and where it comes from."""
    choice: tuple[pulumi.Input[str] | None, certificates.CertificateSource] = certificates.choose(
        curve_cert, plan.definition.spec.flux.curve_cert
    )
    certificate, chosen = choice
    source = {
        certificates.CertificateSource.GIVEN: "the curve_cert argument",
        certificates.CertificateSource.SPEC: "spec.flux.curveCert",
        certificates.CertificateSource.NEW: f"the keygen Command (strategy {keygen.strategy!r})",
    }[chosen]
    return certificate, source


def _with_autoscale(definition: MiniClusterDefinition, value: Any) -> MiniClusterDefinition:
    """The definition with the ``autoscale`` argument in place of its document's annotation
    (the one place the plan reads it)."""
    try:
        chosen = autoscaling.settings(value, "autoscale")
    except SpecError as err:
        raise err.with_source(SOURCE) from None
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
        if name is not None or namespace is not None:
            raise SpecError(
                Problem(
                    "spec",
                    "a MiniClusterDefinition carries its name and namespace; pass name and "
                    "namespace only with a document or a spec",
                ),
                source=SOURCE,
            )
        return _given(spec, lead_address, settle)
    if isinstance(spec, MiniClusterSpec):
        return parse(
            spec,
            name=name or resource_name,
            namespace=namespace,
            lead_address=lead_address,
            settle=settle,
        )
    source, document = _document(spec)
    metadata = document.get("metadata") if documents.is_document(document) else None
    # Not a mapping: parse names the problem at metadata.
    has_name = isinstance(metadata, Mapping) and bool(metadata.get("name"))
    definition = parse(
        document,
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


def _given(
    given: MiniClusterDefinition,
    lead_address: str | None,
    settle: Callable[[MiniClusterSpec, str], MiniClusterSpec] | None,
) -> MiniClusterDefinition:
    """An already validated definition, with the lead and the group as the arguments give
    them; validated again only when they change it."""
    changed = given.spec
    if lead_address is not None:
        changed = with_lead_address(changed, lead_address)
    if settle is not None:
        try:
            changed = settle(changed, given.name)
        except SpecError as err:
            raise err.with_source(SOURCE) from None
    if changed is given.spec:
        return given
    return revalidate(given.with_spec(changed), source=SOURCE)


def _document(spec: Any) -> tuple[str, Mapping[str, Any]]:
    """The document or bare spec ``spec`` gives (a mapping, or a YAML file's path) and where it
    was read from ("" when not from a file)."""
    if isinstance(spec, str) and "\n" in spec:
        raise SpecError(
            Problem("spec", "a string is a file path, and this looks like YAML text: pass a dict"),
            source=SOURCE,
        )
    source = ""
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
            source=SOURCE,
        )
    return source, spec
