"""The keygen Command for real: ``pulumi up -s local`` in a copy of the project, the program run
by the real ``pulumi-language-python``, the ``<name>-curve-keygen`` Command by the real
``pulumi-resource-command``, for each strategy that can run here:

- ``flux``: a real ``flux keygen`` (the toolchain's ``<bin>/flux``, else
  ``$FLUX_MINICLUSTER_FLUX_PREFIX/bin/flux``; without one the test fails in CI, is skipped
  elsewhere);
- ``builtin``: the package's pyzmq generator (``python -m flux_minicluster.core.keygen``).

``kubectl`` and ``container`` cannot run here (tests/e2e/README.md says why): kwok runs no
containers, so ``kubectl exec`` has nothing to run ``flux keygen`` in, and there is no container
daemon.

For each: the certificate the Command printed (its ``stdout`` in the state) is the one in the
Secret, a real CURVE handshake with it succeeds, the stack's ``curvePublicKey`` is its public key;
a second ``up`` and a ``refresh`` keep it (same Secret, same Job); a new ``keygen.rotation``
makes a new one and replaces the Secret and the Job; and no secret key, old or new, appears in
plain text in ``pulumi stack export``, the stack outputs, the CLI's output or the engine's event
log (``--event-log``) of any operation.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import zmq
from controlplane import ControlPlane
from kube import wait_until
from realcli import Cli, holds, plain, require_flux
from stackrun import PREFIX, copy_project
from support.curveexchange import exchange

from flux_minicluster.core.flux import certificate
from flux_minicluster.core.flux.certificate import CurveCertificate

if TYPE_CHECKING:  # the fixtures' types; tests/conftest.py is also a module named conftest
    from conftest import Toolchain

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.needs(
        "pulumi", "pulumi-language-python", "pulumi-resource-command", "pulumi-resource-kubernetes"
    ),
]

STACK = "local"
NAMESPACE = "flux-local"
NAME = "flux-hello"  # examples/hello-world.yaml, the local stack's MiniCluster
KEYGEN_TYPE = "command:local:Command"
SDK_DEBUG = ("register resource outputs prepared: ", "resource registration successful: ")


@pytest.fixture(params=["flux", "builtin"])
def deployed(
    request: pytest.FixtureRequest,
    toolchain: Toolchain,
    tmp_path: Path,
) -> Iterator[tuple[str, Cli, ControlPlane]]:
    """The local stack of a project copy on the control plane, keygen.strategy set; destroyed
    however the test ends."""
    strategy = str(request.param)
    extra: tuple[Path, ...] = ()
    if strategy == "flux":
        found = require_flux(toolchain.bin)
        extra = () if found == toolchain.bin else (found,)
    control_plane: ControlPlane = request.getfixturevalue("control_plane")  # after the flux check
    project = copy_project(tmp_path / "project")
    cli = Cli.create(toolchain.bin, tmp_path, project, extra_path=extra)
    cli.env["PULUMI_BACKEND_URL"] = f"file://{tmp_path / 'state'}"
    cli.env["PULUMI_DEBUG_COMMANDS"] = "true"  # unhides --event-log (what the Automation API uses)
    (tmp_path / "state").mkdir()
    cli.pulumi("stack", "init", STACK)
    for key, value in (
        ("cluster.kubeconfig", str(control_plane.kubeconfig)),
        ("cluster.context", control_plane.name),
        ("keygen.strategy", strategy),
    ):
        cli.pulumi("config", "set", "--path", f"{PREFIX}:{key}", value, "-s", STACK)
    try:
        yield strategy, cli, control_plane
    finally:
        cli.pulumi("destroy", "--yes", "-s", STACK, check=False)


def test_the_keygen_command_makes_the_certificate_for_real(
    deployed: tuple[str, Cli, ControlPlane], tmp_path: Path, e2e_report: Callable[[str], None]
) -> None:
    strategy, cli, cp = deployed
    logs = tmp_path / "events"
    logs.mkdir()

    def op(*args: str) -> None:
        cli.pulumi(*args, "--yes", "-s", STACK, "--event-log", str(logs / f"{len(cli.calls)}.json"))

    cli.pulumi("preview", "-s", STACK, "--event-log", str(logs / "preview.json"))
    op("up")
    made = command_certificate(cli)
    assert dict(made.metadata)["name"] == NAME
    assert dict(made.metadata)["keygen.hostname"] == f"{NAME}-0"
    # flux keygen records its own version; the builtin generator writes no such key.
    if strategy == "flux":
        assert "keygen.flux-core-version" in dict(made.metadata), made.metadata
    else:
        assert "keygen.flux-core-version" not in dict(made.metadata), made.metadata
    secret_uid, held = secret_certificate(cp)
    assert held == made
    assert handshake(held) == b"hello-flux-ack"
    outputs = json.loads(cli.pulumi("stack", "output", "--json", "-s", STACK).stdout)
    assert outputs["curvePublicKey"] == made.public_key
    job_uid = uid(cp, "job", NAME)

    # A second up and a refresh keep it: same Command output, same Secret, same Job.
    op("up")
    op("refresh")
    op("up")
    assert command_certificate(cli) == made
    assert secret_certificate(cp) == (secret_uid, made)
    assert uid(cp, "job", NAME) == job_uid

    # A new rotation: a new certificate; the Secret and the Job are replaced.
    cli.pulumi("config", "set", "--path", f"{PREFIX}:keygen.rotation", "2", "-s", STACK)
    op("up")
    rotated = command_certificate(cli)
    assert rotated.secret_key != made.secret_key
    new_uid, held = secret_certificate(cp)
    assert held == rotated
    assert new_uid != secret_uid
    assert uid(cp, "job", NAME) not in (job_uid, None)
    assert handshake(rotated) == b"hello-flux-ack"

    # Never in plain text: state, outputs, what the CLI printed, the engine's event logs.
    exported = cli.pulumi("stack", "export", "-s", STACK).stdout
    shown = cli.pulumi("stack", "output", "--json", "-s", STACK).stdout
    events, sdk_debug = event_log(logs)
    assert len(list(logs.iterdir())) == 6
    printed = cli.printed()
    for secret in (made.secret_key, rotated.secret_key):
        for where, text in (
            ("pulumi stack export", exported),
            ("pulumi stack output", shown),
            ("the engine's event log", events),
            ("the CLI's output", printed),
        ):
            assert not holds(text, secret), f"a secret key in plain text in {where}"
    # ... and the checks can see it: the secret is where it must be.
    revealed = cli.pulumi("stack", "export", "--show-secrets", "-s", STACK).stdout
    assert holds(revealed, rotated.secret_key)
    leaked = sum(holds(m, made.secret_key) or holds(m, rotated.secret_key) for m in sdk_debug)
    e2e_report(
        f"strategy {strategy}: the SDK's debug diagnostics in the event log holding a secret "
        f"key in plain text: {leaked} of {len(sdk_debug)} (pulumi/pulumi#24479, SDK 3.259)"
    )

    op("destroy")
    wait_until(
        f"namespace {NAMESPACE} gone",
        lambda: cp.kubectl("get", "namespace", NAMESPACE, check=False).returncode != 0,
        timeout=120,
    )


def event_log(folder: Path) -> tuple[str, list[str]]:
    """Every event of the ``--event-log`` files, as JSON text, but the Python SDK's debug
    diagnostics of resource outputs; and those messages apart. The SDK 3.259 prints serialized
    outputs, secrets unwrapped, in two debug messages (``register resource outputs prepared``,
    ``resource registration successful``; pulumi/pulumi#24479 puts them behind a flag after
    3.259). The engine keeps debug events in its event log; nothing else shows them without
    ``--debug``."""
    kept: list[str] = []
    sdk_debug: list[str] = []
    for path in sorted(folder.iterdir()):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            diag = event.get("diagnosticEvent") or {}
            message = str(diag.get("message", ""))
            if diag.get("severity") == "debug" and message.startswith(SDK_DEBUG):
                sdk_debug.append(message)
            else:
                kept.append(line)
    return "\n".join(kept), sdk_debug


def command_certificate(cli: Cli) -> CurveCertificate:
    """The keygen Command's stdout, from the state (secrets shown)."""
    state = json.loads(cli.pulumi("stack", "export", "--show-secrets", "-s", STACK).stdout)
    commands = [r for r in state["deployment"]["resources"] if r["type"] == KEYGEN_TYPE]
    assert [r["urn"].rsplit("::", 1)[1] for r in commands] == [f"{NAME}-curve-keygen"]
    return certificate.parse(plain(commands[0]["outputs"]["stdout"]))


def secret_certificate(cp: ControlPlane) -> tuple[str, CurveCertificate]:
    """The one Secret of the namespace holding a certificate: its uid and the certificate."""
    found: list[tuple[str, CurveCertificate]] = []
    secrets = json.loads(cp.kubectl("get", "secrets", "-n", NAMESPACE, "-o", "json").stdout)
    for secret in secrets["items"]:
        for value in (secret.get("data") or {}).values():
            text = base64.b64decode(value).decode(errors="replace")
            if certificate.holds_secret_key(text):
                found.append((secret["metadata"]["uid"], certificate.parse(text)))
    assert len(found) == 1, f"{len(found)} Secrets hold a certificate in {NAMESPACE}"
    return found[0]


def uid(cp: ControlPlane, kind: str, name: str) -> str | None:
    proc = cp.kubectl("get", kind, name, "-n", NAMESPACE, "-o", "json", check=False)
    return None if proc.returncode != 0 else str(json.loads(proc.stdout)["metadata"]["uid"])


def handshake(cert: CurveCertificate) -> bytes | None:
    """One message over a real CURVE connection on 127.0.0.1, both ends holding ``cert`` as
    every broker does (tests/core/test_certificate.py's exchange): the reply, or None."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        # a generous bound: the machine may be loaded; a failed handshake never answers at all
        return exchange(ctx, cert, cert, cert.public_key, poll_ms=15_000)
    finally:
        ctx.destroy(linger=0)
