"""``minicluster demo`` (``make demo``): the project's stacks rendered offline, in a table.

It is the first thing a newcomer runs, so it shows what ``pulumi up`` would create for each stack
of the project (in this checkout: the local stack and the bursting trio), checks every object
against the Kubernetes schemas and the policy pack, and says plainly that nothing was deployed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flux_minicluster.cli import curvecerts, folders
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.deploy.stack import project, stackrender
from flux_minicluster.policy import checker

# The stacks this checkout bundles, in the order the table shows them (roots before bursts).
DEMO_STACKS = ("local", "gke-root", "eks-burst", "aks-burst")


def run(args: argparse.Namespace) -> int:
    where = project.find()
    stacks = [s for s in DEMO_STACKS if s in where.stacks()] or where.stacks()
    if not stacks:
        raise SpecError(
            Problem(
                "",
                f"no stacks in {where.stacks_dir} (no Pulumi.<stack>.yaml): demo renders a "
                "project's stacks; `minicluster init DIR` starts a project with one, and "
                "`pulumi stack init NAME` adds one",
            )
        )
    out = Path(args.output_dir)
    # the certificates kept for the stacks: a second demo writes the same objects, which
    # `kubectl apply -f rendered/<stack>` can apply again
    kept = curvecerts.stack_keeper(where.name)
    renderings = stackrender.render_stacks(where, stacks, kept=kept, progress=_rendering)
    for r in renderings:
        outputs = folders.outputs_json(r.stack, r.outputs, r.secret_outputs)
        folders.write_folder(
            out / r.stack,
            r.objects,
            r.patches,
            {f"{r.stack}.outputs.json": outputs},
            named_by_render=True,
        )
    rows = [r.summary_row() for r in renderings]
    from flux_minicluster import kubecheck

    skipped = kubecheck.schemas_missing()
    problems = [
        f"{r.stack}: {p}"
        for r in renderings
        for p in kubecheck.refusals(r.objects, () if skipped else (_release(where, r.stack),))
    ]
    print(
        f"Rendered {plural(len(renderings), 'stack')} offline into {out}/ (Pulumi's mock runtime, "
        "the real program; nothing was deployed). Each folder holds Kubernetes objects only; "
        "the size patches Pulumi applies are in its patches/, the stack's outputs beside it."
    )
    print()
    print(table(stackrender.SUMMARY_COLUMNS, rows))
    print()
    report = checker.check([o for r in renderings for o in r.objects])
    print(f"Policy pack (offline): {report.summary()}")
    if problems or report.exit_code:
        print("Schema problems:" if problems else report.format())
        for line in problems:
            print(f"  {line}")
        return 1
    first = renderings[0].stack
    if skipped:
        print(f"Schema check skipped: it {skipped}. The API-server rules passed.")
    else:
        print("Every object validates strict against the Kubernetes schemas.")
    print(
        f"Deploy with `pulumi up -s {first}`, or apply a folder with "
        f"`kubectl apply -f {out}/{first}`."
    )
    return 0


def _rendering(stack: str) -> None:
    """Progress on stderr: the first render of a stack runs the real keygen (pyzmq)."""
    print(f"rendering stack {stack} offline ...", file=sys.stderr, flush=True)


def plural(count: int, noun: str) -> str:
    """``1 stack``, ``4 stacks``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _release(where: Any, stack: str) -> str:
    """The Kubernetes release a stack renders for (``cluster.kubernetesVersion``, else the
    default): the one whose schemas its objects must pass."""
    from flux_minicluster.deploy.stack.stackconfig import PROJECT

    cluster = stackrender.read_stack_config(where, stack)[0].get(f"{PROJECT}:cluster")
    given = cluster.get("kubernetesVersion") if isinstance(cluster, dict) else None
    return str(kubeversion.parse(given) if isinstance(given, str) else kubeversion.DEFAULT)


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
