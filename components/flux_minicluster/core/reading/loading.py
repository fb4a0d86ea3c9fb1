"""From what users write to validated MiniClusters: documents, bare specs, files.

``parse`` is the one way a ``MiniClusterDefinition`` comes to exist: the document is checked field
by field (pydantic), then by the cross-field rules (``validation``), and every problem of the
document is reported at once, with its path. Nothing downstream validates a spec again; what it
derives from one is computed once, in ``plan``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flux_minicluster.core.base import layout, placeholders
from flux_minicluster.core.base.errors import Problem, SpecError, key_path
from flux_minicluster.core.reading import documents, yamlio
from flux_minicluster.core.spec import archive, placement
from flux_minicluster.core.spec.definition import (
    DEFAULT_NAMESPACE,
    MiniClusterDefinition,
    claim_name,
)
from flux_minicluster.core.spec.models import (
    API_VERSION,
    API_VERSION_V1ALPHA1,
    KIND,
    VERSION_CONTEXT,
    BurstedCluster,
    Bursting,
    Container,
    FluxBroker,
    Metadata,
    MiniClusterSpec,
)
from flux_minicluster.core.validation import crossfield
from flux_minicluster.core.validation.fielderrors import (
    UnvalidatedField,
    lenient_spec,
    translate_errors,
)

# Checks that need a name run with this one when the document has none (its problem is reported).
_STAND_IN_NAME = "minicluster"
# The "version" of a spec given as the internal model itself (the component takes one).
_INTERNAL = "internal"

__all__ = [
    "has_deferred_group",
    "load_file",
    "load_text",
    "parse",
    "revalidate",
    "with_deferred_group",
    "with_lead_address",
]


def parse(
    document: Mapping[str, Any] | MiniClusterSpec,
    *,
    name: str | None = None,
    namespace: str | None = None,
    source: str = "",
    lead_address: str | None = None,
    default_namespace: str | None = None,
    settle: Callable[[MiniClusterSpec, str], MiniClusterSpec] | None = None,
) -> MiniClusterDefinition:
    """Validate an operator document, a bare spec mapping or a spec model; raise SpecError.

    A whole document (``apiVersion``/``kind``/``metadata``/``spec``) and a bare spec are both
    accepted, as users keep either. ``name`` and ``namespace`` are the deployer's (a stack or a
    component argument) and take precedence over ``metadata``. ``default_namespace`` is kubectl's
    ``-n``: the namespace of a document that names none, and an error for one that names another.
    ``lead_address`` is a bursted cluster's lead address supplied apart from the spec (it replaces
    ``flux.bursting.leadBroker.address``). ``settle`` is the deployer's change to the typed spec
    and its name (a stack's role and cloud defaults): made before the cross-field rules run, so
    that they run once, on the spec that is deployed; a SpecError it raises is reported with the
    document's other problems. Every problem is reported at once: a missing name does not hide
    the spec's own problems.
    """
    if isinstance(document, Mapping):
        _refuse_unwalkable(document, source)
    problems: list[Problem] = []
    metadata, spec_data = _split(document, source, problems)
    resolved_name = name or metadata.name
    problems += _naming_problems(resolved_name, metadata.namespace, default_namespace)
    resolved_namespace = namespace or metadata.namespace or default_namespace or DEFAULT_NAMESPACE

    warnings: list[Problem] = []
    spec: MiniClusterSpec | None = None
    lenient = False
    origins: dict[str, str] = {}
    if spec_data is not None:
        if not isinstance(spec_data, Mapping):
            problems.append(Problem("spec", f"must be a mapping, got {_type_name(spec_data)}"))
        else:
            spec, lenient, origins = _validate_spec(
                spec_data,
                _api_version(document),
                resolved_name or _STAND_IN_NAME,
                problems,
                warnings,
            )
    if spec is not None:
        spec = _settled(
            spec, resolved_name or _STAND_IN_NAME, lead_address, settle, lenient, problems
        )
    # The cross-field rules need a name; without one, a stand-in lets them report the rest. They
    # run whatever else is wrong (the header, metadata): every problem in one pass.
    definition: MiniClusterDefinition | None = None
    if spec is not None:
        name_or_stand_in = resolved_name or _STAND_IN_NAME
        if not lenient:
            for warning in (
                archive.missing_archive(spec, name_or_stand_in),
                placement.binding_without_own_cores(spec),
            ):
                if warning is not None:
                    warnings.append(warning)
        definition = MiniClusterDefinition(
            name=resolved_name or _STAND_IN_NAME,
            namespace=resolved_namespace,
            spec=spec,
            labels=dict(metadata.labels),
            annotations=dict(metadata.annotations),
            warnings=tuple(warnings),
        )
        problems += [
            p
            for p in crossfield.check_semantics(definition, lenient=lenient)
            if resolved_name or p.path != "metadata.name"
        ]
    if problems or lenient or definition is None or not resolved_name:
        # each at the field the document wrote, not the one it was converted into
        problems = [p.moved(origins) for p in problems]
        raise SpecError(problems, source=source)
    return definition


def _refuse_unwalkable(document: Mapping[str, Any], source: str) -> None:
    """A program's dict may hold itself or nest without end, and every walk after this one
    recurses; a NUL byte no script, path or environment can carry. Either ends parsing here."""
    if (shape := yamlio.shape_problem(document)) is not None:
        raise SpecError(shape, source=source)
    nul = list(_nul_paths(document, ""))
    if nul:
        raise SpecError(
            [
                Problem(p, "contains a NUL byte, which no script, path or environment can carry")
                for p in nul
            ],
            source=source,
        )


def _split(
    document: Mapping[str, Any] | MiniClusterSpec, source: str, problems: list[Problem]
) -> tuple[Metadata, Any]:
    """The metadata and the spec data of a document, a bare spec or a spec model; the header's
    and metadata's problems go to ``problems`` (a wrong kind alone is raised at once)."""
    if isinstance(document, MiniClusterSpec):
        return Metadata(), document.model_dump(by_alias=True, exclude_unset=True)
    if not isinstance(document, Mapping):
        raise SpecError(
            Problem("", f"expected a mapping (a MiniCluster), got {_type_name(document)}"),
            source=source,
        )
    if not documents.is_document(document):
        return Metadata(), dict(document)
    problems += _check_header(document)
    if any(p.path == "kind" for p in problems):
        # Another kind of object: its fields would only add noise to the one real problem.
        raise SpecError([p for p in problems if p.path == "kind"], source=source)
    raw_metadata = document.get("metadata") or {}
    try:
        metadata = Metadata.model_validate(raw_metadata)
    except ValidationError as err:
        problems += translate_errors(err, "metadata", None)
        # A bad label does not unname the MiniCluster: its name and namespace still count.
        metadata = Metadata()
        if isinstance(raw_metadata, Mapping):
            metadata = Metadata(
                name=_text(raw_metadata.get("name")),
                namespace=_text(raw_metadata.get("namespace")),
            )
    spec_data = document.get("spec")
    if spec_data is None:
        problems.append(Problem("spec", "required: the MiniCluster spec"))
    return metadata, spec_data


def _naming_problems(
    name: str | None, written_namespace: str | None, default_namespace: str | None
) -> list[Problem]:
    """A MiniCluster without a name, or a document's namespace other than kubectl's ``-n``."""
    problems = []
    if not name:
        problems.append(Problem("metadata.name", "required (or pass a name, e.g. --name)"))
    if written_namespace is not None and default_namespace not in (None, written_namespace):
        problems.append(
            Problem(
                "metadata.namespace",
                f"is {written_namespace!r} but the namespace given is {default_namespace!r}; "
                "give the same one, or leave one out",
            )
        )
    return problems


def _settled(
    spec: MiniClusterSpec,
    name: str,
    lead_address: str | None,
    settle: Callable[[MiniClusterSpec, str], MiniClusterSpec] | None,
    lenient: bool,
    problems: list[Problem],
) -> MiniClusterSpec:
    """The spec with the deployer's lead address and changes (``parse``'s arguments of those
    names) made; their problems go to ``problems``."""
    if lead_address is not None:
        try:
            spec = with_lead_address(spec, lead_address)
        except SpecError as err:
            problems += err.problems
        except UnvalidatedField:  # the lenient spec's leadBroker did not validate
            pass
    if settle is not None and not lenient:
        try:
            spec = settle(spec, name)
        except SpecError as err:
            problems += err.problems
    return spec


def _api_version(document: Mapping[str, Any] | MiniClusterSpec) -> str:
    """The API version a document was written for: a bare spec is v1alpha2; a model is the
    internal one already (``_INTERNAL``: no conversion, and v1alpha1 features allowed)."""
    if isinstance(document, MiniClusterSpec):
        return _INTERNAL
    if isinstance(document, Mapping) and documents.is_document(document):
        api = document.get("apiVersion")
        if api == API_VERSION_V1ALPHA1:
            return API_VERSION_V1ALPHA1
    return API_VERSION


# Fields a v1alpha2 document may set that the operator's v1alpha2 controller accepts and then
# ignores: a user who sets one expects something of it, so each is said once, with what it does
# here.
V1ALPHA2_NOTES: dict[tuple[str, ...], str] = {
    ("volumes",): (
        "is a v1alpha1 field, which the operator's v1alpha2 controller drops; here it creates "
        "the volumes and claims as v1alpha1 did"
    ),
    ("flux", "arch"): (
        "has no effect (the operator ignores it too): the flux view's image decides the "
        "architecture; set flux.container.image, or arm in the stack's cluster config"
    ),
    ("flux", "mungeSecret"): (
        f"the operator's v1alpha2 controller ignores it; here the Secret is mounted at "
        f"{layout.MUNGE_DIR} (it must exist, or the pods do not start), and nothing in a v1alpha2 "
        "cluster starts munge"
    ),
}


def v1alpha2_notes(data: Mapping[str, Any]) -> list[Problem]:
    """Warnings for the fields of ``V1ALPHA2_NOTES`` a v1alpha2 spec sets (to anything but null)."""
    found = []
    for path, note in V1ALPHA2_NOTES.items():
        value: Any = data
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None:
            found.append(Problem("spec." + ".".join(path), note))
    return found


def carried_over(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem], dict[str, str]]:
    """A v1alpha2 spec with the v1alpha1 container fields the operator's own v1alpha2 examples
    still carry converted as v1alpha1 converts them, a warning for each, and their origins.

    The operator's API server prunes them from a v1alpha2 MiniCluster, so its users never learnt
    they were stale: ``existingVolumes`` (renamed ``volumes``) and ``securityContext.
    addCapabilities`` (now ``securityContext.capabilities.add``). Refusing them would refuse the
    operator's examples; dropping them would silently leave a volume unmounted or a capability
    missing that the spec asks for. So each becomes the field that replaced it, and the warning
    says so, as a v1alpha2 ``spec.volumes`` is built and said. A volume the spec also names in
    ``volumes`` keeps that entry (the one the operator mounts), and the old one is said ignored.
    """
    out = dict(data)
    warnings: list[Problem] = []
    origins: dict[str, str] = {}
    for group in ("containers", "services"):
        items = out.get(group)
        if not isinstance(items, list):
            continue
        converted = []
        for i, item in enumerate(items):
            base = f"spec.{group}[{i}]"
            if isinstance(item, Mapping):
                item = _converted_container(item, base, warnings, origins)
            converted.append(item)
        out[group] = converted
    return out, warnings, origins


def _converted_container(
    item: Mapping[str, Any], base: str, warnings: list[Problem], origins: dict[str, str]
) -> dict[str, Any]:
    container = dict(item)
    existing = container.pop("existingVolumes", None)
    if isinstance(existing, Mapping):
        volumes = container.get("volumes")
        volumes = dict(volumes) if isinstance(volumes, Mapping) else {}
        for key, volume in existing.items():
            if key in volumes:
                warnings.append(
                    Problem(
                        key_path(f"{base}.existingVolumes", key),
                        f"ignored: {key_path(f'{base}.volumes', key)} names the same volume "
                        "(existingVolumes is v1alpha1's name for volumes; keep that one)",
                    )
                )
                continue
            volumes[key] = volume
            origins[key_path(f"{base}.volumes", key)] = key_path(f"{base}.existingVolumes", key)
        container["volumes"] = volumes
        if existing:
            warnings.append(
                Problem(
                    f"{base}.existingVolumes",
                    "is v1alpha1's name for volumes, which the operator's v1alpha2 controller "
                    f"drops (nothing is mounted there); here it is read as {base}.volumes, so "
                    f"{', '.join(sorted(existing))} mounted as that field says",
                )
            )
    elif existing is not None:  # not a mapping: the model says what is allowed, at its path
        container["existingVolumes"] = existing
    context = container.get("securityContext")
    if isinstance(context, Mapping) and "addCapabilities" in context:
        context = dict(context)
        added = context.pop("addCapabilities")
        written = f"{base}.securityContext.addCapabilities"
        if isinstance(added, list):
            capabilities = context.get("capabilities")
            capabilities = dict(capabilities) if isinstance(capabilities, Mapping) else {}
            present = capabilities.get("add")
            present = list(present) if isinstance(present, list) else []
            if not present:
                origins[f"{base}.securityContext.capabilities.add"] = written
            capabilities["add"] = present + [c for c in added if c not in present]
            context["capabilities"] = capabilities
            if added:
                warnings.append(
                    Problem(
                        written,
                        "is v1alpha1's, which the operator's v1alpha2 controller drops (the "
                        "container gets no capability from it); here it is read as "
                        f"{base}.securityContext.capabilities.add, so the container gets "
                        f"{', '.join(str(c) for c in added)}",
                    )
                )
        else:  # not a list: the model refuses it at the field the user wrote
            context["addCapabilities"] = added
        container["securityContext"] = context
    return container


def _validate_spec(
    data: Mapping[str, Any],
    api_version: str,
    name: str,
    problems: list[Problem],
    warnings: list[Problem],
) -> tuple[MiniClusterSpec | None, bool, dict[str, str]]:
    """The internal model of a spec of either version, whether it is only the lenient one (the
    spec had type errors, see ``fielderrors.lenient_spec``), and where converted fields were
    written (a v1alpha1 document's, or the v1alpha1 fields a v1alpha2 one carries); problems and
    warnings appended."""
    origins: dict[str, str] = {}
    if api_version == API_VERSION_V1ALPHA1:
        # Its own models are built only for a v1alpha1 document: a v1alpha2 run never pays.
        from flux_minicluster.core.spec import v1alpha1

        try:
            conversion = v1alpha1.convert(data, name)
        except ValidationError as err:
            problems += translate_errors(err, "spec", None)
            return None, False, origins
        data = conversion.data
        warnings += conversion.warnings
        origins = conversion.origins
    elif api_version == API_VERSION:
        warnings += v1alpha2_notes(data)
        data, carried, origins = carried_over(data)
        warnings += carried
    # The internal model takes every feature; only a v1alpha2 document is refused v1alpha1's.
    context = API_VERSION if api_version == API_VERSION else API_VERSION_V1ALPHA1
    try:
        spec = MiniClusterSpec.model_validate(data, context={VERSION_CONTEXT: context})
    except ValidationError as err:
        problems += translate_errors(err, "spec", MiniClusterSpec)
        # The fields that did validate still go through the cross-field rules.
        rest = lenient_spec(data, err, {VERSION_CONTEXT: context})
        try:
            rest = None if rest is None else operator_volume_claims(rest, name)
        except UnvalidatedField:  # which volume is a claim is not known: no rule can judge
            rest = None
        return rest, rest is not None, origins
    return operator_volume_claims(spec, name), False, origins


def operator_volume_claims(spec: MiniClusterSpec, name: str) -> MiniClusterSpec:
    """Each container volume named after a ``spec.volumes`` entry, with no source of its own,
    mounts that volume's claim (``<name>-<volume>``), as v1alpha1 containers referred to them."""
    if not spec.volumes:
        return spec

    def claims(containers: list[Container]) -> list[Container]:
        out = []
        for container in containers:
            volumes = {
                key: (
                    volume.model_copy(update={"claim_name": claim_name(name, key)})
                    if key in spec.volumes and volume.kind == "scratch"
                    else volume
                )
                for key, volume in container.volumes.items()
            }
            out.append(container.model_copy(update={"volumes": volumes}))
        return out

    return spec.model_copy(
        update={"containers": claims(spec.containers), "services": claims(spec.services)}
    )


def with_lead_address(spec: MiniClusterSpec, address: str) -> MiniClusterSpec:
    lead = spec.flux.bursting.lead_broker
    if lead is None:
        raise SpecError(
            Problem(
                "spec.flux.bursting.leadBroker",
                "required with a lead address given apart from the spec: the lead's name and "
                "size shape the hostlist",
            )
        )
    bursting = spec.flux.bursting.model_copy(
        update={"lead_broker": lead.model_copy(update={"address": address})}
    )
    return spec.model_copy(update={"flux": spec.flux.model_copy(update={"bursting": bursting})})


def with_deferred_group(spec: MiniClusterSpec, name: str) -> MiniClusterSpec:
    """A burst stack's spec before its root's outputs are known: placeholders for its lead, and
    itself (``name``, at its maxSize) as the one cluster it knows of.

    The result passes the same validation as any bursted cluster; its plan writes the rank order
    as placeholders (``MiniClusterPlan.rank_order_deferred``) until the group is known. A spec
    that declares its own ``flux.bursting`` is refused: the group replaces it.
    """
    bursting = spec.flux.bursting
    if bursting.lead_broker is not None or bursting.clusters or bursting.hostlist:
        raise SpecError(
            Problem(
                "spec.flux.bursting",
                "leave it out: a burst's group comes from its root's outputs (burst_group, a burst "
                "stack's StackReference)",
            )
        )
    group = Bursting(
        lead_broker=FluxBroker(
            address=placeholders.LEAD_ADDRESS,
            name=placeholders.LEAD_NAME,
            size=1,
            port=layout.BROKER_PORT,
        ),
        clusters=[BurstedCluster(name=name, size=spec.max_size)],
    )
    return spec.model_copy(update={"flux": spec.flux.model_copy(update={"bursting": group})})


def has_deferred_group(spec: MiniClusterSpec) -> bool:
    """Whether ``spec`` is a burst's with its group deferred (``with_deferred_group``): its lead's
    name is the placeholder, so the rank order, which names the lead's ranks, is not known."""
    lead = spec.flux.bursting.lead_broker
    return lead is not None and lead.name == placeholders.LEAD_NAME


def load_text(
    text: str,
    *,
    source: str = "",
    name: str | None = None,
    namespace: str | None = None,
    default_namespace: str | None = None,
) -> list[MiniClusterDefinition]:
    """Every MiniCluster in a YAML stream; all documents must be MiniClusters (duplicate keys:
    ``read_documents``)."""
    docs, duplicates = read_documents(text, source)
    if not docs:
        raise SpecError(Problem("", "empty file: no MiniCluster in it"), source=source)
    problems: list[Problem] = []
    found: list[MiniClusterDefinition] = []
    first: dict[tuple[str, str], int] = {}
    for i, doc in enumerate(docs):
        try:
            mc = parse(doc, name=name, namespace=namespace, default_namespace=default_namespace)
            # Two of one name would render the same objects twice: the second ConfigMap would
            # replace the first and its Job be refused (or replace it) in one apply.
            if (key := (mc.namespace, mc.name)) in first:
                raise SpecError(
                    Problem(
                        "metadata.name",
                        f"{mc.namespace}/{mc.name} is document[{first[key]}]'s name too: one "
                        "name and namespace per MiniCluster"
                        + (" (--name names every MiniCluster of the file)" if name else ""),
                    )
                )
            first[key] = i
            if duplicates:
                extra = tuple(
                    Problem("", f"{d} (the last one is used, as the operator's API read it)")
                    for d in duplicates
                )
                mc = replace(mc, warnings=(*extra, *mc.warnings))
            found.append(mc)
        except SpecError as err:
            where = "" if len(docs) == 1 else f"document[{i}]"
            problems += [Problem(_join(where, p.path), p.message) for p in err.problems]
    if problems:
        raise SpecError(problems, source=source)
    return found


def read_documents(text: str, source: str) -> tuple[list[Any], list[str]]:
    """The documents of a YAML stream, and the duplicate keys let through.

    A duplicate key is an error (the API server refuses a duplicate field), except in a stream
    of v1alpha1 documents, where the last value wins, as the operator's API read it (its own
    v1alpha1 examples have one): the caller warns of each.
    """
    duplicates: list[str] = []
    docs = yamlio.load_documents(text, source, duplicates=duplicates)
    legacy = bool(docs) and all(_api_version(d) == API_VERSION_V1ALPHA1 for d in docs)
    if duplicates and not legacy:
        raise SpecError([Problem("", f"invalid YAML: {d}") for d in duplicates], source=source)
    return docs, duplicates


def load_file(
    path: str | Path,
    *,
    name: str | None = None,
    namespace: str | None = None,
    default_namespace: str | None = None,
) -> list[MiniClusterDefinition]:
    """Read, decode and validate a MiniCluster file (``-``: standard input); errors name it."""
    source = documents.source_name(path)
    return load_text(
        documents.read_text(path),
        source=source,
        name=name,
        namespace=namespace,
        default_namespace=default_namespace,
    )


def _nul_paths(value: Any, path: str) -> Iterator[str]:
    """Field paths of every string (key or value) holding a NUL byte."""
    if isinstance(value, str):
        if "\0" in value:
            yield path
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = key_path(path, str(key))
            if isinstance(key, str) and "\0" in key:
                yield where
            yield from _nul_paths(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nul_paths(item, f"{path}[{i}]")


def _check_header(document: Mapping[str, Any]) -> list[Problem]:
    problems = []
    kind = document.get("kind")
    if kind is not None and kind != KIND:
        problems.append(Problem("kind", f"must be {KIND!r}, got {kind!r}"))
    api = document.get("apiVersion")
    if api is not None and api not in (API_VERSION, API_VERSION_V1ALPHA1):
        problems.append(
            Problem(
                "apiVersion",
                f"must be {API_VERSION!r} (or the older {API_VERSION_V1ALPHA1!r}), got {api!r}",
            )
        )
    for key in document:
        if key not in documents.HEADER_KEYS:
            problems.append(
                Problem(
                    str(key), "unknown field; a MiniCluster has apiVersion, kind, metadata, spec"
                )
            )
    return problems


def _join(where: str, path: str) -> str:
    return ".".join(p for p in (where, path) if p)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _type_name(value: object) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def revalidate(definition: MiniClusterDefinition, *, source: str = "") -> MiniClusterDefinition:
    """``definition`` again after a change to its typed spec (``model_copy``); a SpecError if bad.

    The stack program derives a root's or a burst's spec from the user's with ``model_copy``, which
    runs no validator: the cross-field rules must see the result before anything uses it.
    """
    problems = crossfield.check_semantics(definition)
    if problems:
        raise SpecError(problems, source=source)
    return definition
