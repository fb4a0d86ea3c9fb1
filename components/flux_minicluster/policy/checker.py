"""The policy rules run offline, over manifests on disk, without the Pulumi CLI.

CI runs ``pulumi preview --policy-pack policies/`` where the CLI exists; everywhere else it runs
this checker over the rendered manifests, with the same rules (``rules.ALL_RULES``) and the same
policy-config file, and fails on a mandatory violation exactly as ``pulumi preview`` would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.policy import config as cfg
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy.model import Level, Manifest, Rule
from flux_minicluster.policy.rules import ALL_RULES

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STACK = "stack"
"""The object name of a violation that is about the stack as a whole, not one object."""

_OUTPUTS_FILE = "outputs.json"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
        status = "FAILED" if self.exit_code else "passed"
        return (
            f"policy check {status}: {len(self.mandatory)} mandatory, {len(self.advisory)} "
            f"advisory violation(s) in {self.objects} object(s), "
            f"{len(self.policies)} policies checked"
        )

    def format(self) -> str:
        """Violations grouped by object, each line with level and policy id, then a summary."""
        grouped: dict[str, dict[str, list[Violation]]] = {}
        for v in self.violations:
            grouped.setdefault(v.object, {}).setdefault(v.policy, []).append(v)
        lines: list[str] = []
        for obj, by_policy in grouped.items():
            lines.append(obj)
            for found in by_policy.values():
                lines.extend(f"  {v.line()}" for v in found)
                lines.append(f"      fix: {found[0].remediation}")
        if lines:
            lines.append("")
        lines.append(self.summary())
        return "\n".join(lines)


def check(
    manifests: Iterable[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
    rules: Sequence[Rule] = ALL_RULES,
) -> Report:
    """Run every enabled rule over ``manifests`` with ``config`` (Pulumi's policy-config shape).

    Raises ``SpecError`` for a config that names an unknown policy, option or level.
    """
    objects = [mf.normalize(m) for m in manifests]
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
            findings = [(m, msg) for m in objects for msg in rule.check_resource(m, options)]
        for obj, message in findings:
            where = len(objects) if obj is None else position.get(id(obj), len(objects))
            name = STACK if obj is None else mf.identity(obj)
            found.append((where, order, Violation(rule.id, level, name, message, rule.remediation)))
    found.sort(key=lambda item: (item[0], item[1]))
    return Report(tuple(v for _, _, v in found), len(objects), tuple(ran))


# --- reading files -------------------------------------------------------------------------------


def _files(paths: Iterable[str | Path]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
            )
        elif path.is_file():
            if path.suffix.lower() not in MANIFEST_SUFFIXES:
                raise SpecError(
                    f"not a manifest file: expected {', '.join(MANIFEST_SUFFIXES)}",
                    source=str(path),
                )
            yield path
        else:
            raise SpecError("no such file or directory", source=str(path))


def _documents(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read: {err}", source=str(path)) from None
    try:
        if path.suffix.lower() == ".json":
            return [json.loads(text)] if text.strip() else []
        return list(yaml.load_all(text, Loader=_Loader))
    except json.JSONDecodeError as err:
        raise SpecError(f"not valid JSON: {err}", source=str(path)) from None
    except yaml.YAMLError as err:
        raise SpecError(f"not valid YAML: {err}", source=str(path)) from None


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
        raise SpecError(problems, source=str(path))
    return [mf.normalize(d) for d in docs]


def load_manifests(paths: Iterable[str | Path]) -> list[Manifest]:
    """Every Kubernetes object under ``paths`` (files, and folders searched recursively).

    Non-mapping YAML documents are skipped, as is an ``outputs.json`` holding stack outputs. A
    file that cannot be read or parsed raises ``SpecError`` naming it.
    """
    return [m for path in _files(paths) for m in load_file(path)]


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
