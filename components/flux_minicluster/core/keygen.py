"""``flux keygen`` for machines without Flux: ``python -m flux_minicluster.core.keygen``.

The Pulumi layer runs this through a ``Command`` when no ``flux`` binary is around, and takes the
certificate from standard output. So stdout carries exactly the certificate and nothing else,
errors are one line on stderr (exit 2 for a bad argument, 1 for a failed write), and no traceback
ever reaches a user.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from flux_minicluster.core.flux.certificate import CertificateError, generate, render, write

PROG = "python -m flux_minicluster.core.keygen"


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line: a Command's stderr should read as a sentence."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=PROG,
        allow_abbrev=False,
        description="Generate a ZeroMQ CURVE certificate in flux keygen's format.",
    )
    parser.add_argument("--name", required=True, help="metadata 'name' (Flux logs it)")
    parser.add_argument(
        "--hostname", required=True, help="metadata 'keygen.hostname', e.g. <cluster>-0"
    )
    parser.add_argument(
        "--output",
        metavar="PATH",
        help="write the certificate to PATH with mode 0600 and print nothing",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status instead of exiting, so tests can call it."""
    args = _parser().parse_args(argv)
    try:
        cert = generate(args.name, args.hostname)
    except CertificateError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (ImportError, RuntimeError) as exc:
        print(f"{PROG}: error: cannot generate CURVE keys: {exc}", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(render(cert))
        return 0
    try:
        write(cert, args.output)
    except OSError as exc:
        print(f"{PROG}: error: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
