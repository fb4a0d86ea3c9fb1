"""Our stacks on the real engine: Pulumi's Automation API over a copy of the project.

The scenario tests drive the program through the Automation API with an inline program: the
Python SDK serves the language runtime itself and drives the real CLI with `pulumi up
--client=<its address>`, and the program is the product's own entry point,
``flux_minicluster.deploy.stack.program.main(project_root)``, as ``__main__.py`` calls it. That
gives a test typed results, the engine's events and an operation it can SIGKILL in a child
process. The way the README has a user run it, `pulumi up` starting ``__main__.py`` through the real
``pulumi-language-python``, is test_readme_deploy.py's and test_keygen_command.py's
(realcli.py).

Every test works on a copy of the project (``Pulumi.yaml``, ``__main__.py``, ``stacks/``,
``examples/``, ``policies/``) in a temporary directory, so the checkout is never written to: the
CLI writes each stack's config (``pulumi config set``) into the copy's ``stacks/``. What a test
changes, it changes through config (``Stack.set``, ``Stack.set_object``: `pulumi config set`),
never through a code path of the product. The copy's ``.venv`` is a link to the venv the
programs run in, which is what ``policies/PulumiPolicy.yaml`` (``virtualenv: ../.venv``) names.

    engine = Engine.create(toolchain_bin, tmp_path)        # one backend, one PULUMI_HOME
    project = copy_project(tmp_path / "project")
    stack = engine.stack(project, "local", kubeconfig=cp.kubeconfig, context=cp.name,
                         curve_cert=certificate)
    stack.up()

A stack of the copy runs in this process (inline program) or, for the fault tests, in a child
process (``python stackrun.py up <work_dir> <stack>``) that a test may SIGKILL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi import automation as auto

REPO = Path(__file__).resolve().parents[2]
PROJECT_NAME = "flux-minicluster"
PROJECT_FILES = ("Pulumi.yaml", "__main__.py", "stacks", "examples", "policies")
PASSPHRASE = "e2e"
PREFIX = "flux-minicluster"


def venv_prefix() -> Path:
    """The virtualenv the programs and the policy pack run in: this interpreter's when it is
    one (pytest from `make venv`), else the repository's .venv."""
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix)
    return REPO / ".venv"


def copy_project(dest: Path) -> Path:
    """The project's files in ``dest`` (a new directory), with ``.venv`` linking to the venv."""
    dest.mkdir(parents=True)
    for name in PROJECT_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    (dest / ".venv").symlink_to(venv_prefix(), target_is_directory=True)
    return dest


def new_certificate(name: str) -> str:
    """A CURVE certificate as `flux keygen` writes it, for flux-minicluster:curveCert."""
    from flux_minicluster.core.flux import certificate

    return certificate.render(certificate.generate(name, f"{name}-0"))


def stack_program(project: Path) -> Callable[[], None]:
    """The product's entry point, exactly as ``__main__.py`` runs it, for ``project``."""

    def program() -> None:
        from flux_minicluster.deploy.stack.program import main

        main(project)

    return program


@dataclass
class Operation:
    """One engine operation as it happened: for timings, and for messages when it fails."""

    stack: str
    verb: str
    seconds: float
    changes: dict[str, int]
    output: str


@dataclass
class Engine:
    """The real CLI and plugins of the toolchain, one file:// backend, one PULUMI_HOME."""

    bin: Path
    home: Path
    backend: Path
    env: dict[str, str]
    operations: list[Operation] = field(default_factory=list)

    @classmethod
    def create(cls, bindir: Path, where: Path) -> Engine:
        home, backend = where / "pulumi-home", where / "state"
        home.mkdir(parents=True, exist_ok=True)
        backend.mkdir(parents=True, exist_ok=True)
        return cls(bin=bindir, home=home, backend=backend, env=engine_env(bindir, home, backend))

    def workspace(self, project: Path, program: Callable[[], None] | None = None) -> Any:
        return auto.LocalWorkspace(
            work_dir=str(project),
            program=program or stack_program(project),
            pulumi_home=str(self.home),
            env_vars=self.env,
            pulumi_command=auto.PulumiCommand(root=str(self.bin.parent), skip_version_check=True),
        )

    def stack(
        self,
        project: Path,
        name: str,
        *,
        like: str | None = None,
        kubeconfig: Path | None = None,
        context: str | None = None,
        curve_cert: str | None = None,
        program: Callable[[], None] | None = None,
    ) -> Stack:
        """Stack ``name`` of ``project`` (created, or selected when it exists).

        ``like``: a new stack whose config starts as a copy of the bundled stack file
        ``stacks/Pulumi.<like>.yaml`` (in the copy). ``kubeconfig``/``context`` point the stack's
        ``flux-minicluster:cluster`` at a control plane; ``curve_cert`` is set as the secret
        ``flux-minicluster:curveCert`` (the README's way to bring a certificate; the keygen
        Command's own certificate is test_keygen_command.py's subject).
        """
        if like is not None:
            src = project / "stacks" / f"Pulumi.{like}.yaml"
            dst = project / "stacks" / f"Pulumi.{name}.yaml"
            if not dst.exists():
                shutil.copyfile(src, dst)
        ws = self.workspace(project, program)
        stack = Stack(_create_or_select(name, ws), name, project, self)
        if kubeconfig is not None:
            stack.set(f"{PREFIX}:cluster.kubeconfig", str(kubeconfig))
        if context is not None:
            stack.set(f"{PREFIX}:cluster.context", context)
        if curve_cert is not None:
            stack.set(f"{PREFIX}:curveCert", curve_cert, secret=True, path=False)
        return stack


def _create_or_select(name: str, ws: Any) -> Any:
    try:
        return auto.Stack.select(name, ws)
    except auto.StackNotFoundError:
        return auto.Stack.create(name, ws)


def engine_env(bindir: Path, home: Path, backend: Path) -> dict[str, str]:
    """The environment of every CLI call: the toolchain first on PATH, nothing from outside."""
    python = venv_prefix() / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
    env.update(
        {
            "PATH": os.pathsep.join([str(bindir), str(python), env.get("PATH", "")]),
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": f"file://{backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            # No kubeconfig from the environment: every stack names its control plane.
            "KUBECONFIG": os.devnull,
            "TMPDIR": str(private_tmpdir(home)),
        }
    )
    return env


def private_tmpdir(home: Path) -> Path:
    """A temporary folder for the engine and its plugins, under the run's own home.

    The kubernetes provider copies the kubeconfig it is given into ``$TMPDIR/kubeconfig*`` on
    every configure and never removes it (pulumi-kubernetes ``writeKubeconfigToFile``): hundreds
    of files holding a control plane's admin key per e2e run. Here they die with the run."""
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


class Stack:
    """One stack of a project copy: config through the CLI, operations timed and recorded."""

    def __init__(self, stack: Any, name: str, project: Path, engine: Engine) -> None:
        self.auto = stack
        self.name = name
        self.project = project
        self.engine = engine
        self.policy_events: list[Any] = []

    # -- config (pulumi config set) ----------------------------------------------------------

    def set(self, key: str, value: str, *, secret: bool = False, path: bool = True) -> None:
        self.auto.set_config(key, auto.ConfigValue(value=value, secret=secret), path=path)

    def set_object(self, key: str, value: Any) -> None:
        """A whole structured config value (``flux-minicluster:minicluster``), replaced."""
        payload = {key: {"value": json.dumps(value), "objectValue": value, "secret": False}}
        self.auto.workspace.set_all_config_json(self.name, json.dumps(payload))

    def remove(self, key: str, *, path: bool = True) -> None:
        self.auto.remove_config(key, path=path)

    def config(self, key: str) -> Any:
        """A config value as the program reads it (JSON decoded)."""
        value = self.auto.get_config(key, path=True).value
        try:
            return json.loads(value)
        except ValueError:
            return value

    # -- operations ----------------------------------------------------------------------------

    def _run(self, verb: str, call: Callable[..., Any], **kwargs: Any) -> Any:
        lines: list[str] = []
        events: list[Any] = []

        def on_event(event: Any) -> None:
            if event.policy_event is not None:
                events.append(event.policy_event)

        t0 = time.monotonic()
        try:
            result = call(on_output=lines.append, on_event=on_event, **kwargs)
        except auto.CommandError as err:
            seconds = time.monotonic() - t0
            self.engine.operations.append(Operation(self.name, verb, seconds, {}, str(err)))
            self.policy_events = events
            raise StackError(verb, self.name, str(err), "".join(lines)) from None
        seconds = time.monotonic() - t0
        summary = getattr(result, "summary", None)
        changes = dict(getattr(summary, "resource_changes", None) or {})
        if verb == "preview":
            changes = {k: v for k, v in result.change_summary.items() if k != "same"}
        self.policy_events = events
        self.engine.operations.append(Operation(self.name, verb, seconds, changes, "".join(lines)))
        return result

    def up(self, **kwargs: Any) -> Any:
        return self._run("up", self.auto.up, **kwargs)

    def preview(self, **kwargs: Any) -> Any:
        return self._run("preview", self.auto.preview, **kwargs)

    def refresh(self, **kwargs: Any) -> Any:
        return self._run("refresh", self.auto.refresh, **kwargs)

    def destroy(self, **kwargs: Any) -> Any:
        return self._run("destroy", self.auto.destroy, **kwargs)

    def outputs(self) -> dict[str, Any]:
        return {k: v.value for k, v in self.auto.outputs().items()}

    def last(self) -> Operation:
        return self.engine.operations[-1]

    def policy_pack(self) -> tuple[list[str], list[str]]:
        """``--policy-pack`` and ``--policy-pack-config`` of the copy's pack (example config)."""
        pack = self.project / "policies"
        return [str(pack)], [str(pack / "config.example.json")]


class StackError(AssertionError):
    """A failed engine operation, with the CLI's own words."""

    def __init__(self, verb: str, stack: str, error: str, output: str) -> None:
        super().__init__(f"pulumi {verb} -s {stack} failed:\n{error[-6000:]}")
        self.verb = verb
        self.stack = stack
        self.error = error
        self.output = output


# --- a stack operation in a child process (for faults: a test may SIGKILL it) ---------------


@contextmanager
def child_operation(
    engine: Engine, project: Path, stack: str, verb: str, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``verb`` (up, refresh, destroy) on ``stack`` in a child Python process of its own
    session (the CLI and the provider are its descendants); it is killed when the block ends."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(venv_prefix() / "bin" / "python"),
                str(Path(__file__).resolve()),
                verb,
                str(project),
                stack,
                str(engine.bin),
                str(engine.home),
                str(engine.backend),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=project,
        )
    try:
        yield proc
    finally:
        kill_group(proc)


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the child and every process it started: its session (the CLI) and, by
    pid, each descendant in a process group of its own (the CLI starts each plugin in one, and
    a provider plugin outlives a killed CLI); then reap the child."""
    tree = descendants(proc.pid)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    for pid in tree:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc), nearest first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


def _child(argv: list[str]) -> int:
    verb, project, stack_name, bindir, home, backend = argv
    engine = Engine(
        bin=Path(bindir),
        home=Path(home),
        backend=Path(backend),
        env=engine_env(Path(bindir), Path(home), Path(backend)),
    )
    stack = engine.stack(Path(project), stack_name)
    getattr(stack, verb)()
    op = stack.last()
    print(f"RESULT {json.dumps({'verb': verb, 'seconds': op.seconds, 'changes': op.changes})}")
    return 0


def changes_of(result: Any) -> Mapping[str, int]:
    return dict(result.summary.resource_changes or {})


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
