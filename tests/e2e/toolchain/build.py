#!/usr/bin/env python3
"""Build the e2e toolchain from the Go module proxy: the Pulumi CLI and plugins, a Kubernetes
control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and kwok.

Python 3.11 standard library only. The pins are the table [tool.flux-minicluster.toolchain] in
pyproject.toml; nothing here names a version. Every piece is a `go build` of Go modules in a
wrapper module generated into the cache (its go.mod is written here, never committed), with
`-trimpath`, `-ldflags "-s -w -X <version vars>"` and GOFLAGS=-mod=mod. The two modules the
proxy refuses (the Python language host, the command provider) build the same way from sources
vendored in ../shared/vendor (toolchain/vendored.py).

    python3 tests/e2e/toolchain/build.py               # build what is missing, reuse the rest
    python3 tests/e2e/toolchain/build.py --piece kwok  # one piece (or a binary's name)
    python3 tests/e2e/toolchain/build.py --list        # the pieces and their modules

Output: ${FLUX_MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-~/.cache}/flux-minicluster}/e2e/<key>/bin,
where <key> hashes the pins, this file, the committed wrapper sources beside it and the Go
version. The bin directory is the last line of stdout, whatever happened. Beside bin:
build-times.json (wall seconds per piece), status.json (per piece: ok or the reason it failed),
logs/<piece>.log (go's output). GOMODCACHE and GOCACHE are <cache root>/go-mod and go-build,
shared by every key, by CI and by developers. Exit status: 0 when every requested piece is built;
1 when any piece failed (stderr names the piece and the module@version or tarball); 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PYPROJECT = REPO / "pyproject.toml"

# The staging modules k8s.io/kubernetes requires at v0.0.0 and replaces with ./staging/src/...
# They are read from its go.mod at build time (see _kubernetes_replaces); this is only the
# fallback used when that go.mod cannot be read.
K8S_STAGING_FALLBACK = [
    "api",
    "apiextensions-apiserver",
    "apimachinery",
    "apiserver",
    "cli-runtime",
    "client-go",
    "cloud-provider",
    "cluster-bootstrap",
    "code-generator",
    "component-base",
    "component-helpers",
    "controller-manager",
    "cri-api",
    "cri-client",
    "cri-streaming",
    "csi-translation-lib",
    "dynamic-resource-allocation",
    "endpointslice",
    "externaljwt",
    "kms",
    "kube-aggregator",
    "kube-controller-manager",
    "kube-proxy",
    "kube-scheduler",
    "kubectl",
    "kubelet",
    "metrics",
    "mount-utils",
    "pod-security-admission",
    "sample-apiserver",
    "sample-cli-plugin",
    "sample-controller",
    "streaming",
]


def log(msg: str) -> None:
    print(f"[e2e-toolchain] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    explicit = os.environ.get("FLUX_MINICLUSTER_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser().resolve() / "flux-minicluster"


def load_pins() -> dict[str, object]:
    with PYPROJECT.open("rb") as fh:
        data = tomllib.load(fh)
    try:
        pins = data["tool"]["flux-minicluster"]["toolchain"]
    except KeyError:
        sys.exit(f"{PYPROJECT}: no [tool.flux-minicluster.toolchain] table")
    return dict(pins)


def go_version() -> str:
    try:
        out = subprocess.run(
            ["go", "env", "GOVERSION"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"go is needed to build the e2e toolchain: {exc}")
    return out


def committed_sources() -> list[Path]:
    """This file and every wrapper source committed beside it (own main.go files)."""
    return [
        p
        for p in sorted(HERE.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in {".py", ".go"}
    ]


def cache_key(pins: dict[str, object], goversion: str) -> str:
    h = hashlib.sha256()
    # sub-tables (the Python SDK pins) do not change a binary
    binary_pins = {k: v for k, v in pins.items() if not isinstance(v, dict)}
    h.update(json.dumps(binary_pins, sort_keys=True).encode())
    h.update(goversion.encode())
    for path in committed_sources():
        h.update(str(path.relative_to(HERE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


@dataclass
class Binary:
    name: str  # the file in bin/
    package: str  # the Go package to build
    module: str  # module@version, for error messages


@dataclass
class Piece:
    name: str
    binaries: list[Binary]
    requires: dict[str, str]  # module -> version in the wrapper go.mod
    replaces: dict[str, str] = field(default_factory=dict)  # module -> "module version"
    ldflags: list[str] = field(default_factory=list)  # -X flags
    tags: str = ""
    own_main: str | None = None  # directory (under HERE) of our own main package
    prepare: Callable[[Piece, Path, dict[str, str]], None] | None = None
    finish: Callable[[Piece, Path, Path, dict[str, str]], None] | None = None
    go_directive: str = "1.25"
    # Instead of a `go build`: put the binaries into bin/ some other way (a file of a module zip).
    fetch: Callable[[Piece, Path, dict[str, str]], None] | None = None

    def modules(self) -> str:
        return ", ".join(sorted({b.module for b in self.binaries}))


def pieces(pins: dict[str, object]) -> list[Piece]:
    p = {k: str(v) for k, v in pins.items() if not isinstance(v, dict)}
    pulumi = p["pulumi"]
    sdk_version_var = "github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"
    kube = p["kubernetes"]
    kube_major, kube_minor = kube.lstrip("v").split(".")[:2]
    staging = "v0." + ".".join(kube.lstrip("v").split(".")[1:])
    cb = "k8s.io/component-base/version"
    kwok = p["kwok"]
    etcd = p["etcd"]
    k8sprov = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    return [
        Piece(
            name="pulumi",
            binaries=[
                Binary(
                    "pulumi",
                    "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
                    f"github.com/pulumi/pulumi/pkg/v3@{pulumi}",
                )
            ],
            requires={
                "github.com/pulumi/pulumi/pkg/v3": pulumi,
                "github.com/pulumi/pulumi/sdk/v3": pulumi,
            },
            ldflags=[f"{sdk_version_var}={pulumi}"],
            tags="osusergo,grpcnotrace",
        ),
        Piece(
            name="pulumi-resource-kubernetes",
            binaries=[
                Binary(
                    "pulumi-resource-kubernetes",
                    ".",
                    f"{k8sprov}@{p['pulumi-kubernetes']}",
                )
            ],
            # Only the provider: MVS keeps the pulumi pkg/sdk its go.mod names (the provider
            # pinned here does not compile against pkg v3.259.0's codegen/schema).
            requires={k8sprov: p["pulumi-kubernetes"]},
            ldflags=[f"{k8sprov}/pkg/version.Version=v{p['pulumi-kubernetes-version']}"],
            own_main="kubernetes",
            prepare=_kubernetes_embeds,
        ),
        # One module graph, one `go build` for the whole control plane and kwok: k8s.io/* are
        # compiled once for all five binaries.
        Piece(
            name="control-plane",
            binaries=[
                Binary(
                    "kube-apiserver",
                    "k8s.io/kubernetes/cmd/kube-apiserver",
                    f"k8s.io/kubernetes@{kube}",
                ),
                Binary(
                    "kube-controller-manager",
                    "k8s.io/kubernetes/cmd/kube-controller-manager",
                    f"k8s.io/kubernetes@{kube}",
                ),
                Binary(
                    "kube-scheduler",
                    "k8s.io/kubernetes/cmd/kube-scheduler",
                    f"k8s.io/kubernetes@{kube}",
                ),
                Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok", f"sigs.k8s.io/kwok@{kwok}"),
                Binary("etcd", "go.etcd.io/etcd/server/v3", f"go.etcd.io/etcd/server/v3@{etcd}"),
            ],
            requires={
                "k8s.io/kubernetes": kube,
                "sigs.k8s.io/kwok": kwok,
                "go.etcd.io/etcd/server/v3": etcd,
            },
            replaces={"@k8s-staging": staging},
            ldflags=[
                f"{cb}.gitVersion={kube}",
                f"{cb}.gitMajor={kube_major}",
                f"{cb}.gitMinor={kube_minor}",
                f"{cb}.gitTreeState=clean",
                f"{cb}.buildDate=1970-01-01T00:00:00Z",
                f"sigs.k8s.io/kwok/pkg/consts.Version={kwok}",
                f"sigs.k8s.io/kwok/pkg/consts.KubeVersion={kube}",
            ],
            go_directive="1.26",
            finish=_copy_kwok_stages,
        ),
        # Programs in TypeScript, Go and YAML: toolchain/languages.py, given this module's helpers.
        *_language_pieces(p),
        # The Python language host and the command provider, from ../shared/vendor.
        *_vendored_pieces(p),
        # flux-core + flux-sched from ../shared/vendor: toolchain/flux.py (a prefix keyed apart).
        *_flux_pieces(pins),
        # The Kueue controller manager and its CRDs: toolchain/kueue.py (a build keyed apart).
        *_kueue_pieces(pins),
    ]


def _language_pieces(p: dict[str, str]) -> list[Piece]:
    import languages  # beside this file

    return languages.pieces(p, sys.modules[__name__])


def _vendored_pieces(p: dict[str, str]) -> list[Piece]:
    import vendored  # beside this file

    return vendored.pieces(p, sys.modules[__name__])


def _flux_pieces(pins: dict[str, object]) -> list[Piece]:
    import flux  # beside this file

    return flux.pieces(pins, sys.modules[__name__])


def _kueue_pieces(pins: dict[str, object]) -> list[Piece]:
    import kueue  # beside this file

    return kueue.pieces(pins, sys.modules[__name__])


class PieceError(Exception):
    pass


def go_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["GOMODCACHE"] = str(root / "go-mod")
    env["GOCACHE"] = str(root / "go-build")
    env["GOFLAGS"] = "-mod=mod -buildvcs=false"
    env["GOTOOLCHAIN"] = "local"
    # sum.golang.org has no entry for the pulumi-kubernetes pseudo-version the proxy serves.
    env["GONOSUMDB"] = "github.com/pulumi"
    env.setdefault("CGO_ENABLED", "0")
    env.pop("GOPATH", None)
    return env


def run_go(args: list[str], cwd: Path, env: dict[str, str], logfile: Path) -> str:
    with logfile.open("a") as fh:
        fh.write(f"$ go {' '.join(args)}\n")
        fh.flush()
        proc = subprocess.run(
            ["go", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        fh.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise PieceError(f"go {args[0]} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def module_dir(module: str, cwd: Path, env: dict[str, str], logfile: Path) -> Path:
    out = run_go(["list", "-m", "-f", "{{.Dir}}", module], cwd, env, logfile).strip()
    return Path(out.splitlines()[-1])


def _kubernetes_replaces(requires: dict[str, str], staging: str, env: dict[str, str]) -> list[str]:
    """k8s.io/kubernetes replaces its staging modules with ./staging/src/...; a wrapper must
    replace each with the published k8s.io/X at the matching v0.y.z. Read the list from its
    go.mod (the `=> ./staging` lines) so any release gets the right set."""
    version = requires["k8s.io/kubernetes"]
    names = list(K8S_STAGING_FALLBACK)
    with contextlib.suppress(OSError, subprocess.CalledProcessError, json.JSONDecodeError):
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(env["GOMODCACHE"]),
        ).stdout
        gomod = Path(json.loads(out)["GoMod"]).read_text()
        found = [
            line.split()[0].removeprefix("k8s.io/")
            for line in gomod.splitlines()
            if "=> ./staging" in line and line.strip().startswith("k8s.io/")
        ]
        if found:
            names = found
    return [f"replace k8s.io/{n} => k8s.io/{n} {staging}" for n in names]


def write_wrapper(piece: Piece, wdir: Path, env: dict[str, str]) -> None:
    if wdir.exists():
        shutil.rmtree(wdir)
    wdir.mkdir(parents=True)
    lines = [f"module fluxminicluster.local/e2e/{piece.name}", "", f"go {piece.go_directive}", ""]
    lines.append("require (")
    lines += [f"\t{m} {v}" for m, v in sorted(piece.requires.items())]
    lines.append(")")
    lines.append("")
    for mod, target in sorted(piece.replaces.items()):
        if mod == "@k8s-staging":
            lines += _kubernetes_replaces(piece.requires, target, env)
        else:
            lines.append(f"replace {mod} => {target}")
    (wdir / "go.mod").write_text("\n".join(lines) + "\n")
    if piece.own_main:
        for src in sorted((HERE / piece.own_main).glob("*.go")):
            shutil.copy(src, wdir / src.name)


def _kubernetes_embeds(piece: Piece, wdir: Path, pins: dict[str, str]) -> None:
    """Our own main embeds the schema and terraform mapping. Upstream generates them from the
    committed schema.json and terraform-mapping.json (git-ignored, so not in the module zip):
    the same here, from the module cache, at build time."""
    env = go_env(cache_root())
    logfile = wdir / "prepare.log"
    mod = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    run_go(["mod", "download", f"{mod}@{piece.requires[mod]}"], wdir, env, logfile)
    src = module_dir(mod, wdir, env, logfile) / "cmd" / "pulumi-resource-kubernetes"
    schema = json.loads((src / "schema.json").read_text())
    schema["version"] = pins["pulumi-kubernetes-version"]
    (wdir / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((src / "terraform-mapping.json").read_text())
    (wdir / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


def _copy_kwok_stages(piece: Piece, wdir: Path, bindir: Path, pins: dict[str, str]) -> None:
    """The kwok binary has no built-in stages; its module ships them as YAML. Keep the ones the
    harness uses beside bin (share/kwok-stages) so a built toolchain is self-contained; the
    harness adjusts them (tests/e2e/controlplane.py)."""
    env = go_env(cache_root())
    kwok = module_dir("sigs.k8s.io/kwok", wdir, env, wdir / "finish.log") / "kustomize" / "stage"
    dest = bindir.parent / "share" / "kwok-stages"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    sources = [
        kwok / "node" / "fast" / "node-initialize.yaml",
        kwok / "node" / "heartbeat-with-lease" / "node-heartbeat-with-lease.yaml",
        *sorted((kwok / "pod" / "general").glob("pod-*.yaml")),
    ]
    for src in sources:
        shutil.copyfile(src, dest / src.name)
        (dest / src.name).chmod(0o644)


def build_piece(piece: Piece, root: Path, keydir: Path, pins: dict[str, str]) -> None:
    env = go_env(root)
    bindir = keydir / "bin"
    wdir = keydir / "wrappers" / piece.name
    logfile = keydir / "logs" / f"{piece.name}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text("")
    if piece.fetch is not None:
        piece.fetch(piece, bindir, pins)
        return
    write_wrapper(piece, wdir, env)
    if piece.prepare:
        piece.prepare(piece, wdir, pins)
    ldflags = "-s -w " + " ".join(f"-X {x}" for x in piece.ldflags)
    pkgs = [b.package for b in piece.binaries]
    outdir = keydir / "staging" / piece.name
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    args = ["build", "-trimpath", "-ldflags", ldflags]
    if piece.tags:
        args += ["-tags", piece.tags]
    if len(pkgs) == 1:
        args += ["-o", str(outdir / piece.binaries[0].name), pkgs[0]]
    else:
        args += ["-o", str(outdir) + "/", *pkgs]
    try:
        run_go(args, wdir, env, logfile)
    except PieceError as exc:
        raise PieceError(f"{exc}\n(full log: {logfile})") from None
    bindir.mkdir(parents=True, exist_ok=True)
    for b in piece.binaries:
        built = outdir / b.name
        if not built.exists():
            # `go build -o dir/` names a binary after its package path, without a /vN suffix.
            parts = b.package.rstrip("/").split("/")
            if len(parts) > 1 and parts[-1][:1] == "v" and parts[-1][1:].isdigit():
                parts = parts[:-1]
            built = outdir / parts[-1]
        os.replace(built, bindir / b.name)
    if piece.finish:
        piece.finish(piece, wdir, bindir, pins)
    shutil.rmtree(outdir, ignore_errors=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_json(path: Path) -> dict[str, object]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--piece",
        action="append",
        default=[],
        help="build only this piece (or the piece holding this binary); repeatable",
    )
    ap.add_argument("--list", action="store_true", help="list the pieces and exit")
    ap.add_argument("--force", action="store_true", help="rebuild even if stamped")
    args = ap.parse_args(argv)

    pins_raw = load_pins()
    pins = {k: str(v) for k, v in pins_raw.items() if not isinstance(v, dict)}
    all_pieces = pieces(pins_raw)
    if args.list:
        for pc in all_pieces:
            bins = ", ".join(b.name for b in pc.binaries)
            print(f"{pc.name}: {bins}  [{pc.modules()}]")
        return 0

    goversion = go_version()
    if pins.get("go") and pins["go"] != goversion:
        log(f"warning: pinned {pins['go']}, building with {goversion} (part of the cache key)")
    root = cache_root()
    key = cache_key(pins_raw, goversion)
    keydir = root / "e2e" / key
    bindir = keydir / "bin"
    stamp = bindir / ".complete"

    selected = all_pieces
    if args.piece:
        selected = []
        for want in args.piece:
            match = [
                pc
                for pc in all_pieces
                if pc.name == want or any(b.name == want for b in pc.binaries)
            ]
            if not match:
                names = ", ".join(pc.name for pc in all_pieces)
                print(f"unknown piece {want!r}; pieces: {names}", file=sys.stderr)
                return 2
            selected += [pc for pc in match if pc not in selected]

    if stamp.exists() and not args.force:
        log(f"complete, reused: {bindir}")
        print(bindir)
        return 0

    failed: list[str] = []
    with locked(keydir / ".lock"):
        if stamp.exists() and not args.force:
            print(bindir)
            return 0
        times_path = keydir / "build-times.json"
        status_path = keydir / "status.json"
        times = read_json(times_path)
        status = read_json(status_path)
        meta = {"key": key, "go": goversion, "cache_root": str(root), "pins": pins_raw}
        total = 0.0
        for pc in selected:
            pstamp = keydir / "stamps" / f"{pc.name}.ok"
            if (
                pstamp.exists()
                and not args.force
                and all((bindir / b.name).exists() for b in pc.binaries)
            ):
                log(f"{pc.name}: built before, reused")
                continue
            log(f"{pc.name}: building {', '.join(b.name for b in pc.binaries)} from {pc.modules()}")
            t0 = time.monotonic()
            try:
                build_piece(pc, root, keydir, pins)
            except (PieceError, OSError, ValueError, KeyError) as exc:
                secs = time.monotonic() - t0
                total += secs
                reason = f"piece {pc.name} ({pc.modules()}) failed after {secs:.0f}s: {exc}"
                log(reason)
                status[pc.name] = {
                    "ok": False,
                    "modules": pc.modules(),
                    "reason": str(exc)[-2000:],
                    "binaries": [b.name for b in pc.binaries],
                }
                times[pc.name] = {"seconds": round(secs, 1), "ok": False}
                failed.append(pc.name)
            else:
                secs = time.monotonic() - t0
                total += secs
                log(f"{pc.name}: built in {secs:.0f}s")
                pstamp.parent.mkdir(parents=True, exist_ok=True)
                pstamp.write_text(f"{secs:.1f}\n")
                status[pc.name] = {
                    "ok": True,
                    "modules": pc.modules(),
                    "binaries": [b.name for b in pc.binaries],
                }
                times[pc.name] = {"seconds": round(secs, 1), "ok": True}
            times_path.write_text(json.dumps(times, indent=2, sort_keys=True) + "\n")
            status_path.write_text(json.dumps(status, indent=2, sort_keys=True) + "\n")
        (keydir / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        log(f"this run: {total:.0f}s wall")
        every = all((keydir / "stamps" / f"{pc.name}.ok").exists() for pc in all_pieces)
        if every:
            bindir.mkdir(parents=True, exist_ok=True)
            stamp.write_text(json.dumps(times, sort_keys=True) + "\n")
    if failed:
        modules = {pc.name: pc.modules() for pc in all_pieces}
        log(f"FAILED pieces: {'; '.join(f'{n} ({modules[n]})' for n in failed)}")
    print(bindir)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
