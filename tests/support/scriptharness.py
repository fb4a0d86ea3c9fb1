"""Run rendered MiniCluster scripts for real, in a temporary directory, against fake tools.

The scripts are tested as they ship: no test-only branch exists in them. Instead the harness
rewrites the absolute roots a pod provides (``/flux_operator``, ``/mnt/flux``, ``/mnt/curve``,
``/opt/software``, ``/opt/view``, ``/tmp/``, ...) in the rendered text to directories under a
sandbox, and puts fakes first on PATH:

* ``flux`` records its argv (one JSON list per line); ``flux batch`` prints a job id and ``flux
  job status`` exits with ``job_status``; ``flux submit --watch CMD`` runs CMD and exits with its
  code when ``FAKE_FLUX_SUBMIT_RUNS`` is set; ``flux start``/``flux broker`` fails a chosen number
  of times before it succeeds, and with ``run_program`` it then runs the
  initial program it was given, as a real rank 0 would. Like a real broker it *joins*: at once
  by default, after ``join`` seconds, or never (``join="never"``: it blocks until a signal, as a
  worker whose parent refuses its CURVE handshake does). Until it has joined, ``flux module
  list`` fails with Flux's "Upstream Flux broker is offline" (the broker refuses client requests
  before its init state), while ``flux getattr tbon.parent-endpoint`` answers during join, as
  real Flux does for attr.get, when the test gives it an endpoint;
* ``flux config builtin shell_initrc`` prints ``FAKE_FLUX_INITRC`` when the test sets it, and
  fails as a Flux without the command does otherwise;
* ``hostname`` prints the name the test chose (``<name>-0`` for rank 0, ``<name>-1`` ...);
* ``sleep`` records its argument and returns at once, so retry delays are asserted, not waited
  (``sleep_real`` makes each call really sleep that long, to pace a polling loop);
* ``/usr/bin/time`` (rewritten) drops ``-f FORMAT`` and runs the rest.

For v1alpha1's entrypoint behaviours, one recording fake (``FAKE_TOOL``) stands in for the system
tools a v1alpha1 image brings, each call one JSON line ``[tool, cwd, *argv]`` in ``calls.log``:

* ``sudo`` applies ``-u USER`` (recorded only), ``-E`` and ``VAR=value``, then runs the rest;
* ``useradd``/``adduser`` add the user to a fake passwd that ``id -u NAME`` reads (users named
  in ``existing_users`` exist from the start), and fail for a user that exists, as the real
  ones do; ``chown`` only records (the owner is asserted
  from the record, the mode from the file); ``chpasswd`` records the lines it read on stdin in
  ``chpasswd.log``, and ``python3 -c PROGRAM ARGS`` its ARGS and standard input in
  ``python-stdin.log``;
* ``git clone`` makes a flux-restful-api checkout (requirements.txt, app/db/init_db.py);
  ``python3``, ``alembic``, ``service`` and ``munged`` only record.

The pod's credential files (the RESTful and users Secrets, the munge key) are written with the
values the renderer derives from the golden certificate, read-only as the pod mounts them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flux_minicluster.core.base import layout
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import credentials
from flux_minicluster.core.render.scripts import (
    IMP_CONFIG_DIR,
    MUNGE_KEY,
    RESTFUL_DIR,
    entrypoint_data,
)

GOLDEN_CERT = (Path(__file__).resolve().parents[1] / "golden" / "fixed-curve.cert").read_text()

FAKE_FLUX = f"""#!{sys.executable}
import json, os, signal, subprocess, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_FLUX_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\\n")
if "FLUX_URI" in os.environ:
    with open(os.environ["FAKE_FLUX_URI_LOG"], "a") as fh:
        fh.write(json.dumps([os.environ["FLUX_URI"], *args]) + "\\n")
joined = os.environ["FAKE_FLUX_JOINED"]
offline = "Upstream Flux broker is offline. Try again later."
if args[:3] == ["config", "builtin", "shell_initrc"]:
    if "FAKE_FLUX_INITRC" not in os.environ:  # a Flux without `flux config builtin`
        sys.exit("flux: 'config' is not a flux command.")
    print(os.environ["FAKE_FLUX_INITRC"])
    sys.exit(0)
if args[:2] == ["R", "encode"]:
    print('{{"version": 1, "execution": {{"fake": true}}}}')
    sys.exit(0)
if args[:2] == ["module", "list"]:
    if not os.path.exists(joined):
        sys.exit(f"flux-module: list: {{offline}}")
    print("Module                   Idle  S Sendq Recvq Service")
    sys.exit(0)
if args[:1] == ["batch"]:
    print("f2bVLP4sTrS")  # a job id, as flux batch prints it
    sys.exit(0)
if args[:1] == ["submit"] and "--watch" in args and os.environ.get("FAKE_FLUX_SUBMIT_RUNS"):
    sys.exit(subprocess.run(args[args.index("--watch") + 1 :]).returncode)
if args[:2] == ["job", "status"]:
    sys.exit(int(os.environ.get("FAKE_FLUX_JOB_STATUS", "0")))
if args[:2] == ["getattr", "tbon.parent-endpoint"]:
    endpoint = os.environ.get("FAKE_FLUX_PARENT_ENDPOINT")
    if not endpoint:
        sys.exit(f"flux-getattr: {{offline}}")
    print(endpoint)
    sys.exit(0)
if args and args[0] in ("start", "broker"):
    with open(os.environ["FAKE_FLUX_ENV_LOG"], "a") as fh:
        seen = {{k: v for k, v in os.environ.items() if k.startswith("FLUX_") or k == "HOME"}}
        fh.write(json.dumps({{"cwd": os.getcwd(), "env": seen}}) + "\\n")
    counter = os.environ["FAKE_FLUX_COUNTER"]
    done = int(open(counter).read()) if os.path.exists(counter) else 0
    with open(counter, "w") as fh:
        fh.write(str(done + 1))
    if done < int(os.environ.get("FAKE_FLUX_FAILURES", "0")):
        sys.exit(int(os.environ.get("FAKE_FLUX_RC", "1")))
    program = args[1:]
    while program and (program[0].startswith(("--wrap=", "-S")) or program[0] == "-o"):
        program = program[1:]
    if program[:1] == ["--config"]:
        program = program[2:]
    while program and program[0].startswith("-S"):
        program = program[1:]

    def finish(code):
        # rank 0's rc3 with -Scontent.dump: the instance's content dumped as the broker stops
        # (FAKE_FLUX_DUMP=partial: a dump cut short)
        for arg in args:
            if arg.startswith("-Scontent.dump="):
                path = arg.split("=", 1)[1]
                if os.environ.get("FAKE_FLUX_DUMP") == "partial":
                    with open(path, "wb") as fh:
                        fh.write(b"\\x1f\\x8b\\x08 cut short")
                else:
                    import io, tarfile
                    with tarfile.open(path, "w:gz") as tar:
                        info = tarfile.TarInfo("content")
                        info.size = len(b"dumped")
                        tar.addfile(info, io.BytesIO(b"dumped"))
        if os.path.exists(joined):
            os.unlink(joined)  # its socket is gone: `flux module list` fails again
        if code == 0 and not program:
            open(os.environ["FAKE_FLUX_ENDED"], "w").close()  # a worker's instance shut down
        sys.exit(code)

    def terminated(signum, frame):
        with open(os.environ["FAKE_FLUX_SIGNALS"], "a") as fh:
            fh.write(signal.Signals(signum).name + "\\n")
        finish(1)  # a broker in its join state exits 1 on SIGTERM (parent-fail)

    signal.signal(signal.SIGTERM, terminated)
    with open(os.environ["FAKE_FLUX_PID"], "w") as fh:
        fh.write(str(os.getpid()))
    join = os.environ.get("FAKE_FLUX_JOIN", "0")
    run = os.environ.get("FAKE_FLUX_RUN", "0")
    if os.path.exists(os.environ["FAKE_FLUX_ENDED"]):
        # a broker started after one ended with its instance: a worker rejoining, which joins
        # only when a new rank 0 is there (FAKE_FLUX_LATER_JOIN; by default it never is)
        open(os.environ["FAKE_FLUX_REJOINING"], "w").close()
        join = os.environ.get("FAKE_FLUX_LATER_JOIN", "never")
        run = os.environ.get("FAKE_FLUX_LATER_RUN", run)
    if join == "never":
        while True:
            time.sleep(60)
    time.sleep(float(join))
    open(joined, "w").close()
    time.sleep(float(run))
    if args[0] == "start" and os.environ.get("FAKE_FLUX_RUN_PROGRAM"):
        rest = args[1:]
        if rest and rest[0].startswith("--wrap="):
            rest = rest[1:]
        assert rest[:2] == ["-o", "--config"], rest
        rest = rest[3:]
        while rest and rest[0].startswith("-S"):
            rest = rest[1:]
        if rest:
            finish(subprocess.run(rest).returncode)
    finish(int(os.environ.get("FAKE_FLUX_EXIT", "0")))
sys.exit(0)
"""

FAKE_HOSTNAME = """#!/bin/bash
printf '%s\\n' "${FAKE_HOSTNAME}"
"""

FAKE_SLEEP = """#!/bin/bash
printf '%s\\n' "$1" >> "${FAKE_SLEEP_LOG}"
if [ -n "${FAKE_SLEEP_REAL:-}" ]; then
  exec /bin/sleep "${FAKE_SLEEP_REAL}"
fi
"""

FAKE_TIME = """#!/bin/bash
# GNU time's `-f FORMAT`, then the command.
shift 2
exec "$@"
"""

# The system tools of a v1alpha1 image, one script dispatching on the name it was called by.
FAKE_TOOL = f"""#!{sys.executable}
import json, os, sys
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["FAKE_CALLS_LOG"], "a") as fh:
    fh.write(json.dumps([tool, os.getcwd(), *args]) + "\\n")
users = os.environ["FAKE_USERS"]
if tool == "sudo":
    env = dict(os.environ)
    while args and (args[0] in ("-u", "-E") or "=" in args[0]):
        if args[0] == "-u":
            args = args[1:]
        elif "=" in args[0]:
            key, _, value = args[0].partition("=")
            env[key] = value
        args = args[1:]
    os.execvpe(args[0], args, env)
known = open(users).read().split() if os.path.exists(users) else []
known += os.environ.get("FAKE_EXISTING_USERS", "").split(",")
if tool in ("useradd", "adduser"):
    if args[-1] in known:
        sys.exit(f"{{tool}}: user '{{args[-1]}}' already exists")
    with open(users, "a") as fh:
        fh.write(args[-1] + "\\n")
elif tool == "id" and args[:1] == ["-u"]:
    if args[1] not in known:
        sys.exit(f"id: '{{args[1]}}': no such user")
    print(1000 + known.index(args[1]))
elif tool == "chpasswd":
    with open(os.environ["FAKE_CHPASSWD_LOG"], "a") as fh:
        fh.write(sys.stdin.read())
elif tool == "python3" and args[:1] == ["-c"]:
    with open(os.environ["FAKE_PYTHON_STDIN_LOG"], "a") as fh:
        fh.write(json.dumps([*args[2:], sys.stdin.read()]) + "\\n")
elif tool == "git" and args[:1] == ["clone"]:
    os.makedirs(os.path.join(args[-1], "app", "db"))
    open(os.path.join(args[-1], "requirements.txt"), "w").write("fastapi\\n")
    open(os.path.join(args[-1], "app", "db", "init_db.py"), "w").write("# fake\\n")
elif tool == "service":
    sys.exit(int(os.environ.get("FAKE_SERVICE_RC", "0")))
"""
FAKE_TOOLS = (
    "sudo", "useradd", "adduser", "id", "chown", "chpasswd", "git", "python3", "alembic",
    "service", "munged",
)  # fmt: skip

# The sandbox certificate's keys (Z85-shaped, made up for the tests).
PUBLIC_KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
SECRET_KEY = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"

# Roots a pod provides, per script: the init container sees the image's /opt/software and
# /opt/view; the application containers see the software emptyDir the init container filled.
_COMMON_ROOTS = (
    layout.ENTRYPOINT_DIR,
    layout.TERMINATION_LOG,
    layout.CURVE_DIR,
    layout.HOME_DIR,
    "/mnt/flux",
    "/tmp/",
    "/usr/bin/time",
    # v1alpha1: the credentials and munge key mounts, the IMP (under installRoot /usr) and its
    # config, munge's key and run directory, the RESTful server's checkout.
    layout.CREDENTIALS_DIR,
    layout.MUNGE_DIR,
    "/usr/libexec",
    IMP_CONFIG_DIR,
    str(Path(MUNGE_KEY).parent),
    "/run/munge",
    RESTFUL_DIR,
)


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def signals_as_a_container_has_them() -> None:
    """For ``preexec_fn``: SIGINT and SIGQUIT back to their default actions in the child.

    A container's entrypoint starts with every signal at its default; a test run started in the
    background by a non-interactive shell (a CI runner, ``nohup ... &``) has SIGINT and SIGQUIT
    ignored, which the child would inherit, and bash cannot trap a signal ignored on entry. The
    scripts are tested as the container runs them, whatever started pytest.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@dataclass
class Sandbox:
    """One pod's filesystem, seen by one test; every root lives under ``root``."""

    root: Path
    mc: MiniClusterPlan
    data: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bin = self.root / "fakebin"
        self.bin.mkdir(parents=True)
        _write_executable(self.bin / "flux", FAKE_FLUX)
        _write_executable(self.bin / "hostname", FAKE_HOSTNAME)
        _write_executable(self.bin / "sleep", FAKE_SLEEP)
        for tool in FAKE_TOOLS:
            _write_executable(self.bin / tool, FAKE_TOOL)
        self.work = self.root / "work"
        self.work.mkdir()
        self.flux_log = self.root / "flux.log"
        self.uri_log = self.root / "flux-uri.log"
        self.sleep_log = self.root / "sleep.log"
        self.counter = self.root / "flux.counter"
        self.joined = self.root / "flux.joined"
        self.rejoining = self.root / "flux.rejoining"
        self.broker_pid_file = self.root / "flux.pid"
        self.signal_log = self.root / "flux.signals"
        self.env_log = self.root / "flux-env.log"
        self.calls_log = self.root / "calls.log"
        self.chpasswd_log = self.root / "chpasswd.log"
        self.python_stdin_log = self.root / "python-stdin.log"
        self.users_file = self.root / "passwd"
        self.data = entrypoint_data(self.mc)
        for sub in ("tmp", "home", "usr/bin", "image/opt/software", "app/opt", "dev"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # One software emptyDir, mounted at <mountPath>/software (init) and /opt/software (app).
        self.software.mkdir(parents=True)
        (self.root / "app/opt/software").symlink_to(self.software)
        _write_executable(self.root / "usr/bin/time", FAKE_TIME)
        # The entrypoint ConfigMap.
        entry = self.path(layout.ENTRYPOINT_DIR)
        entry.mkdir(parents=True)
        for key, text in self.data.items():
            _write_executable(entry / key, self.rewrite(text))
        # The curve Secret, group-readable as a Secret volume with fsGroup may be.
        curve = self.path(layout.CURVE_DIR)
        curve.mkdir(parents=True)
        # `flux keygen`'s layout; the public key is printed by a burst that cannot join, never
        # the secret key.
        self.cert_text = (
            "#   ZeroMQ CURVE **Secret** Certificate\n"
            "metadata\n"
            '    name = "flux-sample"\n'
            "curve\n"
            f'    public-key = "{PUBLIC_KEY}"\n'
            f'    secret-key = "{SECRET_KEY}"\n'
        )
        (curve / layout.CURVE_FILE).write_text(self.cert_text)
        (curve / layout.CURVE_FILE).chmod(0o640)
        # v1alpha1's Secrets, one read-only file per key, as the pod mounts them.
        self.credentials: dict[str, str] = {}
        for secret in credentials.secrets(self.mc, GOLDEN_CERT):
            self.credentials.update(secret["stringData"])
        for key, value in self.credentials.items():
            folder = layout.MUNGE_DIR if key == layout.MUNGE_KEY else layout.CREDENTIALS_DIR
            self.path(folder).mkdir(parents=True, exist_ok=True)
            (self.path(folder) / key).write_text(value)
            (self.path(folder) / key).chmod(0o400)
        if self.mc.imp is not None:
            imp = Path(self.rewrite(self.mc.imp.path))
            imp.parent.mkdir(parents=True, exist_ok=True)
            _write_executable(imp, "#!/bin/sh\n")

    # --- paths --------------------------------------------------------------------------

    def mapping(self, script: str) -> dict[str, str]:
        """Pod root -> sandbox directory, for the container that runs ``script``."""
        mapping = {r: self.path(r) for r in _COMMON_ROOTS}
        root = self.mc.install_root
        if root and root.rstrip("/") != "/usr" and not any(root.startswith(r) for r in mapping):
            mapping[root] = self.path(root)
        mount = self.mc.spec.flux.container.mount_path
        if not any(mount.startswith(r) for r in mapping):
            mapping[mount] = self.path(mount)
        if script == layout.INIT_SCRIPT:
            mapping["/opt/software"] = self.root / "image/opt/software"
            mapping["/opt/view"] = self.root / "image/opt/view"
        else:
            mapping["/opt/software"] = self.root / "app/opt/software"
        return {k: str(v) + ("/" if k.endswith("/") else "") for k, v in mapping.items()}

    @property
    def software(self) -> Path:
        """The spack software emptyDir: the init container writes it at <mountPath>/software,
        the application containers mount it at /opt/software (a link to it here)."""
        mount = self.mc.spec.flux.container.mount_path.rstrip("/")
        return self.path(mount) / "software"

    def path(self, pod_path: str) -> Path:
        """Where a pod path lives in the sandbox (for the app containers)."""
        return self.root / pod_path.lstrip("/")

    def rewrite(self, text: str, script: str = "") -> str:
        """``text`` with every pod root replaced by its sandbox directory, in one pass.

        A root is a path's start only: it follows no letter or digit (so the RESTful server's
        /flux-restful-api is its checkout, not the end of its repository's address).
        """
        mapping = self.mapping(script)
        roots = "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
        pattern = re.compile(f"(?<!\\w)(?:{roots})")
        return pattern.sub(lambda m: mapping[m.group()], text)

    @property
    def mount(self) -> Path:
        mount = self.mc.spec.flux.container.mount_path
        return Path(self.rewrite(mount)) if mount.startswith("/") else Path(mount)

    # --- fixtures a pod would have ------------------------------------------------------

    def image_view(self) -> None:
        """A flux view image: /opt/view -> /opt/views/._view/<hash>, plus /opt/software."""
        real = self.root / "image/opt/views/._view/abc123"
        (real / "bin").mkdir(parents=True)
        (real / "lib/python3.11/site-packages").mkdir(parents=True)
        (real / "etc/flux").mkdir(parents=True)
        (real / "bin/flux-view-marker").write_text("view\n")
        (self.root / "image/opt/view").symlink_to(real)
        (self.root / "image/opt/software/pkg").mkdir(parents=True)
        (self.root / "image/opt/software/pkg/lib.so").write_text("so\n")

    def prepared(self) -> Sandbox:
        """Run the init container's script, as the pod does before the Flux container starts."""
        self.image_view()
        result = self.run(layout.INIT_SCRIPT, hostname=f"{self.mc.name}-0")
        assert result.returncode == 0, result.stderr
        return self

    def broker_socket(self) -> socket.socket:
        """A listening unix socket where the broker's local socket would be."""
        run_dir = self.mount / "config/run/flux"
        run_dir.mkdir(parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(run_dir / "local"))
        sock.listen(1)
        return sock

    # --- running ------------------------------------------------------------------------

    def run(self, script: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """Run one entrypoint key (or ``text``) with bash, as its container would, to its end;
        ``options`` are ``start``'s.

        A worker of a Job that rank 0 decides starts its broker again once the instance has shut
        down (to rejoin a new rank 0), until the Job controller stops it: so does this, with
        SIGTERM, as soon as such a worker is waiting to rejoin."""
        proc = self.start(script, **options)
        deadline = time.monotonic() + 60
        stopped = False
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise
                if not stopped and self.rejoining.exists():
                    proc.send_signal(signal.SIGTERM)
                    stopped = True
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    def start(
        self,
        script: str,
        *,
        hostname: str,
        failures: int = 0,
        fail_rc: int = 1,
        exit_rc: int = 0,
        run_program: bool = False,
        join: float | str = 0,
        run_seconds: float = 0,
        parent_endpoint: str | None = None,
        sleep_real: float | None = None,
        env: Mapping[str, str] | None = None,
        text: str | None = None,
        existing_users: tuple[str, ...] = (),
        job_status: int = 0,
        cpus: set[int] | None = None,
    ) -> subprocess.Popen[str]:
        """Start one entrypoint key (or ``text``) with bash, as its container would, and return
        at once (``run`` waits for it; a test may signal it, as the kubelet would).

        ``join``: seconds a started broker takes to join its parent, or ``"never"``;
        ``run_seconds``: how long it then runs; ``parent_endpoint``: what it answers for
        ``tbon.parent-endpoint`` (None: nothing, as a Flux that refuses attr.get before init);
        ``existing_users``: the users the image already has (``id -u`` knows them);
        ``cpus``: the only cores it may run on, as the kubelet's static CPU manager gives a pod
        (None: every core, as a pod whose cores are the node's).
        """

        def container() -> None:
            signals_as_a_container_has_them()
            if cpus is not None:
                os.sched_setaffinity(0, cpus)

        # a new container: no instance of its has ended yet
        for left in (self.root / "flux.ended", self.rejoining):
            left.unlink(missing_ok=True)
        body = self.rewrite(text if text is not None else self.data[script], script)
        path = self.root / f"run-{script}"
        path.write_text(body)
        environ = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.root / "home"),
            "LANG": "C.UTF-8",
            "FAKE_FLUX_LOG": str(self.flux_log),
            "FAKE_FLUX_ENDED": str(self.root / "flux.ended"),
            "FAKE_FLUX_REJOINING": str(self.rejoining),
            "FAKE_FLUX_COUNTER": str(self.counter),
            "FAKE_FLUX_FAILURES": str(failures),
            "FAKE_FLUX_RC": str(fail_rc),
            "FAKE_FLUX_EXIT": str(exit_rc),
            "FAKE_FLUX_URI_LOG": str(self.uri_log),
            "FAKE_FLUX_JOINED": str(self.joined),
            "FAKE_FLUX_JOIN": str(join),
            "FAKE_FLUX_RUN": str(run_seconds),
            "FAKE_FLUX_PID": str(self.broker_pid_file),
            "FAKE_FLUX_SIGNALS": str(self.signal_log),
            "FAKE_HOSTNAME": hostname,
            "FAKE_SLEEP_LOG": str(self.sleep_log),
            "FAKE_FLUX_ENV_LOG": str(self.env_log),
            "FAKE_CALLS_LOG": str(self.calls_log),
            "FAKE_CHPASSWD_LOG": str(self.chpasswd_log),
            "FAKE_PYTHON_STDIN_LOG": str(self.python_stdin_log),
            "FAKE_USERS": str(self.users_file),
            "FAKE_EXISTING_USERS": ",".join(existing_users),
            "FAKE_FLUX_JOB_STATUS": str(job_status),
            **({"FAKE_FLUX_RUN_PROGRAM": "1"} if run_program else {}),
            **({"FAKE_FLUX_PARENT_ENDPOINT": parent_endpoint} if parent_endpoint else {}),
            **({"FAKE_SLEEP_REAL": str(sleep_real)} if sleep_real is not None else {}),
            **(env or {}),
        }
        return subprocess.Popen(
            ["/bin/bash", str(path)],
            cwd=self.work,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=container,
        )

    def flux_calls(self) -> list[list[str]]:
        if not self.flux_log.exists():
            return []
        return [json.loads(line) for line in self.flux_log.read_text().splitlines()]

    def broker_calls(self) -> list[list[str]]:
        """The `flux start` and `flux broker` invocations, in order."""
        return [c for c in self.flux_calls() if c and c[0] in ("start", "broker")]

    def termination_message(self) -> str | None:
        """What the container wrote to its termination log (None: nothing)."""
        log = self.path(layout.TERMINATION_LOG)
        return log.read_text() if log.exists() else None

    def uri_calls(self) -> list[list[str]]:
        """``[FLUX_URI, *argv]`` of every flux call made with FLUX_URI set, in order."""
        if not self.uri_log.exists():
            return []
        return [json.loads(line) for line in self.uri_log.read_text().splitlines()]

    def broker_envs(self) -> list[dict[str, Any]]:
        """The working directory and FLUX_*/HOME environment of each broker started, in order."""
        if not self.env_log.exists():
            return []
        return [json.loads(line) for line in self.env_log.read_text().splitlines()]

    def calls(self, *tools: str) -> list[list[str]]:
        """``[tool, *argv]`` of every call to the fake system tools (``tools`` only, if given)."""
        if not self.calls_log.exists():
            return []
        out = []
        for line in self.calls_log.read_text().splitlines():
            tool, _cwd, *argv = json.loads(line)
            if not tools or tool in tools:
                out.append([tool, *argv])
        return out

    def call_dirs(self, tool: str) -> list[str]:
        """The working directory of each call to ``tool``, in order."""
        if not self.calls_log.exists():
            return []
        rows = [json.loads(line) for line in self.calls_log.read_text().splitlines()]
        return [row[1] for row in rows if row[0] == tool]

    def chpasswd_lines(self) -> list[str]:
        return self.chpasswd_log.read_text().splitlines() if self.chpasswd_log.exists() else []

    def python_inputs(self) -> list[list[str]]:
        """``[*args, stdin]`` of each ``python3 -c PROGRAM ARGS`` call, in order."""
        log = self.python_stdin_log
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def logs(self) -> str:
        """Everything the fakes recorded (argv, cwd), to check that no secret is in any of it."""
        return "".join(
            p.read_text() for p in (self.flux_log, self.calls_log, self.sleep_log) if p.exists()
        )

    def broker_pid(self) -> int:
        """The pid of the last fake broker started (it wrote it when it started)."""
        return int(self.broker_pid_file.read_text())

    def broker_signals(self) -> list[str]:
        """The signals the fake brokers caught (SIGTERM), in order."""
        return self.signal_log.read_text().split() if self.signal_log.exists() else []

    def sleeps(self) -> list[str]:
        return self.sleep_log.read_text().split() if self.sleep_log.exists() else []

    def mode_of(self, pod_path: str) -> int:
        return stat.S_IMODE(os.stat(self.rewrite(pod_path)).st_mode)


def bash_syntax_errors(scripts: dict[str, str], tmp: Path) -> dict[str, str]:
    """``bash -n`` on each script; the scripts that bash cannot parse, with bash's message.

    One bash parses them all first, each as the body of a function (one process instead of
    one per script, which the fuzzer feels); only when that fails is each script parsed alone,
    which is what says which one bash refuses and why.
    """
    if len(scripts) > 1:
        combined = tmp / "syntax-all"
        combined.write_text(
            "".join(f"__syntax_{i}() {{\n{text}\n}}\n" for i, text in enumerate(scripts.values())),
            encoding="utf-8",
        )
        together = subprocess.run(
            ["bash", "-n", str(combined)], capture_output=True, text=True, check=False, timeout=30
        )
        if together.returncode == 0 and not together.stderr:
            return {}
    bad = {}
    for key, text in scripts.items():
        path = tmp / f"syntax-{key.replace('/', '_')}"
        path.write_text(text, encoding="utf-8")
        result = subprocess.run(
            ["bash", "-n", str(path)], capture_output=True, text=True, check=False, timeout=30
        )
        if result.returncode != 0:
            bad[key] = result.stderr
    return bad
