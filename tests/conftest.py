"""Shared pytest configuration.

``run_pulumi`` runs a Pulumi program under the recording mocks, with a fresh monitor and root
Stack per run: ``set_mocks`` is process-global, and no run may see another's resources.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support.corpus import load_one

from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import lead_service, render
from flux_minicluster.core.spec.definition import MiniClusterDefinition

if TYPE_CHECKING:
    from flux_minicluster.deploy.component.awaiting import Wait

if TYPE_CHECKING:
    from flux_minicluster.deploy.offline.recorder import ProgramRun

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
NAME = "flux-sample"
Manifest = dict[str, Any]
# A bare spec without containers gets this one: a small ephemeral cluster.
DEFAULT_CONTAINERS = ({"image": "ubuntu:noble", "command": "hostname"},)
# ``rendered(..., certificate=PLACEHOLDERS)`` leaves the certificate's placeholder tokens in.
PLACEHOLDERS = None


# --- the user's state folder ---------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def state_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where ``minicluster render`` keeps certificates during the tests (``cli.curvecerts``):
    a folder of the session's, never the tester's own ``~/.local/state``. Set in the process
    environment, so the commands tests run as new processes keep theirs there too."""
    from flux_minicluster.cli.curvecerts import STATE_ENV

    folder = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STATE_ENV, str(folder))
        yield folder


# --- MiniClusters, plans and their objects ------------------------------------------------------


@pytest.fixture(scope="session")
def curve_cert() -> str:
    """The golden certificate: fixed, so rendered objects are the same on every run."""
    return (GOLDEN / "fixed-curve.cert").read_text()


@pytest.fixture(scope="session")
def build() -> Callable[..., plans.MiniClusterPlan]:
    """``build(spec, name=, namespace=, kube_version=)``: the plan of a document or bare spec
    (containers default to one ephemeral container), for the default release unless given."""

    def build(
        spec: Mapping[str, Any],
        name: str | None = NAME,
        namespace: str | None = "default",
        kube_version: str | None = None,
    ) -> plans.MiniClusterPlan:
        document = dict(spec)
        if "spec" not in document and "containers" not in document:
            document["containers"] = [dict(c) for c in DEFAULT_CONTAINERS]
        definition = parse(document, name=name, namespace=namespace)
        if kube_version is None:
            return plans.build(definition)
        return plans.build(definition, kubeversion.parse(kube_version))

    return build


@pytest.fixture(scope="session")
def rendered(curve_cert: str) -> Callable[..., list[Manifest]]:
    """``rendered(source, certificate=, wait=)``: every object of a MiniCluster file, definition
    or plan, with the golden certificate (``None``: placeholders), plus a bursting root's lead
    Service. As the core renders it, or with ``wait`` as the component registers it: with the
    deploy layer's annotations (``deploy.awaiting``), which the policy pack sees. Files are read
    and rendered once per session."""

    @functools.cache
    def of_file(path: Path, certificate: str | None, wait: Wait | None) -> tuple[Manifest, ...]:
        return tuple(objects(load_one(path), certificate, wait))

    def objects(
        source: MiniClusterDefinition | plans.MiniClusterPlan,
        certificate: str | None,
        wait: Wait | None,
    ) -> list[Manifest]:
        plan = plans.build(source) if isinstance(source, MiniClusterDefinition) else source
        rendering = render(plan, certificate)
        if wait is not None:
            from flux_minicluster.deploy.component.awaiting import registered_job

            rendering = dataclasses.replace(
                rendering, job=registered_job(plan, rendering.job, wait)
            )
        out = rendering.objects()
        if plan.role is plans.Role.ROOT:
            out.append(lead_service(plan))
        return out

    def rendered(
        source: Path | MiniClusterDefinition | plans.MiniClusterPlan,
        *,
        certificate: str | None = curve_cert,
        wait: Wait | None = None,
    ) -> list[Manifest]:
        if isinstance(source, Path):
            return copy.deepcopy(list(of_file(source, certificate, wait)))
        return objects(source, certificate, wait)

    return rendered


def _of_kind(objects: Iterable[Manifest], kind: str) -> list[Manifest]:
    """The objects themselves (not copies): a test may change one to see a check fail."""
    return [o for o in objects if o.get("kind") == kind]


@pytest.fixture(scope="session")
def of_kind() -> Callable[[Iterable[Manifest], str], list[Manifest]]:
    """``of_kind(objects, kind)``: every object of that kind, in order."""
    return _of_kind


@pytest.fixture(scope="session")
def by_kind() -> Callable[..., Manifest]:
    """``by_kind(objects, kind, name=None)``: the one object of that kind (and name)."""

    def by_kind(objects: Iterable[Manifest], kind: str, name: str | None = None) -> Manifest:
        found = [
            o for o in _of_kind(objects, kind) if name in (None, o.get("metadata", {}).get("name"))
        ]
        assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
        return found[0]

    return by_kind


@pytest.fixture
def job_pod(by_kind: Callable[..., Manifest]) -> Callable[[list[Manifest]], Manifest]:
    """``job_pod(objects)``: the pod spec of the Job's template."""

    def job_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
        spec: dict[str, Any] = by_kind(objects, "Job")["spec"]["template"]["spec"]
        return spec

    return job_pod


# --- Pulumi mocks --------------------------------------------------------------------------------


@pytest.fixture
def run_pulumi() -> Callable[..., ProgramRun[Any]]:
    """Run a Pulumi program under recording mocks, each run with a fresh monitor and Stack.

    ``set_mocks`` is process-global, so nothing about one run may leak into the next; pass your
    own ``RegistrationRecorder`` to fake a Command's stdout or a StackReference's outputs.
    """
    from flux_minicluster.deploy.offline.recorder import RegistrationRecorder, run_program

    def run(
        build: Callable[[], Any],
        *,
        mocks: RegistrationRecorder | None = None,
        preview: bool = False,
        config: Mapping[str, Any] | None = None,
    ) -> ProgramRun[Any]:
        return run_program(
            build,
            mocks=mocks if mocks is not None else RegistrationRecorder(),
            project="flux-minicluster",
            stack="test",
            preview=preview,
            config=config,
        )

    return run


@pytest.fixture
def rule_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the MiniClusters the cross-field rules ran on, in order, from here on: every
    run goes through ``crossfield.check_semantics``, the one function that runs them all."""
    from flux_minicluster.core.validation import crossfield

    runs: list[str] = []
    rules = crossfield.check_semantics

    def counted(mc: Any, **options: Any) -> Any:
        runs.append(mc.name)
        return rules(mc, **options)

    monkeypatch.setattr(crossfield, "check_semantics", counted)
    return runs


# --- counting derivations ----------------------------------------------------------------------

# plancases.once_each asserts: rewritten as a test module's asserts are, for pytest's message.
pytest.register_assert_rewrite("plancases")


@pytest.fixture
def derivations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each derivation of ``plancases.DERIVATIONS`` ran, by ``Owner.function``."""
    from support.plancases import count_derivations

    return count_derivations(monkeypatch)


# --- hypothesis profiles -------------------------------------------------------------------------
# ``default`` keeps ``make test`` quick and repeatable: a modest number of examples from a fixed
# seed per test (derandomized, so a failure comes back on the next run rather than by chance) and
# no per-example deadline (rendering a 100000-rank cluster or running bash is slow next to
# hypothesis's 200 ms default).
# ``fuzz`` (``HYPOTHESIS_PROFILE=fuzz``, which ``make fuzz`` sets) explores many random inputs and
# keeps failures in hypothesis's example database, so the next run replays them first.

import os  # noqa: E402  (kept with the section it serves)

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    # 10,000 per property: `make fuzz` runs them on two cores within 15 minutes (the Makefile
    # says how); FUZZ_EXAMPLES measures with fewer or explores with more.
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "10000")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
