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

from flux_minicluster.core.errors import SpecError

__all__ = ["MiniClusterError", "as_run_error"]


class MiniClusterError(SpecError, pulumi.RunError):
    """A ``SpecError`` that ``pulumi preview`` and ``up`` print as its lines alone."""


def as_run_error(err: SpecError) -> MiniClusterError:
    """``err``'s problems, with its source, as a ``MiniClusterError``."""
    if isinstance(err, MiniClusterError):
        return err
    return MiniClusterError(err.problems, source=err.source)
