"""The policy rules run offline, over manifests on disk, without the Pulumi CLI.

CI runs ``pulumi preview --policy-pack policies/`` where the CLI exists; everywhere else it runs
this checker over the rendered manifests, with the same rules (``rules.ALL_RULES``) and the same
policy-config file, and fails on a mandatory violation exactly as ``pulumi preview`` would.

A burst stack checked on its own needs its root's outputs, which ``pulumi preview`` gets through
the StackReference: add ``stack_reference_manifest(root_stack, root_outputs)`` (from
``stackref``, re-exported here) to the objects given to ``check``.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.reading import documents, yamlio
from flux_minicluster.core.reading.loading import read_documents
from flux_minicluster.policy import config as cfg
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy import stackref
from flux_minicluster.policy.model import Level, Manifest, Rule
from flux_minicluster.policy.rules import ALL_RULES
from flux_minicluster.policy.stackref import stack_reference_manifest

__all__ = [
    "STACK",
    "Report",
    "Violation",
    "check",
    "load_config",
    "load_file",
    "load_manifests",
    "manifests_by_file",
    "stack_reference_manifest",
]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STACK = "stack"
"""The object name of a violation that is about the stack as a whole, not one object."""

_OUTPUTS_FILE = "outputs.json"


@dataclass(frozen=True)
class Violation:
    """One problem: which policy, at which level, about which object, and how to fix it."""

    policy: str
    level: Level
    object: str
    message: str
    remediation: str

    def line(self) -> str:
        return f"[{self.level}] {self.policy}: {self.message}"


@dataclass(frozen=True)
class Report:
    """The outcome of ``check``: every violation, in object order, and what was checked."""

    violations: tuple[Violation, ...]
    objects: int
    """Kubernetes objects checked (a StackReference given for its outputs is not counted)."""
    policies: tuple[str, ...]

    @property
    def mandatory(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.level == "mandatory")

    @property
    def advisory(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.level == "advisory")

    @property
    def exit_code(self) -> int:
        """1 when a mandatory policy is violated (``pulumi preview`` would fail), else 0."""
        return 1 if self.mandatory else 0

    def summary(self) -> str:
        """One line: the verdict, the counts, and each advisory policy with its object count."""
        status = "FAILED" if self.exit_code else "passed"
        line = (
            f"policy check {status}: {len(self.mandatory)} mandatory, {len(self.advisory)} "
            f"advisory violation(s) in {self.objects} object(s), "
            f"{len(self.policies)} policies checked"
        )
        groups = _by_policy(self.advisory)
        if groups:
            line += "; advisory: " + ", ".join(
                f"{policy} ({_count(len(_objects(found)), 'object')})"
                for policy, found in groups.items()
            )
        return line

    def to_json(self) -> dict[str, Any]:
        """The report for CI (``minicluster check -o json``): the verdict, every violation."""
        return {
            "passed": self.exit_code == 0,
            "objects": self.objects,
            "policies": list(self.policies),
            "mandatory": len(self.mandatory),
            "advisory": len(self.advisory),
            "violations": [
                {
                    "policy": v.policy,
                    "level": v.level,
                    "object": v.object,
                    "message": v.message,
                    "remediation": v.remediation,
                }
                for v in self.violations
            ],
            "summary": self.summary(),
        }

    def format(self, *, group_advisories: bool = True) -> str:
        """The report as ``minicluster check`` prints it, ending with ``summary()``.

        Mandatory violations come first, grouped by object: each must be fixed where it is. Then
        each advisory policy is reported once, naming every object it found and its messages
        (alike messages once, at most a few), so that ``pinned-images`` on 11 Jobs is one
        finding, not 11. ``group_advisories=False`` lists advisories by object too, in full.
        """
        by_object = [v for v in self.violations if not (group_advisories and v.level == "advisory")]
        lines = _format_by_object(by_object)
        if group_advisories:
            for policy, found in _by_policy(self.advisory).items():
                if lines:
                    lines.append("")
                lines.extend(_format_advisory(policy, found))
        if lines:
            lines.append("")
        lines.append(self.summary())
        return "\n".join(lines)


_FIX_INDENT = "      "
_SHOWN_MESSAGES = 3
"""Distinct messages a grouped advisory shows before it says how many more there are."""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _objects(found: Iterable[Violation]) -> list[str]:
    return list(dict.fromkeys(v.object for v in found))


def _by_policy(violations: Iterable[Violation]) -> dict[str, list[Violation]]:
    out: dict[str, list[Violation]] = {}
    for v in violations:
        out.setdefault(v.policy, []).append(v)
    return out


def _format_by_object(violations: Iterable[Violation]) -> list[str]:
    grouped: dict[str, dict[str, list[Violation]]] = {}
    for v in violations:
        grouped.setdefault(v.object, {}).setdefault(v.policy, []).append(v)
    lines: list[str] = []
    for obj, by_policy in grouped.items():
        lines.append(obj)
        for found in by_policy.values():
            lines.extend(f"  {v.line()}" for v in found)
            lines.append(f"{_FIX_INDENT}fix: {found[0].remediation}")
    return lines


def _format_advisory(policy: str, found: list[Violation]) -> list[str]:
    """One advisory policy's findings as one block: the objects, the messages, the fix.

    ``[advisory] pinned-images on 11 objects: Job/hpc/a, Job/hpc/b, ...`` (wrapped), then each
    distinct message once, prefixed with its objects unless every listed object has it.
    """
    objects = _objects(found)
    header = f"[advisory] {policy} on {_count(len(objects), 'object')}: {', '.join(objects)}"
    lines = textwrap.wrap(header, width=100, subsequent_indent="    ", break_long_words=False)
    messages: dict[str, list[str]] = {}
    for v in found:
        holders = messages.setdefault(v.message, [])
        if v.object not in holders:
            holders.append(v.object)
    for message, holders in list(messages.items())[:_SHOWN_MESSAGES]:
        if len(holders) == len(objects):
            lines.append(f"  {message}")
        else:
            lines.append(f"  {', '.join(holders)}: {message}")
    more = len(messages) - _SHOWN_MESSAGES
    if more > 0:
        lines.append(f"  ... and {_count(more, 'more message')} like these")
    lines.append(f"{_FIX_INDENT}fix: {found[0].remediation}")
    return lines


def check(
    manifests: Iterable[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
    rules: Sequence[Rule] = ALL_RULES,
    *,
    applied_as_is: Collection[int] = (),
) -> Report:
    """Run every enabled rule over ``manifests`` with ``config`` (Pulumi's policy-config shape).

    ``applied_as_is`` are the indexes of manifests read from files, which ``kubectl apply`` or a
    GitOps tool applies as they are: rules about the Pulumi engine's awaits
    (``Rule.engine_only``) do not judge them.

    Raises ``SpecError`` for a config that names an unknown policy, option or level.
    """
    objects = [mf.normalize(m) for m in manifests]
    as_is = frozenset(applied_as_is)
    settings = cfg.validate(config, rules)
    position = {id(m): i for i, m in enumerate(objects)}
    found: list[tuple[int, int, Violation]] = []
    ran: list[str] = []
    for order, rule in enumerate(rules):
        level = cfg.level_for(rule, settings)
        if level == "disabled":
            continue
        ran.append(rule.id)
        options = cfg.options_for(rule, settings)
        if rule.is_stack:
            findings = rule.check_stack(objects, options)
        else:
            findings = [
                (m, msg)
                for i, m in enumerate(objects)
                if not (rule.engine_only and i in as_is)
                for msg in rule.check_resource(m, options)
            ]
        for obj, message in findings:
            where = len(objects) if obj is None else position.get(id(obj), len(objects))
            name = STACK if obj is None else mf.identity(obj)
            found.append((where, order, Violation(rule.id, level, name, message, rule.remediation)))
    found.sort(key=lambda item: (item[0], item[1]))
    kubernetes = sum(1 for m in objects if not stackref.is_stack_reference(m))
    return Report(tuple(v for _, _, v in found), kubernetes, tuple(ran))


# --- reading files -------------------------------------------------------------------------------


def _files(paths: Iterable[str | Path]) -> Iterator[tuple[Path, bool]]:
    """Each file to read, and whether the user named it (rather than a folder holding it)."""
    for raw in paths:
        path = Path(raw)
        if str(raw) == documents.STDIN:  # '-': the objects piped in (minicluster render | ...)
            yield path, True
        elif path.is_dir():
            for found in sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
            ):
                yield found, False
        elif path.is_file():
            if path.suffix.lower() not in MANIFEST_SUFFIXES:
                raise SpecError(
                    f"not a manifest file: expected {', '.join(MANIFEST_SUFFIXES)}",
                    source=str(path),
                )
            yield path, True
        elif path.exists():
            raise SpecError(
                "not a file or folder (a device, pipe or socket): give manifest files or folders",
                source=str(path),
            )
        else:
            raise SpecError("no such file or directory", source=str(path))


def _documents(path: Path) -> list[Any]:
    source = documents.source_name(path)
    text = documents.read_text(path)
    if path.suffix.lower() != ".json":
        # as validate and render read YAML (JSON is YAML too): a duplicate key refused (not the
        # last one silently winning over an object's other fields), the alias and depth limits
        return read_documents(text, source)[0]
    try:
        value = json.loads(text) if text.strip() else None
    except json.JSONDecodeError as err:
        raise SpecError(f"not valid JSON: {err}", source=source) from None
    except RecursionError:  # Python's decoder recurses once per level
        raise SpecError(
            f"JSON nested deeper than {yamlio.MAX_DEPTH} levels, the most accepted", source=source
        ) from None
    # the limits the YAML loader holds a file to, on the JSON reader's result
    if (problem := yamlio.shape_problem(value)) is not None:
        raise SpecError(problem, source=source)
    return [] if value is None else [value]


def _is_object(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("apiVersion"), str)
        and isinstance(doc.get("kind"), str)
    )


def _flatten(doc: Any) -> Iterator[Any]:
    """Top-level lists and ``kind: List`` documents (``kubectl get -o yaml``) hold objects."""
    if isinstance(doc, list):
        for item in doc:
            yield from _flatten(item)
    elif _is_object(doc) and doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
        yield from _flatten(doc["items"])
    else:
        yield doc


def load_file(path: Path) -> list[Manifest]:
    """The Kubernetes objects in one YAML (multi-document) or JSON file."""
    docs = [d for doc in _documents(path) for d in _flatten(doc) if isinstance(d, dict)]
    if path.name == _OUTPUTS_FILE and not all(_is_object(d) for d in docs):
        return []  # a stack's exported outputs, written next to the manifests
    problems = [
        Problem(f"document {i + 1}", "not a Kubernetes object: it needs apiVersion and kind")
        for i, doc in enumerate(docs)
        if not _is_object(doc)
    ]
    if problems:
        raise SpecError(problems, source=documents.source_name(path))
    return [mf.normalize(d) for d in docs]


def load_manifests(paths: Iterable[str | Path], notes: list[str] | None = None) -> list[Manifest]:
    """Every Kubernetes object under ``paths`` (files, and folders searched recursively).

    Non-mapping YAML documents are skipped, as is an ``outputs.json`` holding stack outputs. A
    file found in a folder that holds no Kubernetes object at all (a stack's
    ``<stack>.outputs.json``, a ``Pulumi.yaml``, a ``package.json``) is skipped and named in
    ``notes``; a file named on its own must hold objects. A file that cannot be read or parsed
    raises ``SpecError`` naming it.
    """
    return [m for _, found in manifests_by_file(paths, notes) for m in found]


def manifests_by_file(
    paths: Iterable[str | Path], notes: list[str] | None = None
) -> list[tuple[Path, list[Manifest]]]:
    """``load_manifests``, each file's objects with the file they came from (so that a problem
    found later in one of them can name it)."""
    found: list[tuple[Path, list[Manifest]]] = []
    for path, named in _files(paths):
        if not named and not any(_is_object(d) for doc in _documents(path) for d in _flatten(doc)):
            if notes is not None:
                notes.append(f"{path}: skipped, not a Kubernetes object")
            continue
        found.append((path, load_file(path)))
    return found


def load_config(path: str | Path | None) -> dict[str, dict[str, Any]]:
    """A policy-config file (JSON or YAML, Pulumi's shape), validated; ``{}`` for ``None``."""
    if path is None:
        return {}
    source = str(path)
    docs = [d for d in _documents(Path(path)) if d is not None]
    if len(docs) > 1:
        raise SpecError("a policy config is one document", source=source)
    try:
        return cfg.validate(docs[0] if docs else {}, ALL_RULES)
    except SpecError as err:
        raise err.with_source(source) from None
