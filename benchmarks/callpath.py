"""The walk of the component: which modules ``deploy.component.minicluster.expand`` passes through.

A reader following what the component does with its prepared input should go down the floors
once: the component, the Pulumi pieces it calls, the core they call, each module entered once.
This prints that walk for the fullest case (a generated certificate, v1alpha1-free, a burst whose
lead address and group are Outputs, a queue) and counts it:

* the walk's calls from one module of the package into another (calls inside the core are
  folded into the core function the deploy layer called, and reading a property is not a call);
* a module *entered from more than one module* is called from two places of the walk;
* a call *up a floor* goes from the core to the deploy layer, or from a deploy module to the
  component;
* the *ways into* a module are its functions called from elsewhere (another module or the
  runtime): a module the walk passes through once has few.

Applies run under Pulumi's mocks; the callbacks Pulumi's runtime runs when Outputs resolve are
listed apart (each is its own module's function, entered from the runtime).

    .venv/bin/python benchmarks/callpath.py          # the walk, then the counts
"""

from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pulumi

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from flux_minicluster import testing  # noqa: E402
from flux_minicluster.deploy.component import minicluster  # noqa: E402

PACKAGE = "flux_minicluster."
DEPLOY = "flux_minicluster.deploy."
CORE = "flux_minicluster.core."

GROUP = {
    "lead_name": "flux-root",
    "lead_size": 3,
    "lead_port": 30093,
    "clusters": [{"name": "flux-burst-eks", "size": 2}],
}
SPEC = {
    "apiVersion": "flux-framework.org/v1alpha2",
    "kind": "MiniCluster",
    "metadata": {"name": "flux-burst-eks"},
    "spec": {
        "size": 2,
        "containers": [{"image": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"}],
        "flux": {"bursting": {"leadBroker": {"address": "deferred", "name": "x", "size": 1}}},
    },
}


HARNESS = ("flux_minicluster.testing", "flux_minicluster.deploy.offline.")


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _ours(name: str) -> bool:
    return name.startswith(PACKAGE) and not name.startswith(HARNESS)


def _caller(frame: FrameType) -> str:
    """The nearest package module below ``frame`` on the stack; ``pulumi`` when the call comes
    from Pulumi's runtime (an apply's callback) with no package frame in between."""
    back = frame.f_back
    while back is not None:
        name = _module(back)
        if _ours(name):
            return name
        if name.startswith(HARNESS):
            return "pulumi"
        back = back.f_back
    return "pulumi"


class Walk:
    """Every call edge between two modules of the package, from ``expand`` on; calls inside the
    core are folded (the core's own structure is not the component's walk)."""

    def __init__(self) -> None:
        self.edges: dict[tuple[str, str], int] = {}
        self.callbacks: dict[str, set[str]] = {}
        self.entries: dict[str, set[str]] = {}  # module -> its functions called from elsewhere
        self.active = False

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = _module(frame)
        if frame.f_code.co_name == "expand" and callee == minicluster.__name__:
            self.active = True
        if not self.active or not _ours(callee) or frame.f_code.co_name == "<module>":
            return
        caller = _caller(frame)
        if caller == callee or (caller.startswith(CORE) and callee.startswith(CORE)):
            return
        if _is_property(frame):  # reading a plan's or a record's field is not a step
            return
        self.edges[(caller, callee)] = self.edges.get((caller, callee), 0) + 1
        self.entries.setdefault(callee, set()).add(frame.f_code.co_qualname)
        if caller == "pulumi":
            self.callbacks.setdefault(callee, set()).add(frame.f_code.co_qualname)


def _is_property(frame: FrameType) -> bool:
    """Whether ``frame`` runs a property's getter (``plan.names``, ``children.awaited``)."""
    owner: Any = sys.modules.get(_module(frame))
    *path, name = frame.f_code.co_qualname.split(".")
    for part in path:
        owner = getattr(owner, part, None)
    attribute = inspect.getattr_static(owner, name, None) if owner is not None else None
    return isinstance(attribute, property | functools.cached_property)


def _floor(module: str) -> int:
    """0 the component, 1 the deploy layer's other modules, 2 the core; Pulumi's runtime -1."""
    if module == "pulumi":
        return -1
    if module == minicluster.__name__:
        return 0
    return 2 if module.startswith(CORE) else 1


def program() -> None:
    minicluster.MiniCluster(
        "burst",
        {
            "spec": {**SPEC, "spec": {**SPEC["spec"], "flux": {}}},
            "lead_broker": pulumi.Output.from_input("203.0.113.7"),
            "burst_group": pulumi.Output.from_input(GROUP),
            "queue": "batch",
        },
    )


def main() -> int:
    walk = Walk()
    sys.setprofile(walk)
    try:
        testing.run(program)
    finally:
        sys.setprofile(None)
    callers: dict[str, list[str]] = {}
    for caller, callee in walk.edges:
        if caller != "pulumi":
            callers.setdefault(callee, []).append(caller)

    def short(module: str) -> str:
        return module.removeprefix(PACKAGE)

    print("the walk: calls from one module into another, by first call:")
    for (caller, callee), calls in walk.edges.items():
        if caller != "pulumi":
            up = "   UP A FLOOR" if _floor(callee) < _floor(caller) else ""
            print(f"  {short(caller):32s} -> {short(callee):32s} {calls:3d} calls{up}")
    print("callbacks Pulumi's runtime runs once Outputs resolve (applies):")
    for module, functions in walk.callbacks.items():
        print(f"  {short(module):32s} {', '.join(sorted(functions))}")
    print("ways into each module of the deploy layer (functions called from elsewhere):")
    for module, functions in sorted(walk.entries.items()):
        if module.startswith(DEPLOY):
            print(f"  {short(module):32s} {len(functions):2d}  {', '.join(sorted(functions))}")
    entered_again = {m: c for m, c in callers.items() if len(c) > 1}
    ups = sum(1 for a, b in walk.edges if a != "pulumi" and _floor(b) < _floor(a))
    ways = sum(len(f) for m, f in walk.entries.items() if m.startswith(DEPLOY))
    print(
        f"\n{len(callers)} modules entered by {sum(1 for a, _ in walk.edges if a != 'pulumi')} "
        f"module-to-module calls; {len(entered_again)} modules entered from more than one "
        f"module ({', '.join(short(m) for m in entered_again) or 'none'}); {ups} calls going "
        f"up a floor; {ways} ways into the deploy layer's modules"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
