"""The MiniCluster component under Pulumi's mocks: what it registers, with which options, and why.

The renderer is the single source of truth, so the central check is that the component registers
exactly the rendered objects (after the certificate and a lead address are filled in), each as its
typed resource under the component. The rest pins the lifecycle rules a user relies on: nothing is
registered for an invalid spec, the certificate stays secret and comes from one place, a resize
never replaces the Job, a pod template change does, and the caller's provider reaches every child.
"""

from __future__ import annotations

import copy
import difflib
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from flux_minicluster.core.base import layout, placeholders
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.flux.certificate import generate, parse, render
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse as parse_definition
from flux_minicluster.core.reading.loading import with_deferred_group
from flux_minicluster.core.render import jobfields
from flux_minicluster.core.render import manifests as rendering
from flux_minicluster.core.spec.models import MiniClusterSpec
from flux_minicluster.deploy.component.awaiting import (
    DELETION_PROPAGATION_ANNOTATION,
    JOB_HASH_ANNOTATION,
    job_annotations,
)
from flux_minicluster.deploy.component.minicluster import (
    JOB_IGNORE_CHANGES,
    OUTPUTS,
    TYPE,
    MiniCluster,
    MiniClusterArgs,
)
from flux_minicluster.deploy.offline.recorder import (
    ProgramRun,
    RecordedResource,
    RegistrationRecorder,
    contains_secret,
    plain,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CERT = (ROOT / "tests" / "golden" / "fixed-curve.cert").read_text()
PUBLIC_KEY = parse(CERT).public_key
OTHER_CERT = render(generate("other", "other-0"))
JOBPATCH = "kubernetes:batch/v1:JobPatch"
COMMAND = "command:local:Command"
LEAD_ADDRESS = "lead.example.org"

Run = Callable[..., ProgramRun[Any]]


def document(name: str = "flux-sample", command: str | None = "hostname", **spec: Any) -> Any:
    container: dict[str, Any] = {"image": "ubuntu:24.04"}
    if command is not None:
        container["command"] = command
    spec.setdefault("containers", [container])
    return {"apiVersion": "flux-framework.org/v1alpha2", "kind": "MiniCluster",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def deploy(
    run_pulumi: Run,
    args: MiniClusterArgs,
    *,
    stdout: str | None = CERT.removesuffix("\n"),  # pulumi-command trims the final newline
    opts: Callable[[], pulumi.ResourceOptions | None] = lambda: None,
    preview: bool = False,
) -> ProgramRun[MiniCluster]:
    def build() -> MiniCluster:
        cluster = MiniCluster("mc", args, opts())
        for key in OUTPUTS:
            pulumi.export(key, getattr(cluster, key))
        return cluster

    return run_pulumi(build, mocks=RegistrationRecorder(command_stdout=stdout), preview=preview)


def kube(run: ProgramRun[Any]) -> dict[tuple[str, str], RecordedResource]:
    """The registered Kubernetes objects (the JobPatch excluded) by (kind, name)."""
    found = {}
    for r in run.resources:
        if r.is_kubernetes_object and r.typ != JOBPATCH:
            key = (r.inputs["kind"], r.inputs["metadata"]["name"])
            assert key not in found, f"{key} registered twice"
            found[key] = r
    return found


def one(run: ProgramRun[Any], typ: str) -> RecordedResource:
    (found,) = [r for r in run.resources if r.typ == typ]
    return found


def by_kind(run: ProgramRun[Any], kind: str) -> RecordedResource:
    (found,) = [r for key, r in kube(run).items() if key[0] == kind]
    return found


def expected_registration(
    rendered: list[dict[str, Any]], deploy_annotations: dict[str, str]
) -> dict[tuple[str, str], Any]:
    """The rendered objects as the component must register them: the documented changes are the
    Job's deploy annotations (``deploy.awaiting``), checked by ``test_await_annotations``, and
    background deletion for every other object."""
    out = {}
    for manifest in copy.deepcopy(rendered):
        if manifest["kind"] == "Job":
            manifest["metadata"]["annotations"].update(deploy_annotations)
        else:
            manifest["metadata"].setdefault("annotations", {})[DELETION_PROPAGATION_ANNOTATION] = (
                "background"
            )
        out[(manifest["kind"], manifest["metadata"]["name"])] = manifest
    return out


def assert_registers_the_rendering(run: ProgramRun[Any], plan: plans.MiniClusterPlan) -> None:
    """Each object the renderer makes of ``plan`` is registered, as ``expected_registration``
    says, and nothing else is."""
    expected = expected_registration(
        rendering.render(plan, CERT).objects(), job_annotations(plan, "ready")
    )
    registered = kube(run)
    assert sorted(registered) == sorted(expected)
    for key, resource in registered.items():
        assert plain(resource.inputs) == expected[key], key


# --- one registered child per rendered object ------------------------------------------------


@pytest.mark.parametrize(
    "example",
    ["hello-world", "services-sidecar", "elastic", "bursting-root", "bursting-child", "lammps"],
)
@pytest.mark.parametrize("wait", ["ready", "complete", "none"])
def test_children_are_the_rendered_manifests(run_pulumi: Run, example: str, wait: Any) -> None:
    path = EXAMPLES / f"{example}.yaml"
    run = deploy(run_pulumi, {"spec": path, "wait": wait})
    cluster = run.result
    expected = expected_registration(
        rendering.render(cluster.plan, CERT).objects(), job_annotations(cluster.plan, wait)
    )

    registered = kube(run)
    assert sorted(registered) == sorted(expected)
    for key, resource in registered.items():
        assert plain(resource.inputs) == expected[key], key
    # The typed class of each kind, and nothing left of a placeholder.
    types = {key: r.typ for key, r in registered.items()}
    assert {types[k] for k in types if k[0] == "Job"} == {"kubernetes:batch/v1:Job"}
    assert {types[k] for k in types if k[0] == "Service"} <= {"kubernetes:core/v1:Service"}
    for resource in run.resources:
        assert not list(placeholders.find(plain(resource.inputs)))
    # The rendering attribute is the renderer's, placeholders and all, never the secret.
    objects = cluster.rendering.objects()
    assert objects == rendering.render(cluster.plan, None).objects()
    assert CERT not in yaml.safe_dump(objects)


def test_every_child_is_parented_to_the_component(run_pulumi: Run) -> None:
    run = deploy(run_pulumi, {"spec": EXAMPLES / "services-sidecar.yaml"})
    component = one(run, TYPE)
    assert component.inputs == {}  # no spec, no certificate in the component's props
    children = [r for r in run.resources if r is not component]
    assert {r.typ for r in children} == {
        COMMAND, JOBPATCH, "kubernetes:batch/v1:Job", "kubernetes:core/v1:ConfigMap",
        "kubernetes:core/v1:Secret", "kubernetes:core/v1:Service", "kubernetes:core/v1:Pod",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    }  # fmt: skip
    for child in children:
        assert child.parent == component.urn
        assert f"::{TYPE}$" in child.urn
        assert child.name.startswith("mc-")
    assert one(run, JOBPATCH).name == "mc-size"
    assert one(run, COMMAND).name == "mc-curve-keygen"
    assert by_kind(run, "ConfigMap").name == "mc-configmap-flux-app-entrypoint"


@pytest.mark.parametrize("form", ["document", "bare", "path", "str", "model"])
def test_every_form_of_spec_registers_the_same_objects(
    run_pulumi: Run, form: str, tmp_path: Path
) -> None:
    doc = yaml.safe_load((EXAMPLES / "hello-world.yaml").read_text())
    name, namespace = doc["metadata"]["name"], doc["metadata"]["namespace"]
    args: MiniClusterArgs
    if form == "document":
        args = {"spec": doc}
    elif form == "bare":
        args = {"spec": doc["spec"], "name": name, "namespace": namespace}
    elif form == "model":
        model = MiniClusterSpec.model_validate(doc["spec"])
        args = {"spec": model, "name": name, "namespace": namespace}
    else:
        path = tmp_path / "mc.yaml"
        path.write_text(yaml.safe_dump(doc))
        args = {"spec": path if form == "path" else str(path)}
    reference = deploy(run_pulumi, {"spec": EXAMPLES / "hello-world.yaml"})
    run = deploy(run_pulumi, args)
    assert {k: plain(r.inputs) for k, r in kube(run).items()} == {
        k: plain(r.inputs) for k, r in kube(reference).items()
    }


def test_names_are_stable_across_runs(run_pulumi: Run) -> None:
    first = deploy(run_pulumi, {"spec": EXAMPLES / "hello-world.yaml"})
    second = deploy(run_pulumi, {"spec": EXAMPLES / "hello-world.yaml"})
    assert [r.urn for r in first.resources] != []
    assert sorted(r.urn for r in first.resources) == sorted(r.urn for r in second.resources)


# --- the certificate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "needle"),
    [
        ("auto", "flux keygen --name="),
        ("flux", 'flux keygen --name="$cert_name" --meta="keygen.hostname=$cert_hostname"'),
        ("kubectl", 'kube exec "$pod" -- bash -c "$in_image"'),
        ("container", '"$runtime" exec "$id" bash -c "$in_image"'),
        ("builtin", "-m flux_minicluster.core.keygen"),
    ],
)
def test_certificate_comes_from_a_keygen_command(
    run_pulumi: Run, strategy: Any, needle: str
) -> None:
    run = deploy(
        run_pulumi, {"spec": document(), "keygen": {"strategy": strategy, "rotation": "r1"}}
    )
    command = one(run, COMMAND)
    script = command.inputs["create"]
    assert needle in script
    assert f"strategy={strategy}\n" in script
    assert "cert_name=flux-sample\n" in script
    assert "cert_hostname=flux-sample-0\n" in script
    assert command.inputs["triggers"] == ["r1"]
    assert command.inputs["logging"] == "none"
    assert command.inputs["addPreviousOutputInEnv"] is False
    assert command.options is not None
    assert command.options.additional_secret_outputs == ("stdout",)
    assert set(command.options.ignore_changes) == {"create", "environment", "interpreter"}

    secret = by_kind(run, "Secret")
    assert contains_secret(secret.inputs["stringData"])
    assert plain(secret.inputs)["stringData"] == {layout.CURVE_FILE: CERT}
    assert plain(secret.inputs)["metadata"]["annotations"] == {
        lbl.CURVE_PUBLIC_KEY_ANNOTATION: PUBLIC_KEY,
        DELETION_PROPAGATION_ANNOTATION: "background",
    }
    # The Secret takes its data from the Command; the Job waits for both.
    assert secret.options is not None
    assert command.urn in secret.options.dependencies
    job = by_kind(run, "Job")
    assert job.options is not None
    assert {command.urn, secret.urn} <= set(job.options.dependencies)


@pytest.mark.parametrize("strategy", ["auto", "flux", "kubectl", "container", "builtin"])
@pytest.mark.parametrize(
    "stdout",
    [
        "Error: flux: command not found",
        CERT.replace("secret-key", "private-key"),
        CERT.replace(parse(CERT).secret_key, parse(OTHER_CERT).secret_key),
        "",
    ],
    ids=["message", "unknown-key", "wrong-key", "empty"],
)
def test_an_invalid_keygen_certificate_fails_naming_the_strategy(
    run_pulumi: Run, strategy: str, stdout: str
) -> None:
    # Pulumi re-raises an error inside an apply as a ValueError that quotes the original.
    with pytest.raises(pulumi.RunError, match=rf"keygen Command \(strategy '{strategy}'\)"):
        deploy(run_pulumi, {"spec": document(), "keygen": {"strategy": strategy}}, stdout=stdout)


@pytest.mark.parametrize(
    "source",
    ["argument", "secret-output", "spec"],
)
def test_a_supplied_certificate_skips_the_command(run_pulumi: Run, source: str) -> None:
    args: MiniClusterArgs
    if source == "spec":
        doc = document()
        doc["spec"]["flux"] = {"curveCert": OTHER_CERT}
        args = {"spec": doc}
    else:
        args = {"spec": document(), "curve_cert": OTHER_CERT}
        if source == "secret-output":
            args = {"spec": document(), "curve_cert": pulumi.Output.secret(OTHER_CERT)}
    run = deploy(run_pulumi, args, stdout=CERT)
    assert not [r for r in run.resources if r.typ == COMMAND]
    assert run.result.keygen is None
    assert plain(by_kind(run, "Secret").inputs)["stringData"] == {layout.CURVE_FILE: OTHER_CERT}
    assert run.exports["curve_public_key"].value == parse(OTHER_CERT).public_key
    assert run.exports["curve_cert"].secret


def test_the_argument_wins_over_the_spec_certificate(run_pulumi: Run) -> None:
    doc = document()
    doc["spec"]["flux"] = {"curveCert": CERT}
    run = deploy(run_pulumi, {"spec": doc, "curve_cert": OTHER_CERT})
    assert plain(by_kind(run, "Secret").inputs)["stringData"] == {layout.CURVE_FILE: OTHER_CERT}


def test_an_invalid_certificate_output_fails_naming_curve_cert(run_pulumi: Run) -> None:
    bad = pulumi.Output.secret(CERT.replace("curve\n", "kurve\n"))
    with pytest.raises(pulumi.RunError, match="from the curve_cert argument"):
        deploy(run_pulumi, {"spec": document(), "curve_cert": bad})


def test_a_failed_program_reports_its_error_once(
    run_pulumi: Run, caplog: pytest.LogCaptureFixture
) -> None:
    # Every child holds a copy of the error, which the event loop would print with a traceback
    # when it is freed, during a later run: the caller (the CLI prints one line) has it already.
    bad = pulumi.Output.secret(CERT.replace("curve\n", "kurve\n"))
    for _ in range(3):
        with pytest.raises(pulumi.RunError, match="from the curve_cert argument"):
            deploy(run_pulumi, {"spec": document(), "curve_cert": bad})
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


# --- validation before registration ------------------------------------------------------------


def _holding_itself() -> dict[str, Any]:
    doc = document()
    doc["spec"]["pod"] = {"labels": doc}
    return doc


def _nested(depth: int) -> dict[str, Any]:
    doc = document()
    inner = doc["spec"]["pod"] = {}
    for _ in range(depth):
        inner["x"] = inner = {}
    return doc


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"spec": document(size="2")}, "spec.size: must be an integer"),
        ({"spec": document(containers=[{"image": 3}])}, "spec.containers[0].image"),
        ({"spec": document(contaners=[])}, "spec.contaners"),
        ({"spec": document(maxSize=1, size=2)}, "spec.maxSize"),
        ({"spec": {"metadata": {"name": "x"}}}, "spec: required"),
        ({"spec": EXAMPLES / "no-such-file.yaml"}, "no-such-file.yaml"),
        ({"spec": "size: 2\ncontainers: []\n"}, "spec: a string is a file path"),
        ({"spec": document(), "wait": "forever"}, "wait: must be one of none, ready, complete"),
        ({"spec": document(), "keygen": {"strategy": "magic"}}, "keygen.strategy: must be one of"),
        ({"spec": document(), "keygen": {"container_runtime": "lxc"}}, "keygen.container_runtime"),
        ({"spec": document(), "keygen": {"rotaton": "1"}}, "keygen.rotaton: unknown argument"),
        ({"spec": document(), "sise": 3}, "sise: unknown argument"),
        ({"spec": document(), "kube_version": "1.20"}, "kube_version: Kubernetes 1.20 is older"),
        ({"spec": document(), "curve_cert": "not a certificate"}, "curve_cert: line 1"),
        (
            {"spec": document(), "lead_broker": "a b"},
            "lead_broker: must be one IPv4 address or DNS name",
        ),
        ({"spec": document(), "lead_broker": "x.org"}, "spec.flux.bursting.leadBroker: required"),
        (
            {
                "spec": document(flux={"bursting": {"clusters": [{"name": "b", "size": 1}]}}),
                "lead_broker": "x.org",
                "burst_group": {},
            },
            "spec.flux.bursting: leave it out: a burst's group comes from its root's outputs",
        ),
        (
            {"spec": parse_definition(document(), settle=with_deferred_group)},
            "burst_group: required: the spec defers its group to its root's outputs",
        ),
        (
            {
                "spec": {
                    **document(),
                    "apiVersion": "flux-framework.org/v1alpha1",
                    "spec": {**document()["spec"], "flux": {"curveCertSecret": "site"}},
                }
            },
            "curve_cert: required with spec.flux.curveCertSecret",
        ),
        ({}, "spec: required"),
        # a program's dict may be anything (each was an AttributeError or a RecursionError)
        ({"spec": {**document(), "metadata": "oops"}}, "metadata: must be a mapping"),
        ({"spec": {**document(), "metadata": 5}}, "metadata: must be a mapping"),
        ({"spec": _holding_itself()}, "spec.pod.labels: holds itself"),
        ({"spec": _nested(2_000)}, "spec.pod" + ".x" * 62 + ": nested deeper than 64 levels"),
        # An object the API server would refuse as too large, only once the others exist.
        (
            {"spec": document(containers=[{"image": "x", "command": "x" * 1_100_000}])},
            "spec.containers[0].command: makes ConfigMap",
        ),
    ],
)
def test_invalid_input_raises_before_anything_is_registered(
    run_pulumi: Run, args: Any, message: str
) -> None:
    mocks = RegistrationRecorder(command_stdout=CERT)

    def build() -> None:
        MiniCluster("mc", args)

    with pytest.raises(SpecError) as caught:
        run_pulumi(build, mocks=mocks)
    assert message in str(caught.value)
    assert mocks.resources == []  # not even the component
    # what the language host prints as the message alone, never with a traceback
    assert isinstance(caught.value, pulumi.RunError)


# --- lifecycle ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "wait", "job_await", "patch_await"),
    [
        (None, "ready", {lbl.SKIP_AWAIT_ANNOTATION: "true"}, {lbl.SKIP_AWAIT_ANNOTATION: "true"}),
        (
            None,
            "complete",
            {lbl.SKIP_AWAIT_ANNOTATION: "true"},
            {lbl.SKIP_AWAIT_ANNOTATION: "true"},
        ),
        (
            "hostname",
            "ready",
            {lbl.SKIP_AWAIT_ANNOTATION: "true"},
            {lbl.WAIT_FOR_ANNOTATION: "jsonpath={.status.ready}=3"},
        ),
        # the size patch awaits the Job it patches: it gives a replaced Job its size first
        ("hostname", "complete", {lbl.SKIP_AWAIT_ANNOTATION: "true"}, {}),
        (
            "hostname",
            "none",
            {lbl.SKIP_AWAIT_ANNOTATION: "true"},
            {lbl.SKIP_AWAIT_ANNOTATION: "true"},
        ),
    ],
    ids=["persistent", "persistent-complete", "ephemeral-ready", "ephemeral-complete", "none"],
)
def test_await_annotations(
    run_pulumi: Run, command: str | None, wait: Any, job_await: dict[str, str], patch_await: Any
) -> None:
    run = deploy(run_pulumi, {"spec": document(command=command, size=3), "wait": wait})
    await_keys = (lbl.SKIP_AWAIT_ANNOTATION, lbl.WAIT_FOR_ANNOTATION)
    job_notes = plain(by_kind(run, "Job").inputs)["metadata"]["annotations"]
    patch_notes = plain(one(run, JOBPATCH).inputs)["metadata"]["annotations"]
    assert {k: v for k, v in job_notes.items() if k in await_keys} == job_await
    assert {k: v for k, v in patch_notes.items() if k in await_keys} == patch_await
    # e2e test_local_stack: a replaced Job (a new image or certificate) is deleted before it is
    # replaced, but pulumi-kubernetes does not wait for the deletion of a Job that skips awaiting:
    # the new Job met the old one being deleted and failed with a server-side apply conflict.
    # Background propagation removes the old object at once.
    skips = job_await.get(lbl.SKIP_AWAIT_ANNOTATION) == "true"
    assert (job_notes.get(DELETION_PROPAGATION_ANNOTATION) == "background") is skips
    assert job_notes[lbl.LIFECYCLE_ANNOTATION] == ("persistent" if command is None else "ephemeral")


def test_the_job_is_replaced_on_template_changes_and_patched_for_size(run_pulumi: Run) -> None:
    run = deploy(run_pulumi, {"spec": document(size=2, maxSize=4)})
    job, patch = by_kind(run, "Job"), one(run, JOBPATCH)
    assert job.options is not None
    assert patch.options is not None
    assert job.options.delete_before_replace is True
    # and where a field the API server keeps immutable changes (a new target release)
    assert job.options.replace_on_changes == (
        "spec.template",
        *(f"spec.{field}" for field in jobfields.IMMUTABLE),
    )
    assert job.options.ignore_changes == JOB_IGNORE_CHANGES
    assert patch.options.dependencies == (job.urn,)
    assert patch.options.deleted_with == job.urn
    assert plain(patch.inputs)["spec"] == {"parallelism": 2, "completions": 2}
    patch_meta = plain(patch.inputs)["metadata"]
    assert (patch_meta["name"], patch_meta["namespace"]) == ("flux-sample", "default")
    assert patch_meta["annotations"]["pulumi.com/patchForce"] == "true"
    # Every other object has a fixed name too, so a replacement must delete first.
    for key, resource in kube(run).items():
        assert resource.options is not None
        assert resource.options.delete_before_replace, key


@pytest.mark.parametrize("command", [None, "hostname"], ids=["persistent", "ephemeral"])
def test_resizing_within_max_size_keeps_the_job(run_pulumi: Run, command: str | None) -> None:
    small = deploy(run_pulumi, {"spec": document(command=command, size=2, maxSize=4)})
    large = deploy(run_pulumi, {"spec": document(command=command, size=4, maxSize=4)})

    def without_size(job: RecordedResource) -> Any:
        inputs = plain(job.inputs)
        for path in JOB_IGNORE_CHANGES:  # exactly what ignore_changes hides from the diff
            section, field = path.split(".")
            inputs[section].pop(field)
        return inputs

    small_job, large_job = by_kind(small, "Job"), by_kind(large, "Job")
    assert plain(small_job.inputs)["spec"]["parallelism"] == 2
    assert plain(large_job.inputs)["spec"]["parallelism"] == 4
    assert without_size(small_job) == without_size(large_job)  # no diff: no update, no replace

    small_patch, large_patch = (
        plain(one(small, JOBPATCH).inputs),
        plain(one(large, JOBPATCH).inputs),
    )
    assert large_patch["spec"] == {"parallelism": 4, "completions": 4}
    hashes = {p["metadata"]["annotations"][JOB_HASH_ANNOTATION] for p in (small_patch, large_patch)}
    assert len(hashes) == 1

    # Of everything else only the ConfigMap changes, and only in size-dependent script values.
    for key, resource in kube(small).items():
        if key[0] not in ("Job", "ConfigMap"):
            assert plain(resource.inputs) == plain(kube(large)[key].inputs), key
    before = plain(by_kind(small, "ConfigMap").inputs)["data"]
    after = plain(by_kind(large, "ConfigMap").inputs)["data"]
    assert before.keys() == after.keys()
    changed = [
        line
        for key in before
        for line in difflib.ndiff(before[key].splitlines(), after[key].splitlines())
        if line[:2] in ("- ", "+ ")
    ]
    assert changed, "the quorum follows size"
    assert all("quorum" in line or " -N" in line for line in changed), changed


def test_a_template_change_changes_the_patch_so_it_reapplies(run_pulumi: Run) -> None:
    first = deploy(run_pulumi, {"spec": document(size=2)})
    other = document(size=2)
    other["spec"]["containers"][0]["image"] = "ubuntu:25.04"
    second = deploy(run_pulumi, {"spec": other})
    hashes = {
        plain(one(run, JOBPATCH).inputs)["metadata"]["annotations"][JOB_HASH_ANNOTATION]
        for run in (first, second)
    }
    assert len(hashes) == 2


# --- providers, dependencies, outputs ----------------------------------------------------------


@pytest.mark.parametrize("how", ["provider", "providers"])
def test_the_callers_provider_reaches_every_kubernetes_child(run_pulumi: Run, how: str) -> None:
    def opts() -> pulumi.ResourceOptions:
        provider = k8s.Provider("cluster-a", kubeconfig="~/.kube/a")
        if how == "provider":
            return pulumi.ResourceOptions(provider=provider)
        return pulumi.ResourceOptions(providers=[provider])

    run = deploy(run_pulumi, {"spec": EXAMPLES / "services-sidecar.yaml"}, opts=opts)
    (provider,) = [r for r in run.resources if r.typ == "pulumi:providers:kubernetes"]
    children = [r for r in run.resources if r.typ.startswith("kubernetes:")]
    assert len(children) == len(run.result.rendering.objects()) + 1  # + the JobPatch
    for child in children:
        assert child.provider == f"{provider.urn}::{provider.name}-id", child.name
    assert not one(run, COMMAND).provider.startswith(provider.urn)


def test_the_callers_dependencies_reach_every_child(run_pulumi: Run) -> None:
    def build() -> MiniCluster:
        namespace = k8s.core.v1.Namespace("ns", metadata={"name": "hpc"})
        return MiniCluster(
            "mc",
            {"spec": document(), "namespace": "hpc"},
            pulumi.ResourceOptions(depends_on=[namespace]),
        )

    run = run_pulumi(build, mocks=RegistrationRecorder(command_stdout=CERT))
    namespace = one(run, "kubernetes:core/v1:Namespace")
    children = [r for r in run.resources if r.parent == one(run, TYPE).urn]
    assert len(children) == 7  # ConfigMap, Secret, NetworkPolicy, Service, Job, JobPatch, Command
    for child in children:
        assert child.options is not None
        assert namespace.urn in child.options.dependencies, child.name


def test_outputs_resolve(run_pulumi: Run) -> None:
    run = deploy(run_pulumi, {"spec": document(size=2, maxSize=3), "namespace": "hpc"})
    values = {name: export.value for name, export in run.exports.items()}
    assert values == {
        "job_name": "flux-sample",
        "service_name": "flux-sample",
        "namespace": "hpc",
        "lead_broker_host": "flux-sample-0.flux-sample.hpc.svc.cluster.local",
        "hostlist": "flux-sample-[0-2]",
        "size": 2,
        "max_size": 3,
        "live_size": 2,
        "curve_public_key": PUBLIC_KEY,
        "curve_cert": CERT,
        # v1alpha1 without a command only: the RESTful server.
        "restful_url": None,
        "restful_user": None,
        "restful_token": None,
        "restful_secret_key": None,
        "queue": None,
        # Under the mocks a JobPatch's outputs are its inputs: the Job as created, no status yet.
        "status": {
            "name": "flux-sample",
            "namespace": "hpc",
            "phase": "starting",
            "created": True,
            "size": 2,
            "joined": 0,
            "running": False,
            "succeeded": False,
            "failed": False,
            "reason": None,
            "exit_code": None,
            "admission": None,
            "work_exit_code": None,
            "work_failed": False,
        },
    }
    assert isinstance(values["size"], int)
    assert isinstance(values["max_size"], int)
    assert [name for name, export in run.exports.items() if export.secret] == ["curve_cert"]
    assert run.result.plan.name == "flux-sample"


def test_a_preview_registers_everything_with_the_certificate_unknown(run_pulumi: Run) -> None:
    run = deploy(run_pulumi, {"spec": document()}, preview=True)
    assert len(kube(run)) == len(run.result.rendering.objects())
    assert not run.exports["curve_cert"].known
    assert run.exports["job_name"].value == "flux-sample"


# --- a bursted cluster's lead broker -----------------------------------------------------------


def bursted(address: str | None = None) -> Any:
    doc = yaml.safe_load((EXAMPLES / "bursting-child.yaml").read_text())
    lead = doc["spec"]["flux"]["bursting"]["leadBroker"]
    if address is None:
        del lead["address"]
    else:
        lead["address"] = address
    return doc


@pytest.mark.parametrize("spec_address", [None, "203.0.113.10"], ids=["omitted", "overridden"])
@pytest.mark.parametrize("as_output", [False, True], ids=["plain", "output"])
def test_the_lead_broker_address_fills_the_broker_config(
    run_pulumi: Run, spec_address: str | None, as_output: bool
) -> None:
    lead: Any = pulumi.Output.from_input(LEAD_ADDRESS) if as_output else LEAD_ADDRESS
    run = deploy(run_pulumi, {"spec": bursted(spec_address), "lead_broker": lead})
    # What the renderer makes of the spec with the real address is what gets registered.
    truth = parse_definition(bursted(LEAD_ADDRESS))
    assert_registers_the_rendering(run, plans.build(truth))
    data = plain(by_kind(run, "ConfigMap").inputs)["data"]
    assert f"tcp://{LEAD_ADDRESS}:8050" in data["broker.toml"]
    assert data["hostlist"].startswith(f"{LEAD_ADDRESS},flux-root-")
    assert run.exports["hostlist"].value == data["hostlist"].strip()
    assert "203.0.113.10" not in str(plain([r.inputs for r in run.resources]))


def test_a_bad_lead_broker_output_fails_naming_it(run_pulumi: Run) -> None:
    with pytest.raises(pulumi.RunError, match="lead_broker: the lead broker address must be"):
        deploy(run_pulumi, {"spec": bursted(), "lead_broker": pulumi.Output.from_input("a,b")})


# --- a burst whose group comes from its root's outputs ------------------------------------------

GROUP = {
    "lead_name": "flux-root",
    "lead_size": 3,
    "lead_port": 30093,
    "clusters": [{"name": "other-burst", "size": 2}, {"name": "flux-burst-eks", "size": 2}],
}


def group_member() -> Any:
    """bursting-child.yaml without its group: the burst_group argument brings it."""
    doc = bursted()
    del doc["spec"]["flux"]["bursting"]
    return doc


@pytest.mark.parametrize("as_output", [False, True], ids=["plain", "output"])
def test_a_burst_group_renders_what_a_spec_declaring_the_group_does(
    run_pulumi: Run, as_output: bool
) -> None:
    group: Any = pulumi.Output.from_input(GROUP) if as_output else GROUP
    run = deploy(
        run_pulumi,
        {"spec": group_member(), "lead_broker": LEAD_ADDRESS, "burst_group": group,
         "curve_cert": CERT},
    )  # fmt: skip
    # The same group written into the spec, the lead's address the real one.
    declared = group_member()
    declared["spec"]["flux"]["bursting"] = {
        "leadBroker": {"address": LEAD_ADDRESS, "name": "flux-root", "size": 3, "port": 30093},
        "clusters": GROUP["clusters"],
    }
    assert_registers_the_rendering(run, plans.build(parse_definition(declared)))
    assert run.exports["hostlist"].value == (
        f"{LEAD_ADDRESS},flux-root-[1-2],other-burst-[0-1],flux-burst-eks-[0-1]"
    )
    # Until the group is known, the component's rendering holds placeholders where its text goes.
    deferred = run.result.rendering
    tokens = {token for _, token in placeholders.find(deferred.objects())}
    assert {*placeholders.RANK_ORDER, placeholders.LEAD_NAME} <= tokens
    assert deferred.entrypoint["data"][layout.BROKER_TOML] == placeholders.BROKER_TOML


def test_a_burst_group_is_settled_before_the_rules_run_once(
    run_pulumi: Run, rule_runs: list[str]
) -> None:
    deploy(
        run_pulumi,
        {"spec": group_member(), "lead_broker": LEAD_ADDRESS, "burst_group": GROUP,
         "curve_cert": CERT},
    )  # fmt: skip
    assert rule_runs == ["flux-burst-eks"]


def test_a_group_that_does_not_declare_the_burst_fails_naming_it(run_pulumi: Run) -> None:
    group = {**GROUP, "clusters": [{"name": "other-burst", "size": 2}]}
    with pytest.raises(
        pulumi.RunError, match=r"burst_group\.clusters: must list this bursted cluster"
    ):
        deploy(
            run_pulumi,
            {"spec": group_member(), "lead_broker": LEAD_ADDRESS, "burst_group": group,
             "curve_cert": CERT},
        )  # fmt: skip
