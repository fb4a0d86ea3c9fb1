"""The toolchain piece ``flux``: flux-core and flux-sched (Fluxion) built from the release tarballs
in ``../shared/vendor`` (no registry here serves Flux), for the real brokers of the e2e node agent.

Python 3.11 standard library only, like build.py, which adds this piece (it passes itself in).
The pins are the sub-table [tool.flux-minicluster.toolchain.flux] of pyproject.toml: the two
release versions and the sha256 of each tarball.

The prefix has a cache key of its own, ``<cache root>/flux/<key>/prefix``, where the key hashes
the flux pins and this file only: an edit elsewhere in the toolchain (a new key for bin/) reuses
the prefix at once, and bin/``flux`` is a symlink into it. ``<prefix>/.complete`` marks a finished
build; a lock serialises two builders of one key. The recipe (as ../shared/vendor/README.md
describes it): Debian's build packages (apt-get installed when one is missing), Debian's
/usr/bin/python3 and a PATH without any virtualenv; flux-core by autotools with
FLUX_VERSION at autogen (the tarballs carry no .git), flux-sched by cmake against the prefix's
pkgconfig; then a smoke test: a 2-broker instance whose scheduler is Fluxion runs a 2-node job.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
# ../shared beside the checkout: the worktree's parent holds it (as tests read `../shared`).
VENDOR_ENV = "FLUX_MINICLUSTER_VENDOR"
DEBIAN_PACKAGES = [
    "autoconf",
    "automake",
    "libtool",
    "pkg-config",
    "make",
    "gcc",
    "g++",
    "libzmq3-dev",
    "uuid-dev",
    "libjansson-dev",
    "liblz4-dev",
    "libarchive-dev",
    "libhwloc-dev",
    "libsqlite3-dev",
    "lua5.1",
    "liblua5.1-0-dev",
    "lua-posix",
    "python3-dev",
    "python3-cffi",
    "python3-ply",
    "python3-yaml",
    "libsystemd-dev",
    "libncurses-dev",
    "aspell",
    "aspell-en",
    "libboost-dev",
    "libboost-graph-dev",
    "libyaml-cpp-dev",
    "libedit-dev",
    "libxml2-dev",
    "python3-jsonschema",
    "cmake",
    # not for the build: the node agent enforces NetworkPolicy with iptables in each pod's netns
    "iptables",
]
CLEAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
PYTHON = "/usr/bin/python3"


def vendor_dir(repo: Path) -> Path:
    explicit = os.environ.get(VENDOR_ENV)
    return Path(explicit) if explicit else repo.parent / "shared" / "vendor"


def flux_pins(pins_raw: dict[str, object]) -> dict[str, str]:
    table = pins_raw.get("flux")
    if not isinstance(table, dict):
        raise KeyError("[tool.flux-minicluster.toolchain.flux] is missing from pyproject.toml")
    return {str(k): str(v) for k, v in table.items()}


def prefix_key(fp: dict[str, str]) -> str:
    h = hashlib.sha256(json.dumps(fp, sort_keys=True).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:12]


def prefix_dir(root: Path, fp: dict[str, str]) -> Path:
    return root / "flux" / prefix_key(fp) / "prefix"


def pieces(pins_raw: dict[str, object], b: ModuleType) -> list[Any]:
    fp = flux_pins(pins_raw)
    core, sched = fp["core"], fp["sched"]

    def fetch(piece: Any, bindir: Path, _pins: dict[str, str]) -> None:
        try:
            prefix = build_prefix(b, fp)
        except FluxBuildError as exc:
            raise b.PieceError(str(exc)) from None
        bindir.mkdir(parents=True, exist_ok=True)
        link = bindir / "flux"
        link.unlink(missing_ok=True)
        link.symlink_to(prefix / "bin" / "flux")

    return [
        b.Piece(
            name="flux",
            binaries=[
                b.Binary(
                    "flux",
                    "flux-core + flux-sched",
                    f"flux-core-{core}.tar.gz, flux-sched-{sched}.tar.gz (../shared/vendor)",
                )
            ],
            requires={},
            fetch=fetch,
        )
    ]


def _run(args: list[str], cwd: Path, env: dict[str, str], logfile: Path, what: str) -> None:
    with logfile.open("a") as fh:
        fh.write(f"$ {' '.join(args)}  (in {cwd})\n")
        fh.flush()
        proc = subprocess.run(args, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = "".join(logfile.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise FluxBuildError(f"{what} failed (exit {proc.returncode}); log {logfile}:\n{tail}")


class FluxBuildError(Exception):
    pass


def missing_packages() -> list[str]:
    missing = []
    for pkg in DEBIAN_PACKAGES:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True
        ).stdout
        if "install ok installed" not in out:
            missing.append(pkg)
    return missing


def install_packages(logfile: Path) -> None:
    missing = missing_packages()
    if not missing:
        return
    if os.geteuid() != 0:
        raise FluxBuildError(
            f"Flux needs Debian packages, install them as root: {' '.join(missing)}"
        )
    env = {"PATH": CLEAN_PATH, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-q"], Path("/"), env, logfile, "apt-get update")
    _run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        Path("/"),
        env,
        logfile,
        f"apt-get install {' '.join(missing)}",
    )


def _tarball(vendor: Path, name: str, sha: str) -> Path:
    path = vendor / name
    if not path.is_file():
        raise FluxBuildError(
            f"{path} is missing: Flux is built from the release tarballs in ../shared/vendor "
            f"(beside the checkout, or ${VENDOR_ENV}); no registry here serves Flux"
        )
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != sha:
        raise FluxBuildError(f"{path}: sha256 {got}, the pins say {sha}")
    return path


def _unpack(tarball: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(tarball) as tf:
        tf.extractall(dest, filter="data")
    (top,) = list(dest.iterdir())
    return top


def build_prefix(b: ModuleType, fp: dict[str, str]) -> Path:
    root: Path = b.cache_root()
    prefix = prefix_dir(root, fp)
    done = prefix / ".complete"
    if done.exists():
        return prefix
    keydir = prefix.parent
    with b.locked(keydir / ".lock"):
        if done.exists():
            return prefix
        vendor = vendor_dir(b.REPO)
        core = _tarball(vendor, f"flux-core-{fp['core']}.tar.gz", fp["core-sha256"])
        sched = _tarball(vendor, f"flux-sched-{fp['sched']}.tar.gz", fp["sched-sha256"])
        logfile = keydir / "build.log"
        logfile.write_text("")
        t0 = time.monotonic()
        install_packages(logfile)
        if prefix.exists():
            shutil.rmtree(prefix)
        work = keydir / "work"
        env = {"PATH": CLEAN_PATH, "HOME": str(Path.home()), "LANG": "C.UTF-8"}
        jobs = str(os.cpu_count() or 2)
        b.log(f"flux: flux-core {fp['core']} (log {logfile})")
        src = _unpack(core, work / "core")
        _run(["./autogen.sh"], src, {**env, "FLUX_VERSION": fp["core"]}, logfile, "autogen")
        _run(
            [
                "./configure",
                f"--prefix={prefix}",
                "--disable-docs",
                f"--with-systemdsystemunitdir={prefix}/lib/systemd/system",
                f"PYTHON={PYTHON}",
            ],
            src,
            env,
            logfile,
            "flux-core configure",
        )
        _run(["nice", "make", f"-j{jobs}"], src, env, logfile, "flux-core make")
        _run(["make", "install"], src, env, logfile, "flux-core make install")
        b.log(f"flux: flux-sched {fp['sched']}")
        src = _unpack(sched, work / "sched")
        build = work / "sched-build"
        cenv = {
            **env,
            "PKG_CONFIG_PATH": f"{prefix}/lib/pkgconfig",
            "FLUX_SCHED_VERSION": fp["sched"],
        }
        _run(
            [
                "cmake",
                "-S",
                str(src),
                "-B",
                str(build),
                "-G",
                "Unix Makefiles",
                f"-DCMAKE_INSTALL_PREFIX={prefix}",
                "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                f"-DPython_EXECUTABLE={PYTHON}",
            ],
            work,
            cenv,
            logfile,
            "flux-sched cmake",
        )
        _run(
            ["nice", "make", "-C", str(build), f"-j{jobs}"], work, cenv, logfile, "flux-sched make"
        )
        _run(["make", "-C", str(build), "install"], work, cenv, logfile, "flux-sched install")
        smoke = (
            "flux module list | grep -q sched-fluxion-qmanager && flux run -N2 hostname "
            "&& flux resource list"
        )
        _run(
            [str(prefix / "bin" / "flux"), "start", "--test-size=2", "sh", "-c", smoke],
            work,
            env,
            logfile,
            "smoke test (2 brokers, Fluxion, a 2-node job)",
        )
        shutil.rmtree(work, ignore_errors=True)
        done.write_text(f"{time.monotonic() - t0:.0f}\n")
        b.log(f"flux: built in {time.monotonic() - t0:.0f}s into {prefix}")
    return prefix
