"""Reading YAML that users wrote by hand, without surprises.

PyYAML's safe loader still accepts duplicate keys (the last silently wins), unbounded alias
fan-out (a "billion laughs" document that is tiny on disk and enormous once walked) and any
nesting depth. A spec is configuration for a cluster, so each of these is refused with a message
that names the file and line instead of producing a different cluster or exhausting memory.
"""

from __future__ import annotations

from typing import Any

import yaml

from flux_minicluster.core.errors import Problem, SpecError

MAX_BYTES = 4 * 1024 * 1024
MAX_ALIASES = 200
MAX_DEPTH = 64
# Values a document may hold once its aliases are expanded: a spec has a few hundred. Counted
# without expanding, so a "billion laughs" file is refused in microseconds.
MAX_EXPANDED_NODES = 100_000


# libyaml's parser and composer when PyYAML was built with it (the wheels are): about eight
# times faster than the pure-Python ones over the operator's corpus, with the same marks. The
# limits are checked on the parser's events before anything is composed, so the composer never
# meets a document deeper than MAX_DEPTH or with more than MAX_ALIASES aliases.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_COLLECTION_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_NODE = (yaml.ScalarEvent, yaml.AliasEvent, *_COLLECTION_START)


class _StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader that refuses duplicate mapping keys (or notes them)."""

    def __init__(self, stream: str, duplicates: list[str] | None = None) -> None:
        super().__init__(stream)
        # Where to note duplicate keys (the last one wins) instead of refusing them.
        self._duplicates = duplicates

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: let PyYAML report it
                break
            if duplicate:
                message = (
                    f"line {key_node.start_mark.line + 1}: duplicate key {key!r}; "
                    "each key may appear once"
                )
                if self._duplicates is None:
                    raise yaml.YAMLError(message)
                self._duplicates.append(message)
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _check_structure(text: str) -> None:
    """Refuse more than MAX_ALIASES aliases, an alias to no anchor of its document, an anchor
    defined twice, or a node nested deeper than MAX_DEPTH, at the line where it starts (a root
    node is at depth 1); libyaml's own messages for the anchors do not name them."""
    loader = _BaseLoader(text)
    aliases = open_collections = 0
    anchors: set[str] = set()
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, _COLLECTION_END):
                open_collections -= 1
                continue
            if isinstance(event, yaml.DocumentStartEvent):
                anchors.clear()
            if not isinstance(event, _NODE):
                continue
            mark = event.start_mark
            line = mark.line + 1 if mark else 0
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    column = mark.column + 1 if mark else 0
                    raise yaml.YAMLError(
                        f"line {line}, column {column}: found undefined alias {event.anchor!r}"
                    )
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise yaml.YAMLError(
                        f"line {line}: more than {MAX_ALIASES} YAML aliases; "
                        "write the values out instead"
                    )
            if open_collections + 1 > MAX_DEPTH:
                raise yaml.YAMLError(f"line {line}: nested deeper than {MAX_DEPTH} levels")
            if event.anchor is not None and not isinstance(event, yaml.AliasEvent):
                if event.anchor in anchors:
                    column = mark.column + 1 if mark else 0
                    raise yaml.YAMLError(
                        f"line {line}, column {column}: found duplicate anchor {event.anchor!r}"
                    )
                anchors.add(event.anchor)
            if isinstance(event, _COLLECTION_START):
                open_collections += 1
    finally:
        loader.dispose()


def decode(data: bytes, source: str) -> str:
    """UTF-8 text from bytes, or a SpecError that says where the bad byte is."""
    if len(data) > MAX_BYTES:
        raise SpecError(
            Problem("", f"file is {len(data)} bytes; at most {MAX_BYTES} are accepted"),
            source=source,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SpecError(
            Problem("", f"not UTF-8 text (invalid byte at offset {err.start})"), source=source
        ) from None


def load_documents(text: str, source: str, *, duplicates: list[str] | None = None) -> list[Any]:
    """Every document in a YAML stream, as plain Python values; empty documents are dropped.

    A duplicate key is an error, unless ``duplicates`` is given: then each is noted there and
    the last value wins, as PyYAML and older Kubernetes tooling read it (for v1alpha1 documents,
    which the operator's own examples wrote that way).
    """
    if len(text) > MAX_BYTES:
        raise SpecError(
            Problem("", f"document is {len(text)} characters; at most {MAX_BYTES} are accepted"),
            source=source,
        )
    try:
        _check_structure(text)
        loader = _StrictLoader(text, duplicates)
        try:
            docs = []
            while loader.check_data():
                docs.append(loader.get_data())
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise SpecError(Problem("", f"invalid YAML: {_yaml_message(err)}"), source=source) from None
    except RecursionError:
        raise SpecError(Problem("", "invalid YAML: nested too deeply"), source=source) from None
    for doc in docs:
        if _expanded_size(doc, {}) > MAX_EXPANDED_NODES:
            raise SpecError(
                Problem(
                    "",
                    f"the document expands to more than {MAX_EXPANDED_NODES} values through "
                    "YAML aliases; write it out instead",
                ),
                source=source,
            )
    return [d for d in docs if d is not None]


def _expanded_size(value: Any, seen: dict[int, int]) -> int:
    """How many values ``value`` holds with aliases expanded, each shared node counted once."""
    if not isinstance(value, dict | list):
        return 1
    key = id(value)
    if key not in seen:
        seen[key] = 0  # a self-referencing alias counts as nothing more
        items = value.values() if isinstance(value, dict) else value
        seen[key] = 1 + sum(_expanded_size(item, seen) for item in items)
    return seen[key]


def _yaml_message(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        what = " ".join(p for p in (err.context, err.problem) if p)
        return f"line {mark.line + 1}, column {mark.column + 1}: {what}"
    return str(err).replace("\n", " ")
