"""`minicluster check`: the policy pack's rules, offline, over manifests or stacks.

CI machines without the Pulumi CLI still get the same verdicts as `pulumi preview --policy-pack
policies`, because both run the rules in ``flux_minicluster.policy`` over the same manifest dicts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from flux_minicluster.core.errors import SpecError
from flux_minicluster.policy import checker


def run(args: argparse.Namespace) -> int:
    if not args.paths and not args.stack:
        raise SpecError("give manifest files or folders, or --stack NAME")
    config = checker.load_config(args.config)
    manifests: list[Any] = checker.load_manifests(args.paths) if args.paths else []
    if args.stack:
        manifests += _render_stacks(args.stack)
    report = checker.check(manifests, config)
    print(report.format())
    return report.exit_code


def _render_stacks(stacks: list[str]) -> list[Any]:
    """Render the named stacks offline (roots first, as bursts read their outputs)."""
    from flux_minicluster.deploy import stackrender  # the Pulumi layer: only for --stack

    with tempfile.TemporaryDirectory(prefix="minicluster-check-") as tmp:
        out = Path(tmp)
        for stack in stackrender.order_stacks(stacks):
            stackrender.render_stack(stack, out, quiet=True)
            print(f"rendered stack {stack} offline", file=sys.stderr)
        return checker.load_manifests([out])
