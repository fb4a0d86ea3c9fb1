"""The target Kubernetes release and the Job fields it serves (issue 21, items 1, 2, 3, 5, 7).

What a user relies on: ``--kube-version`` (and ``cluster.kubernetesVersion``, ``kube_version``)
decides which Job fields are rendered; the release's own strict schemas accept every rendering;
rank 0 decides completion only where its exit ends the work; a failure policy only with
restartPolicy Never; every broker has a readiness probe; the policies catch hand-edited Jobs.
Elsewhere: the stack config and the component, tests/deploy/test_kube_version_deploy.py; the
command line, tests/cli/test_cli_kube_version.py; the policies,
tests/policy/test_kube_version_policy.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from support.kubeversioncases import job_of, rendering_of

from flux_minicluster import kubecheck
from flux_minicluster.core.base import exitcodes
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube import completion, kubeversion
from flux_minicluster.core.kube.kubeversion import JobField, KubeVersion
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import load_file, parse
from flux_minicluster.core.render import jobfields, readiness
from flux_minicluster.core.render.manifests import render

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
NEW_FIELDS = ("successPolicy", "podReplacementPolicy", "podFailurePolicy", "backoffLimitPerIndex")


# --- the release ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [("1.33", "1.33"), ("v1.33.2", "1.33"), ("1.31.0-gke.1200", "1.31"), ("1.25", "1.25")],
)
def test_a_release_is_read_as_kubectl_and_helm_write_it(text: str, want: str) -> None:
    assert str(kubeversion.parse(text)) == want


@pytest.mark.parametrize(
    ("text", "says"),
    [("1.24", "older than 1.25"), ("1.9", "older than 1.25"), ("latest", "must be a Kubernetes")],
)
def test_a_release_below_the_schemas_or_not_a_release_is_refused(text: str, says: str) -> None:
    with pytest.raises(SpecError) as err:
        kubeversion.parse(text, "--kube-version")
    assert err.value.problems[0].path == "--kube-version"
    assert says in err.value.problems[0].message


def test_the_oldest_release_is_the_oldest_with_strict_schemas_and_the_default_is_checked() -> None:
    assert kubecheck.available_versions()[0] == str(kubeversion.OLDEST)
    assert str(kubeversion.DEFAULT) == kubecheck.DEFAULT_VERSION
    # every field of the table is rendered on the default release
    assert all(kubeversion.serves(kubeversion.DEFAULT, f) for f in JobField if f != "managedBy")


@pytest.mark.parametrize("field", list(JobField))
def test_a_field_is_rendered_one_minor_after_its_controller_acts_on_it_by_default(
    field: JobField,
) -> None:
    served = kubeversion.JOB_FIELDS[field]
    first = KubeVersion(served.on_by_default.major, served.on_by_default.minor + 1)
    if served.schemas_from is not None:
        first = max(first, served.schemas_from)
    assert not kubeversion.serves(KubeVersion(first.major, first.minor - 1), field)
    assert kubeversion.serves(first, field)


# --- the done criteria ------------------------------------------------------------------------


def test_batch_at_1_33_has_rank_0_success_and_no_second_pod_per_rank_and_1_29_has_neither() -> None:
    new = job_of(EXAMPLES / "batch.yaml", "1.33")["spec"]
    assert new["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    assert new["podReplacementPolicy"] == "Failed"
    old = job_of(EXAMPLES / "batch.yaml", "1.29")["spec"]
    assert "successPolicy" not in old
    assert "podReplacementPolicy" not in old


VERSIONS = [str(KubeVersion(1, minor)) for minor in range(25, 38)]
SOURCES = ["batch.yaml", "hello-world.yaml", "interactive.yaml", "bursting-child.yaml"]


@pytest.mark.parametrize("restart", ["OnFailure", "Never"])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_releases_own_strict_schemas_accept_every_job(version: str, restart: str) -> None:
    for source in SOURCES:
        objects = rendering_of(EXAMPLES / source, version, restartPolicy=restart).objects()
        assert kubecheck.refusals(objects, (version,)) == [], source


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("source", "lead_decides"),
    [
        ("batch.yaml", True),
        ("hello-world.yaml", True),  # submit
        ("lammps.yaml", True),
        ("interactive.yaml", True),  # its success is a person's `flux shutdown`
        ("bursting-root.yaml", True),  # an interactive root
        ("bursting-child.yaml", False),  # index 0 of a burst is not the lead
        ("elastic.yaml", True),
    ],
)
def test_rank_0_decides_wherever_index_0_is_the_lead(
    version: str, source: str, lead_decides: bool
) -> None:
    """Rank 0's success ends the instance for good (its work done, or `flux shutdown`), so the
    Job completes on it wherever the Job controller serves a success policy; rank 0 stopped by a
    signal fails instead, and the workers rejoin its new pod (core.kube.completion)."""
    plan = plans.build(load_file(str(EXAMPLES / source))[0], kubeversion.parse(version))
    job = render(plan, None).job
    served = kubeversion.serves(plan.kube_version, JobField.SUCCESS_POLICY)
    assert ("successPolicy" in job["spec"]) == (lead_decides and served)
    assert ("podReplacementPolicy" in job["spec"]) == kubeversion.serves(
        plan.kube_version, JobField.POD_REPLACEMENT_POLICY
    )


# --- retries and failures ---------------------------------------------------------------------


@pytest.mark.parametrize("backoff", [0, 3])
def test_with_restart_policy_never_each_rank_gets_the_operators_budget(
    build: Callable[..., plans.MiniClusterPlan], backoff: int
) -> None:
    plan = build({"size": 3, "backoffLimit": backoff, "pod": {"restartPolicy": "Never"}})
    spec = render(plan, None).job["spec"]
    assert "backoffLimit" not in spec  # the budget is per rank
    assert spec["backoffLimitPerIndex"] == (backoff or 100)
    assert spec["maxFailedIndexes"] == 0  # a rank lost for good fails the instance
    rules = spec["podFailurePolicy"]["rules"]
    fail = {
        r["onExitCodes"]["containerName"]: r["onExitCodes"]
        for r in rules
        if r["action"] == "FailJob"
    }
    template = spec["template"]["spec"]
    flux, init = template["containers"][0]["name"], template["initContainers"][0]["name"]
    assert set(fail) == {flux, init}
    configuration = sorted(exitcodes.CONFIGURATION_ERRORS)
    # rank 0's failed work (its command, `hostname`) fails the Job too, from the Flux container
    assert fail[flux]["values"] == [*configuration, exitcodes.WORK_FAILED]
    assert fail[init]["values"] == configuration
    assert rules[-1] == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }


def test_with_restart_policy_on_failure_the_job_keeps_the_operators_retries(
    build: Callable[..., plans.MiniClusterPlan],
) -> None:
    plan = build({"size": 3, "backoffLimit": 7, "pod": {"restartPolicy": "OnFailure"}})
    spec = render(plan, None).job["spec"]
    assert spec["backoffLimit"] == 7
    assert not {"backoffLimitPerIndex", "maxFailedIndexes", "podFailurePolicy"} & set(spec)


# --- the pods' restartPolicy, and failed work ------------------------------------------------

FIRST_FAILURE_POLICY = kubeversion.JOB_FIELDS[JobField.POD_FAILURE_POLICY].rendered_from


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("requested", [None, "OnFailure", "Never"])
def test_an_unset_restart_policy_is_never_where_the_release_renders_a_failure_policy(
    version: str, requested: str | None
) -> None:
    """The one decision (``completion.restart_policy``), as the broker pods get it; the services
    Pod keeps the operator's OnFailure unless the spec says otherwise."""
    release = kubeversion.parse(version)
    want = requested or ("Never" if release >= FIRST_FAILURE_POLICY else "OnFailure")
    assert completion.restart_policy(release, requested) == want
    pod = {} if requested is None else {"restartPolicy": requested}
    rendering = rendering_of(EXAMPLES / "services-sidecar.yaml", version, **pod)
    assert rendering.job["spec"]["template"]["spec"]["restartPolicy"] == want
    services = [o for o in rendering.objects() if o["kind"] == "Pod"]
    assert services, "the example has a services Pod"
    assert {p["spec"]["restartPolicy"] for p in services} == {requested or "OnFailure"}


@pytest.mark.parametrize("version", ["1.28", "1.29", "1.34"])
@pytest.mark.parametrize("restart", [None, "OnFailure", "Never"])
@pytest.mark.parametrize(
    ("source", "work"),
    [
        ("hello-world.yaml", True),  # submit
        ("batch.yaml", True),
        ("lammps.yaml", True),
        ("interactive.yaml", False),
        ("bursting-root.yaml", False),  # an interactive root
        ("bursting-child.yaml", False),  # index 0 of a burst is not the lead
    ],
)
def test_failed_work_fails_the_job_where_a_failure_policy_can_say_so(
    version: str, restart: str | None, source: str, work: bool
) -> None:
    """Rank 0's entrypoint exits WORK_FAILED on failed work exactly where the failure policy
    fails the Job on it; elsewhere it exits 0, and validate and the component say so."""
    pod = {} if restart is None else {"restartPolicy": restart}
    document = yaml.safe_load((EXAMPLES / source).read_text())
    document["spec"]["pod"] = {**document["spec"].get("pod", {}), **pod}
    plan = plans.build(parse(document), kubeversion.parse(version))
    policy = kubeversion.serves(plan.kube_version, JobField.POD_FAILURE_POLICY)
    never = plan.job.restart_policy == "Never"
    assert plan.job.work_at_lead is work
    assert plan.job.work_fails_job is (work and never and policy)
    rendering = render(plan, None)
    rules = rendering.job["spec"].get("podFailurePolicy", {}).get("rules", [])
    codes = {c for r in rules if r["action"] == "FailJob" for c in r["onExitCodes"]["values"]}
    assert (exitcodes.WORK_FAILED in codes) is plan.job.work_fails_job
    wait = rendering.entrypoint["data"][f"wait-{plan.flux_index}.sh"]
    assert (f"exit {exitcodes.WORK_FAILED}\n" in wait) is plan.job.work_fails_job
    assert (exitcodes.work_message("${work}") in wait) is work
    advice = [w for w in plan.warnings if w.path == plans.RESTART_POLICY_FIELD]
    assert bool(advice) is (work and not plan.job.work_fails_job)
    if advice:
        assert "failed work leaves a Complete Job" in advice[0].message


def test_the_scripts_exit_with_the_codes_the_failure_policy_knows() -> None:
    data = render(plans.build(load_file(str(EXAMPLES / "bursting-child.yaml"))[0]), None)
    scripts = data.entrypoint["data"]
    wait = next(text for key, text in scripts.items() if key.startswith("wait-"))
    assert f"exit {exitcodes.SETUP_FAILED}\n}}" in wait  # die()
    assert f"exit {exitcodes.JOIN_FAILED}\n" in wait  # the join watchdog
    assert f"exit {exitcodes.SETUP_FAILED}\n" in scripts["flux-init.sh"]
    assert completion.NEVER == "Never"


# --- readiness --------------------------------------------------------------------------------


@pytest.mark.parametrize("source", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_broker_and_no_sidecar_has_the_readiness_probe(source: str) -> None:
    for definition in load_file(str(EXAMPLES / source)):
        plan = plans.build(definition)
        containers = render(plan, None).job["spec"]["template"]["spec"]["containers"]
        for container in containers:
            probe = container.get("readinessProbe")
            if container["name"] != plan.name:
                assert probe is None
                continue
            assert probe == readiness.broker_probe(plan)
            script = probe["exec"]["command"][-1]
            assert plan.paths.socket in script
            assert "flux uptime" in script


@pytest.mark.parametrize(("brokers", "period"), [(1, 5), (20, 5), (64, 16), (120, 30), (4096, 30)])
def test_the_probe_period_grows_with_the_brokers_a_node_may_hold(brokers: int, period: int) -> None:
    # an exec probe every 5 s in each of 64 brokers on two 2-core nodes delayed the join by 55 s
    assert readiness.period_seconds(brokers) == period


# --- a new release ----------------------------------------------------------------------------


def test_a_new_release_replaces_the_job_where_a_field_cannot_change() -> None:
    # every field the API server keeps immutable is one the renderer may add or drop: the new
    # Job fields, and a queued MiniCluster's managedBy (core.kube.queueing)
    assert set(jobfields.IMMUTABLE) <= {*NEW_FIELDS, "managedBy"}
