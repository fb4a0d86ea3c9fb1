"""Where a MiniCluster's ranks run: whether its pods can have cores of their own, and the
warning of a spec that asks Flux to bind ranks to cores its pods share.

Each pod's R names the cores its Flux container may run on (`flux R encode --local`). Only a
Guaranteed pod on a node whose kubelet runs the static CPU manager gets cores of its own; any
other pod shares the node's cores with the node's other pods, this MiniCluster's own included,
and the entrypoint then makes Flux's binding off by default (wait.sh). A spec that asks for
binding anyway (``-o cpu-affinity=per-task`` in ``flux.optionFlags``) gets it, with a warning
when its pods cannot be Guaranteed with whole CPUs.
"""

from __future__ import annotations

import re
from typing import Final

from flux_minicluster.core.base.errors import Problem
from flux_minicluster.core.kube import qos
from flux_minicluster.core.spec.models import MiniClusterSpec

__all__ = ["binding_without_own_cores", "guaranteed_containers", "requested_binding"]

# `-o cpu-affinity[=VALUE]`, `-ocpu-affinity=...`, `--setopt=cpu-affinity=...`: Flux's shell
# option; without a value it means "on".
_AFFINITY: Final = re.compile(r"(?:^|\s)(?:-o\s*|--setopt[=\s]\s*)cpu-affinity(?:=(\S+))?")


def guaranteed_containers(spec: MiniClusterSpec) -> bool:
    """Whether every container of the broker pods (the Flux container and its sidecars) keeps
    the pod Guaranteed; the flux-view init container then follows them (render.hardening)."""
    return all(
        c.resources is not None and qos.guaranteed(c.resources.limits, c.resources.requests)
        for c in spec.containers
    )


def requested_binding(option_flags: str | None) -> str | None:
    """The cpu-affinity the spec's option flags ask of Flux, when one other than ``off``."""
    found = None
    for match in _AFFINITY.finditer(option_flags or ""):
        found = match.group(1) or "on"  # the last one wins, as Flux's option parsing
    return None if found in (None, "off") else found


def binding_without_own_cores(spec: MiniClusterSpec) -> Problem | None:
    """The warning of a spec that asks Flux to bind ranks in pods that cannot have cores of
    their own."""
    binding = requested_binding(spec.flux.option_flags)
    if binding is None:
        return None
    flux = next((c for c in spec.containers if c.run_flux), None)
    own = flux is not None and flux.resources is not None and qos.whole_cpus(flux.resources.limits)
    if own and guaranteed_containers(spec):
        return None
    return Problem(
        "spec.flux.optionFlags",
        f"asks Flux to bind ranks to cores (cpu-affinity={binding}), but the pods cannot have "
        "cores of their own: the ranks of pods that share a node are then bound to the same "
        "cores. Give the Flux container (and every sidecar) cpu and memory limits equal to their "
        "requests, the cpu a whole number, on nodes whose kubelet runs the static CPU manager, "
        "or leave cpu-affinity out: each pod then runs its jobs unbound",
    )
