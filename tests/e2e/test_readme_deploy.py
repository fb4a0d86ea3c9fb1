"""The README's "Deploy with Pulumi" commands, verbatim, in a copy of the checkout.

The commands are read from README.md's ``sh`` block under "## Deploy with Pulumi", so the README
and this test cannot drift: ``make venv`` (a real ``python3 -m venv`` and pip install in the copy,
from pip's cache), ``pulumi login --local``, the passphrase's ``export`` (each line runs in a
shell of its own, so the environment below carries it), ``pulumi stack select --create local``,
``pulumi preview -s local``, ``pulumi up -s local``, ``pulumi destroy -s local``, with the real
CLI, which runs ``__main__.py`` through the real ``pulumi-language-python`` and the keygen
Command through the real command provider, against a throwaway control plane.

What differs from a user's machine is the environment only: KUBECONFIG names the control plane's
kubeconfig (its current context is the control plane: "the current kube-context" the local
stack deploys to); PULUMI_BACKEND_URL names a state directory of the test's own, because
``pulumi login --local`` logs into ``file://~``, which the CLI resolves with the account's home
from the password database, not $HOME: the login still runs and writes what it always writes
there (``~/.pulumi/meta.yaml``, ``version: 1``), every stack lives in the test's directory, and
two runs never share a stack ``local``; HOME and PULUMI_HOME are the test's own (credentials,
plugins), pip's cache the machine's; PULUMI_CONFIG_PASSPHRASE is set; and
PULUMI_SKIP_CONFIRMATIONS=true answers the "Do you want to perform this update?" prompt that
``pulumi up`` and ``destroy`` ask at a terminal (a test has none). No file of the copy is edited.

One line of the block is not run: ``kubectl logs``. kwok runs no containers, so there are no
logs to print (tests/e2e/README.md, "What it does not prove").

The copy gets a venv of its own rather than a link to the dev venv: ``make venv`` would see the
copy's pyproject.toml newer than the link's stamp and ``pip install -e`` the copy into the dev
venv, and the point is to run ``make venv`` as a user does.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from controlplane import ControlPlane
from kube import wait_until
from realcli import REPO, Cli, copy_checkout, flux_bin_dir, holds, plain

from flux_minicluster.core.flux import certificate

if TYPE_CHECKING:  # the fixtures' types; tests/conftest.py is also a module named conftest
    from conftest import Toolchain

pytestmark = pytest.mark.e2e

SECTION = "## Deploy with Pulumi"
# Lines of the block that cannot run here, with the reason (a prefix of the command).
NOT_HERE = {"kubectl logs": "kwok runs no containers: there are no logs to print"}
NAMESPACE = "flux-local"
JOB = "flux-hello"


def readme_commands(text: str) -> list[str]:
    """The commands of the first ``sh`` block under SECTION, without their comments."""
    section = text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, f"README.md: no ```sh block under {SECTION!r}"
    lines = (line.split("#", 1)[0].strip() for line in block.group(1).splitlines())
    return [line for line in lines if line]


def test_the_readme_block_is_the_deploy_path() -> None:
    """What the deploy test runs: if the README's block changes, this says how."""
    commands = readme_commands((REPO / "README.md").read_text())
    assert commands == [
        "make venv",
        "pulumi login --local",
        "export PULUMI_CONFIG_PASSPHRASE='a passphrase of yours'",
        "pulumi stack select --create local",
        "pulumi preview -s local",
        "pulumi up -s local",
        "kubectl logs -n flux-local -l job-name=flux-hello -c flux-hello --prefix",
        "pulumi destroy -s local",
    ]


@pytest.mark.needs("pulumi", "pulumi-language-python", "pulumi-resource-command")
@pytest.mark.needs("pulumi-resource-kubernetes")
def test_readme_deploy_commands_run_verbatim(
    toolchain: Toolchain,
    control_plane: ControlPlane,
    tmp_path: Path,
    e2e_report: Callable[[str], None],
) -> None:
    copy = copy_checkout(tmp_path / "clone")
    flux = flux_bin_dir(toolchain.bin)
    cli = Cli.create(
        toolchain.bin,
        tmp_path,
        copy,
        kubeconfig=control_plane.kubeconfig,
        extra_path=() if flux is None or flux == toolchain.bin else (flux,),
    )
    (tmp_path / "state").mkdir()
    cli.env["PULUMI_BACKEND_URL"] = f"file://{tmp_path / 'state'}"
    commands = readme_commands((copy / "README.md").read_text())
    up = False
    try:
        for command in commands:
            skipped = next(
                (why for prefix, why in NOT_HERE.items() if command.startswith(prefix)), None
            )
            if skipped:
                e2e_report(f"not run: `{command}` ({skipped})")
                continue
            call = cli.sh(command, timeout=600 if command == "make venv" else 300)
            e2e_report(f"`{command}`: {call.seconds:.1f}s")
            if command == "pulumi up -s local":
                up = True
                _check_deployed(control_plane, cli)
            elif command == "pulumi destroy -s local":
                up = False
    finally:
        if up:  # leave nothing behind when a step after `up` failed
            cli.sh("pulumi destroy -s local --yes", check=False, timeout=300)
    assert (copy / ".venv" / "bin" / "python").exists()
    wait_until(
        f"namespace {NAMESPACE} gone after `pulumi destroy -s local`",
        lambda: control_plane.kubectl("get", "namespace", NAMESPACE, check=False).returncode != 0,
        timeout=120,
    )


def _check_deployed(cp: ControlPlane, cli: Cli) -> None:
    """After the README's `pulumi up -s local`: the Job with every pod Ready (``wait: ready``)
    and the certificate the keygen Command made in the Secret, secret in the state."""
    job = json.loads(cp.kubectl("get", "job", JOB, "-n", NAMESPACE, "-o", "json").stdout)
    assert job["status"].get("ready") == job["spec"]["parallelism"], job["status"]
    state = json.loads(cli.pulumi("stack", "export", "-s", "local", "--show-secrets").stdout)
    (keygen,) = [
        r for r in state["deployment"]["resources"] if r["type"] == "command:local:Command"
    ]
    made = certificate.parse(plain(keygen["outputs"]["stdout"]))
    held = [
        certificate.parse(base64.b64decode(value).decode())
        for secret in json.loads(
            cp.kubectl("get", "secrets", "-n", NAMESPACE, "-o", "json").stdout
        )["items"]
        for value in (secret.get("data") or {}).values()
        if certificate.holds_secret_key(base64.b64decode(value).decode(errors="replace"))
    ]
    assert [c.secret_key for c in held] == [made.secret_key]
    encrypted = cli.pulumi("stack", "export", "-s", "local").stdout
    assert not holds(encrypted, made.secret_key)
