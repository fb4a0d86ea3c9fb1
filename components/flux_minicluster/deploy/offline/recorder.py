"""A recorder of Pulumi registrations: run a program without the engine, keep what it declares.

``minicluster render --stack`` and ``make demo`` show what a stack would deploy on a machine
without the Pulumi CLI, a provider or a cluster; that is product, not test, code. It runs the
real ``__main__.py`` under the SDK's mock runtime (``pulumi.runtime.set_mocks``) and records every
registration with its inputs and options, so the offline stack renderer can write each
Kubernetes object to YAML and tests (ours and users', through ``flux_minicluster.testing``) can
assert exactly what a program declares.

What the engine or a provider would add, and our programs read, is emulated here and nowhere
else:

* a Command's ``stdout`` (a fixed text, or the output of really running the ``create`` script);
* a StackReference's outputs (``{"outputs": {...}, "secretOutputNames": [...]}`` per stack);
* ``additionalSecretOutputs``: the named outputs come back secret, as the engine returns them;
* during a preview, a Command has not run, so its stdout stays unknown.

Inputs are recorded as the engine receives them: camelCase, numbers as floats (they cross a
protobuf ``Struct``), secrets wrapped in Pulumi's sentinel dict. ``plain`` undoes the last two.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import pulumi
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs

from flux_minicluster.core.base import jsonvalues
from flux_minicluster.core.deployed import stackoutputs
from flux_minicluster.deploy.offline.sdkinternals import RegistrationOptions, registration_options

__all__ = [
    "COMMAND_TYPE",
    "SECRET_SIG",
    "SECRET_SIG_KEY",
    "CommandStdout",
    "Export",
    "ProgramRun",
    "RecordedResource",
    "RecordingMonitor",
    "RegistrationOptions",
    "RegistrationRecorder",
    "contains_secret",
    "plain",
    "run_create_script",
    "run_program",
    "secret",
    "unsecret",
]

COMMAND_TYPE: Final = "command:local:Command"
# Pulumi's wire encoding of a secret (pulumi.runtime.rpc._special_sig_key / _special_secret_sig):
# {SECRET_SIG_KEY: SECRET_SIG, "value": <the value>}.
SECRET_SIG_KEY: Final = "4dabf18193072939515e22adb298388d"
SECRET_SIG: Final = "1b47061264138c4ac30d75fd1eb44270"

T = TypeVar("T")
CommandStdout = str | Callable[[MockResourceArgs], str]


# --- values as the engine sees them -----------------------------------------------------------


def secret(value: Any) -> dict[str, Any]:
    """``value`` wrapped the way the engine marks a secret on the wire."""
    return {SECRET_SIG_KEY: SECRET_SIG, "value": value}


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG_KEY) == SECRET_SIG


def unsecret(value: Any) -> Any:
    """``value`` with every secret sentinel replaced by the value it wraps, recursively."""
    if _is_secret(value):
        return unsecret(value.get("value"))
    if isinstance(value, dict):
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unsecret(v) for v in value]
    return value


def contains_secret(value: Any) -> bool:
    """Whether a secret sentinel occurs anywhere in ``value``."""
    if _is_secret(value):
        return True
    if isinstance(value, dict):
        return any(contains_secret(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(contains_secret(v) for v in value)
    return False


def plain(value: Any) -> Any:
    """Inputs as a manifest author wrote them: secrets unwrapped, integral floats as ints."""
    return jsonvalues.plain(unsecret(value))


# --- what gets recorded ------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedResource:
    """One registration (or read): what a provider would have been asked to manage."""

    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str = ""
    custom: bool = False
    resource_id: str | None = None
    urn: str = ""
    parent: str = ""
    """URN of the parent resource; empty when recorded without a RecordingMonitor."""
    options: RegistrationOptions | None = None
    """None when recorded without a RecordingMonitor."""

    @property
    def plain_inputs(self) -> Any:
        return plain(self.inputs)

    @property
    def is_kubernetes_object(self) -> bool:
        """A Kubernetes object (not a provider, not a component)."""
        return self.custom and self.typ.startswith("kubernetes:") and "apiVersion" in self.inputs


@dataclass(frozen=True)
class _Pending:
    urn: str
    options: RegistrationOptions


def run_create_script(args: MockResourceArgs) -> str:
    """Run a Command's ``create`` script for real, as pulumi-command's local provider would.

    The interpreter, directory and environment come from the Command's inputs; stdout loses one
    trailing newline, as the provider trims it. A failing script raises, with its stderr.
    """
    inputs = unsecret(args.inputs)
    script = inputs.get("create")
    if not isinstance(script, str):
        raise ValueError(f"{args.name}: the Command has no create script to run")
    interpreter = list(inputs.get("interpreter") or ["/bin/sh", "-c"])
    environment = dict(os.environ)
    environment.update({str(k): str(v) for k, v in (inputs.get("environment") or {}).items()})
    result = subprocess.run(
        [*interpreter, script],
        cwd=inputs.get("dir") or None,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{args.name}: the create script exited with status {result.returncode}: "
            f"{result.stderr.strip()}"
        )
    return result.stdout.removesuffix("\n")


class RegistrationRecorder(pulumi.runtime.Mocks):
    """Mocks that record every registration and return the inputs as the resource's state.

    ``command_stdout``: the stdout every ``command:local:Command`` returns: a fixed text, or a
    callable given the Command's ``MockResourceArgs`` (``run_create_script`` runs it for real).
    None leaves stdout unset (None after an update, unknown in a preview).
    ``stack_references``: stack name -> ``{"outputs": {...}, "secretOutputNames": [...]}``.
    """

    def __init__(
        self,
        *,
        command_stdout: CommandStdout | None = None,
        stack_references: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.command_stdout = command_stdout
        self.stack_references = dict(stack_references or {})
        self.resources: list[RecordedResource] = []
        self.preview = False
        """Whether the run is a preview (set by ``run_program``)."""
        self._lock = threading.Lock()
        self._local = threading.local()

    # pulumi.runtime.Mocks -------------------------------------------------------------------

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        pending: _Pending | None = getattr(self._local, "pending", None)
        options = pending.options if pending else None
        self._record(args, pending)
        state = dict(args.inputs)
        if args.typ == COMMAND_TYPE:
            state.update(self._command_outputs(args))
        elif args.typ == stackoutputs.STACK_REFERENCE_TYPE:
            state.update(self._stack_reference_outputs(args))
        for key in options.additional_secret_outputs if options else ():
            if key in state and state[key] is not None and not _is_secret(state[key]):
                state[key] = secret(state[key])
        return args.resource_id or f"{args.name}-id", state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None

    # queries --------------------------------------------------------------------------------

    def of_type(self, typ: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.typ == typ]

    def get(self, typ: str, name: str) -> RecordedResource:
        found = [r for r in self.resources if r.typ == typ and r.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} resources of type {typ} named {name!r} were registered")
        return found[0]

    # internals ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _registering(self, pending: _Pending) -> Iterator[None]:
        """Tie the next ``new_resource`` on this thread to its URN and options."""
        self._local.pending = pending
        try:
            yield
        finally:
            self._local.pending = None

    def _record(self, args: MockResourceArgs, pending: _Pending | None) -> None:
        record = RecordedResource(
            typ=args.typ,
            name=args.name,
            inputs=dict(args.inputs),
            provider=args.provider or "",
            custom=bool(args.custom) or bool(args.resource_id),
            resource_id=args.resource_id or None,
            urn=pending.urn if pending else "",
            parent=pending.options.parent if pending else "",
            options=pending.options if pending else None,
        )
        with self._lock:
            self.resources.append(record)

    def _command_outputs(self, args: MockResourceArgs) -> dict[str, Any]:
        # A preview does not run the Command: its stdout is unknown, as in a real first preview.
        # (Whether this is a preview is the run's, not read from the SDK here: the mock monitor
        # may answer on a thread that does not see the program's settings.)
        if self.command_stdout is None or self.preview:
            return {}
        stdout = (
            self.command_stdout
            if isinstance(self.command_stdout, str)
            else self.command_stdout(args)
        )
        return {"stdout": stdout, "stderr": ""}

    def _stack_reference_outputs(self, args: MockResourceArgs) -> dict[str, Any]:
        stack = args.inputs.get("name") or args.resource_id or args.name
        if stack not in self.stack_references:
            known = ", ".join(sorted(self.stack_references)) or "none"
            raise KeyError(
                f"StackReference {stack!r}: no outputs given for that stack (known: {known}); "
                "pass stack_references={name: {'outputs': {...}, 'secretOutputNames': [...]}}"
            )
        given = self.stack_references[stack]
        return {
            "name": stack,
            "outputs": dict(given.get("outputs") or {}),
            "secretOutputNames": list(given.get("secretOutputNames") or []),
        }


class RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, also handing each registration's URN and options to the recorder.

    ``MockMonitor`` and its ``monitor=`` argument to ``set_mocks`` are public; the options are
    read from the protocol request in ``sdkinternals``.
    """

    def __init__(self, recorder: RegistrationRecorder) -> None:
        super().__init__(recorder)
        self.recording = recorder

    def RegisterResource(self, request: Any) -> Any:
        with self.recording._registering(self._pending(request)):
            return super().RegisterResource(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:
        with self.recording._registering(self._pending(request)):
            return super().ReadResource(request)  # type: ignore[no-untyped-call]

    def _pending(self, request: Any) -> _Pending:
        return _Pending(
            urn=self.make_urn(request.parent, request.type, request.name),
            options=registration_options(request),
        )


# --- running a program -------------------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    """A stack output after the run: its value (secrets unwrapped), and whether it was secret."""

    value: Any
    secret: bool
    known: bool


@dataclass(frozen=True)
class ProgramRun(Generic[T]):
    """What a program did under mocks."""

    resources: list[RecordedResource]
    exports: dict[str, Export]
    result: T
    monitor: RecordingMonitor


def run_program(
    build: Callable[[], T],
    *,
    mocks: RegistrationRecorder,
    project: str,
    stack: str,
    preview: bool = False,
    config: Mapping[str, Any] | None = None,
    secret_config_keys: Sequence[str] = (),
) -> ProgramRun[T]:
    """Run ``build`` as the Pulumi program of ``project``/``stack`` against ``mocks``.

    Each run gets a fresh monitor and a fresh root Stack, so registrations and exports never leak
    between runs (``set_mocks`` itself is process-global). ``config`` keys are full
    (``project:key``); values that are not strings are JSON-encoded, as ``pulumi config set
    --path`` stores them. Errors of the program, including those raised inside an ``apply``,
    propagate.
    """
    # A fresh root Stack: set_mocks only makes one when there is none.
    pulumi.runtime.reset_options(project=project, stack=stack, preview=preview)
    mocks.preview = preview
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    if config is not None:
        encoded = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
        pulumi.runtime.set_all_config(encoded, list(secret_config_keys))
    box: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]  # the SDK leaves it untyped
    def program() -> Awaitable[None]:
        _report_each_error_once(asyncio.get_running_loop())
        box["result"] = build()
        root = pulumi.runtime.get_root_resource()
        stack_outputs = dict(getattr(root, "outputs", {}) or {})
        # Returned to the test decorator, which awaits it with the program's own event loop.
        return _resolve_all(stack_outputs, box)

    try:
        program()
    except BaseException as error:
        for cause in _chain(error):
            with contextlib.suppress(AttributeError):  # an exception takes attributes
                setattr(cause, _REPORTED, True)
        raise
    return ProgramRun(
        resources=list(mocks.resources),
        exports=box["exports"],
        result=box["result"],
        monitor=monitor,
    )


# Set on a failed program's error (and what caused it) once it has been raised to the caller.
_REPORTED: Final = "_flux_minicluster_reported"


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _report_each_error_once(loop: asyncio.AbstractEventLoop) -> None:
    """Report a failed program's error once: to the caller, not again when its copies are freed.

    Every resource and Output that depended on the failing value holds a Future with a copy of
    the error (a ``ValueError`` naming the resource, caused by the original), and the SDK stops
    the program at the first: the rest stay unretrieved, owned by the event loop's pending
    callbacks, and the loop reports each, with a traceback, when its Future is freed (during a
    later run on the same loop). Those reports go through the loop's exception handler, which
    drops the copies of an error already raised (the CLI prints it as one line) and passes
    anything else on.
    """
    previous = loop.get_exception_handler()
    if getattr(previous, _REPORTED, False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if "future" in context and any(
            getattr(e, _REPORTED, False) for e in _chain(context.get("exception"))
        ):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    setattr(handler, _REPORTED, True)
    loop.set_exception_handler(handler)


async def _resolve_all(stack_outputs: Mapping[str, Any], box: dict[str, Any]) -> None:
    exports: dict[str, Export] = {}
    for name, value in stack_outputs.items():
        output: pulumi.Output[Any] = pulumi.Output.from_input(value)
        known = bool(await output.is_known())
        exports[name] = Export(
            value=await output.future() if known else None,
            secret=bool(await output.is_secret()),
            known=known,
        )
    box["exports"] = exports
