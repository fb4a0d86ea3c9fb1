#!/usr/bin/env python3
"""Build what a real Kubernetes node of e2e runs: kubelet, kube-proxy and kubectl from the control
plane's own module graph, a lean CoreDNS, kube-router's firewall (NetworkPolicy) controller,
Debian's containerd, runc and CNI plugins, and the images pods run (no registry is reachable).

Python 3.11 standard library only, like tests/e2e/toolchain/build.py, whose helpers it imports
read-only (go_env, run_go, build_piece, the control-plane piece; from toolchain/flux.py the Flux
prefix, built or reused, that the flux view image carries): nothing here lives under
tests/e2e/toolchain, so the toolchain's key (it hashes every .py/.go file there and the top-level
pins) does not change, and its warm bin/ stays usable.

The pins are [tool.flux-minicluster.toolchain.nodes] of pyproject.toml (a sub-table: the main key
ignores it) and, for the Kubernetes binaries, the table's `kubernetes` pin. Every piece has a key
of its own: the hash of its recipe (the pins it uses, the module requirements, the flags, the
sources it compiles, RECIPES[piece]) and the Go version, so a new CoreDNS rebuilds CoreDNS only.

    <cache root>/nodes/<piece>/<key>/     bin/ (or images/), logs, .complete (JSON: seconds, ...)
    <cache root>/nodes/set-<key>/         bin/ and images/: symlinks into the pieces of one set,
                                          versions.json, build-times.json (wall seconds per piece)

    python3 tests/e2e/realnode/toolchain.py               # build what is missing, reuse the rest
    python3 tests/e2e/realnode/toolchain.py --piece coredns
    python3 tests/e2e/realnode/toolchain.py --list

The set directory is the last line of stdout when every piece is there. Exit status 0 when every
requested piece is built, 1 when one failed (stderr says which, the log holds go's output).
The Debian packages are not cached: the piece checks dpkg and apt-get installs what is missing.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
TOOLCHAIN = HERE.parent / "toolchain"
COREDNS = "github.com/coredns/coredns"
KUBE_ROUTER = "github.com/cloudnativelabs/kube-router/v2"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Bump a piece's number when its recipe below changes in a way its pins do not show.
RECIPES = {
    "debian": 1,
    "kube-node": 1,
    "coredns": 1,
    "kube-router": 1,
    "images": 1,
    "flux-images": 3,
    "flux-mpi": 2,
    "flux-lammps": 1,
    "flux-mpich": 1,
    "flux-operator": 1,
}


def builder() -> ModuleType:
    """tests/e2e/toolchain/build.py, imported read-only (no bytecode written beside it)."""
    if "build" in sys.modules:
        return sys.modules["build"]
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(TOOLCHAIN))
    import build

    return build


@dataclasses.dataclass
class NodePiece:
    name: str
    outputs: list[str]  # files the piece leaves in its out directory (bin/x or images/x)
    recipe: dict[str, Any]  # everything that decides the outputs, hashed into the key
    run: Callable[[Path], dict[str, Any]]  # builds into the key directory; returns facts
    keyed: bool = True  # False: system state (apt), checked every time

    def key(self, goversion: str) -> str:
        body = {"recipe": self.recipe, "go": goversion, "rev": RECIPES[self.name]}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]


def node_pins(pins_raw: dict[str, object]) -> dict[str, Any]:
    table = pins_raw.get("nodes")
    if not isinstance(table, dict):
        raise KeyError("[tool.flux-minicluster.toolchain.nodes] is missing from pyproject.toml")
    return dict(table)


def _sh(cmd: list[str], logfile: Path, **kw: Any) -> str:
    with logfile.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw
        )
        fh.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise RuntimeError(f"{cmd[0]} failed (exit {proc.returncode}):\n{tail}\n(log {logfile})")
    return proc.stdout


# -- Debian's container runtime ------------------------------------------------------------------


def debian_versions(packages: list[str]) -> dict[str, str]:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev} ${Version}\n", *packages],
        capture_output=True,
        text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, status, version = [*line.split(), "", "", ""][:3]
        if status.startswith("ii"):
            found[name] = version
    return found


def debian_piece(np: dict[str, Any], logdir: Path) -> NodePiece:
    packages = [str(p) for p in np["debian-packages"]]

    def run(_keydir: Path) -> dict[str, Any]:
        missing = [p for p in packages if p not in debian_versions(packages)]
        if missing:
            logfile = logdir / "debian.log"
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            _sh(["apt-get", "update", "-q"], logfile, env=env)
            _sh(
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
                logfile,
                env=env,
            )
        versions = debian_versions(packages)
        still = [p for p in packages if p not in versions]
        if still:
            raise RuntimeError(f"apt-get left these Debian packages missing: {still}")
        return {"installed": missing, "versions": versions}

    return NodePiece("debian", [], {"packages": packages}, run, keyed=False)


# -- Go pieces -----------------------------------------------------------------------------------


def kube_node_piece(b: ModuleType, pins_raw: dict[str, object]) -> tuple[Any, dict[str, Any]]:
    """kubelet, kube-proxy and kubectl: the control-plane piece with other binaries. Same go.mod
    (k8s.io/kubernetes, kwok and etcd required, the staging modules replaced), same -ldflags, same
    caches: the packages the control plane compiled are reused, the API server and the kubelet
    agree on the version to the commit."""
    cp = next(p for p in b.pieces(pins_raw) if p.name == "control-plane")
    kube = str(pins_raw["kubernetes"])
    binaries = [
        b.Binary(name, f"k8s.io/kubernetes/cmd/{name}", f"k8s.io/kubernetes@{kube}")
        for name in ("kubelet", "kube-proxy", "kubectl")
    ]
    piece = dataclasses.replace(cp, name="kube-node", binaries=binaries, finish=None)
    recipe = {
        "binaries": [dataclasses.astuple(x) for x in binaries],
        "requires": piece.requires,
        "replaces": piece.replaces,
        "ldflags": piece.ldflags,
        "tags": piece.tags,
        "go": piece.go_directive,
    }
    return piece, recipe


COREDNS_MAIN = """// Generated by tests/e2e/realnode/toolchain.py: CoreDNS with only the plugins
// the cluster DNS of the real nodes uses (upstream's main imports every plugin of plugin.cfg).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
{imports}
)

// The directives the Corefile may use, in upstream's order (plugin.cfg), which is the order
// a query passes them; the others are not compiled in.
func init() {{
	keep := map[string]bool{{{keep}}}
	var directives []string
	for _, name := range dnsserver.Directives {{
		if keep[name] {{
			directives = append(directives, name)
		}}
	}}
	dnsserver.Directives = directives
}}

func main() {{
	coremain.Run()
}}
"""


def coredns_main(plugins: list[str]) -> str:
    imports = "\n".join(f'\t_ "{COREDNS}/plugin/{p}"' for p in plugins)
    keep = ", ".join(f'"{p}": true' for p in plugins)
    return COREDNS_MAIN.format(imports=imports, keep=keep)


def coredns_piece(b: ModuleType, np: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    version = str(np["coredns"])
    plugins = [str(p) for p in np["coredns-plugins"]]
    main = coredns_main(plugins)

    def prepare(_piece: Any, wdir: Path, _pins: dict[str, str]) -> None:
        (wdir / "main.go").write_text(main)

    piece = b.Piece(
        name="coredns",
        binaries=[b.Binary("coredns", ".", f"{COREDNS}@{version}")],
        requires={COREDNS: version},
        ldflags=[f"{COREDNS}/coremain.GitCommit={version}"],
        prepare=prepare,
        go_directive="1.26",
    )
    recipe = {"version": version, "main": main, "ldflags": piece.ldflags, "go": "1.26"}
    return piece, recipe


def go_piece(name: str, b: ModuleType, piece: Any, recipe: dict[str, Any]) -> NodePiece:
    def run(keydir: Path) -> dict[str, Any]:
        b.build_piece(piece, b.cache_root(), keydir, {})
        return {}

    return NodePiece(name, [f"bin/{x.name}" for x in piece.binaries], recipe, run)


def kube_router_piece(b: ModuleType, np: dict[str, Any]) -> NodePiece:
    """`go install` of kube-router's own module (its go.mod decides every dependency, as
    upstream's release builds do), with the toolchain's caches and flags."""
    version = str(np["kube-router"])
    package = f"{KUBE_ROUTER}/cmd/kube-router"
    ldflags = f"-s -w -X {KUBE_ROUTER}/pkg/version.Version={version}"
    ldflags += f" -X {KUBE_ROUTER}/pkg/version.BuildDate=1970-01-01T00:00:00Z"

    def run(keydir: Path) -> dict[str, Any]:
        env = b.go_env(b.cache_root())
        env["GOBIN"] = str(keydir / "bin")
        logfile = keydir / "logs" / "kube-router.log"
        b.run_go(
            ["install", "-trimpath", "-ldflags", ldflags, f"{package}@{version}"],
            keydir,
            env,
            logfile,
        )
        return {}

    recipe = {"version": version, "package": package, "ldflags": ldflags}
    return NodePiece("kube-router", ["bin/kube-router"], recipe, run)


# -- images --------------------------------------------------------------------------------------


def _tar_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def docker_archive(
    out: Path, layer: Path, tags: list[str], cmd: list[str], env: list[str] | None = None
) -> str:
    """A `docker save` layout with one uncompressed layer (what `ctr images import` reads):
    <config digest>.json, <layer digest>/layer.tar, manifest.json naming the tags. ``env``: the
    image's environment beside PATH (``NAME=value``, as a Dockerfile's ENV). Returns the
    image's config digest (its ID)."""
    digest = hashlib.sha256()
    with layer.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    diff = digest.hexdigest()
    epoch = "1970-01-01T00:00:00Z"
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": epoch,
        "config": {"Env": [PATH_ENV, *(env or [])], "Cmd": cmd, "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff}"]},
        "history": [{"created": epoch, "created_by": "tests/e2e/realnode/toolchain.py"}],
    }
    blob = json.dumps(config, sort_keys=True).encode()
    image_id = hashlib.sha256(blob).hexdigest()
    manifest = [{"Config": f"{image_id}.json", "RepoTags": tags, "Layers": [f"{diff}/layer.tar"]}]
    part = out.with_name(out.name + ".part")
    with tarfile.open(part, "w", format=tarfile.PAX_FORMAT) as tar:
        _tar_bytes(tar, f"{image_id}.json", blob)
        tar.add(layer, arcname=f"{diff}/layer.tar")
        _tar_bytes(tar, "manifest.json", json.dumps(manifest).encode())
    os.replace(part, out)
    return f"sha256:{image_id}"


def image_dirs(keydir: Path) -> tuple[Path, Path]:
    """A key directory's images/ and a fresh work/ (a failed build's leftovers removed)."""
    work = keydir / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (keydir / "images").mkdir(exist_ok=True)
    return keydir / "images", work


def minbase_image(
    out: Path,
    rootfs: Path,
    suite: str,
    tags: list[str],
    cmd: list[str],
    logfile: Path,
    include: list[str] | None = None,
    hooks: list[str] | None = None,
    env: list[str] | None = None,
) -> dict[str, Any]:
    """`mmdebstrap --variant=minbase` of ``suite`` with ``include`` and customize ``hooks`` into
    the tar ``rootfs``, written out as the docker-archive ``out`` (``env``: the image's
    environment beside PATH): its id, seconds and bytes."""
    t0 = time.monotonic()
    argv = ["mmdebstrap", "--variant=minbase", "--mode=root"]
    argv += [f"--include={','.join(include)}"] if include else []
    argv += [f"--customize-hook={hook}" for hook in hooks or []]
    _sh([*argv, suite, str(rootfs)], logfile)
    return {
        "id": docker_archive(out, rootfs, tags, cmd, env),
        "seconds": round(time.monotonic() - t0, 1),
        "bytes": rootfs.stat().st_size,
    }


def images_piece(np: dict[str, Any]) -> NodePiece:
    suite = str(np["image-suite"])
    include = [str(p) for p in np["image-include"]]
    tags = [str(t) for t in np["image-tags"]]
    pause_tag = str(np["pause-tag"])
    pause_c = (HERE / "pause.c").read_text()

    def run(keydir: Path) -> dict[str, Any]:
        images, work = image_dirs(keydir)
        logfile = keydir / "logs" / "images.log"
        facts: dict[str, Any] = {}
        # pause: one static binary, the whole image
        t0 = time.monotonic()
        _sh(["gcc", "-O2", "-static", "-o", str(work / "pause"), str(HERE / "pause.c")], logfile)
        with tarfile.open(work / "pause-layer.tar", "w") as tar:
            tar.add(work / "pause", arcname="pause")
        facts["pause"] = {
            "id": docker_archive(
                images / "pause.tar", work / "pause-layer.tar", [pause_tag], ["/pause"]
            ),
            "seconds": round(time.monotonic() - t0, 1),
        }
        # debian: a minbase root file system from Debian's packages
        facts["debian"] = minbase_image(
            images / "debian.tar", work / "rootfs.tar", suite, tags, ["/bin/sh"], logfile, include
        )
        shutil.rmtree(work)
        return facts

    recipe = {"suite": suite, "include": include, "tags": tags, "pause": pause_tag, "c": pause_c}
    return NodePiece("images", ["images/pause.tar", "images/debian.tar"], recipe, run)


def vendor_tarball(name: str, sha256: str) -> Path:
    """A tarball of ../shared/vendor beside the checkout (or $FLUX_MINICLUSTER_VENDOR), its
    sha256 checked against the pin."""
    explicit = os.environ.get("FLUX_MINICLUSTER_VENDOR")
    path = (Path(explicit) if explicit else HERE.parents[2].parent / "shared" / "vendor") / name
    if not path.is_file():
        raise RuntimeError(f"{path} is missing (../shared/vendor beside the checkout)")
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != sha256:
        raise RuntimeError(f"{path}: sha256 {got}, the pin says {sha256}")
    return path


# -- the Flux images: an application image and a flux view ----------------------------------------

# Where the Flux Operator's view images keep their software (a spack install tree): the view init
# container copies it into the pod, the Flux container copies it back to this path, and the view's
# binaries find their libraries, modules and libexec there by their absolute RPATHs and paths.
VIEW_SOFTWARE = "/opt/software"
# The spack environment's view, as the operator's view images have it: /opt/view links to
# /opt/views/._view/<hash>. The operator's init script lists that directory for the <hash> and
# copies what is in it (the component's follows /opt/view); here <hash> links to the prefix.
VIEW_ENV = "/opt/views/._view"


def relocated_prefix(old: str, key: str) -> str:
    """The prefix's path in the view image: under /opt/software and exactly as long as ``old``,
    padded like spack's relocatable build caches (`__spack_path_placeholder__`), so that the
    absolute paths compiled into binaries, .pyc and scripts are rewritten byte for byte."""
    head, tail = f"{VIEW_SOFTWARE}/", f"/flux-{key}"
    pad = len(old) - len(head) - len(tail)
    if pad < 2:
        raise RuntimeError(
            f"the Flux prefix {old} is shorter than {head}__{tail}: its paths cannot be rewritten "
            "in place (set FLUX_MINICLUSTER_CACHE to a longer path)"
        )
    return head + "_" * pad + tail


def relocate_tree(src: Path, dst: Path, old: str, new: str, skip: set[str]) -> dict[str, int]:
    """Copy ``src`` to ``dst`` with every occurrence of ``old`` replaced by ``new`` (same length)
    in file contents and symlink targets; ELF files lose their debug sections. Modes are kept,
    made readable by all (the view init container runs as another user than root)."""
    assert len(old) == len(new)
    ob, nb = old.encode(), new.encode()
    counts = {"files": 0, "rewritten": 0, "stripped": 0}
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        dirnames[:] = sorted(d for d in dirnames if str(rel / d) not in skip)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        os.chmod(dst / rel, 0o755)
        for name in sorted(dirnames + filenames):
            s, d = Path(dirpath) / name, dst / rel / name
            if s.is_symlink():
                d.symlink_to(os.readlink(s).replace(old, new))
            elif s.is_file():
                data = s.read_bytes()
                if ob in data:
                    data = data.replace(ob, nb)
                    counts["rewritten"] += 1
                d.write_bytes(data)
                os.chmod(d, (s.stat().st_mode & 0o7777) | 0o444)
                counts["files"] += 1
                if data[:4] == b"\x7fELF":
                    subprocess.run(["strip", "--strip-debug", str(d)], check=True)
                    counts["stripped"] += 1
    return counts


# -- flux-pmix: PMIx for the job shell, in the view ------------------------------------------------

# Under the prefix (relocated with it): flux-pmix's job shell plugin, on the shell's plugin path,
# and the libraries it needs that the application image may lack. Nothing of the view turns it on
# for `-o mpi=openmpi@5`: the entrypoint's shell initrc does, wherever the plugin is on the path
# (templates/wait.sh.j2), so the operator's OSU example proves the project's route.
PMIX_PLUGIN = "lib/flux/shell/plugins/pmix.so"
PMIX_LIBDIR = "lib/flux/pmix"
# Run in flux-pmix's unpacked source: configure against the Flux prefix (its pkgconfig) and
# Debian's libpmix-dev, make, install under DESTDIR. PMIX_LIBS replaces what pmix.pc says
# (`-Wl,-rpath,<Debian's pmix2/lib> -Wl,--enable-new-dtags`): the plugin gets a DT_RPATH (not a
# DT_RUNPATH) naming the prefix's lib and PMIX_LIBDIR, since the dynamic loader searches a DT_RPATH
# for the dependencies of the plugin's dependencies too (libpmix.so.2 has no path of its own and
# needs munge and libevent), where a DT_RUNPATH serves the plugin's own NEEDED only.
FLUX_PMIX_BUILD = r"""set -eu
./autogen.sh
./configure --prefix="$PREFIX" --without-openmpi \
    PMIX_CFLAGS="$(pkg-config --cflags pmix)" \
    PMIX_LIBS="-L$(pkg-config --variable=libdir pmix) -lpmix" \
    LDFLAGS="-Wl,--disable-new-dtags -Wl,-rpath,$PREFIX/$LIBDIR"
nice make -j"$JOBS"
make install DESTDIR="$DESTDIR"
"""


def build_flux_pmix(
    tarball: Path, version: str, prefix: Path, work: Path, logfile: Path
) -> tuple[Path, float]:
    """flux-pmix from its release tarball, against the Flux ``prefix`` (its headers and
    pkgconfig) and Debian's libpmix-dev, installed into ``work``/root (DESTDIR): returns that
    root and the build's seconds. The release tarball is a `git archive` (no .git, no
    configure): AC_INIT's version, which `git describe` gives upstream, is set to ``version``
    first. Only the job shell plugin is kept (no libtool archives, no broker upmi plugin: the
    brokers of a MiniCluster bootstrap from their config, not from PMI)."""
    t0 = time.monotonic()
    with tarfile.open(tarball) as tar:
        tar.extractall(work / "src", filter="data")
    (src,) = list((work / "src").iterdir())
    configure = src / "configure.ac"
    text = configure.read_text()
    head = text.index("AC_INIT([flux-pmix],")
    end = text.index("\n", text.index("m4_esyscmd", head))
    configure.write_text(text[:head] + f"AC_INIT([flux-pmix], [{version}])" + text[end:])
    root = work / "root"
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",  # Debian's tools, no virtualenv
        "HOME": str(Path.home()),
        "LANG": "C.UTF-8",
        "PREFIX": str(prefix),
        "LIBDIR": PMIX_LIBDIR,
        "DESTDIR": str(root),
        "JOBS": str(os.cpu_count() or 2),
    }
    _sh(["sh", "-c", FLUX_PMIX_BUILD], logfile, cwd=src, env=env)
    installed = root / str(prefix).lstrip("/")
    for la in installed.rglob("*.la"):
        la.unlink()
    shutil.rmtree(installed / "lib" / "flux" / "upmi")
    if not (installed / PMIX_PLUGIN).is_file():
        raise RuntimeError(f"flux-pmix installed no {PMIX_PLUGIN} under {installed}")
    return root, round(time.monotonic() - t0, 1)


def libraries_lacking(obj: Path, prefix: Path, image: Path) -> list[Path]:
    """The shared libraries `ldd` resolves for ``obj`` on this host, outside ``prefix``, whose
    file names (their sonames) the root file system tar ``image`` does not hold."""
    with tarfile.open(image) as tar:
        held = {Path(name).name for name in tar.getnames()}
    out = subprocess.run(["ldd", str(obj)], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            path = Path(parts[2])
            if not path.is_relative_to(prefix) and parts[0] not in held:
                found.append(path)
        elif len(parts) >= 2 and parts[1] == "=>":
            raise RuntimeError(f"ldd {obj}: {line.strip()}")
    return found


def flux_images_piece(b: ModuleType, pins_raw: dict[str, object], np: dict[str, Any]) -> NodePiece:
    """Two images from Debian's packages and the project's Flux build (tests/e2e/toolchain/flux.py
    builds it or reuses its prefix):

    - the application image a MiniCluster's container names: minbase and what the scenarios and
      Flux's runtime need (`flux-app-include`: bash, coreutils, procps, python3, hostname and the
      libraries `ldd` finds the Flux binaries linked to), and a user `flux` (uid and gid
      `flux-app-user`) for specs that run as non-root, as ubuntu's images carry `ubuntu` (1000);
    - the flux view image (spec.flux.container.image), laid out as the operator's: Flux and
      Fluxion installed under /opt/software (the prefix moved there, see relocated_prefix),
      /opt/view -> /opt/views/._view/<key> -> it (VIEW_ENV, as the operator's views), on a
      minbase root with the bash and coreutils its init script runs; and flux-pmix's job shell
      plugin (`flux-pmix-source`, built here, see build_flux_pmix), the libraries it needs that
      the application image lacks (libpmix.so.2, munge, libevent: libraries_lacking) in
      PMIX_LIBDIR, relocated with the rest.
    """
    sys.path.insert(0, str(TOOLCHAIN))
    import flux

    fp = flux.flux_pins(pins_raw)
    flux_key = flux.prefix_key(fp)
    suite = str(np["image-suite"])
    include = [str(p) for p in np["flux-app-include"]]
    app_tags = [str(t) for t in np["flux-app-tags"]]
    view_tags = [str(t) for t in np["flux-view-tags"]]
    uid = int(np["flux-app-user"])
    skip = {"include"}  # headers: nothing in a pod compiles against Flux
    pmix_source, pmix_sha = str(np["flux-pmix-source"]), str(np["flux-pmix-sha256"])
    pmix_version = str(np["flux-pmix-version"])

    def run(keydir: Path) -> dict[str, Any]:
        pmix_tarball = vendor_tarball(pmix_source, pmix_sha)
        prefix = flux.build_prefix(b, fp).resolve()  # the path its build compiled in
        images, work = image_dirs(keydir)
        logfile = keydir / "logs" / "flux-images.log"
        facts: dict[str, Any] = {"flux-prefix": str(prefix)}
        facts["app"] = minbase_image(
            images / "flux-app.tar",
            work / "app.tar",
            suite,
            app_tags,
            ["/bin/bash"],
            logfile,
            include,
            [flux_user(uid)],
        )
        t0 = time.monotonic()
        new = relocated_prefix(str(prefix), flux_key)
        staging = work / "view"
        facts["relocated"] = relocate_tree(
            prefix, staging / new.lstrip("/"), str(prefix), new, skip
        )
        # flux-pmix, installed into a root of its own and relocated onto the view's prefix
        (work / "pmix").mkdir()
        root, seconds = build_flux_pmix(pmix_tarball, pmix_version, prefix, work / "pmix", logfile)
        installed = root / str(prefix).lstrip("/")
        lacking = libraries_lacking(installed / PMIX_PLUGIN, prefix, work / "app.tar")
        (installed / PMIX_LIBDIR).mkdir(parents=True)
        for lib in lacking:
            shutil.copyfile(lib, installed / PMIX_LIBDIR / lib.name)  # the file, not the link
        moved = relocate_tree(installed, staging / new.lstrip("/"), str(prefix), new, set())
        facts["flux-pmix"] = {
            "seconds": seconds,
            "libpmix-dev": debian_versions(["libpmix-dev"]).get("libpmix-dev"),
            "libraries": [lib.name for lib in lacking],
            "relocated": moved,
        }
        env_view = f"{VIEW_ENV}/{flux_key}"
        (staging / env_view.lstrip("/")).parent.mkdir(parents=True)
        (staging / env_view.lstrip("/")).symlink_to(new)
        (staging / "opt" / "view").symlink_to(env_view)
        view = [f"sync-in {staging / 'opt'} /opt"]
        facts["view"] = minbase_image(
            images / "flux-view.tar",
            work / "view.tar",
            suite,
            view_tags,
            ["/bin/bash"],
            logfile,
            hooks=view,
        )
        facts["view"].update(seconds=round(time.monotonic() - t0, 1), prefix=new)
        shutil.rmtree(work)
        return facts

    recipe = {
        "suite": suite,
        "include": include,
        "app": app_tags,
        "view": view_tags,
        "uid": uid,
        "flux": flux_key,
        "software": VIEW_SOFTWARE,
        "view-env": VIEW_ENV,
        "skip": sorted(skip),
        "flux-pmix": [pmix_source, pmix_sha, pmix_version, FLUX_PMIX_BUILD],
        "pmix-layout": [PMIX_PLUGIN, PMIX_LIBDIR],
    }
    return NodePiece("flux-images", ["images/flux-app.tar", "images/flux-view.tar"], recipe, run)


def flux_user(uid: int) -> str:
    """A customize hook adding the user and group ``flux`` (``uid``) of the application images."""
    return (
        f'chroot "$1" groupadd -g {uid} flux && '
        f'chroot "$1" useradd -m -u {uid} -g {uid} -s /bin/bash flux'
    )


# -- the MPI application image ------------------------------------------------------------------

# Run inside the throwaway build root (Debian's mpicc): the OSU Micro-Benchmarks of MPI from
# ${SRC}/osu-micro-benchmarks (their util/ linked into each, as their Makefile.am's libutil) and
# mpi_check.c, into ${OUT}/bin; ${OUT}/osu/<kind>/<benchmark> links to /usr/local/bin/<benchmark>,
# the tree OSU's `make install` lays out under libexec/osu-micro-benchmarks/mpi (the image puts it
# at flux-mpi-osu-tree). The benchmarks' own warnings are theirs (-w).
MPI_BUILD = r"""set -eu
SRC=/build/src OUT=/build/out
mkdir -p "$OUT/bin"
osu=$SRC/osu-micro-benchmarks
cd "$osu"
mpicc -O2 -w -I util -c util/osu_util.c -o /build/osu_util.o
mpicc -O2 -w -I util -c util/osu_util_mpi.c -o /build/osu_util_mpi.o
n=0
for c in mpi/startup/*.c mpi/pt2pt/*.c mpi/collective/*.c mpi/one-sided/*.c; do
    name=$(basename "$c" .c) kind=$(basename "$(dirname "$c")")
    mpicc -O2 -w -I util "$c" /build/osu_util.o /build/osu_util_mpi.o -lm -lpthread \
        -o "$OUT/bin/$name"
    mkdir -p "$OUT/osu/$kind"
    ln -s "/usr/local/bin/$name" "$OUT/osu/$kind/$name"
    n=$((n + 1))
done
mpicc -O2 -Wall -Werror "$SRC/mpi_check.c" -o "$OUT/bin/mpi_check"
strip "$OUT"/bin/*
echo "built $n OSU benchmarks and mpi_check"
"""


# Run first in MPICH's build root: Debian's source of bookworm's MPICH configured and installed
# under ${PREFIX} (CONFIGURE: the pins' mpich-configure), its seconds in ${OUT}/mpich-seconds,
# and the library the programs load copied to ${OUT}/prefix; then MPI_BUILD compiles with its
# mpicc (first on PATH), which gives the programs a RUNPATH to ${PREFIX}/lib.
MPICH_BUILD = r"""set -eu
SRC=/build/src OUT=/build/out PREFIX={prefix}
mkdir -p "$OUT/prefix/lib"
start=$(date +%s)
cd "$SRC/mpich"
# the test suite's own configure (the top one runs it) configures nothing the image carries
printf '#!/bin/sh\nexit 0\n' >test/mpi/configure
./configure --prefix="$PREFIX" {configure} >/build/configure.log 2>&1 || {{
    tail -n 40 /build/configure.log; exit 1; }}
make -j"$(nproc)" >/build/make.log 2>&1 || {{ tail -n 40 /build/make.log; exit 1; }}
make install >/build/install.log 2>&1 || {{ tail -n 40 /build/install.log; exit 1; }}
echo "$(($(date +%s) - start))" >"$OUT/mpich-seconds"
cp -a "$PREFIX"/lib/libmpi.so.* "$OUT/prefix/lib/"
strip --strip-unneeded "$OUT"/prefix/lib/libmpi.so.*.*
"$PREFIX/bin/mpichversion"
export PATH="$PREFIX/bin:$PATH"
"""


def download(url: str, want: str, root: Path) -> Path:
    """``url`` in ``<cache root>/downloads/`` (fetched once, kept while its sha256 is ``want``)."""
    import urllib.request

    dest = root / "downloads" / url.rsplit("/", 1)[-1]
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == want:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    with urllib.request.urlopen(url, timeout=120) as resp, part.open("wb") as fh:
        shutil.copyfileobj(resp, fh)
    got = hashlib.sha256(part.read_bytes()).hexdigest()
    if got != want:
        part.unlink()
        raise RuntimeError(f"{url}: sha256 {got}, the pin says {want}")
    os.replace(part, dest)
    return dest


def extract_dir(archive: Path, inner: str, dest: Path) -> None:
    """The directory ``inner`` of ``archive`` (below its top directory) as ``dest``."""
    scratch = dest.parent / f".{dest.name}.tarball"
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        top = members[0].name.split("/")[0]
        want = f"{top}/{inner}/" if inner else f"{top}/"
        tar.extractall(
            scratch, members=[m for m in members if m.name.startswith(want)], filter="data"
        )
    shutil.move(scratch / top / inner if inner else scratch / top, dest)
    shutil.rmtree(scratch)


@dataclasses.dataclass
class MpiImage:
    """An MPI application image of flux_mpi_image: its piece, the pins' keys of its run-time
    packages, build-root packages and tags, the script run in the build root before MPI_BUILD,
    more sources for /build/src (name -> a function that puts one there), what of the build
    root's /build/out the image carries besides bin/ (out directory -> path in the image), and
    the pins' keys of where the OSU tree goes and of the image's Env, when it has them."""

    piece: str
    include: str
    build: str
    tags: str
    preamble: str = ""
    sources: dict[str, Callable[[Path], None]] = dataclasses.field(default_factory=dict)
    carry: dict[str, str] = dataclasses.field(default_factory=dict)
    recipe: dict[str, Any] = dataclasses.field(default_factory=dict)
    osu_tree: str | None = None
    env: str | None = None


def flux_mpi_image(np: dict[str, Any], mpi: MpiImage) -> NodePiece:
    """An MPI application image (the pins' ``mpi.tags``): the application image's packages
    (``flux-app-include``, the same user ``flux``) plus an MPI's run time (``mpi.include``), and,
    in /usr/local/bin, the OSU Micro-Benchmarks (the copy inside ``flux-pmix-source``, flux-pmix's
    tarball, BSD) and realnode/mpi_check.c, compiled with that MPI's mpicc in a throwaway root of
    ``mpi.build`` (mmdebstrap --format=null: nothing of it is kept, the image carries no
    compiler), where ``mpi.preamble`` runs first (building the MPI, say). With ``mpi.osu_tree``
    the benchmarks are also linked into that tree (where the operator's OSU image keeps them),
    and the image's Env carries ``mpi.env``'s pins."""
    suite = str(np["image-suite"])
    include = [str(p) for p in np["flux-app-include"]] + [str(p) for p in np[mpi.include]]
    build_include = [str(p) for p in np[mpi.build]]
    tags = [str(t) for t in np[mpi.tags]]
    uid = int(np["flux-app-user"])
    name, want = str(np["flux-pmix-source"]), str(np["flux-pmix-sha256"])
    tree = str(np[mpi.osu_tree]) if mpi.osu_tree else None
    env = [str(e) for e in np[mpi.env]] if mpi.env else None
    check_c = (HERE / "mpi_check.c").read_text()
    script = mpi.preamble + MPI_BUILD
    archive = f"{mpi.piece}.tar"

    def run(keydir: Path) -> dict[str, Any]:
        images, work = image_dirs(keydir)
        logfile = keydir / "logs" / f"{mpi.piece}.log"
        source = vendor_tarball(name, want)
        src, out = work / "src", work / "out"
        src.mkdir()
        out.mkdir()
        extract_dir(source, "t/osu-micro-benchmarks", src / "osu-micro-benchmarks")
        for put_name, put in mpi.sources.items():
            put(src / put_name)
        (src / "mpi_check.c").write_text(check_c)
        (work / "build.sh").write_text(script)
        t0 = time.monotonic()
        _sh(
            [
                "mmdebstrap", "--variant=minbase", "--mode=root", "--format=null",
                f"--include={','.join(build_include)}",
                '--customize-hook=mkdir -p "$1/build/src" "$1/build/out"',
                f"--customize-hook=sync-in {src} /build/src",
                f"--customize-hook=copy-in {work / 'build.sh'} /build",
                '--customize-hook=chroot "$1" sh /build/build.sh',
                f"--customize-hook=sync-out /build/out {out}",
                suite, "/dev/null",
            ],
            logfile,
        )  # fmt: skip
        facts: dict[str, Any] = {"compiled": round(time.monotonic() - t0, 1)}
        facts["programs"] = sorted(p.name for p in (out / "bin").iterdir())
        if (out / "mpich-seconds").is_file():
            facts["mpich-seconds"] = int((out / "mpich-seconds").read_text())
        hooks = [flux_user(uid)]
        hooks += [f'mkdir -p "$1{path}"' for path in mpi.carry.values()]
        hooks += [f"sync-in {out / d} {path}" for d, path in mpi.carry.items()]
        hooks.append(f"sync-in {out / 'bin'} /usr/local/bin")
        if tree:
            hooks += [f'mkdir -p "$1{tree}"', f"sync-in {out / 'osu'} {tree}"]
        facts["image"] = minbase_image(
            images / archive,
            work / "mpi.tar",
            suite,
            tags,
            ["/bin/bash"],
            logfile,
            include,
            hooks,
            env,
        )
        shutil.rmtree(work)
        return facts

    recipe: dict[str, Any] = {
        "suite": suite,
        "include": include,
        "build": build_include,
        "tags": tags,
        "uid": uid,
        "source": [name, want],
        **({"osu-tree": tree} if tree else {}),
        **({"env": env} if env is not None else {}),
        "script": script,
        "c": check_c,
        **mpi.recipe,
    }
    return NodePiece(mpi.piece, [f"images/{archive}"], recipe, run)


def flux_mpi_piece(np: dict[str, Any]) -> NodePiece:
    """localhost/flux-mpi:bookworm: Debian's Open MPI 4.1 (``flux-mpi-include``), its mpicc from
    libopenmpi-dev in the build root (``flux-mpi-build-include``); the OSU benchmarks also where
    the operator's OSU image keeps them (``flux-mpi-osu-tree``), ``flux-mpi-env`` in its Env."""
    mpi = MpiImage(
        "flux-mpi",
        "flux-mpi-include",
        "flux-mpi-build-include",
        "flux-mpi-tags",
        osu_tree="flux-mpi-osu-tree",
        env="flux-mpi-env",
    )
    return flux_mpi_image(np, mpi)


def flux_mpich_piece(root: Path, np: dict[str, Any]) -> NodePiece:
    """localhost/flux-mpich:bookworm: an MPICH built from Debian's source of bookworm's release
    (``mpich-source``, sha256 ``mpich-sha256``, downloaded into ``<cache root>/downloads``) with
    ``mpich-configure`` under ``mpich-prefix``, in the build root that then compiles the
    programs: the ch3:nemesis device over TCP and the simple PMI (PMI-1 over the PMI_FD that
    Flux's job shell serves), no process manager. Debian's own `mpich` is ch4:ucx only and hangs
    in MPI_Finalize across pods (../shared/reference/mpi/README.md). The image carries the
    library alone (``<prefix>/lib/libmpi.so.12``; its hwloc is flux-app-include's)."""
    url, sha = str(np["mpich-source"]), str(np["mpich-sha256"])
    prefix = str(np["mpich-prefix"])
    configure = [str(a) for a in np["mpich-configure"]]
    preamble = MPICH_BUILD.format(prefix=shlex.quote(prefix), configure=shlex.join(configure))

    def put_mpich(dest: Path) -> None:
        extract_dir(download(url, sha, root), "", dest)

    mpi = MpiImage(
        "flux-mpich",
        "flux-mpich-include",
        "flux-mpich-build-include",
        "flux-mpich-tags",
        preamble=preamble,
        sources={"mpich": put_mpich},
        carry={"prefix": prefix},
        recipe={"mpich": [url, sha]},
    )
    return flux_mpi_image(np, mpi)


# -- the LAMMPS application image ---------------------------------------------------------------

# Where the Flux Operator's LAMMPS spec (its workingDir) expects the HNS example's inputs.
LAMMPS_HNS = "/opt/lammps/examples/reaxff/HNS"

# Run inside the throwaway build root: LAMMPS's CMake build of ${SRC} (the vendor tarball: cmake/,
# src/) with REAXFF against Debian's Open MPI, OpenMP off (one thread per rank, as the
# operator's spec runs it), into ${OUT}/bin/lmp. The grep is a cheap proof that REAXFF's pair
# style is compiled in (Debian's own lmp fails on it): running lmp here would need MPI to start.
LAMMPS_BUILD = r"""set -eu
SRC=/build/src OUT=/build/out
mkdir -p "$OUT/bin"
cmake -S "$SRC/cmake" -B /build/cmake -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_MPI=on -DBUILD_OMP=off -DPKG_REAXFF=on \
    -DMPI_C_COMPILER=mpicc.openmpi -DMPI_CXX_COMPILER=mpicxx.openmpi
ninja -C /build/cmake -j "$(nproc)" lmp
strip -o "$OUT/bin/lmp" /build/cmake/lmp
grep -q 'reax/c' "$OUT/bin/lmp"
echo "built lmp with REAXFF"
"""


def flux_lammps_piece(np: dict[str, Any]) -> NodePiece:
    """The LAMMPS image (``flux-lammps-tags``), which the Flux Operator's LAMMPS spec names by
    changing only its image: the MPI image's run-time packages (``flux-app-include``,
    ``flux-mpi-include``, the same user ``flux``), ``lmp`` in /usr/local/bin, and the HNS
    example's inputs (``in.reaxc.hns``, its data and force field) at ``LAMMPS_HNS``, readable by
    all. ``lmp`` is LAMMPS 29Sep2021 update 2 (``lammps-source``, GPL-2.0) with REAXFF, compiled
    by cmake and ninja in a throwaway root of ``flux-lammps-build-include`` (mmdebstrap
    --format=null, as flux-mpi's benchmarks are): no compiler, cmake or sources in the image."""
    suite = str(np["image-suite"])
    include = [str(p) for p in np["flux-app-include"]] + [str(p) for p in np["flux-mpi-include"]]
    build_include = [str(p) for p in np["flux-lammps-build-include"]]
    tags = [str(t) for t in np["flux-lammps-tags"]]
    uid = int(np["flux-app-user"])
    name, want = str(np["lammps-source"]), str(np["lammps-sha256"])

    def run(keydir: Path) -> dict[str, Any]:
        images, work = image_dirs(keydir)
        logfile = keydir / "logs" / "flux-lammps.log"
        source = vendor_tarball(name, want)
        with tarfile.open(source) as tar:
            top = tar.getnames()[0].split("/")[0]
            tar.extractall(work / "tarball", filter="data")
        src, out = work / "tarball" / top, work / "out"
        hns = src / "examples" / "reaxff" / "HNS"
        if not (hns / "in.reaxc.hns").is_file():
            raise RuntimeError(f"{source} has no examples/reaxff/HNS/in.reaxc.hns")
        out.mkdir()
        (work / "build.sh").write_text(LAMMPS_BUILD)
        t0 = time.monotonic()
        _sh(
            [
                "mmdebstrap", "--variant=minbase", "--mode=root", "--format=null",
                f"--include={','.join(build_include)}",
                '--customize-hook=mkdir -p "$1/build/src" "$1/build/out"',
                f"--customize-hook=sync-in {src} /build/src",
                f"--customize-hook=copy-in {work / 'build.sh'} /build",
                '--customize-hook=chroot "$1" sh /build/build.sh',
                f"--customize-hook=sync-out /build/out {out}",
                suite, "/dev/null",
            ],
            logfile,
        )  # fmt: skip
        facts: dict[str, Any] = {"compiled": round(time.monotonic() - t0, 1)}
        facts["lmp-bytes"] = (out / "bin" / "lmp").stat().st_size
        facts["image"] = minbase_image(
            images / "flux-lammps.tar",
            work / "lammps.tar",
            suite,
            tags,
            ["/bin/bash"],
            logfile,
            include,
            [
                flux_user(uid),
                f"sync-in {out / 'bin'} /usr/local/bin",
                f'mkdir -p "$1{LAMMPS_HNS}"',
                f"sync-in {hns} {LAMMPS_HNS}",
                'chmod -R a+rX "$1/opt/lammps"',
            ],
        )
        shutil.rmtree(work)
        return facts

    recipe = {
        "suite": suite,
        "include": include,
        "build": build_include,
        "tags": tags,
        "uid": uid,
        "source": [name, want],
        "script": LAMMPS_BUILD,
        "hns": LAMMPS_HNS,
    }
    return NodePiece("flux-lammps", ["images/flux-lammps.tar"], recipe, run)


# -- the Flux Operator ---------------------------------------------------------------------------

# What upstream's `make build` sets for the czmq keygen (its Makefile's BUILDENVVAR, less the
# -lstdc++ nothing here needs).
OPERATOR_CGO_LDFLAGS = "-lczmq -lzmq"
OPERATOR_CRD = "crd/flux-framework.org_miniclusters.yaml"


def flux_operator_piece(b: ModuleType, np: dict[str, Any]) -> NodePiece:
    """The Flux Operator's manager (``flux-operator-source``, sha256 ``flux-operator-sha256``,
    MIT) and its CRD, to run beside the component on a real-node cluster (operatorplane.py):
    `go build` in the unpacked tarball with its own go.mod (the toolchain's GOMODCACHE, GOCACHE
    and GOFLAGS=-mod=mod), as upstream's `make build`: pkg/flux/keygen.go.template (CGO, czmq)
    replaces the stub keygen.go, which returns an empty certificate (the brokers could not
    start). bin/manager and config/crd/bases/*.yaml in crd/; nothing else is kept."""
    name, want = str(np["flux-operator-source"]), str(np["flux-operator-sha256"])

    def run(keydir: Path) -> dict[str, Any]:
        source = vendor_tarball(name, want)
        work = keydir / "work"
        shutil.rmtree(work, ignore_errors=True)
        with tarfile.open(source) as tar:
            top = tar.getnames()[0].split("/")[0]
            tar.extractall(work, filter="data")
        src = work / top
        keygen = src / "pkg" / "flux"
        shutil.copyfile(keygen / "keygen.go.template", keygen / "keygen.go")
        env = b.go_env(b.cache_root())
        env.update(CGO_ENABLED="1", CGO_LDFLAGS=OPERATOR_CGO_LDFLAGS)
        out = keydir / "bin" / "manager"
        t0 = time.monotonic()
        b.run_go(
            ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(out), "."],
            src,
            env,
            keydir / "logs" / "flux-operator.log",
        )
        facts: dict[str, Any] = {"go-build": round(time.monotonic() - t0, 1)}
        crds = sorted((src / "config" / "crd" / "bases").glob("*.yaml"))
        (keydir / "crd").mkdir(exist_ok=True)
        for crd in crds:
            shutil.copyfile(crd, keydir / "crd" / crd.name)
        facts.update(bytes=out.stat().st_size, crds=[c.name for c in crds])
        shutil.rmtree(work)
        return facts

    recipe = {"source": [name, want], "cgo": OPERATOR_CGO_LDFLAGS, "keygen": "template"}
    return NodePiece("flux-operator", ["bin/manager", OPERATOR_CRD], recipe, run)


# -- the set -------------------------------------------------------------------------------------


def node_pieces(b: ModuleType, pins_raw: dict[str, object], logdir: Path) -> list[NodePiece]:
    np = node_pins(pins_raw)
    kube, kube_recipe = kube_node_piece(b, pins_raw)
    dns, dns_recipe = coredns_piece(b, np)
    return [
        debian_piece(np, logdir),
        go_piece("kube-node", b, kube, kube_recipe),
        images_piece(np),
        flux_images_piece(b, pins_raw, np),
        flux_mpi_piece(np),
        flux_lammps_piece(np),
        flux_mpich_piece(b.cache_root(), np),
        go_piece("coredns", b, dns, dns_recipe),
        kube_router_piece(b, np),
        flux_operator_piece(b, np),
    ]


def build_one(b: ModuleType, piece: NodePiece, root: Path, goversion: str) -> dict[str, Any]:
    """Build a piece unless its key directory is complete; returns its record (.complete)."""
    keydir = root / "nodes" / piece.name / piece.key(goversion)
    done = keydir / ".complete"
    if piece.keyed and done.exists():
        record = dict(json.loads(done.read_text()))
        record["reused"] = True
        return record
    keydir.mkdir(parents=True, exist_ok=True)
    with b.locked(keydir / ".lock"):
        if piece.keyed and done.exists():
            return dict(json.loads(done.read_text()), reused=True)
        (keydir / "logs").mkdir(exist_ok=True)
        b.log(f"nodes: {piece.name}: building into {keydir}")
        t0 = time.monotonic()
        facts = piece.run(keydir)
        record = {"seconds": round(time.monotonic() - t0, 1), "dir": str(keydir), **facts}
        for out in piece.outputs:
            if not (keydir / out).exists():
                raise RuntimeError(f"{piece.name}: built, but {keydir / out} is missing")
        if piece.keyed:
            done.write_text(json.dumps(record, sort_keys=True) + "\n")
        b.log(f"nodes: {piece.name}: done in {record['seconds']}s")
    return dict(record, reused=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--piece", action="append", default=[], help="only this piece; repeatable")
    ap.add_argument("--list", action="store_true", help="list the pieces and their keys")
    args = ap.parse_args(argv)
    b = builder()
    root = b.cache_root()
    logdir = root / "nodes" / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    pins_raw = b.load_pins()
    goversion = b.go_version()
    pieces = node_pieces(b, pins_raw, logdir)
    if args.list:
        for pc in pieces:
            print(f"{pc.name} {pc.key(goversion) if pc.keyed else '(apt)'} {' '.join(pc.outputs)}")
        return 0
    unknown = set(args.piece) - {pc.name for pc in pieces}
    if unknown:
        print(f"unknown piece(s) {sorted(unknown)}", file=sys.stderr)
        return 2
    records: dict[str, Any] = {}
    failed = []
    for pc in pieces:
        if args.piece and pc.name not in args.piece:
            continue
        try:
            records[pc.name] = build_one(b, pc, root, goversion)
        except Exception as exc:  # one piece failing must not hide the others' results
            b.log(f"nodes: {pc.name} FAILED: {exc}")
            failed.append(pc.name)
    if failed or args.piece:
        return 1 if failed else 0
    keys = {pc.name: pc.key(goversion) for pc in pieces if pc.keyed}
    setdir = (
        root
        / "nodes"
        / ("set-" + hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:12])
    )
    for pc in pieces:
        for out in pc.outputs:
            link = setdir / out
            link.parent.mkdir(parents=True, exist_ok=True)
            link.unlink(missing_ok=True)
            link.symlink_to(root / "nodes" / pc.name / keys[pc.name] / out)
    versions = {
        "kubernetes": str(pins_raw["kubernetes"]),
        **{k: v for k, v in node_pins(pins_raw).items() if k in ("coredns", "kube-router")},
        "debian": records["debian"]["versions"],
        "go": goversion,
        "keys": keys,
    }
    (setdir / "versions.json").write_text(json.dumps(versions, indent=2, sort_keys=True) + "\n")
    times = {n: {"seconds": r["seconds"], "reused": r["reused"]} for n, r in records.items()}
    (setdir / "build-times.json").write_text(json.dumps(times, indent=2, sort_keys=True) + "\n")
    print(setdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
