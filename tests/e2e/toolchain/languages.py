"""The toolchain pieces for programs in other languages than Python (build.py adds them).

Python 3.11 standard library only, like build.py, whose Piece machinery and helpers these pieces
use (build.py passes itself in: run as a script it is ``__main__``, not an importable module).
The pins are keys of [tool.flux-minicluster.toolchain] in pyproject.toml.

- ``pulumi-language-yaml``: the real YAML language host, a ``go build`` of
  github.com/pulumi/pulumi-yaml (pin ``pulumi-yaml``) against the CLI's pkg/sdk.
- ``sdkgen``: our own ``toolchain/sdkgen/main.go``. It writes a schema's TypeScript and Go SDKs
  with pkg/v3's codegen, the code ``pulumi package add`` has a language host run; the hosts for
  TypeScript and Go (pulumi-language-nodejs, pulumi-language-go) are refused by the proxy.
- ``pulumi-go-sdk``: github.com/pulumi/pulumi/sdk/v3 at the CLI's version, downloaded and its
  ``go/pulumi`` and ``go/auto`` packages compiled into the shared GOCACHE (with ``-trimpath``, as
  the e2e tests build Go programs), so a Go program builds offline and fast.
- ``node-modules``: ``typescript``, ``@pulumi/pulumi`` and ``@types/node`` from npm (pins
  ``npm-*``) in ``<key>/node/node_modules``; ``tsc`` linked into bin/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

PULUMI_PKG = "github.com/pulumi/pulumi/pkg/v3"
PULUMI_SDK = "github.com/pulumi/pulumi/sdk/v3"
YAML_MOD = "github.com/pulumi/pulumi-yaml"
# The Go SDK packages a Pulumi Go program (and its Automation API driver) imports.
GO_SDK_PACKAGES = (f"{PULUMI_SDK}/go/pulumi", f"{PULUMI_SDK}/go/auto")
NODE_DIR = "node"
# npm package -> its pin's key.
NPM_PINS = {
    "typescript": "npm-typescript",
    "@pulumi/pulumi": "npm-pulumi",
    "@types/node": "npm-types-node",
}


def pieces(p: dict[str, str], b: ModuleType) -> list[Any]:
    """The pieces, as ``b.Piece`` (``b`` is build.py's module)."""
    pulumi = p["pulumi"]
    version_var = f"{PULUMI_SDK}/go/common/version.Version"
    npm = ", ".join(f"{name}@{p[key]}" for name, key in NPM_PINS.items())

    def go_sdk(piece: Any, bindir: Path, pins: dict[str, str]) -> None:
        _compile_go_sdk(b, piece, bindir, pins)

    def node_modules(piece: Any, bindir: Path, pins: dict[str, str]) -> None:
        _npm_install(b, piece, bindir, pins)

    return [
        b.Piece(
            name="pulumi-language-yaml",
            binaries=[
                b.Binary(
                    "pulumi-language-yaml",
                    f"{YAML_MOD}/cmd/pulumi-language-yaml",
                    f"{YAML_MOD}@{p['pulumi-yaml']}",
                )
            ],
            # pulumi-yaml asks for an older pkg/sdk; MVS takes the CLI's.
            requires={YAML_MOD: p["pulumi-yaml"], PULUMI_PKG: pulumi, PULUMI_SDK: pulumi},
            ldflags=[f"{YAML_MOD}/pkg/version.Version={p['pulumi-yaml']}"],
        ),
        b.Piece(
            name="sdkgen",
            binaries=[b.Binary("sdkgen", ".", f"{PULUMI_PKG}@{pulumi}")],
            requires={PULUMI_PKG: pulumi, PULUMI_SDK: pulumi},
            ldflags=[f"{version_var}={pulumi}"],
            own_main="sdkgen",
        ),
        b.Piece(
            name="pulumi-go-sdk",
            binaries=[],
            requires={PULUMI_SDK: pulumi},
            fetch=go_sdk,
        ),
        b.Piece(
            name="node-modules",
            binaries=[b.Binary("tsc", "typescript/bin/tsc", f"npm {npm}")],
            requires={},
            fetch=node_modules,
        ),
    ]


def go_sdk_env(b: ModuleType) -> dict[str, str]:
    """The Go environment the toolchain compiled the Go SDK with: build Go programs with it (and
    ``go build -trimpath``) to reuse that work."""
    return dict(b.go_env(b.cache_root()))


def _compile_go_sdk(b: ModuleType, piece: Any, bindir: Path, pins: dict[str, str]) -> None:
    env = go_sdk_env(b)
    keydir = bindir.parent
    wdir = keydir / "wrappers" / piece.name
    logfile = keydir / "logs" / f"{piece.name}.log"
    if wdir.exists():
        shutil.rmtree(wdir)
    wdir.mkdir(parents=True)
    (wdir / "go.mod").write_text(
        f"module fluxminicluster.local/e2e/{piece.name}\n\ngo 1.25\n\n"
        f"require {PULUMI_SDK} {piece.requires[PULUMI_SDK]}\n"
    )
    b.run_go(["build", "-trimpath", *GO_SDK_PACKAGES], wdir, env, logfile)


def _npm_install(b: ModuleType, piece: Any, bindir: Path, pins: dict[str, str]) -> None:
    """``npm install`` the pinned packages into <key>/node (npm's cache beside the Go caches)."""
    npm = shutil.which("npm")
    if npm is None:
        raise b.PieceError("npm is needed for the node-modules piece and is not on PATH")
    keydir = bindir.parent
    prefix = keydir / NODE_DIR
    logfile = keydir / "logs" / f"{piece.name}.log"
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    (prefix / "package.json").write_text(
        json.dumps({"name": "flux-minicluster-e2e-node", "private": True}, indent=2) + "\n"
    )
    specs = [f"{name}@{pins[key]}" for name, key in NPM_PINS.items()]
    env = dict(os.environ)
    env["npm_config_cache"] = str(b.cache_root() / "npm-cache")
    args = [npm, "install", "--save-exact", "--no-audit", "--no-fund", "--ignore-scripts", *specs]
    with logfile.open("a") as fh:
        fh.write(f"$ {' '.join(args)}\n")
        fh.flush()
        proc = subprocess.run(
            args, cwd=prefix, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False
        )
    if proc.returncode != 0:
        tail = "\n".join(logfile.read_text().splitlines()[-15:])
        raise b.PieceError(f"npm install failed (exit {proc.returncode}):\n{tail}")
    bindir.mkdir(parents=True, exist_ok=True)
    for binary in piece.binaries:
        target = prefix / "node_modules" / binary.package
        if not target.is_file():
            raise b.PieceError(f"npm installed no {target}")
        link = bindir / binary.name
        link.unlink(missing_ok=True)
        link.symlink_to(target)
