"""The ``minicluster`` command: validate, render, check, demo and init, for people and for CI.

Problems with the input are the user's to fix, so they are printed one per line as
``FILE: field.path: message`` with exit code 2, never as a traceback. Subcommands import what
they need when they run: ``validate`` must stay fast and must not import Pulumi.

Flags mean what they mean to kubectl: ``-n/--namespace`` is the namespace of every MiniCluster
that names none (one that names another is an error), ``-o/--output`` is a format (``yaml`` or
``json``), a file ``-`` is standard input, and ``--cwd`` is where to look for the Pulumi project,
as with ``pulumi``.

Argument mistakes are argparse's (exit 2), said by the parser of the command they belong to, so
``validate --bogus`` shows ``validate``'s usage; ``minicluster`` alone prints the help, as
``kubectl`` and ``pulumi`` do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from flux_minicluster.core.base.errors import SpecError, bounded
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.version import __version__

EXIT_OK = 0
EXIT_INVALID = 2

NAME_HELP = (
    "the MiniCluster's name, over its metadata.name (a bare spec has none); every MiniCluster "
    "of the file takes it, so give a file of one"
)
NAMESPACE_HELP = (
    "namespace of every MiniCluster whose metadata names none (one that names another is an "
    "error, as with kubectl)"
)


# The object argparse's add_subparsers returns (each command adds its parser to it); generic
# only to the type checker.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _report_format(p: argparse.ArgumentParser, what: str) -> None:
    """``-o text|json``, the same for every command that reports (validate, check, status)."""
    p.add_argument("--output", "-o", choices=("text", "json"), default="text", help=f"json: {what}")


def _validate(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.notices import problem_records, warn
    from flux_minicluster.core.planning import plan
    from flux_minicluster.core.reading.documents import source_name
    from flux_minicluster.core.reading.loading import load_file
    from flux_minicluster.core.render.manifests import render

    status = EXIT_OK
    found: list[dict[str, Any]] = []
    problems: list[dict[str, str]] = []
    for given in args.files:
        path = source_name(given)  # as the problems name it: <stdin> for -
        try:
            for mc in load_file(given, name=args.name, default_namespace=args.namespace):
                built = plan.build(mc)
                warn(path, built)
                try:  # refuses an object the API server would find too large
                    render(built)
                except SpecError as err:
                    raise err.with_source(path) from None
                if args.output == "json":
                    found.append(_validated(path, built))
                else:
                    print(f"{path}: ok {built.summary()}")
        except SpecError as err:
            _print_problems(err)
            problems += problem_records(err, path)
            status = EXIT_INVALID
    if args.output == "json":
        print(json.dumps({"valid": not problems, "miniclusters": found, "problems": problems}))
    return status


def _validated(path: str, mc: Any) -> dict[str, Any]:
    """One valid MiniCluster as ``validate -o json`` lists it."""
    return {
        "file": path,
        "name": mc.name,
        "namespace": mc.namespace,
        "size": mc.spec.size,
        "maxSize": mc.spec.max_size,
        "containers": len(mc.spec.containers),
        "summary": mc.summary(),
        "warnings": [
            {"path": w.path, "message": w.message} for w in bounded(mc.warnings, "warnings")
        ],
    }


def _render(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.render import run

    return run(args)


def _check(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.check import run

    return run(args)


def _status(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.status import run

    return run(args)


def _flux(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.flux import run

    return run(args)


def _demo(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.demo import run

    return run(args)


def _init(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.init import run

    return run(args)


def _version(args: argparse.Namespace) -> int:
    print(f"minicluster {__version__}")
    return EXIT_OK


def _completion(args: argparse.Namespace) -> int:
    from flux_minicluster.cli.completion import script

    sys.stdout.write(script(build_parser(), args.shell))
    return EXIT_OK


def _print_problems(err: SpecError) -> None:
    for line in err.lines():
        print(line, file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    """The ``minicluster`` parser: its global options, then one function per command."""
    parser = argparse.ArgumentParser(
        prog="minicluster",
        description="Flux Framework MiniClusters on Kubernetes, without the Flux Operator.",
    )
    parser.add_argument("--version", "-V", action="version", version=f"minicluster {__version__}")
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="run in DIR: the Pulumi project (Pulumi.yaml) is found there or in its parents",
    )
    # Not required: argparse would then say "required: COMMAND" for `-V` or `--bogus` too;
    # main() prints the help when no command is given.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in (
        _validate_command,
        _render_command,
        _check_command,
        _status_command,
        _flux_command,
        _demo_command,
        _init_command,
        _version_command,
        _completion_command,
    ):
        add(sub)
    return parser


def _validate_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "validate",
        help="check MiniCluster files and print a summary of each",
        description="Check MiniCluster files (every document in each; '-' reads standard "
        "input) and print one summary line per MiniCluster. Exit 2 on any problem, one line each.",
    )
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="MiniCluster YAML files ('-': standard input)"
    )
    p.add_argument("--namespace", "-n", help=NAMESPACE_HELP)
    p.add_argument("--name", help=NAME_HELP)
    _report_format(p, "one JSON document on stdout (every MiniCluster, every problem), for CI")
    p.set_defaults(func=_validate)


def _render_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "render",
        help="render MiniClusters (a file or stacks) into Kubernetes manifests",
        description="Render every MiniCluster of a file ('-': standard input) into a "
        "kubectl-ready stream, or Pulumi stacks offline (--stack). With --output-dir, one file "
        "per object in apply order (a stack's outputs beside the folder). The same spec renders "
        "the same bytes every time: the certificate is --curve-cert FILE, the spec's, or the one "
        "kept for the MiniCluster in the user's state folder (made by its first render).",
    )
    p.add_argument(
        "file", nargs="?", metavar="FILE", help="a MiniCluster YAML file ('-': standard input)"
    )
    p.add_argument("--stack", "-s", action="append", default=[], help="render a stack offline")
    p.add_argument("--namespace", "-n", help=NAMESPACE_HELP)
    p.add_argument("--name", help=NAME_HELP)
    p.add_argument("--output", "-o", choices=("yaml", "json"), default="yaml", help="output format")
    p.add_argument("--output-dir", "-d", metavar="DIR", help="write one file per object into DIR")
    p.add_argument(
        "--curve-cert",
        metavar="FILE",
        help="the CURVE certificate to use; created (mode 0600, with a warning) when FILE does "
        "not exist in an existing folder",
    )
    p.add_argument(
        "--no-secret",
        action="store_true",
        help="leave every Secret out (create them apart from a secret store); needs --curve-cert",
    )
    p.add_argument(
        "--no-network-policy",
        action="store_true",
        help="leave the NetworkPolicies out (for stacks: flux-minicluster:cluster.networkPolicy)",
    )
    p.add_argument(
        "--kube-version",
        metavar="VERSION",
        help=f"the Kubernetes release to render for, e.g. 1.33 (default {kubeversion.DEFAULT}; "
        "for stacks: flux-minicluster:cluster.kubernetesVersion); the Job carries only the "
        "fields that release serves",
    )
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="write a stack's secret outputs in clear (masked by default)",
    )
    p.set_defaults(func=_render)


def _check_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check",
        help="run the policy pack offline over manifests, MiniCluster files or stacks",
        description="Run the MiniCluster policies over rendered manifests and MiniCluster "
        "documents (files or folders; MiniClusters are rendered first) or over stacks rendered "
        "on the fly. Exit 1 on a mandatory violation, 2 when there is nothing to check.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="manifest or MiniCluster files, or folders of them (searched recursively)",
    )
    p.add_argument("--stack", "-s", action="append", default=[], help="render and check a stack")
    p.add_argument(
        "--curve-cert",
        metavar="FILE",
        help="the CURVE certificate the MiniClusters and stacks are rendered with, as with "
        "render (it must exist: check never makes one); default: the spec's, else the one "
        "render keeps for each MiniCluster, else one made for the run per bursting group",
    )
    p.add_argument("--config", "-c", metavar="FILE", help="policy config (JSON or YAML)")
    _report_format(p, "the report as one JSON document on stdout (verdict, violations), for CI")
    p.set_defaults(func=_check)


def _deployed_target(p: argparse.ArgumentParser) -> None:
    """Where a deployed MiniCluster is: the arguments ``status`` and ``flux`` share."""
    p.add_argument("name", nargs="?", metavar="NAME", help="the MiniCluster (its Job's name)")
    p.add_argument(
        "--namespace", "-n", help="its namespace (default: the kube-context's, as for kubectl)"
    )
    p.add_argument("--stack", "-s", help="a stack of this project: its cluster and MiniCluster")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig (default: kubectl's)")
    p.add_argument("--context", help="kube-context (default: the current one)")


def _status_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "status",
        help="what a deployed MiniCluster is doing, read from the cluster",
        description="Read a MiniCluster's Job, pods and (when queued) Kueue Workload with "
        "`kubectl get` and say: created, admitted or queued, brokers joined n of N, running, "
        "succeeded or failed with rank 0's exit code. Reads the API server only, never Pulumi "
        "state: a stack (--stack) only says where to look. Once the instance is up, its "
        "jobs (pending, running, completed, failed, cancelled, timeout) and when its archive "
        "was last written, read in rank 0's pod with `kubectl exec` (your credentials).",
    )
    _deployed_target(p)
    _report_format(p, "one JSON document on stdout, for CI and workflow tools")
    p.set_defaults(func=_status)


FLUX_COMMAND = "flux"


def _flux_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        FLUX_COMMAND,
        help="run a flux command against a deployed MiniCluster (kubectl exec into rank 0)",
        usage="minicluster flux [-h] [NAME] [-n NAMESPACE] [--stack STACK] [--kubeconfig FILE] "
        "[--context CONTEXT] -- FLUX-ARGS...",
        description="Run `flux FLUX-ARGS...` in the MiniCluster's instance, e.g. `minicluster "
        "flux NAME -- jobs -a`: `kubectl exec` into rank 0's Flux container with your own "
        "kubeconfig (you need pods/exec in the namespace; the pods get no rights for it). "
        "Flux's exit code, output and (when not a terminal) standard input pass through.",
    )
    _deployed_target(p)
    p.set_defaults(func=_flux, flux_args=[])


def _demo_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "demo",
        help="render the project's bundled stacks offline and show what would be deployed",
        description="Render this project's stacks offline (Pulumi's mock runtime, the real "
        "program), check them against the schemas and the policy pack, and print a summary.",
    )
    p.add_argument(
        "--output-dir",
        "-d",
        metavar="DIR",
        default="rendered",
        help="write each stack into DIR/<stack>/ and its outputs beside (default: rendered)",
    )
    p.set_defaults(func=_demo)


def _init_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "init",
        help="start a Pulumi project of your own that deploys a MiniCluster",
        description="Write a new Pulumi project into DIR: Pulumi.yaml, __main__.py, a stack "
        "file, requirements.txt and an example MiniCluster spec.",
    )
    p.add_argument("directory", metavar="DIR", help="the new project's folder")
    p.add_argument("--name", help="the project's name (default: the directory's name)")
    p.set_defaults(func=_init)


def _version_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "version",
        help="print the version",
        description="Print minicluster's version (the same as --version and -V).",
    )
    p.set_defaults(func=_version)


def _completion_command(sub: Subparsers) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL, made from these very commands and "
        "options. bash: source <(minicluster completion bash) in ~/.bashrc; zsh: source "
        "<(minicluster completion zsh) in ~/.zshrc; fish: minicluster completion fish > "
        "~/.config/fish/completions/minicluster.fish",
    )
    p.add_argument(
        "shell", choices=("bash", "zsh", "fish"), metavar="SHELL", help="bash, zsh or fish"
    )
    p.set_defaults(func=_completion)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each command, by name (argparse keeps them in its subparsers action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, list[str]]:
    """The arguments; for ``flux``, what follows the first ``--`` is flux's, untouched."""
    given = list(sys.argv[1:] if argv is None else argv)
    if "--" in given:
        cut = given.index("--")
        args, extra = parser.parse_known_args(given[:cut])
        if args.command == FLUX_COMMAND:
            args.flux_args = given[cut + 1 :]
            return args, extra
    args, extra = parser.parse_known_args(given)
    if extra and args.command == FLUX_COMMAND:  # `minicluster flux mc jobs -a`
        subcommands(parser)[FLUX_COMMAND].error(
            f"unrecognized arguments: {' '.join(extra)} (flux's arguments go after --: "
            "minicluster flux NAME -- jobs -a)"
        )
    return args, extra


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = _parse(parser, argv)
    if args.command is None:
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        parser.print_help()
        return EXIT_OK
    if extra:  # said by the command's own parser, with its usage
        subcommands(parser)[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        if args.cwd:
            os.chdir(args.cwd)
        return func(args)
    except SpecError as err:
        _print_problems(err)
        return EXIT_INVALID
    except BrokenPipeError:  # the reader went away (`| head`): not the input's fault
        # Python flushes stdout again at exit; point it at /dev/null so that is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as err:
        print(
            f"minicluster: {err.strerror or err}: {err.filename or ''}".rstrip(": "),
            file=sys.stderr,
        )
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # never a traceback for a user; say what broke, in one line
        from flux_minicluster.cli.notices import internal_error

        print(f"minicluster: {internal_error(err)}", file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
