"""The CURVE certificate each MiniCluster gets from ``render`` and ``check``: repeatable by default.

A certificate made afresh by every render made ``minicluster render FILE | kubectl apply -f -``
impossible to run twice: the second apply rewrote the curve Secret under the running brokers (a
replaced pod would carry a key the others do not) and then failed on the Job, whose pod template
records the certificate's public key and is immutable. So a MiniCluster's certificate is made
once and **kept**, per user, in ``$FLUX_MINICLUSTER_STATE`` (default
``$XDG_STATE_HOME/flux-minicluster``, else ``~/.local/state/flux-minicluster``) as
``curve/<namespace>/<group>.cert`` (mode 0600 in 0700 folders), where ``<group>`` is the
MiniCluster's name, or its bursting group's root for a burst: a root and its bursts rendered on
one machine share one certificate, as their brokers must. Every later render of the same spec
reads it, so it prints the same bytes and a second apply changes nothing; deleting the file is
how to rotate it. It stays out of the repository on purpose (a secret key beside the spec would
be committed with it).

A stack rendered offline (``render --stack``, ``demo``) is the same: its keygen Command, which
under ``pulumi up`` runs once and is kept in Pulumi's state, prints the certificate kept for the
stack (``curve/stacks/<project>/<stack>.cert``); a burst runs no Command and reads its root's, so
a group rendered together or one stack at a time holds one certificate.

The precedence is the one every surface follows (``core.flux.certificate.choose``): the deployer's
``--curve-cert FILE``, then the spec's ``flux.curveCert``, then the kept certificate. ``check``
judges what ``render`` would give but never writes: it reads a kept certificate when there is
one, and otherwise makes one for the run, shared by the MiniClusters of one group, so a root and
its bursts checked together hold one certificate, as rendered they would.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from flux_minicluster.cli import folders
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.planning.plan import MiniClusterPlan

__all__ = ["STATE_ENV", "Certificates", "Chosen", "kept_path", "stack_keeper", "state_dir"]

STATE_ENV: Final = "FLUX_MINICLUSTER_STATE"


def state_dir() -> Path:
    """The user's state folder for this tool (where kept certificates live)."""
    if explicit := os.environ.get(STATE_ENV):
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "flux-minicluster"


def _group(mc: MiniClusterPlan) -> str:
    """Whose certificate a MiniCluster holds: its bursting group's (the root's name), else its
    own. Both are validated DNS labels, so they are safe as file names."""
    return mc.burst_group or mc.name


def kept_path(mc: MiniClusterPlan) -> Path:
    """Where the certificate of ``mc`` (and of its bursting group) is kept."""
    return state_dir() / "curve" / mc.namespace / f"{_group(mc)}.cert"


def stack_keeper(project: str) -> Callable[[str], str]:
    """What a stack's keygen Command prints offline: the certificate kept for that stack of
    ``project``, made (and said on stderr) the first time."""

    def kept(stack: str) -> str:
        path = state_dir() / "curve" / "stacks" / project / f"{stack}.cert"
        text, made = _load_or_keep(path, project, f"{project}-0")
        if made:
            print(
                f"stack {stack}: made a new CURVE certificate for its keygen Command and kept it "
                f"in {path} (mode 0600): every offline render of the stack uses it, as Pulumi's "
                "state keeps the Command's; delete the file for a new one",
                file=sys.stderr,
            )
        return text

    return kept


def _load_or_keep(path: Path, name: str, hostname: str) -> tuple[str, bool]:
    """The certificate kept in ``path``, made there first when there is none; and whether this
    call made it (another render may have made it a moment before)."""
    try:
        _private_folder(path.parent)
    except OSError as err:
        raise SpecError(
            Problem(
                "",
                f"cannot keep the certificate: {err.strerror}; give one with --curve-cert FILE, "
                f"or point {STATE_ENV} at a folder of yours",
            ),
            source=str(err.filename or path.parent),
        ) from None
    return folders.load_or_create_certificate(path, name, hostname)


def _private_folder(path: Path) -> None:
    """``path`` and the folders up to the state folder, made 0700 (only the user reads keys)."""
    root = state_dir()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in reversed([path, *path.parents]):
        if folder == root or root in folder.parents:
            folder.mkdir(mode=0o700, exist_ok=True)


@dataclass(frozen=True)
class Chosen:
    """A MiniCluster's certificate and where it came from, as stderr says it."""

    text: str
    origin: str
    made_here: bool
    """Whether the deployer gave none (neither ``--curve-cert`` nor the spec): then the command
    says where it came from, since the output holds its secret key."""


@dataclass
class Certificates:
    """The certificates of one command's MiniClusters, with what stderr says of each.

    ``keep``: render makes a missing certificate and keeps it (and creates a missing
    ``--curve-cert FILE``, with a warning); check only reads, and makes one per group for the run.
    """

    given: Path | None
    keep: bool
    _run: dict[tuple[str, str], str] = field(default_factory=dict)

    def choose(self, mc: MiniClusterPlan, source: str) -> Chosen:
        """The certificate ``mc`` gets (see the module for the order)."""
        chosen, _ = certificate.choose(self.given, mc.spec.flux.curve_cert)
        if isinstance(chosen, Path):
            return Chosen(self._given(chosen, mc), f"the certificate in {chosen} is used", False)
        if chosen is not None:
            return Chosen(chosen, "the spec's flux.curveCert is used", False)
        if self.keep and (message := mc.mounted_certificate_problem("--curve-cert FILE")):
            raise SpecError(f"{source}: {message}")
        path = kept_path(mc)
        kept_origin = f"the CURVE certificate kept in {path} is used (delete it for a new one)"
        if path.exists():
            return Chosen(folders.read_certificate(path), kept_origin, True)
        if not self.keep:
            key = (mc.namespace, _group(mc))
            if key not in self._run:
                made = certificate.generate(name=_group(mc), hostname=mc.names.lead_host)
                self._run[key] = certificate.render(made)
            origin = f"a CURVE certificate made for this check is used ({path} holds none)"
            return Chosen(self._run[key], origin, True)
        text, created = _load_or_keep(path, _group(mc), mc.names.lead_host)
        if not created:  # another render made it since the look above
            return Chosen(text, kept_origin, True)
        public = certificate.public_key_in(text)
        origin = (
            f"made a new CURVE certificate (public key {public}) and kept it in {path} (mode "
            f"0600): every render of {mc.namespace}/{_group(mc)} uses it, so applying the "
            "output again changes nothing; delete the file for a new one. The curve Secret in "
            "the output holds its secret key: keep the output private"
        )
        return Chosen(text, origin, True)

    def _given(self, path: Path, mc: MiniClusterPlan) -> str:
        if self.keep:
            text, created = folders.load_or_create_certificate(path, mc.name, mc.names.lead_host)
            if created:
                print(folders.created_certificate_warning(path), file=sys.stderr)
            return text
        return self.read()

    def read(self) -> str:
        """The ``--curve-cert FILE`` certificate, which must exist: check never makes one."""
        path = self.given
        if path is None:
            raise SpecError("no --curve-cert FILE was given")
        if not path.exists():
            raise SpecError(
                Problem(
                    "",
                    "does not exist: --curve-cert names the certificate to check with, and check "
                    "never makes one (minicluster render --curve-cert FILE creates it)",
                ),
                source=str(path),
            )
        return folders.read_certificate(path)
