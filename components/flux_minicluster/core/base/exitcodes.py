"""The exit codes by which the generated scripts say "this is a configuration error".

A retry cannot fix a configuration error: a burst whose certificate or lead address does not
match its root's never joins however often its pod starts again, and neither does a broker whose
flux view, certificate or R is missing. The scripts of ``templates/`` exit with these codes in
those cases (``wait.sh.j2``, ``start.sh.j2`` and ``flux-init.sh.j2`` get them from here), and the
Job's ``podFailurePolicy`` (``core.jobpolicy``) fails the Job at once on them instead of spending
the retry budget. Both come from sysexits.h's range, which shells and Flux leave alone.

A user command that exits with one of them under ``logging.strict`` is taken for a configuration
error too; the README says so.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CONFIGURATION_ERRORS", "JOIN_FAILED", "SETUP_FAILED"]

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
