"""The policy pack on the real engine: `pulumi preview --policy-pack policies` (through the
Automation API) passes on every bundled stack, fails naming the policy on a stack made to
violate a mandatory rule, and says what `minicluster check` says on the same stack.

The CLI runs the pack through the real `pulumi-language-python` (built from ../shared/vendor),
which starts `python -m pulumi.policy` in the pack's virtualenv (../.venv of the project copy, a
link to the dev venv with the real pulumi_policy).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import ControlPlane
from stackrun import PREFIX, Engine, Stack, StackError, copy_project, new_certificate, venv_prefix

pytestmark = pytest.mark.needs("pulumi-language-python")

REPO = Path(__file__).resolve().parents[2]
BUNDLED = ("local", "gke-root", "eks-burst", "aks-burst")
# The stack each bundled stack is judged as: the root as bundled (a LoadBalancer lead) is only
# previewed, as stack gke-root-lb; stack gke-root is up with the NodePort stand-in, for the
# bursts' StackReferences.
JUDGED = {"gke-root": "gke-root-lb"}


@dataclass
class Setup:
    cp: ControlPlane
    engine: Engine
    project: Path
    stacks: dict[str, Stack]


@pytest.fixture(scope="module")
def bundled(
    module_control_plane: ControlPlane,
    module_engine: Engine,
    tmp_path_factory: pytest.TempPathFactory,
) -> Setup:
    """Every bundled stack on one control plane; the root is up (the bursts read its state)."""
    cp = module_control_plane
    project = copy_project(tmp_path_factory.mktemp("policy") / "project")
    stacks = {}
    for name in (*BUNDLED, "gke-root-lb"):
        cert = None if name.endswith("-burst") else new_certificate(name)
        stacks[name] = module_engine.stack(
            project,
            name,
            like="gke-root" if name == "gke-root-lb" else None,
            kubeconfig=cp.kubeconfig,
            context=cp.name,
            curve_cert=cert,
        )
    # the same objects, in a namespace of their own on the one control plane
    stacks["gke-root-lb"].set(f"{PREFIX}:cluster.namespace", "flux-lb")
    root = stacks["gke-root"]
    root.set(f"{PREFIX}:bursting.expose", "NodePort")
    root.set(f"{PREFIX}:bursting.leadAddress", "127.0.0.1")
    root.set(f"{PREFIX}:bursting.nodePort", "30851")
    root.up()
    return Setup(cp, module_engine, project, stacks)


@dataclass(frozen=True)
class Verdict:
    policy: str
    level: str
    message: str


def pack_verdicts(stack: Stack) -> set[Verdict]:
    """The pack's violations as the engine reported them (policy events)."""
    out = set()
    for event in stack.policy_events:
        message = event.message.strip()
        out.add(Verdict(event.policy_name, event.enforcement_level, message))
    return out


def check_cli(project: Path, stack: str, config: Path | None) -> tuple[int, str]:
    """`minicluster check --stack` over the project copy: its exit status and report."""
    args = [str(venv_prefix() / "bin" / "minicluster"), "--cwd", str(project), "check"]
    args += ["--stack", stack]
    if config is not None:
        args += ["--config", str(config)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, proc.stdout


def offline_levels(report: str) -> set[tuple[str, str]]:
    """``(policy, level)`` of every violation in a `minicluster check` report."""
    return {(m[1], m[0]) for m in re.findall(r"\[(mandatory|advisory)\] ([a-z0-9-]+)", report)}


def preview_with_pack(stack: Stack, config: Path | None) -> tuple[bool, str]:
    packs, _ = stack.policy_pack()
    configs = [str(config)] if config is not None else None
    try:
        stack.preview(policy_packs=packs, policy_pack_configs=configs)
    except StackError as err:
        return False, err.error
    return True, stack.last().output


def assert_same_verdicts(setup: Setup, name: str, config: Path | None) -> set[Verdict]:
    stack = setup.stacks[name]
    passed, output = preview_with_pack(stack, config)
    code, report = check_cli(setup.project, name, config)
    verdicts = pack_verdicts(stack)
    assert passed == (code == 0), f"pack passed={passed}, check exit {code}\n{output}\n{report}"
    assert {(v.policy, v.level) for v in verdicts} == offline_levels(report), (verdicts, report)
    for verdict in verdicts:  # the same words: the same rules on the same objects
        assert verdict.message.splitlines()[-1] in report, (verdict, report)
    return verdicts


@pytest.mark.parametrize("name", BUNDLED)
@pytest.mark.parametrize("config", [None, "config.example.json"], ids=["default", "example"])
def test_the_pack_passes_every_bundled_stack(bundled: Setup, name: str, config: str | None) -> None:
    path = None if config is None else bundled.project / "policies" / config
    judged = JUDGED.get(name, name)
    verdicts = assert_same_verdicts(bundled, judged, path)
    assert not [v for v in verdicts if v.level == "mandatory"]
    assert "minicluster-policies@v0.1.0" in bundled.stacks[judged].last().output


def test_the_nodeport_stand_in_opens_the_lead_to_all(
    bundled: Setup, e2e_report: Callable[[str], None]
) -> None:
    """The e2e root exposes its lead by NodePort, which no Service field can restrict: the
    pack and `minicluster check` both say so (mandatory under the example config). The root is
    interactive and mounts no claim, so both also advise that it keeps no archive."""
    config = bundled.project / "policies" / "config.example.json"
    verdicts = assert_same_verdicts(bundled, "gke-root", config)
    assert {(v.policy, v.level) for v in verdicts} == {
        ("lead-open-to-all", "mandatory"),
        ("persistent-keeps-its-queue", "advisory"),
    }
    e2e_report(
        "gke-root with the NodePort stand-in: lead-open-to-all (mandatory), "
        "persistent-keeps-its-queue (advisory), pack = check"
    )


def violating_spec() -> dict[str, Any]:
    """examples/volumes.yaml under another name: its hostPath volume is allowed only for
    flux-volumes (no-privileged, mandatory), and a moving image tag (pinned-images)."""
    doc = yaml.safe_load((REPO / "examples" / "volumes.yaml").read_text())
    doc["metadata"]["name"] = "not-allowed"
    doc["spec"]["containers"][0]["image"] = "ubuntu:latest"
    return dict(doc)


def test_the_pack_fails_a_stack_that_violates_a_mandatory_rule(
    bundled: Setup, e2e_report: Callable[[str], None]
) -> None:
    stack = bundled.engine.stack(
        bundled.project,
        "violating",
        like="local",
        kubeconfig=bundled.cp.kubeconfig,
        context=bundled.cp.name,
        curve_cert=new_certificate("not-allowed"),
    )
    stack.set_object(f"{PREFIX}:minicluster", {"spec": violating_spec(), "wait": "none"})
    config = bundled.project / "policies" / "config.example.json"
    bundled.stacks["violating"] = stack
    verdicts = assert_same_verdicts(bundled, "violating", config)
    mandatory = {v.policy for v in verdicts if v.level == "mandatory"}
    assert {"no-privileged", "pinned-images"} <= mandatory, verdicts
    passed, output = preview_with_pack(stack, config)
    assert not passed
    assert "no-privileged" in output
    assert "mandatory" in output.lower()
    e2e_report(
        "violating stack: pack and `minicluster check` both refuse it: "
        + ", ".join(sorted(f"{v.policy} ({v.level})" for v in verdicts))
    )
