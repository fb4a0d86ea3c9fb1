"""The Pulumi program over every bundled stack, offline: what `pulumi up -s <stack>` deploys."""

from __future__ import annotations

import copy
import runpy
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from support.plancases import once_each

from flux_minicluster import kubecheck
from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.flux import hostlist
from flux_minicluster.core.kube import labels
from flux_minicluster.deploy.offline.recorder import (
    RegistrationRecorder,
    plain,
    run_create_script,
    run_program,
)
from flux_minicluster.deploy.stack import project, stackrender
from flux_minicluster.deploy.stack.stackconfig import PROJECT
from flux_minicluster.policy import checker

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted(
    p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
)
TRIO = ("gke-root", "eks-burst", "aks-burst")
CERT = (ROOT / "tests" / "golden" / "fixed-curve.cert").read_text()


PROJECT_HERE = project.find(ROOT)


@pytest.fixture(scope="module")
def rendered() -> dict[str, stackrender.StackRendering]:
    return {r.stack: r for r in stackrender.render_stacks(PROJECT_HERE, STACKS)}


OfKind = Callable[[list[dict[str, Any]], str], list[dict[str, Any]]]


def test_the_bundled_stacks_are_the_documented_ones() -> None:
    assert set(STACKS) >= {"local", *TRIO}


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_renders_objects_that_validate_strict(
    rendered: dict[str, stackrender.StackRendering], stack: str
) -> None:
    r = rendered[stack]
    assert {"Namespace", "ConfigMap", "Secret", "Service", "Job"} <= {o["kind"] for o in r.objects}
    assert kubecheck.refusals(r.objects) == []
    # In apply order: what the others refer to first, the Job last.
    assert r.objects[0]["kind"] == "Namespace"
    assert r.objects[-1]["kind"] == "Job"
    assert [p["kind"] for p in r.patches] == ["Job"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_passes_every_mandatory_policy(
    rendered: dict[str, stackrender.StackRendering], stack: str
) -> None:
    report = checker.check(rendered[stack].objects)
    assert report.mandatory == (), report.format()


def test_the_bursting_trio_passes_the_group_policies_together(
    rendered: dict[str, stackrender.StackRendering],
) -> None:
    report = checker.check([o for s in TRIO for o in rendered[s].objects])
    assert report.exit_code == 0, report.format()


def test_burst_hostlists_equal_the_roots_with_the_lead_address_in_rank_0(
    rendered: dict[str, stackrender.StackRendering], of_kind: OfKind
) -> None:
    root = rendered["gke-root"]
    root_hosts = hostlist.expand(root.outputs["hostlist"])
    assert root_hosts == [
        "flux-root-0",
        "flux-root-1",
        "eks-burst-0",
        "eks-burst-1",
        "aks-burst-0",
        "aks-burst-1",
    ]
    for burst in ("eks-burst", "aks-burst"):
        hosts = hostlist.expand(rendered[burst].outputs["hostlist"])
        assert hosts[0] == root.outputs["leadBrokerAddress"] == stackrender.LOAD_BALANCER_STAND_IN
        assert hosts[1:] == root_hosts[1:]
        (configmap,) = of_kind(rendered[burst].objects, "ConfigMap")
        assert configmap["data"][layout.HOSTLIST].strip() == rendered[burst].outputs["hostlist"]
        assert configmap["metadata"]["labels"][labels.BURST_GROUP_LABEL] == "flux-root"


def test_the_trio_shares_one_curve_certificate(
    rendered: dict[str, stackrender.StackRendering], of_kind: OfKind
) -> None:
    keys = {rendered[s].outputs["curvePublicKey"] for s in TRIO}
    assert len(keys) == 1
    certs = {of_kind(rendered[s].objects, "Secret")[0]["stringData"]["curve.cert"] for s in TRIO}
    assert len(certs) == 1
    assert "curveCert" in rendered["gke-root"].secret_outputs


def test_the_root_exposes_rank_0_on_8050(
    rendered: dict[str, stackrender.StackRendering], of_kind: OfKind
) -> None:
    (lead,) = [
        s
        for s in of_kind(rendered["gke-root"].objects, "Service")
        if s["metadata"]["name"] == "flux-root-lead"
    ]
    assert lead["spec"]["type"] == "LoadBalancer"
    assert lead["spec"]["selector"] == {
        "job-name": "flux-root",
        labels.COMPLETION_INDEX_LABEL: "0",
    }
    assert [(p["port"], p["targetPort"]) for p in lead["spec"]["ports"]] == [(8050, 8050)]
    assert lead["metadata"]["annotations"]["networking.gke.io/load-balancer-type"] == "External"
    outputs = rendered["gke-root"].outputs
    assert (outputs["leadName"], outputs["leadSize"], outputs["leadBrokerPort"]) == (
        "flux-root",
        2,
        8050,
    )
    assert outputs["burstClusters"] == [
        {"name": "eks-burst", "size": 2},
        {"name": "aks-burst", "size": 2},
    ]


def test_burst_clusters_run_no_command_and_never_block_pulumi_up(
    rendered: dict[str, stackrender.StackRendering], of_kind: OfKind
) -> None:
    for burst in ("eks-burst", "aks-burst"):
        (job,) = of_kind(rendered[burst].objects, "Job")
        annotations = job["metadata"]["annotations"]
        assert annotations[labels.LIFECYCLE_ANNOTATION] == "persistent"
        assert annotations[labels.SKIP_AWAIT_ANNOTATION] == "true"
        assert annotations[labels.ROLE_ANNOTATION] == "burst"


def test_every_child_uses_the_one_explicit_provider(tmp_path: Path) -> None:
    run = _run(_config("local"), {})
    providers = [r for r in run.resources if r.typ == "pulumi:providers:kubernetes"]
    assert len(providers) == 1
    assert providers[0].inputs.get("enableConfigMapMutable") in (True, "true")
    kube = [r for r in run.resources if r.is_kubernetes_object]
    assert kube
    assert all(r.provider.startswith(providers[0].urn) for r in kube)


# --- errors naming the config key --------------------------------------------------------------


def _config(stack: str) -> dict[str, Any]:
    values, _ = stackrender.read_stack_config(PROJECT_HERE, stack)
    values[f"{PROJECT}:keygen"] = {"strategy": "builtin"}
    return values


def _root_outputs(rendered: dict[str, stackrender.StackRendering]) -> dict[str, Any]:
    root = rendered["gke-root"]
    return {
        "organization/flux-minicluster/gke-root": {
            "outputs": root.outputs,
            "secretOutputNames": root.secret_outputs,
        }
    }


def _run(config: dict[str, Any], references: dict[str, Any]) -> Any:
    mocks = stackrender.OfflineMocks(command_stdout=run_create_script, stack_references=references)
    return run_program(
        lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"),
        mocks=mocks,
        project=PROJECT,
        stack="test",
        config=config,
    )


def _error(config: dict[str, Any], references: dict[str, Any] | None = None) -> str:
    # a RunError, which `pulumi up` prints as its lines alone, even when raised in an apply
    with pytest.raises(pulumi.RunError) as info:
        _run(config, references or {})
    return str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "fragments"),
    [
        ("name", "gcp-burst", ("'gcp-burst' does not fit", "must list this bursted cluster")),
        ("size", 3, ("'eks-burst' does not fit", "spec.maxSize 3 is larger than the 2 hosts")),
    ],
    ids=["undeclared", "larger"],
)
def test_a_burst_that_does_not_fit_its_root_is_refused(
    rendered: dict[str, stackrender.StackRendering],
    field: str,
    value: Any,
    fragments: tuple[str, ...],
) -> None:
    config = _config("eks-burst")
    spec = config[f"{PROJECT}:minicluster"]["spec"]
    (spec["metadata"] if field == "name" else spec["spec"])[field] = value
    message = _error(config, _root_outputs(rendered))
    assert f"{PROJECT}:minicluster" in message
    assert "root stack" in message
    for fragment in fragments:
        assert fragment in message


def test_a_burst_may_fill_fewer_ranks_than_its_root_declares(
    rendered: dict[str, stackrender.StackRendering],
) -> None:
    # The one membership rule (core.validation.crossfield.burst_membership_problem): at most,
    # not exactly.
    config = _config("eks-burst")
    config[f"{PROJECT}:minicluster"]["spec"]["spec"]["size"] = 1
    run = _run(config, _root_outputs(rendered))
    (job,) = [r for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
    assert plain(job.inputs)["spec"]["completions"] == 1
    assert "eks-burst-[0-1]" in str(run.exports["hostlist"].value)


@pytest.mark.parametrize(
    ("edit", "key", "fragment"),
    [
        (lambda c: c.pop(f"{PROJECT}:minicluster"), f"{PROJECT}:minicluster", "required"),
        (
            lambda c: c.__setitem__(f"{PROJECT}:clustr", {}),
            f"{PROJECT}:clustr",
            f"unknown config key; did you mean '{PROJECT}:cluster'?",
        ),
        (  # the key as Python spells it: the message names it as a stack file does
            lambda c: c.__setitem__(f"{PROJECT}:curve_cert", "x"),
            f"{PROJECT}:curve_cert",
            f"unknown config key; did you mean '{PROJECT}:curveCert'?",
        ),
        (
            lambda c: c[f"{PROJECT}:cluster"].__setitem__("cloud", "ibm"),
            f"{PROJECT}:cluster.cloud",
            "must be one of",
        ),
        (
            lambda c: c[f"{PROJECT}:cluster"].__setitem__("namepsace", "x"),
            f"{PROJECT}:cluster.namepsace",
            "did you mean 'namespace'",
        ),
        (
            lambda c: c[f"{PROJECT}:minicluster"].__setitem__("file", "examples/nope.yaml"),
            f"{PROJECT}:minicluster",
            "exactly one of spec",
        ),
        (
            lambda c: c[f"{PROJECT}:bursting"].pop("rootStack"),
            f"{PROJECT}:bursting",
            "must name its root stack",
        ),
        (
            lambda c: c[f"{PROJECT}:minicluster"]["spec"]["spec"].__setitem__("size", 0),
            "spec.size",
            "at least 1",
        ),
    ],
    ids=[
        "missing",
        "unknown-key",
        "python-spelling",
        "bad-cloud",
        "typo",
        "two-sources",
        "no-root",
        "bad-spec",
    ],
)
def test_config_problems_name_the_key(
    rendered: dict[str, stackrender.StackRendering], edit: Any, key: str, fragment: str
) -> None:
    config = copy.deepcopy(_config("eks-burst"))
    edit(config)
    message = _error(config, _root_outputs(rendered))
    assert key in message, message
    assert fragment in message, message


@pytest.mark.parametrize(
    ("stack", "edit", "line"),
    [
        (
            "local",
            lambda c: c[f"{PROJECT}:cluster"].__setitem__("namepsace", "foo"),
            f"{PROJECT}:cluster.namepsace: unknown field; did you mean 'namespace'?",
        ),
        (
            "local",
            lambda c: c.__setitem__(f"{PROJECT}:curveCert", "not a certificate"),
            f"{PROJECT}:curveCert: not a certificate Flux accepts: line 1: this line is not a "
            "section: only 'metadata' and 'curve' start at column 0",
        ),
        (
            "eks-burst",
            lambda c: c[f"{PROJECT}:minicluster"]["spec"]["spec"].__setitem__("size", 0),
            # one line per problem (the burst's size is also its place in the group)
            "spec.size: must be at least 1, got 0\n"
            "spec.flux.bursting.clusters[0].size: must be at least 1, got 0",
        ),
    ],
    ids=["config", "certificate", "spec"],
)
def test_pulumi_up_prints_a_config_or_spec_mistake_as_its_line_alone(
    rendered: dict[str, stackrender.StackRendering], stack: str, edit: Any, line: str
) -> None:
    """The language host prints a ``pulumi.RunError`` as its message, where any other error
    becomes "Program failed with an unhandled exception" and a traceback."""
    config = copy.deepcopy(_config(stack))
    edit(config)
    with pytest.raises(pulumi.RunError) as info:
        _run(config, _root_outputs(rendered))
    assert str(info.value) == line
    assert isinstance(info.value, SpecError)  # still one for whoever catches that


def test_a_missing_spec_file_names_the_key() -> None:
    config = _config("local")
    config[f"{PROJECT}:minicluster"] = {"file": "examples/does-not-exist.yaml"}
    message = _error(config)
    assert f"{PROJECT}:minicluster.file" in message
    assert "does-not-exist.yaml: no such file" in message


def test_nodeport_needs_a_lead_address() -> None:
    config = _config("gke-root")
    config[f"{PROJECT}:bursting"]["expose"] = "NodePort"
    message = _error(config)
    assert f"{PROJECT}:bursting.leadAddress" in message


def test_a_burst_needs_its_root_rendered_first() -> None:
    with pytest.raises(SpecError, match="render the root stack 'gke-root' with it"):
        stackrender.render_stack(PROJECT_HERE, "eks-burst", {})


def test_a_burst_rendered_alone_renders_its_root_first() -> None:
    (burst,) = stackrender.render_stacks(PROJECT_HERE, ["eks-burst"])
    assert burst.stack == "eks-burst"
    assert any("'gke-root' was rendered first" in note for note in burst.notes)
    assert burst.outputs["hostlist"].startswith(stackrender.LOAD_BALANCER_STAND_IN + ",")


def test_arm_clusters_get_the_arm_flux_view(tmp_path: Path) -> None:
    config = _config("local")
    config[f"{PROJECT}:cluster"] = {**config[f"{PROJECT}:cluster"], "arm": True}
    run = _run(config, {})
    (job,) = [plain(r.inputs) for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
    assert job["spec"]["template"]["spec"]["initContainers"][0]["image"].endswith(":arm-jammy")


def test_the_curve_cert_key_is_accepted_as_the_readme_spells_it() -> None:
    # e2e test_local_lifecycle: `pulumi config set --secret flux-minicluster:curveCert` was refused
    # as an unknown key (the check compared the Python field name, curve_cert).
    config = _config("local")
    config[f"{PROJECT}:curveCert"] = CERT
    run = _run(config, {})
    (secret,) = [plain(r.inputs) for r in run.resources if r.typ == "kubernetes:core/v1:Secret"]
    assert CERT in secret["stringData"].values()


# What the lead pod sees as the source of a burst's connection, per cloud: the client's own
# address wherever the load balancer can keep it, since the <root>-lead NetworkPolicy admits only
# sourceRanges. An NLB with IP targets rewrites it unless told to preserve it.
PRESERVE_CLIENT_IP = {
    "eks": (
        "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes",
        "preserve_client_ip.enabled=true",
    ),
}


@pytest.mark.parametrize("cloud", ["gke", "eks", "aks", "generic"])
def test_a_roots_lead_keeps_the_bursts_source_address(cloud: str) -> None:
    config = _config("gke-root")
    config[f"{PROJECT}:cluster"]["cloud"] = cloud
    run = _run(config, {})
    (lead,) = [
        plain(r.inputs)
        for r in run.resources
        if r.typ == "kubernetes:core/v1:Service" and r.name == "flux-root-lead"
    ]
    # passthrough load balancers keep the address for pods on the node (Local), IP targets go
    # straight to the pod and need the target-group attribute
    assert lead["spec"]["externalTrafficPolicy"] == "Local"
    annotations = lead["metadata"].get("annotations", {})
    if cloud in PRESERVE_CLIENT_IP:
        key, value = PRESERVE_CLIENT_IP[cloud]
        assert annotations[key] == value
    (policy,) = [
        plain(r.inputs)
        for r in run.resources
        if r.typ == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name.endswith("lead")
    ]
    admitted = [b["ipBlock"]["cidr"] for b in policy["spec"]["ingress"][0]["from"]]
    assert admitted == lead["spec"]["loadBalancerSourceRanges"]


def test_render_file_and_the_stack_differ_by_the_deploy_annotations_only(tmp_path: Path) -> None:
    """`minicluster render FILE` and `pulumi up -s local` of the same spec: the same objects,
    but for what only Pulumi reads, which the deploy layer adds (``deploy.awaiting``), and the
    Namespace the stack creates."""
    from flux_minicluster.cli.render import render_file
    from flux_minicluster.deploy.component.awaiting import (
        DELETION_PROPAGATION_ANNOTATION,
        DEPLOY_ANNOTATIONS,
    )

    cert = ROOT / "tests" / "golden" / "fixed-curve.cert"
    stack = stackrender.render_stack(PROJECT_HERE, "local", curve_cert=cert.read_text())
    # The stack's namespace (cluster.namespace) in the file, as a user rendering it would.
    document = yaml.safe_load((ROOT / "examples" / "hello-world.yaml").read_text())
    document["metadata"]["namespace"] = "flux-local"
    (tmp_path / "mc.yaml").write_text(yaml.safe_dump(document))
    by_file = render_file(str(tmp_path / "mc.yaml"), curve_cert=cert)
    added: dict[str, set[str]] = {}
    objects = []
    for obj in stack.objects:
        if obj["kind"] == "Namespace":
            continue
        obj = copy.deepcopy(obj)
        annotations = obj["metadata"].get("annotations") or {}
        for key in DEPLOY_ANNOTATIONS:
            if key in annotations:
                added.setdefault(obj["kind"], set()).add(key)
                del annotations[key]
        if not annotations:
            obj["metadata"].pop("annotations", None)
        objects.append(obj)
    for obj in by_file:
        if obj["metadata"].get("annotations") == {}:
            del obj["metadata"]["annotations"]
    key = stackrender.apply_order
    assert sorted(objects, key=key) == sorted(by_file, key=key)
    # The Job's awaits (for `wait: ready`); every other object only its background deletion.
    assert labels.SKIP_AWAIT_ANNOTATION in added.pop("Job")
    assert added
    assert all(keys == {DELETION_PROPAGATION_ANNOTATION} for keys in added.values())


@pytest.mark.parametrize("stack", STACKS)
def test_the_cross_field_rules_run_once_per_stack(
    rendered: dict[str, stackrender.StackRendering],
    stack: str,
    rule_runs: list[str],
) -> None:
    # A stack settles its role, a burst's group and its cloud's defaults before the one parse
    # (StackConfig.settle), and the component takes the parsed definition as it is: the rules
    # (crossfield.check_semantics, the one function that runs them all) see each stack once.
    run = _run(_config(stack), _root_outputs(rendered))
    (job,) = [r for r in run.resources if r.typ == "kubernetes:batch/v1:Job"]
    assert rule_runs == [plain(job.inputs)["metadata"]["name"]]


# --- each fact derived once, every object declared up front ------------------------------------


@pytest.mark.parametrize("stack", ["local", "gke-root"])
def test_a_stack_run_parses_its_spec_once_and_derives_each_fact_once(
    stack: str, derivations: Counter[str]
) -> None:
    config, _ = stackrender.read_stack_config(project.find(ROOT), stack)
    config[f"{PROJECT}:keygen"] = {"strategy": "builtin"}
    run_program(
        lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"),
        mocks=stackrender.OfflineMocks(
            command_stdout=(ROOT / "tests/golden/fixed-curve.cert").read_text()
        ),
        project=PROJECT,
        stack=stack,
        config=config,
    )
    once_each(derivations)


def test_no_resource_is_declared_inside_an_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst stack, under the mocks with its root's outputs known: every object is declared at
    the top of the program (a preview shows them all), none from an Output's callback."""
    inside: list[bool] = []
    declared: list[tuple[str, bool]] = []
    original_apply = pulumi.Output.apply

    def apply(self: Any, func: Callable[..., Any], run_with_unknowns: bool = False) -> Any:
        def wrapped(value: Any) -> Any:
            inside.append(True)
            try:
                return func(value)
            finally:
                inside.pop()

        return original_apply(self, wrapped, run_with_unknowns)

    original_init = pulumi.Resource.__init__

    def init(self: Any, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        declared.append((name, bool(inside)))
        original_init(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.Output, "apply", apply)
    monkeypatch.setattr(pulumi.Resource, "__init__", init)
    root_outputs = {
        "leadName": "flux-root",
        "leadSize": 2,
        "leadBrokerAddress": "192.0.2.10",
        "leadBrokerPort": 8050,
        "burstClusters": [{"name": "eks-burst", "size": 2}, {"name": "aks-burst", "size": 2}],
        "curveCert": (ROOT / "tests/golden/fixed-curve.cert").read_text(),
    }
    config, _ = stackrender.read_stack_config(project.find(ROOT), "eks-burst")
    run = run_program(
        lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"),
        mocks=RegistrationRecorder(
            stack_references={
                "organization/flux-minicluster/gke-root": {
                    "outputs": root_outputs,
                    "secretOutputNames": ["curveCert"],
                }
            }
        ),
        project=PROJECT,
        stack="eks-burst",
        config=config,
        preview=True,
    )
    assert declared
    assert [name for name, in_apply in declared if in_apply] == []
    kinds = sorted(
        r.inputs["kind"]
        for r in run.resources
        if r.is_kubernetes_object and not r.typ.endswith("Patch")
    )
    assert kinds == ["ConfigMap", "Job", "Namespace", "NetworkPolicy", "Secret", "Service"]
    assert run.exports["hostlist"].value == (
        "192.0.2.10,flux-root-[1],eks-burst-[0-1],aks-burst-[0-1]"
    )
