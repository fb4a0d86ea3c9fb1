"""How a component argument is declared, and what follows from the declaration.

An argument is a field of a TypedDict (``arguments.MiniClusterArgs``, ``keygen.KeygenArgs``): its
name, its Python type and, in the docstring under it, its description. Whatever else it needs
rides on the field as ``typing.Annotated`` metadata, one ``Arg``:

* ``check``: the check of a given value, whatever face it came through (``problems``);
* ``schema``: the type other languages see, when it is not the Python type (an enum for a
  ``Literal``, an object type for a TypedDict), and ``schema_description`` when they are told
  something else than Python is (``schema_inputs`` builds their inputs from it);
* ``stack``: where the stack config takes it (``Stack``), if it does.

Python programs type-check against the TypedDict as it is: a type checker ignores the metadata.
"""

from __future__ import annotations

import functools
import inspect
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Final, get_args, get_origin

from flux_minicluster.core.base.errors import Problem, SpecError, unknown_key

__all__ = [
    "ENUM_MEMBER_DOCS",
    "Arg",
    "Argument",
    "Check",
    "Stack",
    "declared",
    "fields",
    "message",
    "non_empty_string",
    "one_of",
    "positive_seconds",
    "problems",
    "raising",
    "schema_enum",
    "schema_inputs",
    "schema_object",
    "string",
]

Check = Callable[[Any, str], Sequence[Problem]]
"""A given value's problems, said at the path it is given as (``where``)."""


@dataclass(frozen=True)
class Stack:
    """Where the stack config takes an argument: a key of ``section`` (``flux-minicluster:
    <section>``) spelt as the argument's name in camelCase. Unset, the argument is not passed
    (``default`` None), or it is passed as ``default``."""

    section: str
    default: Any = None
    type: Any = None
    """The config's type, when it is not the argument's Python type."""


@dataclass(frozen=True)
class Arg:
    """An argument's declaration beyond its name, type and docstring."""

    check: Check | None = None
    schema: Any = None
    """The type other languages see, when it is not the Python type."""
    schema_description: str | None = None
    """What other languages are told, when it is not the docstring."""
    stack: Stack | None = None
    required: str | None = None
    """The argument is required; what it is (said when it is missing)."""
    needs: tuple[str, str] | None = None
    """Another argument this one needs, and why (said when it is missing)."""


@dataclass(frozen=True)
class Argument:
    """One field of an arguments TypedDict, read with its declaration."""

    name: str
    python: Any
    """The Python type, without the metadata."""
    arg: Arg = field(default_factory=Arg)

    def problems(self, args: Mapping[str, Any], prefix: str = "") -> list[Problem]:
        where = f"{prefix}{self.name}"
        if self.name not in args:
            return (
                []
                if self.arg.required is None
                else [Problem(where, f"required: {self.arg.required}")]
            )
        value = args[self.name]
        found = list(self.arg.check(value, where)) if self.arg.check is not None else []
        if self.arg.needs is not None and value is not None:
            other, why = self.arg.needs
            if args.get(other) is None:
                found.append(Problem(where, f"needs {other}: {why}"))
        return found

    def schema_type(self) -> Any:
        """The type other languages see."""
        return self.arg.schema if self.arg.schema is not None else self.python


@functools.cache
def declared(arguments: type) -> tuple[Argument, ...]:
    """The fields of the TypedDict ``arguments``, in order, with their declarations (read once:
    a string annotation is evaluated, and with it the enums it makes)."""
    # Not typing.get_type_hints: it would resolve pulumi.Input's forward reference to Output,
    # which Pulumi's analyzer reads as it is.
    module = vars(sys.modules[arguments.__module__])
    found = []
    for name, written in inspect.get_annotations(arguments).items():
        if isinstance(written, typing.ForwardRef):  # a TypedDict's string annotation
            written = written.__forward_arg__
        hint = eval(written, module) if isinstance(written, str) else written
        python, arg = hint, Arg()
        if get_origin(hint) is Annotated:
            python, *extras = get_args(hint)
            arg = next((extra for extra in extras if isinstance(extra, Arg)), arg)
        found.append(Argument(name, python, arg))
    return tuple(found)


def problems(
    arguments: Sequence[Argument], args: Mapping[str, Any], prefix: str = ""
) -> list[Problem]:
    """Every problem of ``args``: an unknown key (with a did-you-mean), then each argument's."""
    names = [argument.name for argument in arguments]
    found = [
        Problem(f"{prefix}{key}", unknown_key(str(key), names, "argument"))
        for key in args
        if key not in names
    ]
    for argument in arguments:
        found += argument.problems(args, prefix)
    return found


# --- checks ---------------------------------------------------------------------------------


def message(said: Callable[[Any], str | None]) -> Check:
    """A check from a function that says what is wrong with a value (None: nothing)."""

    def check(value: Any, where: str) -> list[Problem]:
        text = said(value)
        return [] if text is None else [Problem(where, text)]

    return check


def raising(parse: Callable[[Any, str], object]) -> Check:
    """A check from a parser that raises ``SpecError`` at the path it is given."""

    def check(value: Any, where: str) -> list[Problem]:
        try:
            parse(value, where)
        except SpecError as err:
            return list(err.problems)
        return []

    return check


def one_of(choices: Sequence[str], *, optional: bool = False) -> Check:
    """One of ``choices`` (or None, when ``optional``)."""
    return message(
        lambda value: (
            None
            if value in choices or (optional and value is None)
            else f"must be one of {', '.join(choices)}, got {value!r}"
        )
    )


def fields(arguments: type) -> Check:
    """A mapping of the arguments the TypedDict ``arguments`` declares, each checked (at
    ``<where>.<name>``); None is none given."""
    declared_arguments = declared(arguments)

    def check(value: Any, where: str) -> list[Problem]:
        if value is None:
            return []
        if not isinstance(value, Mapping):
            return [Problem(where, f"must be a mapping, got {type(value).__name__}")]
        return problems(declared_arguments, value, f"{where}.")

    return check


non_empty_string: Final = message(
    lambda value: (
        None
        if value is None or (isinstance(value, str) and value.strip())
        else "must be a non-empty string"
    )
)
string: Final = message(
    lambda value: (
        None
        if value is None or isinstance(value, str)
        else f"must be a string, got {type(value).__name__}"
    )
)
positive_seconds: Final = message(
    lambda value: (
        None
        if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
        else f"must be a positive number of seconds, got {value!r}"
    )
)


# --- the types other languages see ------------------------------------------------------------

ENUM_MEMBER_DOCS: Final[dict[str, dict[str, str]]] = {}
"""The descriptions of an enum's values, by the enum's name (the analyzer reads them from
source, which a made enum has none of)."""


def schema_enum(literal: Any, name: str, doc: str, **members: str) -> type[StrEnum]:
    """The enum other languages see for a ``Literal`` of strings: a member per value, named as
    the value in capitals; ``members`` describe values."""
    values = get_args(literal)
    made = StrEnum(name, [(value.upper(), value) for value in values], module=__name__)  # type: ignore[misc]
    made.__doc__ = doc
    if members:
        ENUM_MEMBER_DOCS[name] = dict(members)
    return typing.cast(type[StrEnum], made)


def schema_object(arguments: type, name: str) -> type:
    """The object type other languages see for the TypedDict ``arguments``: its fields, each as
    its ``schema`` type; described by ``arguments``' docstrings (``multilanguage``)."""
    fields = {argument.name: argument.schema_type() for argument in declared(arguments)}
    total = not getattr(arguments, "__optional_keys__", ())
    made = typing.TypedDict(name, fields, total=total)  # type: ignore[misc]
    made.__module__ = __name__
    return typing.cast(type, made)


def schema_inputs(arguments: Sequence[Argument], name: str) -> type:
    """The inputs type other languages see: every argument as its ``schema`` type, the required
    ones ``Required``."""
    fields = {
        argument.name: typing.Required[argument.schema_type()]
        if argument.arg.required is not None
        else argument.schema_type()
        for argument in arguments
    }
    made = typing.TypedDict(name, fields, total=False)  # type: ignore[misc]
    made.__module__ = __name__
    return typing.cast(type, made)
