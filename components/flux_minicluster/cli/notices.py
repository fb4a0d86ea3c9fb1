"""What every command says of its input: a MiniCluster's warnings on stderr, and the problems
of a refused input as ``-o json`` lists them (one shape for validate, check and status).

A v1alpha1 document's unknown fields (the operator's API server dropped them silently), fields
that do nothing without the operator, and a plan whose failed work would leave a Complete Job
(``restartPolicy: OnFailure``) are warnings, not errors. ``validate``, ``render`` and
``check`` print them here, one line each, as the Pulumi component logs them on ``pulumi up``.
"""

from __future__ import annotations

import sys

from flux_minicluster.core.base.errors import SpecError, bounded
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.spec.definition import MiniClusterDefinition


def warn(source: str, mc: MiniClusterDefinition | MiniClusterPlan) -> None:
    """``SOURCE: warning: field.path: message`` on stderr for each warning of ``mc`` (a plan's
    include its advice; the first ``MAX_REPORTED``, then how many more)."""
    for problem in bounded(mc.warnings, "warnings"):
        print(f"{source}: warning: {problem}", file=sys.stderr)


def problem_records(err: SpecError, file: str | None = None) -> list[dict[str, str]]:
    """The problems ``-o json`` lists for ``err``, as many as its text shows; with ``file``, each
    names its input (the error's own source first, else ``file``)."""
    where = {} if file is None else {"file": err.source or file}
    return [{**where, "path": p.path, "message": p.message} for p in err.reported()]


def internal_error(err: BaseException) -> str:
    """The one line a bug of ours is said in (never a traceback): its type and message."""
    return f"internal error: {type(err).__name__}: {err}"
