"""pydantic's errors as the user reads them, and the rest of a spec that had some.

pydantic reports a failed field with its own path (union member names included) and its own
wording; a user wants the path in the spelling of their document, a message that says what is
allowed, and a did-you-mean for a misspelt key (or the v1alpha2 spelling of a v1alpha1 field).
``translate_errors`` does that mapping, once, for every reader of a spec or config. A type error
must not hide an unrelated cross-field problem either: ``lenient_spec`` validates what is left
once the failed fields are taken out, with a stand-in where each was, for the cross-field rules
of ``crossfield`` to read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from flux_minicluster.core.base.errors import (
    MAX_REPORTED,
    Problem,
    format_path,
    short_repr,
    unknown_key,
)
from flux_minicluster.core.spec.models import V1ALPHA1_HINTS, MiniClusterSpec

# Fields a v1alpha1 document spells differently (core/spec/v1alpha1.py converts them), and what a
# v1alpha2 document writes instead, keyed by the model they sat on. The v1alpha1 features the one
# internal model keeps (users, fluxRestful, cores, ...) are refused by the model itself in a
# v1alpha2 document (spec.v1alpha1_only).
V1ALPHA1_FIELDS: dict[str, dict[str, str]] = {
    "MiniClusterSpec": {
        "test": "replaced by logging.quiet",
        "localDeploy": "the operator's switch for its own internal volume; nothing uses it",
    },
    "Container": {
        "preCommand": "replaced by commands.pre",
        "fluxOptionFlags": "replaced by flux.optionFlags",
        "fluxLogLevel": "replaced by flux.logLevel",
        "runFluxAsRoot": "moved to commands.runFluxAsRoot (v1alpha1), or set "
        "securityContext.runAsUser: 0",
        "postStartExec": "replaced by lifeCycle.postStartExec",
        # Read from a v1alpha2 document too when it is a mapping (loading.carried_over).
        "existingVolumes": "replaced by volumes (containers[].volumes.<name>), a mapping",
    },
    "SecurityContext": {
        # Read from a v1alpha2 document too when it is a list (loading.carried_over).
        "addCapabilities": "replaced by capabilities.add, a list of capability names",
    },
}

_MESSAGES = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "string_type": "must be a string (quote it)",
    "bool_type": "must be true or false",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "list_type": "must be a list",
    "float_type": "must be a number",
    "missing": "required",
}


# --- pydantic errors -> problems -------------------------------------------------------------


def translate_errors(
    err: ValidationError, prefix: str, root: type[BaseModel] | None
) -> list[Problem]:
    """Readable problems from pydantic's errors, with did-you-mean for unknown fields.

    Only the first ``MAX_REPORTED`` distinct problems are shown (``SpecError.reported``), so
    only they are worded with care (a did-you-mean costs a fraction of a millisecond); the rest
    are counted with pydantic's own path and message, so that 95,000 unknown keys cost no more
    than the reading of them.
    """
    problems: dict[Problem, None] = {}
    for e in err.errors(include_url=False):
        if len(problems) >= MAX_REPORTED:
            problems[Problem(format_path(prefix, e["loc"]), e["msg"])] = None
            continue
        loc = field_loc(root, e["loc"])
        path = format_path(prefix, loc)
        kind = e["type"]
        if kind == "extra_forbidden":
            model = _model_at(root, loc[:-1]) if root else None
            problems[Problem(path, _unknown_field(str(loc[-1]), model))] = None
        elif kind in _MESSAGES:
            problems[Problem(path, _MESSAGES[kind])] = None
        elif kind == "literal_error":
            expected = e.get("ctx", {}).get("expected", "")
            got = short_repr(e["input"])
            problems[Problem(path, f"must be one of {expected}, got {got}")] = None
        elif kind in ("greater_than_equal", "less_than_equal"):
            problems[Problem(path, e["msg"].replace("Input should be", "must be"))] = None
        elif kind == "value_error":
            problems[Problem(path, str(e.get("ctx", {}).get("error", e["msg"])))] = None
        else:
            problems[Problem(path, e["msg"].replace("Input should be", "must be"))] = None
    # A union reports one error per member: one line per path and message.
    return list(problems)


def field_loc(root: type[BaseModel] | None, loc: Iterable[int | str]) -> list[int | str]:
    """Pydantic's ``loc`` as the user's document spells it: without the member names a union
    adds (``int``, ``float``, ``str``, a model's class name...) after the field that failed.

    The member names are told apart by the schema, never by their spelling: a field, an
    unknown key or a mapping key may well be called ``int``, ``float``, ``str`` or
    ``Container``, and must stay in the path. Below a point the schema does not describe
    (no ``root``, an unknown key, ``dict[str, Any]``), every part is the document's own.
    """
    out: list[int | str] = []
    annotation: Any = root
    for part in loc:
        members = _union_members(annotation)
        if members:  # this part names the member of the union that failed
            annotation = next((m for m in members if getattr(m, "__name__", None) == part), None)
            continue
        out.append(part)
        annotation = _child(annotation, part)
    return out


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X``; a union of several types unchanged."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return annotation


def _union_members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union pydantic reports one by one (``None`` aside); else empty."""
    annotation = _unwrap(annotation)
    if get_origin(annotation) in (Union, UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return ()


def _child(annotation: Any, part: int | str) -> Any:
    """The annotation one step below ``annotation`` at ``part``; None where unknown."""
    annotation = _unwrap(annotation)
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset, Sequence):
        return get_args(annotation)[0] if get_args(annotation) else None
    if origin in (dict, Mapping):
        return get_args(annotation)[-1] if get_args(annotation) else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = next((f for n, f in annotation.model_fields.items() if part in (n, f.alias)), None)
        return None if field is None else field.annotation
    return None


def _model_at(root: type[BaseModel] | None, loc: list[int | str]) -> type[BaseModel] | None:
    """The model class that sits at ``loc`` below ``root``, following lists and dicts."""
    annotation: Any = root
    for part in loc:
        annotation = _strip_optional(annotation)
        origin = get_origin(annotation)
        if origin in (list, dict):
            annotation = get_args(annotation)[-1]  # a list index or a mapping key
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = next(
                (f for n, f in annotation.model_fields.items() if part in (n, f.alias)), None
            )
            if field is None:
                return None
            annotation = field.annotation
        else:
            return None
    annotation = _strip_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _strip_optional(annotation: Any) -> Any:
    """``X | None`` -> ``X`` when X is a model; other annotations unchanged."""
    if get_origin(annotation) not in (list, dict, None):
        for arg in get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return annotation


def _unknown_field(name: str, model: type[BaseModel] | None) -> str:
    if model is None:
        return "unknown field"
    replaced = V1ALPHA1_FIELDS.get(model.__name__, {}).get(name)
    if replaced:
        return f"field of the older v1alpha1 API: {replaced}"
    # The fields only a v1alpha1 document may set are not offered to a v1alpha2 one.
    offered = [f.alias or n for n, f in model.model_fields.items()]
    return unknown_key(name, [key for key in offered if key not in V1ALPHA1_HINTS])


# --- a spec with type errors: the rest of it, for the cross-field rules ----------------------

FieldPath = tuple[int | str, ...]
# Each round removes what failed; a field a rule needs that cannot be removed ends the search.
_LENIENT_ROUNDS = 8
# Fields the spec's own after-validator derives from another: unknown when their source is.
_DERIVED: dict[FieldPath, tuple[FieldPath, ...]] = {
    ("size",): (("maxSize",),),
}


class UnvalidatedField(Exception):
    """A cross-field rule read a field whose value did not validate (see ``lenient_spec``)."""


class _Unvalidated:
    """Stands, in a lenient spec, where a field's value did not validate. Every use of it
    (truth, comparison, length, iteration, attributes, formatting, hashing) raises
    ``UnvalidatedField``, so a rule that needs it stops, and only that rule."""

    __slots__ = ("path",)
    path: FieldPath

    def __init__(self, path: FieldPath) -> None:
        object.__setattr__(self, "path", path)

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise UnvalidatedField(format_path("spec", self.path))


for _use in [
    "__getattr__",
    "__setattr__",
    "__bool__",
    "__len__",
    "__iter__",
    "__contains__",
    "__getitem__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__str__",
    "__repr__",
    "__format__",
    "__int__",
    "__float__",
    "__index__",
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__fspath__",
]:
    setattr(_Unvalidated, _use, _Unvalidated._refuse)


def lenient_spec(
    data: Mapping[str, Any], err: ValidationError, context: Mapping[str, Any]
) -> MiniClusterSpec | None:
    """The spec without the fields that failed ``err``, for the cross-field rules to read.

    A type error must not hide an unrelated cross-field problem. Each field that failed is left
    out (an unknown key is simply dropped) and the rest validated again; a field whose absence
    the model refuses (a required one) takes its enclosing field with it. In the result each
    left-out field holds a stand-in that stops any rule reading it (``check_semantics(...,
    lenient=True)``), so no rule judges a default the user did not write. None when the spec
    cannot be had without a field it requires.
    """
    left_out: list[FieldPath] = []
    current: Any = data
    for _ in range(_LENIENT_ROUNDS):
        if err.error_count() > MAX_REPORTED:
            # More than are shown: the schema's problems come first, and each round would cost
            # time in proportion to them (the cross-field rules run once they are fixed).
            return None
        # A field left out in an earlier round that fails again (required) takes its enclosing
        # one; errors of one round at one field (a union's members) leave it out once.
        earlier = set(left_out)
        failed: list[FieldPath] = []
        for e in err.errors(include_url=False):
            loc = tuple(field_loc(MiniClusterSpec, e["loc"]))
            if e["type"] != "extra_forbidden":
                point = next((p for p in reversed(_field_points(loc)) if p not in earlier), None)
                if point is None:
                    return None
                if point not in left_out:
                    left_out.append(point)
                loc = point
            failed.append(loc)
        current = _without(current, failed)
        try:
            spec = MiniClusterSpec.model_validate(current, context=context)
            break
        except ValidationError as again:
            err = again
    else:
        return None
    for point in list(left_out):
        left_out += _DERIVED.get(point, ())
    for point in sorted(set(left_out), key=len):
        if any(point[: len(outer)] == outer for outer in left_out if len(outer) < len(point)):
            continue  # an enclosing field stands in for it
        if not _stand_in(spec, point):
            return None
    return spec


def _field_points(loc: FieldPath) -> list[FieldPath]:
    """The prefixes of ``loc`` that end at a model's field, outermost first."""
    points: list[FieldPath] = []
    annotation: Any = MiniClusterSpec
    for i, part in enumerate(loc):
        model = _unwrap(annotation)
        if isinstance(model, type) and issubclass(model, BaseModel) and _attribute(model, part):
            points.append(loc[: i + 1])
        annotation = _child(annotation, part)
    return points


def _attribute(model: type[BaseModel], part: int | str) -> str | None:
    """The attribute name of ``model``'s field spelt ``part`` (its name or its alias)."""
    return next((n for n, f in model.model_fields.items() if part in (n, f.alias)), None)


def _without(data: Any, locs: Iterable[FieldPath]) -> Any:
    """``data`` without the values at ``locs``, copying each mapping or list along the way
    once (whatever the number of values left out of it: linear in the document)."""
    below: dict[int | str, list[FieldPath]] = {}
    for loc in locs:
        if loc:
            below.setdefault(loc[0], []).append(loc[1:])
    if isinstance(data, Mapping):
        out = dict(data)
        for head, rests in below.items():
            if head not in out:
                continue
            if any(not rest for rest in rests):
                del out[head]
            else:
                out[head] = _without(out[head], rests)
        return out
    if isinstance(data, list):
        items = list(data)
        for head, rests in below.items():
            deeper = [rest for rest in rests if rest]
            if isinstance(head, int) and 0 <= head < len(items) and deeper:
                items[head] = _without(items[head], deeper)
        return items
    return data


def _stand_in(spec: MiniClusterSpec, point: FieldPath) -> bool:
    """Put the stand-in at ``point`` of ``spec``; False where the spec has no such place."""
    target: Any = spec
    for part in point[:-1]:
        if isinstance(target, BaseModel):
            attribute = _attribute(type(target), part)
            target = None if attribute is None else getattr(target, attribute)
        elif isinstance(target, list) and isinstance(part, int) and 0 <= part < len(target):
            target = target[part]
        elif isinstance(target, dict) and part in target:
            target = target.get(part)
        else:
            return False
    attribute = _attribute(type(target), point[-1]) if isinstance(target, BaseModel) else None
    if attribute is None:
        return False
    target.__dict__[attribute] = _Unvalidated(point)
    return True
