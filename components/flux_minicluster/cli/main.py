"""The ``minicluster`` command: validate, render, check and demo, for people and for CI.

Problems with the input are the user's to fix, so they are printed one per line as
``FILE: field.path: message`` with exit code 2, never as a traceback. Subcommands import what
they need when they run: ``validate`` must stay fast and must not import Pulumi.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from flux_minicluster.core.errors import SpecError

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_INVALID = 2


def _validate(args: argparse.Namespace) -> int:
    from flux_minicluster.core import plan
    from flux_minicluster.core.loading import load_file

    status = EXIT_OK
    for path in args.files:
        try:
            for mc in load_file(path, namespace=args.namespace):
                print(f"{path}: ok {plan.build(mc).summary()}")
        except SpecError as err:
            _print_problems(err)
            status = EXIT_INVALID
    return status


def _render(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.render import run

    return run(args)


def _check(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.check import run

    return run(args)


def _demo(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.demo import run

    return run(args)


def _print_problems(err: SpecError) -> None:
    for line in err.lines():
        print(line, file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minicluster",
        description="Flux Framework MiniClusters on Kubernetes, without the Flux Operator.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check MiniCluster files and print a summary of each")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--namespace", "-n", help="namespace to assume when metadata has none")
    p.set_defaults(func=_validate)

    p = sub.add_parser(
        "render",
        help="render a MiniCluster file (or a stack) into Kubernetes manifests",
        description="Render a MiniCluster file into a kubectl-ready YAML stream, or a Pulumi "
        "stack offline (--stack) into a folder of manifests and outputs.json.",
    )
    p.add_argument("file", nargs="?", metavar="FILE")
    p.add_argument("--stack", "-s", help="render stacks/Pulumi.STACK.yaml offline")
    p.add_argument("--namespace", "-n", help="namespace (default: metadata.namespace or default)")
    p.add_argument("--output", "-o", metavar="DIR", help="write one file per object into DIR")
    p.set_defaults(func=_render)

    p = sub.add_parser(
        "check",
        help="run the policy pack offline over manifests or a stack",
        description="Run the MiniCluster policies over rendered manifests (files or folders) "
        "or over a stack rendered on the fly. Exit 1 on a mandatory violation.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--stack", "-s", action="append", default=[], help="render and check a stack")
    p.add_argument("--config", "-c", metavar="FILE", help="policy config (JSON or YAML)")
    p.set_defaults(func=_check)

    p = sub.add_parser(
        "demo",
        help="render the bundled stacks offline and print what would be deployed",
    )
    p.add_argument("--output", "-o", metavar="DIR", default="rendered")
    p.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except SpecError as err:
        _print_problems(err)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as err:  # never a traceback for a user; say what broke, in one line
        print(f"minicluster: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
