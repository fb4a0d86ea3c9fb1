"""The toolchain piece ``kueue``: the real Kueue controller manager, ``sigs.k8s.io/kueue/cmd/kueue``
from the Go module proxy, and the CRDs of the same release, for the Kueue scenarios of e2e.

Python 3.11 standard library only, like build.py, which adds this piece (it passes itself in).
The pins are the sub-table [tool.flux-minicluster.toolchain.kueue] of pyproject.toml.

Kueue is large (a ~125 MB binary, several minutes of compiling on two cores) and changes
rarely, so its output has a cache key of its own, ``<cache root>/kueue/<key>/``, where the key
hashes the kueue pins, this file and the Go version only: an edit elsewhere in the toolchain (a
new key for bin/) reuses the build at once, and bin/``kueue`` is a symlink into it. Beside the
binary, ``<key>/crds/`` holds the release's CustomResourceDefinitions, copied from the module
(``config/components/crd/bases``) so that a test installs exactly what the binary serves.
``<key>/.complete`` marks a finished build; a lock serialises two builders of one key.

The build is ``go install sigs.k8s.io/kueue/cmd/kueue@<version>``: Kueue's own go.mod decides
every dependency (no wrapper module), with the toolchain's shared GOMODCACHE and GOCACHE,
``-trimpath`` and ``-ldflags "-s -w"`` like every other piece, and the release in
``pkg/version.GitVersion`` (which ``go install`` leaves at ``v0.0.0-main``): Kueue logs it when it
starts, and the e2e harness checks it is the pinned one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from types import ModuleType
from typing import Any

MODULE = "sigs.k8s.io/kueue"
PACKAGE = f"{MODULE}/cmd/kueue"
CRD_DIR = ("config", "components", "crd", "bases")
VERSION_VAR = f"{MODULE}/pkg/version.GitVersion"  # what Kueue logs at start ("gitVersion")


def kueue_pins(pins_raw: dict[str, object]) -> dict[str, str]:
    table = pins_raw.get("kueue")
    if not isinstance(table, dict):
        raise KeyError("[tool.flux-minicluster.toolchain.kueue] is missing from pyproject.toml")
    return {str(k): str(v) for k, v in table.items()}


def build_key(kp: dict[str, str], goversion: str) -> str:
    h = hashlib.sha256(json.dumps(kp, sort_keys=True).encode())
    h.update(goversion.encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:12]


def pieces(pins_raw: dict[str, object], b: ModuleType) -> list[Any]:
    kp = kueue_pins(pins_raw)
    version = kp["version"]

    def fetch(piece: Any, bindir: Path, _pins: dict[str, str]) -> None:
        keydir = build(b, kp)
        bindir.mkdir(parents=True, exist_ok=True)
        link = bindir / "kueue"
        link.unlink(missing_ok=True)
        link.symlink_to(keydir / "bin" / "kueue")

    return [
        b.Piece(
            name="kueue",
            binaries=[b.Binary("kueue", PACKAGE, f"{MODULE}@{version}")],
            requires={},
            fetch=fetch,
        )
    ]


def crd_dir(kueue_binary: Path) -> Path:
    """The CRDs of the release a ``bin/kueue`` (the symlink or its target) was built from."""
    return kueue_binary.resolve().parent.parent / "crds"


def build(b: ModuleType, kp: dict[str, str]) -> Path:
    root: Path = b.cache_root()
    keydir = root / "kueue" / build_key(kp, b.go_version())
    done = keydir / ".complete"
    if done.exists():
        return keydir
    with b.locked(keydir / ".lock"):
        if done.exists():
            return keydir
        version = kp["version"]
        env = b.go_env(root)
        logfile = keydir / "build.log"
        logfile.write_text("")
        bindir = keydir / "bin"
        if bindir.exists():
            shutil.rmtree(bindir)
        env["GOBIN"] = str(bindir)
        t0 = time.monotonic()
        b.log(f"kueue: go install {PACKAGE}@{version} (log {logfile})")
        b.run_go(
            [
                "install",
                "-trimpath",
                "-ldflags",
                f"-s -w -X {VERSION_VAR}={version}",
                f"{PACKAGE}@{version}",
            ],
            keydir,
            env,
            logfile,
        )
        env.pop("GOBIN")
        out = b.run_go(["mod", "download", "-json", f"{MODULE}@{version}"], keydir, env, logfile)
        source = Path(json.loads(out[out.index("{") :])["Dir"]).joinpath(*CRD_DIR)
        crds = keydir / "crds"
        if crds.exists():
            shutil.rmtree(crds)
        crds.mkdir()
        for crd in sorted(source.glob("*.yaml")):
            shutil.copyfile(crd, crds / crd.name)
            (crds / crd.name).chmod(0o644)
        if not any(crds.iterdir()):
            raise b.PieceError(f"{source}: no CRDs in the module {MODULE}@{version}")
        seconds = time.monotonic() - t0
        size = os.path.getsize(bindir / "kueue")
        done.write_text(json.dumps({"seconds": round(seconds), "bytes": size}) + "\n")
        b.log(f"kueue: built in {seconds:.0f}s ({size / 1e6:.0f} MB) into {keydir}")
    return keydir
