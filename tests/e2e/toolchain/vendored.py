"""The toolchain pieces built from vendored sources (build.py adds them).

Python 3.11 standard library only, like build.py, whose Piece machinery and helpers these pieces
use (build.py passes itself in, as for languages.py). The Go module proxy refuses two Pulumi
modules, so their sources are kept as tarballs in ``../shared/vendor`` beside the checkout
(``FLUX_MINICLUSTER_VENDOR`` names another directory); every dependency they have is served by
the proxy. The pins (tarball version and sha256) are keys of [tool.flux-minicluster.toolchain]
in pyproject.toml, so a new tarball is a new cache key.

- ``pulumi-language-python``: the real Python language host at the CLI's release
  (``pulumi-language-python-<pin>.tar.gz``: ``sdk/python/cmd/pulumi-language-python/``). Its
  go.mod replaces pkg/v3 and sdk/v3 with the monorepo's directories; the builder drops those two
  replaces and requires both at the CLI's version instead, then ``go build``s it into bin/ with
  ``pulumi-language-python-exec`` (the script it runs programs through) beside it.
- ``pulumi-resource-command``: the command provider (``pulumi-command-<pin>.tar.gz``: its root
  ``go.mod``/``go.sum`` and ``provider/``), ``go build ./provider/cmd/pulumi-resource-command``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

PULUMI_PKG = "github.com/pulumi/pulumi/pkg/v3"
PULUMI_SDK = "github.com/pulumi/pulumi/sdk/v3"
LANG_MOD = "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3"
CMD_MOD = "github.com/pulumi/pulumi-command"


def vendor_dir(repo: Path) -> Path:
    """``$FLUX_MINICLUSTER_VENDOR``, else ``../shared/vendor`` beside the checkout."""
    explicit = os.environ.get("FLUX_MINICLUSTER_VENDOR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    return repo.resolve().parent / "shared" / "vendor"


def pieces(p: dict[str, str], b: ModuleType) -> list[Any]:
    """The pieces, as ``b.Piece`` (``b`` is build.py's module)."""
    host_tar = f"pulumi-language-python-{p['pulumi-language-python'].lstrip('v')}.tar.gz"
    cmd_tar = f"pulumi-command-{p['pulumi-command']}.tar.gz"

    def language_host(piece: Any, bindir: Path, pins: dict[str, str]) -> None:
        src = _unpack(b, piece, bindir, host_tar, pins["pulumi-language-python-sha256"])
        pkg = src / "sdk" / "python" / "cmd" / "pulumi-language-python"
        pulumi = pins["pulumi"]
        edit = [f"-dropreplace={PULUMI_PKG}", f"-dropreplace={PULUMI_SDK}"]
        edit += [f"-require={PULUMI_PKG}@{pulumi}", f"-require={PULUMI_SDK}@{pulumi}"]
        _go(b, piece, bindir, pkg, ["mod", "edit", *edit])
        version = f"{PULUMI_SDK}/go/common/version.Version={pulumi}"
        _build(b, piece, bindir, pkg, ".", [version], tags="osusergo,grpcnotrace")
        _install(pkg.parent / "pulumi-language-python-exec", bindir)

    def command_provider(piece: Any, bindir: Path, pins: dict[str, str]) -> None:
        src = _unpack(b, piece, bindir, cmd_tar, pins["pulumi-command-sha256"])
        version = f"{CMD_MOD}/provider/pkg/version.Version=v{pins['pulumi-command-version']}"
        _build(b, piece, bindir, src, "./provider/cmd/pulumi-resource-command", [version])

    return [
        b.Piece(
            name="pulumi-language-python",
            binaries=[
                b.Binary("pulumi-language-python", LANG_MOD, f"{host_tar} ({LANG_MOD})"),
                b.Binary("pulumi-language-python-exec", LANG_MOD, f"{host_tar} ({LANG_MOD})"),
            ],
            requires={},
            fetch=language_host,
        ),
        b.Piece(
            name="pulumi-resource-command",
            binaries=[
                b.Binary("pulumi-resource-command", f"{CMD_MOD}/provider", f"{cmd_tar} ({CMD_MOD})")
            ],
            requires={},
            fetch=command_provider,
        ),
    ]


def _unpack(b: ModuleType, piece: Any, bindir: Path, name: str, sha256: str) -> Path:
    """Check the tarball against its pinned sha256 and unpack it into the piece's wrapper
    directory (inside the cache); return its top directory."""
    vendor = vendor_dir(b.REPO)
    tarball = vendor / name
    if not tarball.is_file():
        where = "../shared/vendor beside the checkout (or set FLUX_MINICLUSTER_VENDOR)"
        if os.environ.get("FLUX_MINICLUSTER_VENDOR"):
            where = "FLUX_MINICLUSTER_VENDOR"
        raise b.PieceError(
            f"{tarball} is missing: the module proxy refuses this module, so its source is "
            f"vendored; put {name} into {where}"
        )
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    if digest != sha256:
        raise b.PieceError(f"{tarball}: sha256 {digest}, the pins say {sha256}")
    wdir = bindir.parent / "wrappers" / piece.name
    if wdir.exists():
        shutil.rmtree(wdir)
    wdir.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(wdir, filter="data")
    tops = [d for d in wdir.iterdir() if d.is_dir()]
    if len(tops) != 1:
        raise b.PieceError(f"{tarball} does not unpack to one directory: {tops}")
    return tops[0]


def _go(b: ModuleType, piece: Any, bindir: Path, cwd: Path, args: list[str]) -> None:
    logfile = bindir.parent / "logs" / f"{piece.name}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    try:
        b.run_go(args, cwd, b.go_env(b.cache_root()), logfile)
    except b.PieceError as exc:
        raise b.PieceError(f"{exc}\n(full log: {logfile})") from None


def _build(
    b: ModuleType,
    piece: Any,
    bindir: Path,
    cwd: Path,
    package: str,
    xflags: list[str],
    tags: str = "",
) -> None:
    """``go build`` one binary (named after the piece's first) into bin/, atomically."""
    bindir.mkdir(parents=True, exist_ok=True)
    dest = bindir / piece.binaries[0].name
    tmp = dest.with_name(dest.name + ".tmp")
    args = ["build", "-trimpath", "-ldflags", "-s -w " + " ".join(f"-X {x}" for x in xflags)]
    if tags:
        args += ["-tags", tags]
    _go(b, piece, bindir, cwd, [*args, "-o", str(tmp), package])
    os.replace(tmp, dest)


def _install(script: Path, bindir: Path) -> None:
    dest = bindir / script.name
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.copyfile(script, tmp)
    tmp.chmod(0o755)
    os.replace(tmp, dest)
