"""The project as a user runs it: the real ``pulumi`` CLI in a project folder, which starts
``__main__.py`` through the real ``pulumi-language-python`` (``runtime: python`` in Pulumi.yaml)
and the keygen Command through the real ``pulumi-resource-command``.

- ``Cli``: one CLI environment (the toolchain's bin first on PATH, a PULUMI_HOME and HOME of its
  own, a passphrase), every call recorded, so a test can search everything the CLI printed;
- ``flux_bin_dir``: where the ``flux`` the ``flux`` keygen strategy and the real-broker tests run
  is found: ``$FLUX_MINICLUSTER_FLUX_PREFIX/bin``, else that of the prefix the toolchain's
  ``<bin>/flux`` links into. In CI (``CI`` set) a test
  that needs it fails without it; elsewhere it is skipped, naming both places;
- ``copy_checkout``: the checkout's files (tracked, and untracked but not ignored) in a new
  directory, without any build output or venv: what a user's clone holds.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fluxnodes import PREFIX_ENV as FLUX_PREFIX_ENV
from fluxnodes import flux_prefix
from stackrun import PASSPHRASE, private_tmpdir

REPO = Path(__file__).resolve().parents[2]


def flux_bin_dir(toolchain_bin: Path) -> Path | None:
    """The ``bin`` of the Flux prefix (``fluxnodes.flux_prefix``: the one rule for where Flux
    is), or None when it holds no ``flux``."""
    prefix = flux_prefix(toolchain_bin)
    if prefix is not None and (prefix / "bin" / "flux").is_file():
        return prefix / "bin"
    return None


def require_flux(toolchain_bin: Path) -> Path:
    """``flux_bin_dir``, or fail (in CI) or skip (elsewhere) with where it was looked for."""
    found = flux_bin_dir(toolchain_bin)
    if found is not None:
        return found
    message = (
        f"no flux: neither {toolchain_bin / 'flux'} (the toolchain's Flux build) nor "
        f"${FLUX_PREFIX_ENV}/bin/flux ({os.environ.get(FLUX_PREFIX_ENV) or 'unset'})"
    )
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def plain(value: Any) -> Any:
    """A value of ``pulumi stack export --show-secrets``: a secret is an object with the secret
    signature and ``plaintext``, its value as JSON."""
    if isinstance(value, dict) and "plaintext" in value:
        return json.loads(value["plaintext"])
    return value


def holds(text: str, secret: str) -> bool:
    """Whether ``text`` holds ``secret`` as such, as Go's JSON writes it (``<``, ``>``, ``&``
    as ``\\u003c``...: a Z85 key may hold them) or as JSON inside JSON (a state's secret
    ``plaintext``, an event's message)."""
    go = secret.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return any(form in text for form in (secret, go, go.replace("\\", "\\\\")))


def copy_checkout(dest: Path) -> Path:
    """The checkout's files as git lists them (tracked, and untracked but not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    dest.mkdir(parents=True)
    for name in filter(None, listed.split("\0")):
        src = REPO / name
        if not src.is_file():  # deleted in the worktree, not yet committed
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    return dest


@dataclass
class Call:
    command: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Cli:
    """Commands as a user types them, in ``cwd``, with ``env``; every call kept in ``calls``."""

    cwd: Path
    env: dict[str, str]
    calls: list[Call] = field(default_factory=list)

    @classmethod
    def create(
        cls,
        toolchain_bin: Path,
        where: Path,
        cwd: Path,
        *,
        kubeconfig: Path | None = None,
        extra_path: tuple[Path, ...] = (),
    ) -> Cli:
        """The toolchain's bin (and ``extra_path``) before the machine's PATH, without any
        virtualenv's bin; HOME and PULUMI_HOME under ``where`` (``pulumi login --local`` keeps
        its state in ``~/.pulumi``), pip's cache the machine's; no PULUMI_* and no KUBECONFIG
        from outside, ``kubeconfig`` as KUBECONFIG when given."""
        home = where / "home"
        home.mkdir(parents=True)
        pip_cache = os.environ.get("PIP_CACHE_DIR") or str(
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pip"
        )
        # A virtualenv's bin (it holds `activate`) is left out: a user's shell has none.
        outside = [
            p
            for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p) / "activate").exists()
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
        env.pop("VIRTUAL_ENV", None)
        env.update(
            {
                "PATH": os.pathsep.join([str(toolchain_bin), *map(str, extra_path), *outside]),
                "HOME": str(home),
                "PIP_CACHE_DIR": pip_cache,
                "PULUMI_HOME": str(home / ".pulumi"),
                "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
                "PULUMI_SKIP_UPDATE_CHECK": "true",
                "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
                "PULUMI_SKIP_CONFIRMATIONS": "true",
                "KUBECONFIG": str(kubeconfig) if kubeconfig is not None else os.devnull,
                "TMPDIR": str(private_tmpdir(home)),
            }
        )
        return cls(cwd=cwd, env=env)

    def sh(self, command: str, *, timeout: float = 300, check: bool = True) -> Call:
        """``command`` through bash, as typed."""
        t0 = time.monotonic()
        try:
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"`{command}` did not finish within {timeout:.0f}s") from exc
        call = Call(command, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)
        self.calls.append(call)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"`{command}` (in {self.cwd}) exited {proc.returncode} after {call.seconds:.0f}s"
                f"\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
            )
        return call

    def pulumi(self, *args: str, timeout: float = 300, check: bool = True) -> Call:
        return self.sh(shlex.join(["pulumi", *args]), timeout=timeout, check=check)

    def printed(self) -> str:
        """Everything every call printed, stdout and stderr, but the calls that asked for
        secrets in plain text (``--show-secrets``)."""
        return "\n".join(
            f"{c.stdout}\n{c.stderr}" for c in self.calls if "--show-secrets" not in c.command
        )
