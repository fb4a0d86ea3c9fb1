"""The scripts and configs every MiniCluster pod runs: the ``<name>-entrypoint`` ConfigMap's data.

``entrypoint_data(plan)`` returns every key of that ConfigMap, in sorted order:

* ``flux-init.sh``: the init container (flux-view image) copies the view, lays out the config
  tree and copies ``broker.toml`` and ``hostlist`` into place from the mounted ConfigMap;
* ``wait-<i>.sh``: the Flux container; rank 0 runs the user's work, every other rank joins;
* ``start-<i>.sh``: each wrapped sidecar; it gets Flux on its PATH and waits for the socket;
* ``broker.toml``: see ``flux_minicluster.core.render.broker``; ``hostlist``: the plan's.

The behaviour follows the Flux Operator's ``wait.sh``/``start.sh``/``flux-init.sh``, so an
operator user finds what they know, with its bugs fixed rather than copied:

* user commands are shell by design and are placed verbatim, each on its own lines; everything
  else that lands in bash (names, paths, hostnames, environment values) is quoted as one word,
  so a quote, space, ``$(...)``, backtick or newline cannot break or inject into a script. User
  content is never put inside a generated heredoc except with a delimiter it cannot contain,
  and the init script copies ``broker.toml`` from the ConfigMap instead of echoing it;
* the certificate is never printed; it is copied from the Secret and made 0600;
* workers do not sleep a fixed 15 s between attempts: a broker keeps retrying its connection to
  a late rank 0 on its own, so only a failed ``flux start`` is retried, after 1, 2, 4, 8, 8... s;
* ``--wrap`` applies to every broker (rank 0 and workers alike, including a persistent one);
  ``commands.prefix`` prefixes rank 0's initial program, the only program it can apply to;
* a persistent cluster (no command, or ``interactive``) runs its broker with
  ``-Sbroker.rc2_none``, so it stays up whether or not the pod has a terminal attached;
* a bursted child has no rank 0 of its own (the lead's rank 0 is the instance's), so every one
  of its brokers behaves as a worker, under a join watchdog: a broker that has not joined its
  parent within ``JOIN_TIMEOUT_SECONDS`` (``$FLUX_MINICLUSTER_JOIN_TIMEOUT`` in the pod) says
  why on stderr, is stopped, and the pod fails (see ``wait-workers.sh.j2`` for the join signal);
* the brokers of a bursting group (a root and its bursts) log ZeroMQ handshake failures
  (``-Stbon.zmqdebug=1``) at a stderr level of at least LOG_ERR, ``logging.quiet`` included:
  a certificate that differs between the root and a burst is otherwise silent on both sides.

A v1alpha1 MiniCluster gets what v1alpha1's entrypoint did, through the same templates (a v1alpha2
spec renders exactly as before): Flux from the image under ``flux.installRoot``; every broker
started through ``${asFlux}`` (``sudo -u <fluxUser> ...``, which ``commands.pre`` may redefine);
the Flux user and ``spec.users`` created, each password read from its Secret file; the IMP's
config and setuid bit, the munge key installed and munged started; ``--cores`` for R;
``diagnostics``; and the RESTful API server at rank 0. Without v1alpha1's bugs: no password or
token is ever printed, the working directory is not made world-writable, and a RESTful rank 0
runs its server as the initial program (v1alpha1's ``-Sbroker.rc2_none`` is for a bare broker).

The rendered text depends on the spec only (mappings are sorted), so the same spec always
gives the same bytes and an unchanged cluster never sees its ConfigMap, and pods, replaced.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass, fields
from pathlib import Path

from flux_minicluster.core.base import exitcodes, layout, templating
from flux_minicluster.core.base.templating import shquote
from flux_minicluster.core.planning import autoscale as autoscaling
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.planning.plan import ConfigPaths, Imp, MiniClusterPlan, Mode, Role
from flux_minicluster.core.render.broker import broker_toml, hostlist_file
from flux_minicluster.core.render.volumes import SHM_PATH, memory_at_shm
from flux_minicluster.core.spec.archive import LOCK_WAIT_SECONDS, staging
from flux_minicluster.core.spec.models import (
    DEFAULT_INSTALL_ROOT,
    DEFAULT_LOGS_DIR,
    Container,
    FluxRestful,
    FluxUser,
)

__all__ = [
    "BATCH_FILE",
    "CUSTOM_SCRIPT",
    "INIT_TEMPLATE",
    "JOIN_FAILED_STATUS",
    "JOIN_POLL_SECONDS",
    "JOIN_TIMEOUT_ENV",
    "JOIN_TIMEOUT_SECONDS",
    "START_TEMPLATE",
    "WAIT_TEMPLATE",
    "entrypoint_data",
    "init_script",
    "start_script",
    "wait_script",
]

INIT_TEMPLATE = "flux-init.sh.j2"
WAIT_TEMPLATE = "wait.sh.j2"
START_TEMPLATE = "start.sh.j2"
# The scaler rank 0 runs; its source goes into the entrypoint ConfigMap (see scaler_source).
SCALER_MODULE = "flux_minicluster.core.inpod.scaler"

# commands.script is written here and becomes the command (the operator's path).
CUSTOM_SCRIPT = "/tmp/custom-entrypoint.sh"
# Batch mode's script, written in the working directory as the operator does.
BATCH_FILE = "./flux-job.batch"
# GNU time, not the shell keyword: only it has -f.
TIME_BIN = "/usr/bin/time"
# Longest pause between two attempts of a worker whose `flux start` failed.
WORKER_MAX_DELAY = 8
# How long a sidecar waits for the broker socket without goshare-wait-fs.
SOCKET_WAIT_SECONDS = 600
# A bursted cluster's brokers: how long one may take to join its parent (the lead, in another
# cluster) before its entrypoint gives up. Generous, because a burst may start before its root:
# its brokers wait in Flux's join state until the root's rank 0 is up. The pod's environment
# overrides it (containers[].environment); 0 turns the watchdog off.
JOIN_TIMEOUT_SECONDS = 600
JOIN_TIMEOUT_ENV = "FLUX_MINICLUSTER_JOIN_TIMEOUT"
# How often the watchdog asks the broker whether it has joined, and how long a broker that never
# joined gets to exit on SIGTERM before SIGKILL.
JOIN_POLL_SECONDS = 2
JOIN_KILL_GRACE_SECONDS = 10
# The entrypoint's status when its broker never joined (its one owner: core.base.exitcodes).
JOIN_FAILED_STATUS = exitcodes.JOIN_FAILED
# syslog's LOG_ERR: the least a bursting group's brokers print on stderr, so that a refused
# handshake (logged at LOG_ERR with tbon.zmqdebug) shows even with logging.quiet.
LOG_ERR = 3
# v1alpha1's RESTful API server: cloned at start into this directory (v1alpha1's), served by
# uvicorn as rank 0's initial program.
RESTFUL_REPOSITORY = "https://github.com/flux-framework/flux-restful-api"
RESTFUL_DIR = "/flux-restful-api"
RESTFUL_SERVER = "uvicorn app.main:app --host=0.0.0.0 --port={port}"
# v1alpha1's multi-user mode: flux-security's IMP config, and where munged wants its key.
IMP_CONFIG_DIR = "/etc/flux/imp/conf.d"
IMP_CONFIG = f"{IMP_CONFIG_DIR}/imp.toml"
MUNGE_KEY = "/etc/munge/munge.key"
# v1alpha1's diagnostics: what each broker shows before the container sleeps.
DIAGNOSTICS = ("flux overlay status", "flux lsattr -v", "flux dmesg")


def entrypoint_data(plan: MiniClusterPlan) -> dict[str, str]:
    """Every key of the ``<name>-entrypoint`` ConfigMap and its content, keys sorted."""
    data = {
        layout.BROKER_TOML: broker_toml(plan),
        layout.HOSTLIST: hostlist_file(plan.hostlist),
        **_scripts(plan),
    }
    return {key: data[key] for key in sorted(data)}


def _scripts(plan: MiniClusterPlan) -> dict[str, str]:
    """The ConfigMap's programs: every key but broker.toml and the hostlist."""
    data = {
        layout.INIT_SCRIPT: init_script(plan),
        layout.wait_script(plan.flux_index): wait_script(plan),
    }
    for index, container in enumerate(plan.spec.containers):
        if container.wrapped:
            data[layout.start_script(index)] = start_script(plan, index)
    if plan.autoscale is not None:
        data[autoscaling.SCALER_KEY] = scaler_source()
    return data


def entrypoint_digest(plan: MiniClusterPlan) -> str:
    """The pod template's digest of the entrypoint scripts (``labels.ENTRYPOINT_HASH_ANNOTATION``)
    as they are at any size within maxSize (``plan.size_free``). broker.toml and the hostlist
    are the broker-config digest's, and the only keys a burst's rank order (known once its root
    is) writes, so this one is the same for a burst rendered before and after."""
    digest = hashlib.sha256()
    for key, text in sorted(_scripts(plans.size_free(plan)).items()):
        digest.update(f"{key}\0{len(text)}\0{text}".encode())
    return digest.hexdigest()[:16]


def scaler_source() -> str:
    """The scaler as it is in this package (the file the tests exercise), run by rank 0.

    Read from its file, not imported: the scaler's HTTP client (ssl, urllib, email) is rank 0's
    to load, not every ``validate`` or ``render``'s.
    """
    spec = importlib.util.find_spec(SCALER_MODULE)
    if spec is None or spec.origin is None:  # an installation without the package's own file
        raise FileNotFoundError(SCALER_MODULE)
    return Path(spec.origin).read_text(encoding="utf-8")


def init_script(plan: MiniClusterPlan) -> str:
    """The init container's ``flux-init.sh``."""
    return templating.render(INIT_TEMPLATE, **_context(_common(plan, plan.flux_container)))


def wait_script(plan: MiniClusterPlan) -> str:
    """The Flux container's ``wait-<i>.sh``: rank 0 runs the work, the others join."""
    spec = plan.spec
    container = plan.flux_container
    command = _text(container.command)
    script = _script_body(container)
    if script:
        command = f"/bin/bash {CUSTOM_SCRIPT}"
    # The script knows four ways to run rank 0; interactive is persistent with a command.
    mode = Mode.PERSISTENT if plan.persistent else plan.mode
    batch_text = _batch_file(container, command) if container.batch and command else ""

    flags = _flags(plan)
    program = ""
    if mode is Mode.SUBMIT:
        submit = _text(spec.flux.submit_command) or "flux submit"
        program = f"{submit} {flags} --quiet --watch {command.strip()}"
    elif mode is Mode.LAUNCHER:
        program = command.strip()
    elif mode is Mode.BATCH:
        # `flux job status` waits for the batch job and exits with its code (the operator's
        # `flux job wait --all` says only 1 for any failure); the job's id is printed as
        # `flux batch` prints it.
        inner = (
            f'id=$(flux batch {flags} {BATCH_FILE}) && echo "${{id}}" && flux job status "${{id}}"'
        )
        program = f"sh -c {shquote(inner)}"
    elif plan.restful is not None:
        program = RESTFUL_SERVER.format(port=int(plan.restful.port))
    prefix = _text(container.commands.prefix)
    if program and prefix:
        program = f"{prefix} {program}"
    if program and spec.logging.timed:
        program = f"{TIME_BIN} -f {shquote('FLUXTIME fluxsubmit wall time %E')} {program}"

    wait = _Wait(
        index=plan.flux_index,
        burst_child=plan.role is Role.BURST,
        bursting=_bursting(plan),
        join_timeout=JOIN_TIMEOUT_SECONDS,
        join_timeout_expansion=f"${{{JOIN_TIMEOUT_ENV}:-{JOIN_TIMEOUT_SECONDS}}}",
        join_timeout_env=JOIN_TIMEOUT_ENV,
        join_poll=JOIN_POLL_SECONDS,
        join_grace=JOIN_KILL_GRACE_SECONDS,
        join_failed_status=JOIN_FAILED_STATUS,
        mode=mode.value,
        interactive=spec.interactive,
        persistent=plan.persistent,
        program=program,
        wrap=shquote(f"--wrap={spec.flux.wrap}") if spec.flux.wrap else "",
        broker_options=tuple(_broker_options(plan)),
        mpi_shared_memory=SHM_PATH if memory_at_shm(container) else "",
        archive=plan.archive or "",
        archive_staging=staging(plan.archive) if plan.archive else "",
        archive_default=bool(plan.archive) and not (spec.archive and spec.archive.path),
        archive_lock_wait=LOCK_WAIT_SECONDS,
        # A cluster that serves forever: its workers rejoin a new rank 0. Where rank 0 runs the
        # work, workers end with the instance (a restarted rank 0 would run the work again), so
        # their pods stay Completed with their logs instead of being deleted by the Job
        # controller once rank 0 succeeds.
        rejoin=plan.job.lead_decides and plan.persistent,
        environment=tuple(_environment_lines(plan)),
        logs=container.logs or DEFAULT_LOGS_DIR,
        script=script,
        script_eof=_delimiter("FLUX_CUSTOM_SCRIPT", script),
        batch=batch_text,
        batch_eof=_delimiter("FLUX_BATCH_SCRIPT", batch_text),
        pre=_text(container.commands.pre),
        broker_pre=_text(container.commands.broker_pre),
        worker_pre=_text(container.commands.worker_pre),
        post=_text(container.commands.post),
        complete_workers=spec.flux.complete_workers,
        max_delay=WORKER_MAX_DELAY,
        custom_script=CUSTOM_SCRIPT,
        batch_file=BATCH_FILE,
        time_start=(
            f"{TIME_BIN} -f {shquote('FLUXTIME fluxstart wall time %E')} "
            if spec.logging.timed
            else ""
        ),
        autoscale=_autoscale(plan),
        work_at_lead=plan.job.work_at_lead,
        work_fails_job=plan.job.work_fails_job,
        work_failed_status=exitcodes.WORK_FAILED,
        work_message=exitcodes.work_message("${work}"),
        termination_log=layout.TERMINATION_LOG,
    )
    return templating.render(
        WAIT_TEMPLATE, **_context(_common(plan, container), wait, _v1alpha1(plan))
    )


def _autoscale(plan: MiniClusterPlan) -> dict[str, object] | None:
    """The scaler's command line for rank 0 (None without autoscale): every value shquoted."""
    chosen = plan.autoscale
    if chosen is None:
        return None
    arguments = {
        "--namespace": plan.namespace,
        "--job": chosen.job,
        "--min-size": chosen.min_size,
        "--max-size": chosen.max_size,
        "--interval": chosen.interval_seconds,
        "--idle": chosen.idle_seconds,
        "--token": f"{autoscaling.TOKEN_DIR}/{autoscaling.TOKEN_FILE}",
        "--ca": f"{autoscaling.TOKEN_DIR}/{autoscaling.CA_FILE}",
        "--field-manager": autoscaling.FIELD_MANAGER,
    }
    return {
        "program": f"{layout.ENTRYPOINT_DIR}/{autoscaling.SCALER_KEY}",
        "arguments": [shquote(f"{flag}={value}") for flag, value in arguments.items()],
    }


def start_script(plan: MiniClusterPlan, index: int) -> str:
    """A wrapped sidecar's ``start-<i>.sh``: Flux on PATH, the socket awaited, then its command."""
    container = plan.spec.containers[index]
    if not container.wrapped:
        raise ValueError(
            f"containers[{index}] has no start script (it runs Flux or keeps its entrypoint)"
        )
    script = _script_body(container)
    command = _text(container.command)
    if script and not command:
        command = f"/bin/bash {CUSTOM_SCRIPT}"
    return templating.render(
        START_TEMPLATE,
        **_context(_common(plan, container)),
        index=index,
        command=command,
        script=script,
        script_eof=_delimiter("FLUX_CUSTOM_SCRIPT", script),
        service_pre=_text(container.commands.service_pre),
        post=_text(container.commands.post),
        wait_socket=not plan.spec.flux.no_wait_socket,
        socket_wait_seconds=SOCKET_WAIT_SECONDS,
        custom_script=CUSTOM_SCRIPT,
    )


# --- what the templates read, typed ---------------------------------------------------------
# Each template is rendered from these frozen records (StrictUndefined refuses a name none of
# them holds), so that every value a script is made of has a declared type, and one name cannot
# be given twice (``_context``).


@dataclass(frozen=True)
class _Common:
    """What every script reads: the cluster, its paths and the Flux install it uses."""

    name: str
    lead_host: str
    paths: ConfigPaths
    entrypoint_dir: str
    curve_source: str
    software_dir: str
    home_dir: str
    broker_toml_key: str
    hostlist_key: str
    view_enabled: bool
    python_path: str
    fluxion: bool
    quiet: bool
    strict: bool
    timed: bool
    time_bin: str
    init: str
    install_root: str
    setup_failed: int


@dataclass(frozen=True)
class _Wait:
    """What the Flux container's ``wait-<i>.sh`` reads besides ``_Common``: how its broker
    starts, joins and ends, and what rank 0 runs."""

    index: int
    burst_child: bool
    bursting: bool
    join_timeout: int
    join_timeout_expansion: str
    join_timeout_env: str
    join_poll: int
    join_grace: int
    join_failed_status: int
    mode: str
    interactive: bool
    persistent: bool
    program: str
    wrap: str
    broker_options: tuple[str, ...]
    mpi_shared_memory: str
    archive: str
    archive_staging: str
    archive_default: bool
    archive_lock_wait: int
    rejoin: bool
    environment: tuple[str, ...]
    logs: str
    script: str
    script_eof: str
    batch: str
    batch_eof: str
    pre: str
    broker_pre: str
    worker_pre: str
    post: str
    complete_workers: bool
    max_delay: int
    custom_script: str
    batch_file: str
    time_start: str
    autoscale: dict[str, object] | None
    work_at_lead: bool
    work_fails_job: bool
    work_failed_status: int
    work_message: str
    termination_log: str


@dataclass(frozen=True)
class _V1alpha1:
    """What ``wait-<i>.sh`` reads for v1alpha1's entrypoint behaviours (all off for
    v1alpha2)."""

    v1alpha1: bool
    v1alpha1_root: str
    as_flux: str
    flux_user: FluxUser | None
    users: tuple[dict[str, str], ...]
    imp: Imp | None
    imp_dir: str
    imp_config: str
    imp_toml: str
    munge: bool
    munge_key: str
    munge_source: str
    cores: str
    diagnostics: tuple[str, ...]
    restful: FluxRestful | None
    restful_dir: str
    restful_repository: str
    restful_files: dict[str, str]
    size: int


def _context(*records: _Common | _Wait | _V1alpha1) -> dict[str, object]:
    """The template context: each record's fields by name (shallow: a path record stays one),
    a name given by two records refused."""
    context: dict[str, object] = {}
    for record in records:
        for field in fields(record):
            if field.name in context:
                raise ValueError(f"{field.name} is given twice to one template")
            context[field.name] = getattr(record, field.name)
    return context


# --- pieces ---------------------------------------------------------------------------------


def _common(plan: MiniClusterPlan, container: Container) -> _Common:
    spec = plan.spec
    return _Common(
        name=plan.name,
        lead_host=plan.names.lead_host,
        paths=plan.paths,
        entrypoint_dir=layout.ENTRYPOINT_DIR,
        curve_source=f"{layout.CURVE_DIR}/{layout.CURVE_FILE}",
        software_dir=layout.SOFTWARE_DIR,
        home_dir=layout.HOME_DIR,
        broker_toml_key=layout.BROKER_TOML,
        hostlist_key=layout.HOSTLIST,
        view_enabled=not spec.flux.container.disable,
        python_path=spec.flux.container.python_path or "",
        fluxion=not spec.flux.scheduler.simple,
        quiet=spec.logging.quiet,
        strict=spec.logging.strict,
        timed=spec.logging.timed,
        time_bin=TIME_BIN,
        init=_text(container.commands.init),
        install_root=_install_root(plan),
        setup_failed=exitcodes.SETUP_FAILED,
    )


def _install_root(plan: MiniClusterPlan) -> str:
    """flux.installRoot when the image's Flux must be put on PATH: no view, and not in /usr."""
    root = plan.install_root
    if (
        plan.spec.flux.container.disable
        and root
        and root.rstrip("/") not in ("", DEFAULT_INSTALL_ROOT)
    ):
        return root
    return ""


def _v1alpha1(plan: MiniClusterPlan) -> _V1alpha1:
    """What wait.sh.j2 needs for v1alpha1's entrypoint behaviours (all off for v1alpha2)."""
    container = plan.flux_container
    users = plan.multi_user.users if plan.multi_user is not None else ()
    cores = container.cores or 0
    imp = plan.imp
    return _V1alpha1(
        v1alpha1=plan.v1alpha1,
        v1alpha1_root=plan.install_root or DEFAULT_INSTALL_ROOT,
        as_flux="${asFlux} " if plan.v1alpha1 else "",
        flux_user=plan.flux_user,
        users=tuple(
            {"name": user, "password_file": _credential(layout.user_password(user))}
            for user in users
        ),
        imp=imp,
        imp_dir=IMP_CONFIG_DIR,
        imp_config=IMP_CONFIG,
        imp_toml=_imp_toml(imp) if imp is not None else "",
        munge=plan.v1alpha1 and plan.munge_secret is not None,
        munge_key=MUNGE_KEY,
        munge_source=f"{layout.MUNGE_DIR}/{layout.MUNGE_KEY}",
        cores=f"0-{cores - 1}" if cores > 1 else "",
        diagnostics=DIAGNOSTICS if container.diagnostics else (),
        restful=plan.restful,
        restful_dir=RESTFUL_DIR,
        restful_repository=RESTFUL_REPOSITORY,
        restful_files={
            "user": _credential(layout.RESTFUL_USER),
            "token": _credential(layout.RESTFUL_TOKEN),
            "secret_key": _credential(layout.RESTFUL_SECRET_KEY),
        },
        size=plan.spec.size,
    )


def _credential(key: str) -> str:
    """Where a key of the RESTful or users Secret is mounted (read-only, one file per key)."""
    return f"{layout.CREDENTIALS_DIR}/{key}"


def _imp_toml(imp: Imp) -> str:
    """flux-security's IMP config: who may run ``flux-imp exec``, and the one shell it runs."""
    toml = templating.toml_string
    users = ", ".join(toml(user) for user in imp.allowed_users)
    return f"[exec]\nallowed-users = [ {users} ]\nallowed-shells = [ {toml(imp.shell)} ]\n"


def _flags(plan: MiniClusterPlan) -> str:
    """Node and task flags for flux submit/batch, as the operator builds them.

    ``-N <size>`` only when there are at least as many tasks as nodes (otherwise Flux would
    refuse fewer tasks than nodes); ``tasks: 0`` means "one slot per node", ``-N`` alone.
    """
    spec = plan.spec
    if spec.tasks == 0:
        parts = [f"-N {spec.size}"]
    elif spec.tasks >= spec.size:
        parts = [f"-N {spec.size}", f"-n {spec.tasks}"]
    else:
        parts = [f"-n {spec.tasks}"]
    option_flags = _text(spec.flux.option_flags).strip()
    if option_flags:
        parts.append(option_flags)  # user flags are shell text by design
    if spec.logging.debug:
        parts.append("-vvv")
    return " ".join(parts)


def _broker_options(plan: MiniClusterPlan) -> list[str]:
    """Broker ``-S`` options, each one shell word (the archive is added at run time)."""
    spec = plan.spec
    flux = spec.flux
    paths = plan.paths
    options = [
        shquote(f"-Scron.directory={paths.cron_dir}"),
        shquote(f"-Srundir={paths.run_dir}"),
        shquote(f"-Sstatedir={paths.state_dir}"),
        "-Slog-stderr-mode=local",
    ]
    if plan.persistent and plan.mode is not Mode.RESTFUL and not plan.flux_container.diagnostics:
        # No initial program: the instance stays up until `flux shutdown` or deletion. (The
        # RESTful server is an initial program; diagnostics run three.)
        options.append("-Sbroker.rc2_none")
    if not flux.disable_socket:
        options.append(shquote(f"-Slocal-uri=local://{paths.socket}"))
    if flux.connect_timeout:
        options.append(shquote(f"-Stbon.connect_timeout={flux.connect_timeout}"))
    # The tree: the spec's or the size's (core.flux.tree); else the operator's fanout.
    options.append(
        shquote(f"-Stbon.topo={plan.topology}") if plan.topology else "-Stbon.fanout=256"
    )
    if plan.quorum is not None:
        options.append(f"-Sbroker.quorum={plan.quorum}")
    if spec.logging.zeromq or _bursting(plan):
        # ZeroMQ socket events: a refused CURVE handshake is logged at LOG_ERR on both ends
        # ("handshake failed protocol: ZMTP cryptographic error"), the rest at LOG_DEBUG.
        options.append("-Stbon.zmqdebug=1")
    level = 0 if spec.logging.quiet else flux.log_level
    if _bursting(plan):
        # A broker that cannot join is an error the user must see, not chatter: quiet (and a low
        # logLevel) still shows errors in a bursting group.
        level = max(level, LOG_ERR)
    options.append(f"-Slog-stderr-level={level}")
    return options


def _bursting(plan: MiniClusterPlan) -> bool:
    """A root or a burst: its brokers talk to brokers of another cluster."""
    return plan.role in (Role.ROOT, Role.BURST)


def _environment_lines(plan: MiniClusterPlan) -> list[str]:
    """``export K=V`` lines for flux-view.sh, each quoted again as one word for printf."""
    env = plan.spec.flux.environment
    return [shquote(f"export {key}={shquote(env[key])}") for key in sorted(env)]


def _batch_file(container: Container, command: str) -> str:
    """flux-job.batch: one waitable `flux submit` per command line, or the lines verbatim (the
    batch job's code is then the script's). The operator's script ends with `flux jobs -a`,
    which succeeds whatever its jobs did: here `flux job status` of every job ends it, with the
    highest exit code among them, so that the batch job fails when one of its jobs did."""
    if container.batch_raw:
        return command if command.startswith("#!") else f"#!/bin/bash\n{command}"
    logs = (container.logs or DEFAULT_LOGS_DIR).rstrip("/") or "/"
    lines = ["#!/bin/bash"]
    lines += [
        f"flux submit --flags waitable {shquote(f'--error={logs}/job-{n}.err')} "
        f"{shquote(f'--output={logs}/job-{n}.out')} {line}"
        for n, line in enumerate(s.strip() for s in command.splitlines() if s.strip())
    ]
    lines += [
        "flux queue idle",
        "flux jobs -a",
        "flux job status $(flux jobs -a --no-header --format={id})",
    ]
    return "\n".join(lines)


def _script_body(container: Container) -> str:
    """commands.script as a heredoc body: the file written from it is the script, byte for byte.

    The heredoc ends the file with a newline, so one trailing newline of the script is left to it.
    """
    return (container.commands.script or "").removesuffix("\n")


def _text(value: str | None) -> str:
    """A user-supplied block without surrounding blank lines or trailing whitespace."""
    if not value:
        return ""
    lines = value.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


def _delimiter(base: str, body: str) -> str:
    """A heredoc delimiter that no line of ``body`` equals, so the body cannot end it early."""
    lines = set(body.split("\n"))
    delimiter = base
    n = 0
    while delimiter in lines:
        n += 1
        delimiter = f"{base}_{n}"
    return delimiter
