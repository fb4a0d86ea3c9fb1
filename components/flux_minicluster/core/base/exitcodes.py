"""The exit codes by which the generated scripts tell the Job "do not try again".

A retry cannot fix a configuration error: a burst whose certificate or lead address does not
match its root's never joins however often its pod starts again, and neither does a broker whose
flux view, certificate or R is missing. The scripts of ``templates/`` exit with these codes in
those cases (``wait.sh.j2``, ``start.sh.j2`` and ``flux-init.sh.j2`` get them from here), and the
Job's ``podFailurePolicy`` (``core.render.jobfields``) fails the Job at once on them instead of
spending the retry budget. Both come from sysexits.h's range, which shells and Flux leave alone.

Nor can a retry fix failed work: rank 0's entrypoint, where its initial program is the work
(submit, batch, launcher, batchRaw), exits with ``WORK_FAILED`` when the work exited non-zero,
whatever ``logging.strict`` says, and writes the work's own code into its termination message
(``work_message``); the failure policy fails the Job at once on it, instead of the Job completing
on rank 0's exit 0 (the Flux Operator's) or running the work again. It follows the two above, past
sysexits.h's range and below what shells use (126, 127, 128 + a signal), and Flux's commands
exit 1 or 2 or pass a job's own code on.

A user command that exits with one of them under ``logging.strict`` (``set -e``) is taken for
what the code says too; the README says so.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "CONFIGURATION_ERRORS",
    "JOIN_FAILED",
    "SETUP_FAILED",
    "WORK_FAILED",
    "WORK_MESSAGE",
    "work_code",
    "work_message",
]

JOIN_FAILED: Final = 78
"""A burst's broker did not join its lead within the join watchdog's timeout (EX_CONFIG: the usual
cause is a certificate or an address that does not match the root's), whatever logging.strict
says."""

SETUP_FAILED: Final = 79
"""A step the broker cannot start without failed (``die`` in the scripts: no flux view, no
certificate, R not encoded, the hostlist unreadable; the init container: an image without a
view)."""

CONFIGURATION_ERRORS: Final = (JOIN_FAILED, SETUP_FAILED)
"""Every code above, in the order the Job's podFailurePolicy lists them."""

WORK_FAILED: Final = 80
"""Rank 0's work (its initial program) exited non-zero: the Job fails at once where its failure
policy can say so (``core.kube.completion``); the work's own code is in the termination message."""

WORK_MESSAGE: Final = "the work exited with {code}"
"""Rank 0's termination message once its work has ended (``kubectl describe pod``,
``status.containerStatuses[].state.terminated.message``), whatever the container exits with."""

_WORK_CODE: Final = re.compile(re.escape(WORK_MESSAGE).replace(re.escape("{code}"), r"(\d+)"))


def work_message(code: int | str) -> str:
    """The termination message for work that exited with ``code`` (a number, or the shell
    expansion the entrypoint writes it with)."""
    return WORK_MESSAGE.format(code=code)


def work_code(message: str | None) -> int | None:
    """The work's exit code a termination message tells (None when it tells none)."""
    found = _WORK_CODE.search(message or "")
    return int(found[1]) if found else None
