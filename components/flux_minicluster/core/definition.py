"""A validated MiniCluster: name, namespace and resolved spec, plus the facts derived from them.

Everything downstream (renderer, Pulumi component, CLI) starts from a ``MiniClusterDefinition``,
never from raw YAML, so a spec is validated exactly once and the derived names (hostnames, the
headless Service, the ConfigMap) have exactly one definition.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flux_minicluster.core import yamlio
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.spec import API_GROUP, API_VERSION, KIND, Metadata, MiniClusterSpec
from flux_minicluster.core.validation import check_semantics, key_path, translate_errors

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class MiniClusterDefinition:
    name: str
    namespace: str
    spec: MiniClusterSpec
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def headless_name(self) -> str:
        return self.spec.network.headless_name or self.name

    @property
    def lead_host(self) -> str:
        """Rank 0's short hostname, which the entrypoint compares with `hostname`."""
        return f"{self.name}-0"

    @property
    def domain(self) -> str:
        """The DNS suffix under which every broker of this cluster resolves."""
        return f"{self.headless_name}.{self.namespace}.svc.cluster.local"

    @property
    def lead_fqdn(self) -> str:
        return f"{self.lead_host}.{self.domain}"

    @property
    def entrypoint_name(self) -> str:
        return f"{self.name}-entrypoint"

    @property
    def curve_secret_name(self) -> str:
        return f"{self.name}-curve"

    @property
    def services_pod_name(self) -> str:
        return f"{self.name}-services"

    def summary(self) -> str:
        """One line a person can read: what `minicluster validate` prints for a good file."""
        spec = self.spec
        return (
            f"{self.namespace}/{self.name}: size={spec.size} maxSize={spec.max_size} "
            f"mode={spec.mode} containers={len(spec.containers)}"
            + (f" services={len(spec.services)}" if spec.services else "")
        )


def parse(
    document: Mapping[str, Any] | MiniClusterSpec,
    *,
    name: str | None = None,
    namespace: str | None = None,
    source: str = "",
) -> MiniClusterDefinition:
    """Validate an operator document, a bare spec mapping or a spec model; raise SpecError.

    A whole document (``apiVersion``/``kind``/``metadata``/``spec``) and a bare spec are both
    accepted, as users keep either. ``name`` and ``namespace`` arguments take precedence over
    ``metadata``, like ``kubectl -n``.
    """
    problems: list[Problem] = []
    metadata = Metadata()
    if isinstance(document, Mapping):
        nul = list(_nul_paths(document, ""))
        if nul:
            raise SpecError(
                [
                    Problem(
                        p, "contains a NUL byte, which no script, path or environment can carry"
                    )
                    for p in nul
                ],
                source=source,
            )
    if isinstance(document, MiniClusterSpec):
        spec_data: Any = document.model_dump(by_alias=True, exclude_unset=True)
        prefix = "spec"
    elif not isinstance(document, Mapping):
        raise SpecError(
            Problem("", f"expected a mapping (a MiniCluster), got {_type_name(document)}"),
            source=source,
        )
    elif _is_document(document):
        problems += _check_header(document)
        try:
            metadata = Metadata.model_validate(document.get("metadata") or {})
        except ValidationError as err:
            problems += translate_errors(err, "metadata", None)
        spec_data = document.get("spec")
        prefix = "spec"
        if spec_data is None:
            problems.append(Problem("spec", "required: the MiniCluster spec"))
    else:
        spec_data = dict(document)
        prefix = "spec"

    resolved_name = name or metadata.name
    if not resolved_name:
        problems.append(Problem("metadata.name", "required (or pass a name)"))
    resolved_namespace = namespace or metadata.namespace or DEFAULT_NAMESPACE

    spec: MiniClusterSpec | None = None
    if spec_data is not None:
        if not isinstance(spec_data, Mapping):
            problems.append(Problem(prefix, f"must be a mapping, got {_type_name(spec_data)}"))
        else:
            try:
                spec = MiniClusterSpec.model_validate(spec_data)
            except ValidationError as err:
                problems += translate_errors(err, prefix, MiniClusterSpec)
    if problems or spec is None or not resolved_name:
        raise SpecError(sorted(set(problems), key=problems.index), source=source)

    definition = MiniClusterDefinition(
        name=resolved_name,
        namespace=resolved_namespace,
        spec=spec,
        labels=dict(metadata.labels),
        annotations=dict(metadata.annotations),
    )
    problems = check_semantics(definition)
    if problems:
        raise SpecError(problems, source=source)
    return definition


def load_text(
    text: str, *, source: str = "", name: str | None = None, namespace: str | None = None
) -> list[MiniClusterDefinition]:
    """Every MiniCluster in a YAML stream; all documents must be MiniClusters."""
    docs = yamlio.load_documents(text, source)
    if not docs:
        raise SpecError(Problem("", "empty file: no MiniCluster in it"), source=source)
    problems: list[Problem] = []
    found: list[MiniClusterDefinition] = []
    for i, doc in enumerate(docs):
        try:
            found.append(parse(doc, name=name, namespace=namespace))
        except SpecError as err:
            where = "" if len(docs) == 1 else f"document[{i}]"
            problems += [Problem(_join(where, p.path), p.message) for p in err.problems]
    if problems:
        raise SpecError(problems, source=source)
    return found


def load_file(
    path: str | Path, *, name: str | None = None, namespace: str | None = None
) -> list[MiniClusterDefinition]:
    """Read, decode and validate a MiniCluster file; every failure is a SpecError."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise SpecError(Problem("", "no such file"), source=source) from None
    except IsADirectoryError:
        raise SpecError(Problem("", "is a directory, not a file"), source=source) from None
    except OSError as err:
        raise SpecError(Problem("", f"cannot read: {err.strerror}"), source=source) from None
    return load_text(yamlio.decode(data, source), source=source, name=name, namespace=namespace)


def load_one(
    path: str | Path, *, name: str | None = None, namespace: str | None = None
) -> MiniClusterDefinition:
    """The single MiniCluster in a file (the usual case for stacks and the component)."""
    found = load_file(path, name=name, namespace=namespace)
    if len(found) != 1:
        raise SpecError(
            Problem("", f"expected one MiniCluster, found {len(found)}"), source=str(path)
        )
    return found[0]


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


def _is_document(data: Mapping[str, Any]) -> bool:
    return any(k in data for k in ("apiVersion", "kind", "metadata")) or (
        "spec" in data and "containers" not in data
    )


def _check_header(document: Mapping[str, Any]) -> list[Problem]:
    problems = []
    kind = document.get("kind")
    if kind is not None and kind != KIND:
        problems.append(Problem("kind", f"must be {KIND!r}, got {kind!r}"))
    api = document.get("apiVersion")
    if api is not None and api != API_VERSION:
        if isinstance(api, str) and api == f"{API_GROUP}/v1alpha1":
            problems.append(
                Problem(
                    "apiVersion",
                    f"v1alpha1 is not supported; move the spec to {API_VERSION} "
                    "(the errors below name each field that changed)",
                )
            )
        else:
            problems.append(Problem("apiVersion", f"must be {API_VERSION!r}, got {api!r}"))
    for key in document:
        if key not in ("apiVersion", "kind", "metadata", "spec", "status"):
            problems.append(
                Problem(
                    str(key), "unknown field; a MiniCluster has apiVersion, kind, metadata, spec"
                )
            )
    return problems


def _join(where: str, path: str) -> str:
    return ".".join(p for p in (where, path) if p)


def _type_name(value: object) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )
