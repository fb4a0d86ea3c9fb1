"""The floor under the MPI figures of e2e (tests/e2e/test_flux_mpi.py): the same programs of the
same image, run by hand on this machine with no Kubernetes and no Flux in the way.

The MPI image (realnode/toolchain.py's flux-mpi: Debian's Open MPI 4.1, the OSU Micro-Benchmarks,
mpi_check) is unpacked into a temporary root, and `mpirun` runs in it (chroot, its own mount
namespace with /proc, /dev and a /dev/shm of the host's): osu_latency and osu_bw between two
processes over TCP on the loopback (what two pods' ranks use, minus the pods' veth and bridge)
and through shared memory (two ranks of one pod), and mpi_check's timed allreduce with four
ranks over TCP (one per pod in e2e). Every rank yields when idle, as in e2e. Medians of
``--repeat`` runs; the e2e figures of the same programs are printed by
`make e2e` (the "e2e findings" of test_flux_mpi).

    .venv/bin/python benchmarks/mpi.py [--repeat 3] [--nodes-dir DIR]

Needs root (chroot, mount namespaces) and the real-node set (FLUX_MINICLUSTER_NODES_DIR, or
built by tests/e2e/realnode/toolchain.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from report import machine, table  # noqa: E402

OSU_MAX = 1 << 20  # bytes, as e2e
# Inside the unpacked image: the pseudo file systems mpirun needs, then the command as root.
IN_ROOT = r"""set -e
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o size=256m tmpfs "$root/dev/shm"
exec chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root \
    OMPI_MCA_mpi_yield_when_idle=1 "$@"
"""


def nodes_dir(given: str | None) -> Path:
    if given or os.environ.get("FLUX_MINICLUSTER_NODES_DIR"):
        return Path(given or os.environ["FLUX_MINICLUSTER_NODES_DIR"])
    builder = ROOT / "tests" / "e2e" / "realnode" / "toolchain.py"
    out = subprocess.run([sys.executable, str(builder)], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def unpack(image: Path, into: Path) -> None:
    """The one layer of a docker-archive written by realnode/toolchain.py."""
    with tarfile.open(image) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
        (layer,) = manifest[0]["Layers"]
        with tarfile.open(fileobj=outer.extractfile(layer)) as inner:
            inner.extractall(into, filter="fully_trusted")


def mpirun(root: Path, ranks: int, btl: str, *program: str) -> str:
    argv = [
        "unshare", "--mount", "--propagation", "private", "bash", "-c", IN_ROOT, "in-root",
        str(root), "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
        "--mca", "btl", btl, *program,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600).stdout


def osu(text: str) -> dict[int, float]:
    return {
        int(m.group(1)): float(m.group(2))
        for m in re.finditer(r"^(\d+)\s+([\d.]+)\s*$", text, flags=re.MULTILINE)
    }


def allreduce_us(text: str) -> float:
    found = re.search(r"allreduce: \d+ in [\d.]+ s \(([\d.]+) us each\)", text)
    if not found:
        raise RuntimeError(f"mpi_check printed no timing:\n{text}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes-dir")
    args = parser.parse_args()
    image = nodes_dir(args.nodes_dir) / "images" / "flux-mpi.tar"
    figures: dict[str, list[float]] = {}

    def keep(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="mpi-floor-") as tmp:
        root = Path(tmp) / "root"
        unpack(image, root)
        size = f"-m {OSU_MAX}".split()
        for _ in range(args.repeat):
            for where, btl in (
                ("two processes, TCP loopback", "self,tcp"),
                ("one node, shared memory", "self,vader"),
            ):
                lat = osu(mpirun(root, 2, btl, "osu_latency", *size))
                bw = osu(mpirun(root, 2, btl, "osu_bw", *size))
                keep(f"osu_latency 8 B, {where} (us)", lat[8])
                keep(f"osu_latency 1 MiB, {where} (us)", lat[OSU_MAX])
                keep(f"osu_bw 1 MiB, {where} (MB/s)", bw[OSU_MAX])
            keep("allreduce, 4 ranks over TCP loopback (us each)",
                 allreduce_us(mpirun(root, 4, "self,tcp", "mpi_check")))  # fmt: skip
    rows = [
        [name, f"{statistics.median(v):.2f}", " ".join(f"{x:.2f}" for x in v)]
        for name, v in figures.items()
    ]
    print(f"MPI floor, no Kubernetes, no Flux: {machine()}; medians of {args.repeat}")
    print(table(["figure", "median", "runs"], rows))


if __name__ == "__main__":
    main()
