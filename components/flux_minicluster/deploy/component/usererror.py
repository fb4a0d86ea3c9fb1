"""A user's mistake as Pulumi shows one: its lines and nothing else, never a traceback.

The Python language host prints any exception a program raises as "Program failed with an
unhandled exception" and a traceback, except ``pulumi.RunError``, whose message it logs as the
one error (``pulumi-language-python-exec``). A bad spec, argument or stack config is the user's
to fix, as on the CLI (one line per problem, naming the field), so where a ``SpecError`` leaves
the Pulumi layer (the component's constructor, the stack program) it leaves as a
``MiniClusterError``: still a ``SpecError`` (callers and tests that catch one are unchanged),
and a ``RunError`` for the language host. The core cannot raise it: it never imports Pulumi.
"""

from __future__ import annotations

import pulumi

from flux_minicluster.core.base.errors import SpecError

__all__ = ["ApplyError", "MiniClusterError", "as_run_error", "in_apply"]


class MiniClusterError(SpecError, pulumi.RunError):
    """A ``SpecError`` that ``pulumi preview`` and ``up`` print as its lines alone."""


def as_run_error(err: SpecError) -> MiniClusterError:
    """``err``'s problems, with its source, as a ``MiniClusterError``."""
    if isinstance(err, MiniClusterError):
        return err
    return MiniClusterError(err.problems, source=err.source)


class ApplyError(pulumi.RunError):
    """A ``SpecError`` found inside an ``apply`` (its ``__cause__``), as the language host
    prints it: its lines alone. Not a ``ValueError``: the SDK wraps a ``ValueError`` raised while
    it serializes a resource's inputs into "While processing input ..." errors of its own, which
    reach the user as a traceback.

    The ``SpecError`` is kept as ``spec_error`` for callers that report it themselves (the
    offline renderer): the SDK re-raises the error with itself as its ``__cause__``.
    """

    def __init__(self, message: str, spec_error: SpecError | None = None) -> None:
        super().__init__(message)
        self.spec_error = spec_error


def in_apply(err: SpecError) -> ApplyError:
    """``err`` as raised inside an apply: ``raise in_apply(err) from err``."""
    return ApplyError(str(err), err)
