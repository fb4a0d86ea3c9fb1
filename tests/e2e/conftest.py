"""Fixtures for the e2e tests: the toolchain built from the Go module proxy, throwaway control
planes, and an isolated environment for the real Pulumi CLI.

Every test under tests/e2e is marked `e2e`. A test that needs a toolchain piece asks for it
with `@pytest.mark.needs("pulumi-language-python", ...)` (binary or piece names); when that
piece could not be built the test FAILS with the builder's reason: every piece builds here (the
two the module proxy refuses from ../shared/vendor), so a missing one is a broken toolchain.

FLUX_MINICLUSTER_E2E_BIN=<dir> uses an existing bin directory instead of running the builder.

At the end of a run the terminal summary lists each e2e test's wall time (setup included, as a
control plane starts in setup) and the engine operations it ran (`stackrun.Engine.operations`):
the figures tests/e2e/README.md quotes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from controlplane import BINARIES, ControlPlane
from stackrun import Engine, copy_project, private_tmpdir

E2E = Path(__file__).resolve().parent
# Seconds one e2e test may take, setup included (the slowest take about 150 s on 2 cores).
E2E_TEST_TIMEOUT_S = 900
REPO = E2E.parents[1]
BUILDER = E2E / "toolchain" / "build.py"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs(*pieces): toolchain binaries or pieces the test cannot run without"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Building the toolchain takes minutes and these tests start real processes: they run only
    # when asked for (`-m e2e`, `make e2e`, or FLUX_MINICLUSTER_E2E=1), never as a side effect
    # of a plain `pytest`.
    wanted = "e2e" in (config.option.markexpr or "") or os.environ.get("FLUX_MINICLUSTER_E2E")
    skip = pytest.mark.skip(reason=NOT_ASKED_FOR)
    for item in items:
        if E2E in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            # A scenario that hangs fails alone, with its fixtures torn down, instead of holding
            # the whole run (and CI) until an outer limit kills it with nothing said.
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(E2E_TEST_TIMEOUT_S))
            if not wanted:
                item.add_marker(skip)


NOT_ASKED_FOR = "e2e: run with `-m e2e` (make e2e) or FLUX_MINICLUSTER_E2E=1"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Every e2e test skipped for not being asked for is reported at one place, this file, so
    ``-ra``'s summary folds them into one line (``SKIPPED [47] ...``) instead of one line per
    test (pytest reports a skip by mark at the test's own line)."""
    report = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and longrepr[2].endswith(NOT_ASKED_FOR):
        report.longrepr = (__file__, None, longrepr[2])
    if report.when == "teardown":
        # what this process gathered since the last test, carried by the report: with
        # pytest-xdist the summary is written by the controller, which sees reports only
        report.user_properties.extend(_drain())
    return report


@dataclass
class Toolchain:
    bin: Path
    status: dict[str, Any]  # status.json from the builder: piece -> {ok, modules, reason, ...}
    build_log: str

    def missing(self, *names: str) -> str | None:
        """The builder's reason why one of these binaries or pieces is absent, or None."""
        for name in names:
            piece = next(
                (p for p, st in self.status.items() if name == p or name in st.get("binaries", [])),
                None,
            )
            if piece is not None:
                st = self.status[piece]
                if not st.get("ok"):
                    reason = " ".join(str(st.get("reason", "unknown")).split())
                    return f"toolchain piece {piece} ({st.get('modules')}) not built: {reason}"
            elif not (self.bin / name).exists():
                return f"{self.bin / name} is missing; builder said:\n{self.build_log[-1500:]}"
        return None


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    explicit = os.environ.get("FLUX_MINICLUSTER_E2E_BIN")
    if explicit:
        bindir = Path(explicit)
        return Toolchain(bindir, _read_status(bindir), "")
    proc = subprocess.run([sys.executable, str(BUILDER)], capture_output=True, text=True, cwd=REPO)
    lines = proc.stdout.strip().splitlines()
    if not lines:
        pytest.fail(f"the e2e toolchain builder printed nothing:\n{proc.stderr[-3000:]}")
    bindir = Path(lines[-1])
    return Toolchain(bindir, _read_status(bindir), proc.stderr)


def _read_status(bindir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((bindir.parent / "status.json").read_text()))
    except (OSError, ValueError):
        return {}


@pytest.fixture(scope="session")
def toolchain_bin(toolchain: Toolchain) -> Path:
    """The bin directory of the built toolchain (build it or reuse it)."""
    return toolchain.bin


@pytest.fixture(autouse=True)
def _needs(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("needs")
    if marker is None:
        return
    tc: Toolchain = request.getfixturevalue("toolchain")
    reason = tc.missing(*marker.args)
    if reason:
        pytest.fail(reason, pytrace=False)


def _require_control_plane(tc: Toolchain) -> None:
    reason = tc.missing(*BINARIES)
    if reason:
        pytest.fail(reason, pytrace=False)


@pytest.fixture
def control_plane(toolchain: Toolchain, request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A started control plane of its own for one test; stopped however the test ends."""
    _require_control_plane(toolchain)
    with ControlPlane(toolchain.bin, name="t") as cp:
        request.node.user_properties.append(("control_plane_startup_s", cp.startup_seconds))
        yield cp


@pytest.fixture
def control_plane_factory(
    toolchain: Toolchain, request: pytest.FixtureRequest
) -> Iterator[Callable[..., ControlPlane]]:
    """make(name, **kw) starts another control plane (several may run at once, e.g. one per
    bursting cluster); all are stopped when the test ends."""
    _require_control_plane(toolchain)
    started: list[ControlPlane] = []

    def make(name: str = "c", **kw: Any) -> ControlPlane:
        cp = ControlPlane(toolchain.bin, name=f"{name}{len(started)}", **kw)
        started.append(cp)
        cp.start()
        request.node.user_properties.append(
            (f"control_plane_{cp.name}_startup_s", cp.startup_seconds)
        )
        return cp

    try:
        yield make
    finally:
        for cp in reversed(started):
            cp.stop()


@dataclass
class PulumiEnv:
    """An isolated environment for the real pulumi CLI: a file:// backend, PULUMI_HOME, no
    update check, no plugin download, the toolchain's bin first on PATH."""

    env: dict[str, str]
    home: Path
    backend: Path
    python: Path  # the interpreter of the venv the programs run in

    def run(
        self, *args: str, cwd: Path, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["pulumi", *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"pulumi {' '.join(args)} exited {proc.returncode}\n--- stdout ---\n"
                f"{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
            )
        return proc


def venv_python() -> Path:
    """The venv whose packages the Pulumi programs use: this interpreter's, when it is a venv
    with the Pulumi SDK (pytest from `make venv`), else the repository's .venv."""
    if sys.prefix != sys.base_prefix:
        return Path(sys.executable)
    return REPO / ".venv" / "bin" / "python"


@pytest.fixture
def pulumi_env(toolchain: Toolchain, tmp_path: Path) -> PulumiEnv:
    reason = toolchain.missing("pulumi")
    if reason:
        pytest.fail(reason, pytrace=False)
    home = tmp_path / "pulumi-home"
    backend = tmp_path / "state"
    home.mkdir()
    backend.mkdir()
    python = venv_python()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
    env.update(
        {
            "PATH": os.pathsep.join([str(toolchain.bin), str(python.parent), env.get("PATH", "")]),
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": f"file://{backend}",
            "PULUMI_CONFIG_PASSPHRASE": "e2e",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            "TMPDIR": str(private_tmpdir(home)),
        }
    )
    return PulumiEnv(env=env, home=home, backend=backend, python=python)


# --- shared by the scenario tests -------------------------------------------------------------


@pytest.fixture(scope="module")
def module_control_plane(
    toolchain: Toolchain, request: pytest.FixtureRequest
) -> Iterator[ControlPlane]:
    """One control plane for every test of a module (they use namespaces of their own)."""
    _require_control_plane(toolchain)
    name = request.module.__name__.removeprefix("test_").replace("_", "-")[:12].strip("-")
    with ControlPlane(toolchain.bin, name=name) as cp:
        yield cp


def _require_engine(tc: Toolchain) -> None:
    reason = tc.missing("pulumi", "pulumi-resource-kubernetes")
    if reason:
        pytest.fail(reason, pytrace=False)


@pytest.fixture
def engine(toolchain: Toolchain, tmp_path: Path, request: pytest.FixtureRequest) -> Engine:
    """The real CLI and provider with a file:// backend of this test's own."""
    _require_engine(toolchain)
    eng = Engine.create(toolchain.bin, tmp_path / "engine")
    _ENGINES.append((request.node.nodeid, eng))
    return eng


@pytest.fixture(scope="module")
def module_engine(
    toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Engine:
    """One engine (backend, PULUMI_HOME) for every test of a module."""
    _require_engine(toolchain)
    eng = Engine.create(toolchain.bin, tmp_path_factory.mktemp("engine"))
    _ENGINES.append((request.module.__name__, eng))
    return eng


@pytest.fixture
def e2e_report(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """``report(line)``: a finding printed in the terminal summary (the figures of a run)."""

    def report(line: str) -> None:
        _PENDING.append(f"[{request.node.name}] {line}")

    return report


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the project (Pulumi.yaml, stacks/, examples/, policies/, __main__.py)."""
    return copy_project(tmp_path / "project")


# --- timings: each test's wall time and its engine operations ----------------------------------

# Gathered in the process that runs the tests (a pytest-xdist worker, or the only process) ...
_ENGINES: list[tuple[str, Engine]] = []
_PENDING: list[str] = []  # findings not yet put on a report
_SEEN_OPS: dict[int, int] = {}  # id(engine) -> its operations already put on a report
# ... and summed in the process that writes the summary, from the reports.
_REPORT: list[str] = []
_OPS: dict[str, list[float]] = {}
_DURATIONS: dict[str, float] = {}
_SESSION_START = time.monotonic()
FINDING, OPERATION = "e2e_finding", "e2e_operation"


def _drain() -> list[tuple[str, Any]]:
    """This process's findings and engine operations since the last call, as report
    properties."""
    props: list[tuple[str, Any]] = [(FINDING, line) for line in _PENDING]
    _PENDING.clear()
    for _, eng in _ENGINES:
        done = _SEEN_OPS.get(id(eng), 0)
        props += [(OPERATION, (op.verb, op.seconds)) for op in eng.operations[done:]]
        _SEEN_OPS[id(eng)] = len(eng.operations)
    return props


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if E2E in Path(report.fspath).resolve().parents or Path(report.fspath).parent == E2E:
        _DURATIONS[report.nodeid] = _DURATIONS.get(report.nodeid, 0.0) + report.duration
    for name, value in report.user_properties:
        if name == FINDING:
            _REPORT.append(str(value))
        elif name == OPERATION:
            verb, seconds = value
            _OPS.setdefault(str(verb), []).append(float(seconds))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    write = terminalreporter.write_line
    if _REPORT:
        terminalreporter.section("e2e findings")
        for line in _REPORT:
            write(line)
    ran = {k: v for k, v in _DURATIONS.items() if v >= 0.05}
    if not ran:
        return
    terminalreporter.section("e2e timings (wall seconds, setup and teardown included)")
    for nodeid, seconds in sorted(ran.items(), key=lambda kv: -kv[1]):
        write(f"{seconds:8.1f}  {nodeid.split('::', 1)[-1]}  [{Path(nodeid.split('::')[0]).name}]")
    write(f"{sum(ran.values()):8.1f}  total of the tests above")
    write(f"{time.monotonic() - _SESSION_START:8.1f}  session wall time (with the builder)")
    ops = _OPS
    if ops:
        write(
            "engine operations: "
            + ", ".join(
                f"{verb} x{len(t)} median {sorted(t)[len(t) // 2]:.1f}s max {max(t):.1f}s"
                for verb, t in sorted(ops.items())
            )
        )


# --- real nodes (tests/e2e/realnode) ----------------------------------------------------------

NODES_BUILDER = E2E / "realnode" / "toolchain.py"


@pytest.fixture(scope="session")
def nodes_set() -> Path:
    """What real nodes run (kubelet, kube-proxy, kubectl, CoreDNS, kube-router, the images):
    realnode/toolchain.py's set directory, built or reused; FLUX_MINICLUSTER_NODES_DIR=<dir>
    uses one built before. A piece that does not build fails the test with the builder's words."""
    explicit = os.environ.get("FLUX_MINICLUSTER_NODES_DIR")
    if explicit:
        return Path(explicit)
    proc = subprocess.run(
        [sys.executable, str(NODES_BUILDER)], capture_output=True, text=True, cwd=REPO
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        pytest.fail(f"the real-node pieces did not build:\n{proc.stderr[-3000:]}", pytrace=False)
    return Path(lines[-1])


@contextmanager
def _real_cluster(
    toolchain: Toolchain, nodes_set: Path, request: pytest.FixtureRequest, **kw: Any
) -> Iterator[Any]:
    """A RealCluster (realnode/cluster.py) of ``kw``, removed however the test ends; its start-up
    and teardown figures go to the terminal summary."""
    from realnode.cluster import RealCluster

    _require_control_plane(toolchain)
    rc = RealCluster(toolchain.bin, nodes_set, **kw)
    t0 = time.monotonic()
    with rc:
        request.node.user_properties.append(("real_cluster_startup_s", time.monotonic() - t0))
        yield rc
    steps = ", ".join(f"{k} {v:.1f}s" for k, v in rc.teardown_steps.items())
    _PENDING.append(f"[{request.node.name}] real cluster teardown: {steps}")


@pytest.fixture
def real_cluster(toolchain: Toolchain, nodes_set: Path, request: pytest.FixtureRequest) -> Any:
    """A control plane with one real node (realnode/cluster.py)."""
    with _real_cluster(toolchain, nodes_set, request, nodes=1, name="rn") as rc:
        yield rc


@pytest.fixture
def real_flux_cluster(toolchain: Toolchain, nodes_set: Path, request: pytest.FixtureRequest) -> Any:
    """A control plane with two real nodes that hold the Flux images (the application image and
    the flux view, realnode/toolchain.py's flux-images) and the pause image, as a FluxPlane's."""
    from fluxnodes import FLUX_CLUSTER

    kw: dict[str, Any] = {"nodes": 2, "name": "rf", **FLUX_CLUSTER}
    with _real_cluster(toolchain, nodes_set, request, **kw) as rc:
        yield rc


# --- real brokers (the `flux` marker) --------------------------------------------------------


@contextmanager
def real_planes(
    toolchain: Toolchain, nodes_set: Path, names: dict[str, str], nodes: int = 2, **cluster: Any
) -> Iterator[dict[str, Any]]:
    """Real-node clusters holding the Flux images (``fluxnodes.FluxPlane``), one per key of
    ``names`` (a stack, say) named by its value, each of ``nodes`` nodes, on one fabric (the
    host routes between them), started in order and all stopped when the block ends.
    ``cluster``: RealCluster's other options (``images``: the archives each node imports)."""
    from fluxnodes import FluxPlane

    _require_control_plane(toolchain)
    planes: dict[str, FluxPlane] = {}
    try:
        for key, name in names.items():
            planes[key] = FluxPlane(toolchain.bin, nodes_set, name, nodes=nodes, **cluster).start()
        yield planes
    finally:
        for plane in planes.values():
            plane.stop()


@pytest.fixture(scope="module")
def flux_plane(toolchain: Toolchain, nodes_set: Path) -> Iterator[Any]:
    """A real-node cluster of two nodes for the module's brokers."""
    with real_planes(toolchain, nodes_set, {"flux": "flux"}) as planes:
        yield planes["flux"]


@pytest.fixture(scope="module")
def mpi_plane(toolchain: Toolchain, nodes_set: Path) -> Iterator[Any]:
    """A real-node cluster of two nodes that also hold the MPI application images
    (realnode/toolchain.py's flux-mpi, Open MPI, and flux-mpich, MPICH: each with the OSU
    benchmarks and mpi_check)."""
    from fluxnodes import IMAGES

    images = (*IMAGES, "flux-mpi.tar", "flux-mpich.tar")
    with real_planes(toolchain, nodes_set, {"mpi": "mpi"}, images=images) as p:
        yield p["mpi"]


@pytest.fixture(scope="module")
def cpu_plane(toolchain: Toolchain, nodes_set: Path) -> Iterator[Any]:
    """A real-node cluster of two nodes whose kubelets run the static CPU manager, core 0 kept
    for the system: a Guaranteed pod asking for a whole CPU gets core 1 as its own."""
    with real_planes(toolchain, nodes_set, {"cpus": "cpus"}, reserved_cpus="0") as planes:
        yield planes["cpus"]


@pytest.fixture(scope="module")
def lammps_plane(toolchain: Toolchain, nodes_set: Path) -> Iterator[Any]:
    """A real-node cluster of two nodes that also hold the LAMMPS image (realnode/toolchain.py's
    flux-lammps: Open MPI, lmp with REAXFF, the HNS example at /opt/lammps/examples/reaxff/HNS)."""
    from fluxnodes import IMAGES

    images = (*IMAGES, "flux-lammps.tar")
    with real_planes(toolchain, nodes_set, {"lammps": "lammps"}, images=images) as p:
        yield p["lammps"]


@pytest.fixture(scope="module")
def flux_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project for the module's stacks."""
    return copy_project(tmp_path_factory.mktemp("flux") / "project")
