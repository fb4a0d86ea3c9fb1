"""`minicluster demo` (`make demo`): the bundled stacks rendered offline, summarised in a table.

It is the first thing a newcomer runs, so it shows what `pulumi up` would create for the local
stack and for the bursting trio, checks every object against the Kubernetes schemas, and says
plainly that nothing was deployed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flux_minicluster.deploy import stackrender

DEMO_STACKS = ("local", "gke-root", "eks-burst", "aks-burst")


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    renderings = [stackrender.render_stack(stack, out, quiet=True) for stack in DEMO_STACKS]
    rows = [r.summary_row() for r in renderings]
    problems = [p for r in renderings for p in schema_problems(r.stack, r.objects)]
    print(
        f"Rendered {len(DEMO_STACKS)} stacks offline into {out}/ (Pulumi mocks, the real program; "
        "nothing was deployed)."
    )
    print()
    print(table(stackrender.SUMMARY_COLUMNS, rows))
    print()
    from flux_minicluster.policy import checker

    report = checker.check([o for r in renderings for o in r.objects])
    print(f"Policy pack (offline): {report.summary()}")
    if problems or report.exit_code:
        print("Schema problems:" if problems else report.format())
        for line in problems:
            print(f"  {line}")
        return 1
    print(
        "Every object validates strict against the Kubernetes schemas. Deploy with "
        "`pulumi up -s local`, or apply a folder with `kubectl apply -f rendered/local`."
    )
    return 0


def schema_problems(
    stack: str, objects: list[dict[str, Any]], versions: Iterable[str] = ("1.29", "1.34")
) -> list[str]:
    """Strict schema and API-server problems of every object (empty when all is well)."""
    from flux_minicluster.policy import kubecheck

    problems = [
        f"{stack}: {obj['kind']}/{obj['metadata']['name']} (k8s {v}): {err}"
        for obj in objects
        for v in versions
        for err in kubecheck.schema_errors(obj, v)
    ]
    problems += [f"{stack}: {err}" for err in kubecheck.semantic_errors(objects)]
    return problems


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
