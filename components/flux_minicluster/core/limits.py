"""Limits the Kubernetes API server enforces that a MiniCluster spec must stay within.

Validation refuses a spec past them before anything is rendered, and the API-server checker of
rendered objects (``policy.kubecheck``) applies the same numbers, so both read them from here.
"""

from __future__ import annotations

from typing import Final

# Kubernetes refuses an Indexed Job with more completions than this.
MAX_INDEXED_COMPLETIONS: Final = 100_000
# Durations and counts the API server stores as int64.
INT64_MAX: Final = 2**63 - 1
# Longest DNS label: a hostname, a Service name, a container name.
MAX_LABEL_LENGTH: Final = 63
