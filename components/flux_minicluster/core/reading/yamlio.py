"""Reading YAML that users wrote by hand, without surprises.

PyYAML's safe loader still accepts duplicate keys (the last silently wins), unbounded alias
fan-out (a "billion laughs" document that is tiny on disk and enormous once walked), an alias
inside the collection it names (a value that holds itself, which every walk of it follows for
ever), any nesting depth, any number of values, and explicit tags whose literal its constructors
cannot read (``!!int abc``, ``!!bool maybe``, ``!!set``: a Python exception, not a YAML error). A
spec is configuration for a cluster, so each of these is refused with a message that names the
file and line instead of producing a different cluster, a traceback or a machine busy for
minutes: the parser's events are checked first, so that nothing past a limit is ever built.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from flux_minicluster.core.base.errors import Problem, SpecError, format_path, short_repr

MAX_BYTES = 4 * 1024 * 1024
MAX_ALIASES = 200
MAX_DEPTH = 64
# Values a document may hold once its aliases are expanded: a spec has a few hundred. Counted
# without expanding, so a "billion laughs" file is refused in microseconds.
MAX_EXPANDED_NODES = 100_000
# Values a stream may write (keys, values and collections, aliases not expanded): MAX_NODES,
# or one per BYTES_PER_NODE characters in a larger file (a list of manifests for `check`).
# Building each, validating and rendering it costs some 15 to 25 microseconds of Python, so a
# file takes at most about a second of CPU per MiB however small its values are ("1,1,1,..."
# is a value per 2 bytes); a hand-written spec has a value per 10 to 20 bytes, a few hundred.
MAX_NODES = 20_000
BYTES_PER_NODE = 24
# The tags a spec may write explicitly: the JSON types. A scalar's tag must also be what its
# text reads as (``!!int 12``, not ``!!int abc``); ``!!str`` takes any text.
_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(_TAG + t for t in ("str", "int", "float", "bool", "null"))
_COLLECTION_TAGS = frozenset(_TAG + t for t in ("seq", "map"))


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

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        """PyYAML's, with a literal its constructors cannot read (``0x_`` is an int by its
        pattern and no int at all) a YAML error at the node's line, not a Python exception."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"cannot read {short_repr(node.value, 40)} as a {_tag(node.tag)}",
                node.start_mark,
            ) from None


def _check_structure(text: str) -> None:
    """Refuse more than MAX_ALIASES aliases, an alias to no anchor of its document or to a
    collection it is inside of, an anchor defined twice, a node nested deeper than MAX_DEPTH,
    more nodes than MAX_NODES (or one per BYTES_PER_NODE characters), or a tag other than the
    JSON types', at the line where it starts (a root node is at depth 1); libyaml's own
    messages for the anchors do not name them."""
    loader = _BaseLoader(text)
    aliases = nodes = 0
    max_nodes = max(MAX_NODES, len(text) // BYTES_PER_NODE)
    anchors: set[str] = set()
    # Each open collection, innermost last: its anchor and where in it the parser is.
    open_collections: list[_Open] = []
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, _COLLECTION_END):
                open_collections.pop()
                continue
            if isinstance(event, yaml.DocumentStartEvent):
                anchors.clear()
            if not isinstance(event, _NODE):
                continue
            field = _field(open_collections, event)
            mark = event.start_mark
            line = f"line {mark.line + 1 if mark else 0}"
            where = f"{line}, column {mark.column + 1 if mark else 0}"
            nodes += 1
            if nodes > max_nodes:
                raise _Refused(
                    field,
                    f"{line}: more than {max_nodes} values in {len(text)} characters; a "
                    "MiniCluster has a few hundred",
                )
            if len(open_collections) + 1 > MAX_DEPTH:
                raise _Refused(field, f"{line}: nested deeper than {MAX_DEPTH} levels")
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    raise _Refused(field, f"{where}: found undefined alias {event.anchor!r}")
                if any(event.anchor == c.anchor for c in open_collections):
                    raise _Refused(
                        field,
                        f"{where}: the alias {event.anchor!r} is inside the collection it "
                        "names, which would hold itself; write the values out instead",
                    )
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise _Refused(
                        field,
                        f"{line}: more than {MAX_ALIASES} YAML aliases; write the values out "
                        "instead",
                    )
                continue
            if event.anchor is not None:
                if event.anchor in anchors:
                    raise _Refused(field, f"{where}: found duplicate anchor {event.anchor!r}")
                anchors.add(event.anchor)
            if (problem := _tag_problem(loader, event)) is not None:
                raise _Refused(field, f"{where}: {problem}")
            if isinstance(event, _COLLECTION_START):
                open_collections.append(
                    _Open(event.anchor, isinstance(event, yaml.MappingStartEvent))
                )
    finally:
        loader.dispose()


class _Refused(yaml.YAMLError):
    """A limit of ``_check_structure``, at the field of the node that passed it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class _Open:
    """An open collection of the event scan: its anchor, and the key or index of the node
    being read in it (a mapping's nodes alternate, key then value)."""

    anchor: str | None
    mapping: bool
    at: str | int = ""
    items: int = 0

    def enter(self, event: Any) -> bool:
        """Step to ``event``, the next node inside; whether it is a mapping's key."""
        self.items += 1
        if not self.mapping:
            self.at = self.items - 1
            return False
        if self.items % 2:  # a key: a plain one names the value after it
            self.at = event.value if isinstance(event, yaml.ScalarEvent) else "?"
            return True
        return False


def _field(open_collections: list[_Open], event: Any) -> str:
    """The field path of the node ``event`` starts (a key's is its mapping's)."""
    is_key = bool(open_collections) and open_collections[-1].enter(event)
    keys = [c.at for c in (open_collections[:-1] if is_key else open_collections)]
    return format_path("", keys)


def _tag_problem(loader: Any, event: Any) -> str | None:
    """What is wrong with a node's explicit tag, if anything (``!`` alone means a string)."""
    tag = event.tag
    if tag is None or tag == "!":
        return None
    scalar = isinstance(event, yaml.ScalarEvent)
    if tag not in (_SCALAR_TAGS if scalar else _COLLECTION_TAGS):
        allowed = "!!str, !!int, !!float, !!bool, !!null" if scalar else "!!seq, !!map"
        return f"the tag {_tag(tag)} is not accepted here; a spec holds {allowed}"
    if scalar and tag != _TAG + "str":
        read_as = loader.resolve(yaml.ScalarNode, event.value, (True, False))
        if read_as != tag:
            return f"{short_repr(event.value, 40)} is not a {_tag(tag)}"
    return None


def _tag(tag: str) -> str:
    """A tag as it is written: ``!!int`` for ``tag:yaml.org,2002:int``."""
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


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
    except _Refused as err:
        raise SpecError(Problem(err.field, f"invalid YAML: {err}"), source=source) from None
    except yaml.YAMLError as err:
        raise SpecError(Problem("", f"invalid YAML: {_yaml_message(err)}"), source=source) from None
    except RecursionError:
        raise SpecError(Problem("", "invalid YAML: nested too deeply"), source=source) from None
    for doc in docs:
        if (problem := shape_problem(doc)) is not None:
            raise SpecError(
                Problem(problem.path, f"{problem.message}; write the values out instead"),
                source=source,
            )
    return [d for d in docs if d is not None]


_END: Final = object()


def shape_problem(value: Any) -> Problem | None:
    """Why a document given as plain values is no document, at the field where it shows: it
    holds itself (a YAML alias inside what it names, or a dict a program put in itself), it is
    nested deeper than MAX_DEPTH, or it expands to more than MAX_EXPANDED_NODES values (each
    use of a shared value counted, as every later walk of it will).

    The loader checks YAML for these as it reads; a program (the component, ``parse``) may hand
    over any dict, so the same limits hold there. Every walk after this one (pydantic, the
    rules) recurses, and would end in a RecursionError, or never. Iterative, and linear in the
    values written: a shared value's size is counted once and reused.
    """
    if not isinstance(value, Mapping | list | tuple):
        return None
    sizes: dict[int, int] = {}
    on_path = {id(value)}
    # Each open collection, the key it is at in its parent, and its remaining children.
    stack: list[tuple[Any, str | int, Iterator[tuple[str | int, Any]]]] = [
        (value, "", _children(value))
    ]
    totals = [1]
    while stack:
        node, at, children = stack[-1]
        key, child = next(children, (None, _END))
        if child is _END:
            stack.pop()
            on_path.discard(id(node))
            size = sizes[id(node)] = totals.pop()
            if size > MAX_EXPANDED_NODES:
                where = format_path("", [k for _, k, _ in stack[1:]] + ([at] if stack else []))
                return Problem(
                    where,
                    f"holds more than {MAX_EXPANDED_NODES} values (an alias counted at each use)",
                )
            if totals:
                totals[-1] += size
            continue
        assert key is not None
        if not isinstance(child, Mapping | list | tuple):
            totals[-1] += 1
        elif id(child) in on_path:
            return Problem(
                format_path("", [k for _, k, _ in stack[1:]] + [key]),
                "holds itself (a value inside itself, a cycle)",
            )
        elif id(child) in sizes:
            totals[-1] += sizes[id(child)]
        elif len(stack) >= MAX_DEPTH:
            return Problem(
                format_path("", [k for _, k, _ in stack[1:]] + [key]),
                f"nested deeper than {MAX_DEPTH} levels",
            )
        else:
            on_path.add(id(child))
            stack.append((child, key, _children(child)))
            totals.append(1)
    return None


def _children(value: Any) -> Iterator[tuple[str | int, Any]]:
    if isinstance(value, Mapping):
        return ((str(k), v) for k, v in value.items())
    return enumerate(value)


def _yaml_message(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        what = " ".join(p for p in (err.context, err.problem) if p)
        return f"line {mark.line + 1}, column {mark.column + 1}: {what}"
    return str(err).replace("\n", " ")
