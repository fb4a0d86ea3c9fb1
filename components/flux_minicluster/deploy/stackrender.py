"""Offline stack rendering: the real ``__main__.py`` under recording mocks, written out as YAML.

There is no Pulumi engine on most machines this project is checked on, and a user without one
still wants to see what a stack would deploy. This runs the actual program for
``stacks/Pulumi.<stack>.yaml`` in-process, with the stack's config, and stands in for what only
the engine, a provider or a cluster could supply, each stand-in stated:

* the keygen Command really runs, with the ``builtin`` strategy (pyzmq, no cluster needed);
* a StackReference reads the root stack's ``outputs.json`` rendered earlier into the same folder;
* a LoadBalancer Service gets the documentation address ``192.0.2.10`` (TEST-NET-1) as its
  ingress, since no cloud will assign one;
* ``secure:`` config values become the text ``offline-stand-in``.

The result is a folder per stack with one YAML file per Kubernetes object and ``outputs.json``.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi.runtime.mocks import MockResourceArgs

from flux_minicluster.core import hostlist as hostlists
from flux_minicluster.core import yamlio
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.render.manifests import to_yaml
from flux_minicluster.deploy.recorder import (
    RegistrationRecorder,
    plain,
    run_create_script,
    run_program,
)
from flux_minicluster.deploy.stackconfig import PROJECT

PROJECT_ROOT = Path(__file__).resolve().parents[3]
STACKS_DIR = PROJECT_ROOT / "stacks"
LOAD_BALANCER_STAND_IN = "192.0.2.10"
SECURE_STAND_IN = "offline-stand-in"
OUTPUTS_FILE = "outputs.json"
SUMMARY_COLUMNS = ("stack", "objects", "pods", "hostlist", "lead broker", "seconds")


class OfflineMocks(RegistrationRecorder):
    """Recording mocks plus the stand-ins a cloud would provide for a LoadBalancer."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == "kubernetes:core/v1:Service":
            spec = args.inputs.get("spec") or {}
            if spec.get("type") == "LoadBalancer":
                state["status"] = {"loadBalancer": {"ingress": [{"ip": LOAD_BALANCER_STAND_IN}]}}
        return resource_id, state


@dataclass
class StackRendering:
    """One stack rendered offline: where it went, what it holds, how long it took."""

    stack: str
    directory: Path
    objects: list[dict[str, Any]]
    outputs: dict[str, Any]
    secret_outputs: list[str]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def summary_row(self) -> tuple[str, ...]:
        pods = sum(
            int(o["spec"].get("parallelism", 0)) if o["kind"] == "Job" else 1
            for o in self.objects
            if o["kind"] in ("Job", "Pod")
        )
        hosts = str(self.outputs.get("hostlist", ""))
        count = hostlists.count(hosts) if hosts else 0
        lead = self.outputs.get("leadBrokerAddress")
        if lead:
            lead = f"exposes {lead}:{self.outputs.get('leadBrokerPort')}"
        elif self.outputs.get("rootStack"):
            first = next(hostlists.iter_hosts(hosts), "")
            lead = f"joins {first} ({str(self.outputs['rootStack']).rsplit('/', 1)[-1]})"
        else:
            lead = str(self.outputs.get("leadBrokerHost", ""))
        return (
            self.stack,
            str(len(self.objects)),
            str(pods),
            f"{hosts} ({count} ranks)",
            lead,
            f"{self.seconds:.2f}",
        )


def stack_file(stack: str) -> Path:
    path = STACKS_DIR / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.name[7:-5] for p in STACKS_DIR.glob("Pulumi.*.yaml")))
        raise SpecError(Problem("", f"no stack {stack!r} in {STACKS_DIR} (known: {known})"))
    return path


def read_stack_config(stack: str) -> tuple[dict[str, Any], list[str]]:
    """The stack file's config, keys as Pulumi stores them; secure values replaced (noted)."""
    path = stack_file(stack)
    docs = yamlio.load_documents(yamlio.decode(path.read_bytes(), str(path)), str(path))
    document = docs[0] if docs else {}
    config = document.get("config", {}) if isinstance(document, Mapping) else None
    if not isinstance(config, Mapping):
        raise SpecError(Problem("config", "must be a mapping of config keys"), source=str(path))
    notes: list[str] = []
    values: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            notes.append(f"{key} is a secret; rendered with the stand-in {SECURE_STAND_IN!r}")
            value = SECURE_STAND_IN
        values[str(key)] = value
    return values, notes


def root_of(config: Mapping[str, Any]) -> str | None:
    """The root stack a burst stack names (``org/project/stack`` -> ``stack``), if any."""
    bursting = config.get(f"{PROJECT}:bursting")
    if isinstance(bursting, Mapping) and bursting.get("role") == "burst":
        root = bursting.get("rootStack")
        if isinstance(root, str) and root:
            return root
    return None


def order_stacks(stacks: Iterable[str]) -> list[str]:
    """Roots before the bursts that read them, otherwise in the given order."""
    names = list(dict.fromkeys(stacks))
    roots = [s for s in names if root_of(read_stack_config(s)[0]) is None]
    return roots + [s for s in names if s not in roots]


def render_stack(stack: str, out: Path, *, quiet: bool = False) -> StackRendering:
    """Render one stack into ``out/<stack>/``; a burst's root must already be in ``out``."""
    started = time.perf_counter()
    config, notes = read_stack_config(stack)
    keygen = dict(config.get(f"{PROJECT}:keygen") or {})
    keygen["strategy"] = "builtin"
    config[f"{PROJECT}:keygen"] = keygen

    references: dict[str, Any] = {}
    root = root_of(config)
    if root is not None:
        root_name = root.rsplit("/", 1)[-1]
        outputs_path = out / root_name / OUTPUTS_FILE
        if not outputs_path.is_file():
            raise SpecError(
                Problem(
                    f"{PROJECT}:bursting.rootStack",
                    f"render the root stack {root_name!r} first: no {outputs_path}",
                )
            )
        saved = json.loads(outputs_path.read_text())
        references[root] = {
            "outputs": saved["outputs"],
            "secretOutputNames": saved.get("secretOutputNames", []),
        }
        notes.append(f"StackReference {root} read from {outputs_path}")

    mocks = OfflineMocks(command_stdout=run_create_script, stack_references=references)
    main = PROJECT_ROOT / "__main__.py"
    run = run_program(
        lambda: runpy.run_path(str(main), run_name="__main__"),
        mocks=mocks,
        project=PROJECT,
        stack=stack,
        config=config,
    )
    if mocks.of_type("command:local:Command"):
        notes.append("the curve certificate was made for real by the builtin keygen (pyzmq)")
    objects = [
        plain(r.inputs)
        for r in run.resources
        if r.is_kubernetes_object and not r.typ.endswith("Patch")
    ]
    outputs = {k: e.value for k, e in run.exports.items() if e.known}
    secret_outputs = sorted(k for k, e in run.exports.items() if e.secret)
    directory = out / stack
    _write(directory, objects, outputs, secret_outputs, stack)
    rendering = StackRendering(
        stack, directory, objects, outputs, secret_outputs, time.perf_counter() - started, notes
    )
    if not quiet:
        _report(rendering)
    return rendering


def _write(
    directory: Path,
    objects: list[dict[str, Any]],
    outputs: dict[str, Any],
    secret_outputs: list[str],
    stack: str,
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.yaml"):
        old.unlink()
    for i, obj in enumerate(objects):
        name = f"{i:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
        (directory / name).write_text(to_yaml([obj]))
    payload = {
        "stack": stack,
        "note": "offline rendering under Pulumi mocks; nothing was deployed",
        "outputs": outputs,
        "secretOutputNames": secret_outputs,
    }
    (directory / OUTPUTS_FILE).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def _report(rendering: StackRendering) -> None:
    print(
        f"Offline rendering of stack {rendering.stack!r} (Pulumi mocks; nothing was deployed): "
        f"{len(rendering.objects)} objects in {rendering.directory}/",
        file=sys.stderr,
    )
    for note in rendering.notes:
        print(f"  note: {note}", file=sys.stderr)


def run(args: Any) -> int:
    """`minicluster render --stack NAME [-o DIR]`."""
    out = Path(args.output or "rendered")
    render_stack(args.stack, out)
    return 0
