"""Offline stack rendering: a project's real program under the recorder, as Kubernetes objects.

A user without a Pulumi engine, a provider or a cluster still wants to see what a stack would
deploy. This runs the project's actual program (its ``Pulumi.yaml`` ``main``) in-process with the
stack's config, under ``recorder``, and stands in for what only the engine, a provider or a cloud
could supply, each stand-in stated in the rendering's notes:

* the keygen Command runs for real with the ``builtin`` strategy (pyzmq, no cluster needed), or
  prints a certificate the caller gives (``curve_cert``, the stack's ``curveCert``), or the one
  the caller kept from the stack's previous render (``kept``, standing for what Pulumi's state
  keeps of the Command), so that a render can be repeated byte for byte;
* a StackReference reads the outputs of the root stack rendered just before (a burst's root is
  rendered first when it was not asked for);
* a LoadBalancer Service gets the documentation address ``192.0.2.10`` (TEST-NET-1) as its
  ingress, since no cloud will assign one;
* ``secure:`` config values become the text ``offline-stand-in``.

The result is data (objects, the size patches, outputs); writing it out is the CLI's business.
"""

from __future__ import annotations

import os
import runpy
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pulumi.runtime.mocks import MockResourceArgs

from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.deployed import stackoutputs as so
from flux_minicluster.core.flux import hostlist as hostlists
from flux_minicluster.core.reading import documents
from flux_minicluster.core.render import manifests
from flux_minicluster.deploy.component.usererror import ApplyError
from flux_minicluster.deploy.offline.recorder import (
    COMMAND_TYPE,
    CommandStdout,
    RegistrationRecorder,
    plain,
    run_create_script,
    run_program,
)
from flux_minicluster.deploy.stack import stackconfig
from flux_minicluster.deploy.stack.project import Project
from flux_minicluster.deploy.stack.stackconfig import PROJECT

__all__ = [
    "LOAD_BALANCER_STAND_IN",
    "SECURE_STAND_IN",
    "SUMMARY_COLUMNS",
    "OfflineMocks",
    "StackRendering",
    "order_stacks",
    "read_stack_config",
    "render_stack",
    "render_stacks",
    "root_of",
]

LOAD_BALANCER_STAND_IN: Final = "192.0.2.10"
SECURE_STAND_IN: Final = "offline-stand-in"
SUMMARY_COLUMNS: Final = ("stack", "objects", "pods", "hostlist", "lead broker", "seconds")
PATCH_SUFFIX: Final = "Patch"


class OfflineMocks(RegistrationRecorder):
    """The recorder plus the stand-in a cloud would provide: a LoadBalancer's address."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == "kubernetes:core/v1:Service":
            spec = args.inputs.get("spec") or {}
            if spec.get("type") == "LoadBalancer":
                state["status"] = {"loadBalancer": {"ingress": [{"ip": LOAD_BALANCER_STAND_IN}]}}
        return resource_id, state


@dataclass
class StackRendering:
    """One stack rendered offline: what ``pulumi up`` would create, and what it would export."""

    stack: str
    objects: list[dict[str, Any]]
    """Every Kubernetes object, in apply order (kind, then namespace and name)."""
    patches: list[dict[str, Any]]
    """The server-side-apply patches Pulumi applies after the objects (a Job's size)."""
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
        hosts = str(self.outputs.get(so.HOSTLIST, ""))
        count = hostlists.count(hosts) if hosts else 0
        lead = self.outputs.get(so.LEAD_BROKER_ADDRESS)
        if lead:
            lead = f"exposes {lead}:{self.outputs.get(so.LEAD_BROKER_PORT)}"
        elif self.outputs.get(so.ROOT_STACK):
            root = str(self.outputs[so.ROOT_STACK]).rsplit("/", 1)[-1]
            lead = f"joins {self.outputs.get(so.LEAD_BROKER_HOST, '')} ({root})"
        else:
            lead = str(self.outputs.get(so.LEAD_BROKER_HOST, ""))
        return (
            self.stack,
            str(len(self.objects) + len(self.patches)),
            str(pods),
            f"{hosts} ({count} ranks)",
            lead,
            f"{self.seconds:.2f}",
        )


def read_stack_config(
    project: Project, stack: str, *, keep_secrets: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """The stack file's config, keys as Pulumi stores them; secure values replaced (noted), a
    secret curveCert left out (the builtin keygen stands in) unless ``keep_secrets``."""
    path = project.stack_file(stack)
    docs = documents.read_file(path)
    document = docs[0] if docs else {}
    config = document.get("config", {}) if isinstance(document, Mapping) else None
    if not isinstance(config, Mapping):
        raise SpecError(Problem("config", "must be a mapping of config keys"), source=str(path))
    notes: list[str] = []
    values: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            if key == f"{PROJECT}:curveCert" and not keep_secrets:
                notes.append(f"{key} is a secret; the builtin keygen makes a certificate instead")
                continue
            notes.append(f"{key} is a secret; rendered with the stand-in {SECURE_STAND_IN!r}")
            value = SECURE_STAND_IN
        values[str(key)] = value
    return values, notes


def _as_deployed(project: Project, stack: str) -> dict[str, Any]:
    """The stack's ``flux-minicluster:*`` values as the program reads them on ``pulumi up``
    (keys without the prefix), every secret (the curveCert too) as a stand-in."""
    values = {}
    for key, value in read_stack_config(project, stack, keep_secrets=True)[0].items():
        prefix, _, name = key.partition(":")
        if prefix == PROJECT:
            values[name] = value
    return values


def cluster_notes(config: stackconfig.StackConfig) -> list[str]:
    """What ``pulumi up`` would stumble on in ``cluster``: a kubeconfig that does not exist, a
    context the kubeconfig does not have. Offline nothing reaches a cluster: these are notes."""
    cluster = config.cluster
    key = f"{PROJECT}:cluster"
    if cluster.kubeconfig:
        path = Path(os.path.expanduser(cluster.kubeconfig))
        where = str(path)
    else:
        found = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
        path = Path(found) if found else Path.home() / ".kube" / "config"
        where = f"the default kubeconfig {path}"
    if not path.is_file():
        if cluster.kubeconfig:
            return [f"{key}.kubeconfig: {path} does not exist; `pulumi up` would fail to read it"]
        return []
    if cluster.context is None:
        return []
    try:
        document = documents.read_file(path)
        contexts = [str(c.get("name")) for c in (document[0] or {}).get("contexts") or [] if c]
    except (SpecError, AttributeError, IndexError, TypeError):
        return [f"{key}.kubeconfig: {where} is not a kubeconfig this renderer can read"]
    if cluster.context in contexts:
        return []
    return [
        f"{key}.context: {cluster.context!r} is not a context of {where} (it has: "
        f"{', '.join(contexts) or 'none'}); `pulumi up` would fail to reach the cluster"
    ]


def root_of(config: Mapping[str, Any]) -> str | None:
    """The root stack a burst stack names (``organization/<project>/<stack>``), if any."""
    bursting = config.get(f"{PROJECT}:bursting")
    key = stackconfig.BurstingConfig.model_fields  # the keys as the stack file spells them
    if (
        isinstance(bursting, Mapping)
        and bursting.get(key["role"].alias or "role") == stackconfig.ROLE_BURST
    ):
        root = bursting.get(key["root_stack"].alias or "root_stack")
        if isinstance(root, str) and root:
            return root
    return None


def order_stacks(project: Project, stacks: Iterable[str]) -> list[str]:
    """Roots before the bursts that read them, each burst's root added when it is missing."""
    wanted = list(dict.fromkeys(stacks))
    ordered: list[str] = []
    for stack in wanted:
        root = root_of(read_stack_config(project, stack)[0])
        if root is not None:
            name = root.rsplit("/", 1)[-1]
            if name not in ordered:
                ordered.append(name)
    ordered += [s for s in wanted if s not in ordered]
    return ordered


def _give_certificate(config: dict[str, Any], curve_cert: str) -> None:
    """``--curve-cert`` as the stack's ``curveCert``: the deployer's certificate, which wins over
    the spec's ``flux.curveCert`` (``certificate.choose``), as on every other surface. A stack
    file that gives a different one in plain text contradicts it: refused, not chosen between.
    (A burst takes its root's certificate, rendered with the same one.)"""
    key = f"{PROJECT}:curveCert"
    own = config.get(key)
    if isinstance(own, str) and own.strip() != curve_cert.strip():
        raise SpecError(
            Problem(key, "the stack gives another certificate than --curve-cert; give one of them")
        )
    config[key] = curve_cert


# The certificate a stack's keygen Command printed before, by stack: what Pulumi's state keeps of
# the Command, which a caller keeps between offline renders instead.
KeptCertificate = Callable[[str], str]


def _printing_kept(kept: KeptCertificate, stack: str) -> Callable[[MockResourceArgs], str]:
    """The keygen Command's stand-in that prints the stack's kept certificate."""
    return lambda _: kept(stack).removesuffix("\n")  # as pulumi-command prints it


Progress = Callable[[str], object]
"""Told each stack's name as its rendering starts: a stack can take seconds (the keygen runs)."""


def render_with_roots(
    project: Project,
    stacks: Iterable[str],
    *,
    curve_cert: str | None = None,
    kept: KeptCertificate | None = None,
    progress: Progress | None = None,
) -> dict[str, StackRendering]:
    """Every stack asked for and the root each burst reads, rendered roots first: the root's
    outputs stand in for the burst's StackReference."""
    rendered: dict[str, StackRendering] = {}
    for stack in order_stacks(project, stacks):
        if progress is not None:
            progress(stack)
        rendered[stack] = render_stack(project, stack, rendered, curve_cert=curve_cert, kept=kept)
    return rendered


def render_stacks(
    project: Project,
    stacks: Iterable[str],
    *,
    curve_cert: str | None = None,
    kept: KeptCertificate | None = None,
    progress: Progress | None = None,
) -> list[StackRendering]:
    """The stacks in the order asked for (rendered roots first); a burst's root is rendered too
    when it was not asked for, to be read."""
    wanted = list(dict.fromkeys(stacks))
    rendered = render_with_roots(
        project, wanted, curve_cert=curve_cert, kept=kept, progress=progress
    )
    extra = [s for s in rendered if s not in wanted]
    out = [rendered[s] for s in wanted]
    for rendering in out:
        for root in extra:
            rendering.notes.append(f"the root stack {root!r} was rendered first, to be read")
    return out


def render_stack(
    project: Project,
    stack: str,
    roots: Mapping[str, StackRendering] | None = None,
    *,
    curve_cert: str | None = None,
    kept: KeptCertificate | None = None,
) -> StackRendering:
    """Render one stack; a burst reads its root's outputs from ``roots``. ``kept(stack)`` is
    asked only when the stack's program registers a keygen Command (a burst runs none)."""
    started = time.perf_counter()
    config, notes = read_stack_config(project, stack)
    # Validated as `pulumi up` validates it, before the offline stand-ins below replace parts of
    # it (the keygen strategy, a secret curveCert).
    notes += cluster_notes(stackconfig.parse_stack_config(_as_deployed(project, stack)))
    keygen = dict(config.get(f"{PROJECT}:keygen") or {})
    keygen["strategy"] = "builtin"
    config[f"{PROJECT}:keygen"] = keygen

    references: dict[str, Any] = {}
    root = root_of(config)
    if root is not None:
        name = root.rsplit("/", 1)[-1]
        given = (roots or {}).get(name)
        if given is None:
            raise SpecError(
                Problem(
                    f"{PROJECT}:bursting.rootStack",
                    f"render the root stack {name!r} with it (roots are rendered first)",
                )
            )
        references[root] = {"outputs": given.outputs, "secretOutputNames": given.secret_outputs}
        notes.append(f"StackReference {root} read from the rendering of {name!r}")

    stdout: CommandStdout = run_create_script
    if curve_cert is not None:
        stdout = curve_cert.removesuffix("\n")  # as pulumi-command prints it
        if root is None:
            _give_certificate(config, curve_cert)
        notes.append("the curve certificate is the one given (--curve-cert)")
    elif kept is not None:
        stdout = _printing_kept(kept, stack)

    mocks = OfflineMocks(command_stdout=stdout, stack_references=references)
    try:
        run = run_program(
            lambda: runpy.run_path(str(project.program), run_name="__main__"),
            mocks=mocks,
            project=project.name,
            stack=stack,
            config=config,
        )
    except Exception as err:
        # A config problem found inside an apply (a burst its root does not declare) reaches us
        # wrapped by the engine ("While processing resource ..."): it is still the user's.
        if (problem := _spec_error(err)) is not None:
            raise problem from None
        raise
    if curve_cert is None and kept is not None and mocks.of_type(COMMAND_TYPE):
        notes.append("the keygen Command printed the certificate kept from earlier renders")
    elif curve_cert is None and mocks.of_type(COMMAND_TYPE):
        notes.append("the curve certificate was made for real by the builtin keygen (pyzmq)")
    kube = [r for r in run.resources if r.is_kubernetes_object]
    objects = [plain(r.inputs) for r in kube if not r.typ.endswith(PATCH_SUFFIX)]
    patches = [plain(r.inputs) for r in kube if r.typ.endswith(PATCH_SUFFIX)]
    return StackRendering(
        stack=stack,
        objects=sorted(objects, key=apply_order),
        patches=sorted(patches, key=apply_order),
        outputs={k: e.value for k, e in run.exports.items() if e.known},
        secret_outputs=sorted(k for k, e in run.exports.items() if e.secret),
        seconds=time.perf_counter() - started,
        notes=notes,
    )


def _spec_error(err: BaseException) -> SpecError | None:
    """The ``SpecError`` that caused ``err``, through Pulumi's wrapping, if one did."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, SpecError):
            return cause
        if isinstance(cause, ApplyError) and cause.spec_error is not None:
            return cause.spec_error
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def apply_order(manifest: Mapping[str, Any]) -> tuple[int, str, str]:
    """The key that sorts a stack's objects: the core's apply order (what an object refers to
    comes before it), then namespace and name."""
    metadata = manifest.get("metadata") or {}
    return (
        manifests.apply_order(manifest),
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
    )
