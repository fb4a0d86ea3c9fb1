"""``minicluster render FILE``: a MiniCluster as manifests for kubectl or GitOps, no Pulumi needed.

The output is exactly what the Pulumi component would register (the same renderer), with a real
certificate in the curve Secret so that ``kubectl apply -f -`` gives a working cluster. That
certificate is generated here, on this machine, unless the spec carries ``flux.curveCert``; the
notice on stderr says so, because the output then contains a secret key and must be handled like
one (not committed to Git in clear, for instance).

``--stack`` renders a whole Pulumi stack offline instead; that belongs to the deploy layer and is
handed over to ``flux_minicluster.deploy.stackrender``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from flux_minicluster.core import certificate, plan
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.loading import load_one
from flux_minicluster.core.render.manifests import render, to_yaml

EXIT_OK = 0
EXIT_USAGE = 2


def run(args: argparse.Namespace) -> int:
    if getattr(args, "stack", None):
        # Imported by name: the deploy layer (and Pulumi) load only when a stack is rendered.
        stackrender: Any = importlib.import_module("flux_minicluster.deploy.stackrender")
        return int(stackrender.run(args))
    if not args.file:
        print("minicluster render: give a MiniCluster FILE (or --stack STACK)", file=sys.stderr)
        return EXIT_USAGE

    mc = plan.build(load_one(args.file, namespace=args.namespace))
    cert_text = mc.spec.flux.curve_cert
    if cert_text is None:
        cert = certificate.generate(name=mc.name, hostname=mc.names.lead_host)
        cert_text = certificate.render(cert)
        print(
            f"{args.file}: generated a new CURVE certificate locally (public key "
            f"{cert.public_key}); Secret {mc.namespace}/{mc.names.curve_secret} in the output "
            "holds its secret key, so keep the output private",
            file=sys.stderr,
        )
    manifests = render(mc, cert_text).objects()

    if not args.output:
        sys.stdout.write(to_yaml(manifests))
        return EXIT_OK
    return _write_files(Path(args.output), manifests)


def _write_files(folder: Path, manifests: list[dict[str, Any]]) -> int:
    """One file per object, numbered in creation order so that ``kubectl apply -f DIR`` works."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SpecError(Problem("", f"cannot create {folder}: {err.strerror}")) from None
    width = max(2, len(str(len(manifests))))
    for number, manifest in enumerate(manifests, start=1):
        kind = str(manifest["kind"]).lower()
        name = str(manifest["metadata"]["name"])
        path = folder / f"{number:0{width}d}-{kind}-{name}.yaml"
        # A Secret's file holds the certificate's secret key: readable by its owner only.
        mode = 0o600 if manifest["kind"] == "Secret" else 0o644
        try:
            _write(path, to_yaml([manifest]), mode)
        except OSError as err:
            raise SpecError(Problem("", f"cannot write {path}: {err.strerror}")) from None
        print(path, file=sys.stderr)
    return EXIT_OK


def _write(path: Path, text: str, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        os.fchmod(handle.fileno(), mode)  # an existing file keeps its old mode otherwise
        handle.write(text)
