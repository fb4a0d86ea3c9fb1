"""Hostile input, one table: each entry is refused with a clear SpecError, or rendered safely.

Why a table: a spec travels into Kubernetes names, TOML, hostlists and bash, and a user needs to
know for each odd input which of two things happens. Either validation refuses it, naming the
field (``spec.flux.environment.A: ...``) before anything is deployed, or it is accepted and then
arrives intact: an environment value with quotes and ``$(touch x)`` is exported byte for byte
and nothing in it runs. A third outcome (accepted, then broken in the cluster, or a traceback,
or a machine brought to its knees by a 500-byte file) is the bug this table exists to catch.

Every case is written to a file and also run through the ``minicluster`` CLI, which must answer
with exit code 0 or 2 and never a traceback. Entries marked ``bug=`` are known defects in the
code under test, kept as strict xfails: they turn red the day the defect is fixed, so the
marker comes off and the case guards the fix.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.scriptharness import bash_syntax_errors

from flux_minicluster import kubecheck
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import load_file
from flux_minicluster.core.render.manifests import render
from flux_minicluster.core.spec.definition import MiniClusterDefinition

ANY_PATH = "<any>"
MAX_PROBLEM_LINE = 2000
Manifests = list[dict[str, Any]]
Check = Callable[[MiniClusterDefinition, Manifests, Path], None]

INJECTION = 'it\'s "$(touch x)" `touch x`; touch x & touch x | touch x\n$(touch x)\\ ${HOME} !x'
UNICODE = "שלום عالم \u202eevil\u202c 🚀👩\u200d🚀 ñ \u2028 \ufeff Ω"


# --- building inputs ------------------------------------------------------------------------


def spec(**fields: Any) -> dict[str, Any]:
    """A minimal valid document with ``fields`` merged into its spec."""
    body: dict[str, Any] = {"size": 2, "containers": [{"image": "ubuntu:24.04"}]}
    body.update(fields)
    return {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": {"name": "flux-sample", "namespace": "hpc"},
        "spec": body,
    }


def named(name: Any, **fields: Any) -> dict[str, Any]:
    doc = spec(**fields)
    doc["metadata"]["name"] = name
    return doc


def labelled(labels: dict[str, Any]) -> dict[str, Any]:
    doc = spec()
    doc["metadata"]["labels"] = labels
    return doc


def in_namespace(namespace: Any) -> dict[str, Any]:
    doc = spec()
    doc["metadata"]["namespace"] = namespace
    return doc


def container(**fields: Any) -> dict[str, Any]:
    return spec(containers=[{"image": "ubuntu:24.04", "command": "hostname", **fields}])


def with_sidecar(**fields: Any) -> dict[str, Any]:
    return spec(
        containers=[
            {"image": "ubuntu:24.04", "runFlux": True, "command": "hostname"},
            {"image": "busybox", **fields},
        ]
    )


def flux(**fields: Any) -> dict[str, Any]:
    return spec(flux=fields, containers=[{"image": "ubuntu:24.04", "command": "hostname"}])


def billion_laughs(levels: int, where: str) -> bytes:
    """The classic alias bomb, nine references per level, under every alias-count limit."""
    lines = ['lol0: &lol0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"lol{i}: &lol{i} [" + ",".join([f"*lol{i - 1}"] * 9) + "]")
    top = f"*lol{levels - 1}"
    if where == "top":
        return ("\n".join([*lines, f"bomb: {top}"]) + "\n").encode()
    # Anchors kept in metadata (which allows extra keys), the bomb in a field that is checked.
    indented = "".join(f"  {line}\n" for line in lines)
    return (
        f"metadata:\n  name: bomb\n{indented}spec:\n  containers: [{{image: u}}]\n"
        f"  pod:\n    dnsPolicy: {top}\n"
    ).encode()


def nested(depth: int) -> bytes:
    body = "".join("  " * i + "a:\n" for i in range(depth)) + "  " * depth + "b: 1\n"
    return (
        b"metadata: {name: deep}\nspec:\n  containers: [{image: u}]\nextra:\n"
        + ("".join("  " + line + "\n" for line in body.splitlines())).encode()
    )


GOOD_YAML = b"metadata: {name: flux-sample}\nspec:\n  containers:\n    - image: ubuntu:24.04\n"


# --- checks for accepted input ---------------------------------------------------------------


def job(manifests: Manifests) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == "Job"]
    return found


def entrypoint(manifests: Manifests) -> dict[str, str]:
    (found,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    data: dict[str, str] = found["data"]
    return data


def wait_script(manifests: Manifests) -> str:
    return next(v for k, v in entrypoint(manifests).items() if k.startswith("wait-"))


def pod_container(manifests: Manifests, index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = job(manifests)["spec"]["template"]["spec"]["containers"][index]
    return found


def flux_view_block(script: str) -> str:
    """The part of the wait script that writes ``flux-view.sh``, redirected to ``$FLUX_VIEW``."""
    lines = script.split("\n")
    for i, line in enumerate(lines):
        if line == "{" and lines[i + 1].strip() == "printf '#!/bin/bash\\n'":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("}"))
            if "flux-view.sh" in lines[end]:
                return "\n".join([*lines[i:end], '} > "${FLUX_VIEW}"'])
    raise AssertionError("the wait script no longer writes flux-view.sh in a { ... } block")


def run_bash(script: str, cwd: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    path = cwd.parent / f"script-{abs(hash(script))}.sh"
    path.write_text(script, encoding="utf-8")
    result = subprocess.run(
        ["/bin/bash", str(path), *args],
        cwd=cwd,
        env=env if env is not None else {"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout


def nothing_ran(sandbox: Path) -> None:
    """The injection payloads all try to create a file named x."""
    assert not list(sandbox.rglob("x")), "a value was executed by the shell"


def exported_by_flux_view(key: str, value: str) -> Check:
    """``key`` from flux.environment reaches ``. flux-view.sh`` with exactly ``value``'s bytes."""

    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        work = tmp / "work"
        work.mkdir()
        out = tmp / "flux-view.sh"
        writer = "set -u\nviewbase=/nonexistent\nviewroot=/nonexistent/view\n"
        run_bash(
            writer + flux_view_block(wait_script(manifests)),
            work,
            env={"PATH": "/usr/bin:/bin", "FLUX_VIEW": str(out)},
        )
        reader = '. "$1" || exit 1\nprintf %s "${!2}"\n'
        assert run_bash(reader, work, str(out), key, env={}) == value.encode("utf-8")
        nothing_ran(tmp)

    return check


def pod_env_is(key: str, value: str, index: int = 0) -> Check:
    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        env = {e["name"]: e.get("value") for e in pod_container(manifests, index).get("env", [])}
        assert env[key] == value

    return check


def working_dir_is(path: str) -> Check:
    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        assert pod_container(manifests)["workingDir"] == path

    return check


def mounted_at(path: str) -> Check:
    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        mounts = [m["mountPath"] for m in pod_container(manifests)["volumeMounts"]]
        assert path in mounts

    return check


def complete_command(lines: list[str], start: int) -> str:
    """The line at ``start`` plus as many following lines as its quotes span (a quoted value
    may hold newlines); POSIX quoting as ``shlex`` reads it, which is how bash reads it."""
    for end in range(start, min(start + 20, len(lines))):
        text = "\n".join(lines[start : end + 1])
        try:
            shlex.split(text, comments=True)
        except ValueError:
            continue
        return text
    raise AssertionError(f"no complete command from line {start + 1}: {lines[start]!r}")


def shell_value(line_start: str, expression: str, value: str) -> Check:
    """The wait script's line that starts with ``line_start``, run by bash, sets ``expression``
    to exactly ``value``: the value is one quoted word, and nothing in it runs."""

    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        lines = wait_script(manifests).split("\n")
        start = next(i for i, ln in enumerate(lines) if ln.strip().startswith(line_start))
        line = complete_command(lines, start)
        work = tmp / "work"
        work.mkdir(exist_ok=True)
        program = f"set -u\nbroker_options=()\n{line}\nprintf %s {expression}\n"
        assert run_bash(program, work) == value.encode("utf-8")
        nothing_ran(tmp)

    return check


def wrapped_with(wrap: str) -> Check:
    """``flux.wrap`` reaches ``flux start`` as the single argument ``--wrap=<wrap>``."""

    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        lines = wait_script(manifests).split("\n")
        starts = [ln for ln in lines if "flux start " in ln and not ln.lstrip().startswith("#")]
        assert starts
        for line in starts:
            words = line.split("flux start", 1)[1].split(" -o ", 1)[0]
            work = tmp / "work"
            work.mkdir(exist_ok=True)
            argv = run_bash(f"printf '%s\\0' {words}\n", work).split(b"\0")[:-1]
            assert argv == [f"--wrap={wrap}".encode()]
        nothing_ran(tmp)

    return check


def verbatim_in_wait_script(text: str) -> Check:
    """User commands are shell by design: placed as written, on lines of their own."""

    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        assert text in wait_script(manifests)

    return check


def heredoc_carries(text: str) -> Check:
    """A block written through a quoted heredoc arrives whole, whatever its lines say."""

    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        lines = wait_script(manifests).split("\n")
        bodies = []
        for i, line in enumerate(lines):
            for end in re.findall(r"<<'([A-Za-z0-9_]+)'", line):
                bodies.append("\n".join(lines[i + 1 : lines.index(end, i + 1)]))
        assert any(text in body for body in bodies), bodies

    return check


def hosts_are(count: int) -> Check:
    def check(mc: MiniClusterDefinition, manifests: Manifests, tmp: Path) -> None:
        from flux_minicluster.core.flux import hostlist

        assert hostlist.count(entrypoint(manifests)["hostlist"].strip()) == count

    return check


# --- the table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One hostile input and what a user may rely on for it.

    ``refused`` is the field path of the expected problem (``""`` for the file as a whole,
    ``ANY_PATH`` when any path will do); ``None`` means the input is accepted and ``check``
    says how it must arrive. ``bug`` names a known defect: the case is a strict xfail.
    """

    id: str
    input: dict[str, Any] | bytes
    refused: str | tuple[str, ...] | None = None
    check: Check | None = None
    bug: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def content(self) -> bytes:
        if isinstance(self.input, bytes):
            return self.input
        return yaml.safe_dump(self.input, sort_keys=False, allow_unicode=True).encode()


BUG_VALIDATION = "core/validation accepts it; the API server or the pod refuses it"

CASES = [
    # --- names ------------------------------------------------------------------------------
    Case("name-quote", named("fl'ux"), "metadata.name"),
    Case("name-subshell", named("$(touch x)"), "metadata.name"),
    Case("name-backtick", named("`touch x`"), "metadata.name"),
    Case("name-newline", named("flux\nsample"), "metadata.name"),
    Case("name-rtl", named("\u202eflux"), "metadata.name"),
    Case("name-emoji", named("flux-🚀"), "metadata.name"),
    Case("name-nul", named("flux\x00x"), "metadata.name"),
    Case("name-200-chars", named("a" * 200), "metadata.name"),
    Case("name-hostnames-too-long", named("a" * 62, size=10), "metadata.name"),
    Case("name-not-a-string", named(["flux"]), "metadata.name"),
    Case(
        "document-label-with-a-quote",
        labelled({"team": "sci'ence"}),
        "metadata.labels.team",
    ),
    Case("namespace-quote", in_namespace("a'b $(touch x)"), "metadata.namespace"),
    Case(
        "name-leading-digit",
        named("1flux"),
        "metadata.name",
    ),
    Case(
        "sidecar-name-leading-digit-with-ports",
        with_sidecar(name="9side", ports=[8080]),
        "spec.containers[1].name",
    ),
    Case(
        "sidecar-named-like-the-init-container",
        with_sidecar(name="flux-view"),
        "spec.containers[1].name",
    ),
    Case(
        "sidecar-named-like-the-headless-service",
        spec(
            network={"headlessName": "side"},
            containers=[
                {"image": "u", "runFlux": True},
                {"image": "u", "name": "side", "ports": [80]},
            ],
        ),
        ("spec.containers[1].name", "spec.network.headlessName"),
    ),
    # --- commands: shell by design, placed verbatim -----------------------------------------
    Case(
        "command-with-quotes-and-substitutions",
        container(command='echo "it\'s" $(hostname) `date`; printf \'%s\\n\' "a b"'),
        check=verbatim_in_wait_script('echo "it\'s" $(hostname) `date`; printf \'%s\\n\' "a b"'),
    ),
    Case(
        "script-line-equal-to-the-heredoc-delimiter",
        spec(
            containers=[
                {"image": "u", "commands": {"script": "echo a\nFLUX_CUSTOM_SCRIPT\necho b"}}
            ]
        ),
        check=heredoc_carries("echo a\nFLUX_CUSTOM_SCRIPT\necho b"),
    ),
    Case(
        "batch-line-equal-to-the-heredoc-delimiter",
        container(batch=True, command="echo one\nFLUX_BATCH_SCRIPT\necho 'two'"),
        check=heredoc_carries("FLUX_BATCH_SCRIPT"),
    ),
    Case(
        "wrap-with-quotes-and-substitution",
        flux(wrap="strace,-e,'$(touch x)' `touch x`"),
        check=wrapped_with("strace,-e,'$(touch x)' `touch x`"),
    ),
    Case(
        "command-nul",
        container(command="echo a\x00b"),
        "spec.containers[0].command",
    ),
    # --- environment values -----------------------------------------------------------------
    Case(
        "flux-environment-injection",
        flux(environment={"GREETING": INJECTION}),
        check=exported_by_flux_view("GREETING", INJECTION),
    ),
    Case(
        "flux-environment-unicode-rtl-emoji",
        flux(environment={"MESSAGE": UNICODE}),
        check=exported_by_flux_view("MESSAGE", UNICODE),
    ),
    Case(
        "flux-environment-empty-and-trailing-newline",
        flux(environment={"EMPTY": "", "TRAILING": "line\n\n"}),
        check=exported_by_flux_view("TRAILING", "line\n\n"),
    ),
    Case(
        "container-environment-injection",
        container(environment={"GREETING": INJECTION, "MESSAGE": UNICODE}),
        check=pod_env_is("GREETING", INJECTION),
    ),
    Case(
        "container-environment-bad-name",
        container(environment={"1BAD": "x"}),
        "spec.containers[0].environment['1BAD']",
    ),
    Case(
        "flux-environment-name-not-a-shell-variable",
        flux(environment={"MY-VAR": "x"}),
        "spec.flux.environment.MY-VAR",
    ),
    Case(
        "flux-environment-nul",
        flux(environment={"A": "a\x00b"}),
        "spec.flux.environment.A",
    ),
    Case(
        "container-environment-nul",
        container(environment={"A": "a\x00b"}),
        "spec.containers[0].environment.A",
    ),
    # --- paths ------------------------------------------------------------------------------
    Case(
        "working-dir-injection",
        container(workingDir="/work/it's $(touch x) `touch x`"),
        check=working_dir_is("/work/it's $(touch x) `touch x`"),
    ),
    Case(
        "working-dir-unicode",
        container(workingDir="/работа/🚀 \u202edata"),
        check=working_dir_is("/работа/🚀 \u202edata"),
    ),
    Case(
        "working-dir-newline",
        container(workingDir="/work/a\nb"),
        check=working_dir_is("/work/a\nb"),
    ),
    Case("working-dir-relative", container(workingDir="work"), "spec.containers[0].workingDir"),
    Case(
        "working-dir-nul",
        container(workingDir="/work/a\x00b"),
        "spec.containers[0].workingDir",
    ),
    Case(
        "volume-path-injection",
        container(volumes={"data": {"path": "/data/it's $(touch x)", "emptyDir": True}}),
        check=mounted_at("/data/it's $(touch x)"),
    ),
    Case(
        "volume-path-relative",
        container(volumes={"data": {"path": "data", "claimName": "pvc"}}),
        "spec.containers[0].volumes.data.path",
    ),
    Case(
        "flux-view-mount-path-injection",
        flux(container={"mountPath": "/mnt/fl'ux $(touch x)"}),
        check=shell_value("viewbase=", '"${viewbase}"', "/mnt/fl'ux $(touch x)"),
    ),
    Case(
        "flux-view-mount-path-newline",
        flux(container={"mountPath": "/mnt/a\nb"}),
        check=shell_value("viewbase=", '"${viewbase}"', "/mnt/a\nb"),
    ),
    Case(
        "logs-path-injection",
        container(batch=True, command="echo hi", logs="/tmp/it's `touch x`"),
        check=shell_value("export FLUX_OUTPUT_DIR=", '"${FLUX_OUTPUT_DIR}"', "/tmp/it's `touch x`"),
    ),
    Case(
        "archive-path-injection",
        spec(archive={"path": "/archive/$(touch x)"}),
        check=shell_value("archive=", '"${archive}"', "/archive/$(touch x)"),
    ),
    Case(
        "volume-path-reserved",
        container(volumes={"data": {"path": "/flux_operator", "emptyDir": True}}),
        "spec.containers[0].volumes.data.path",
    ),
    Case(
        "volume-path-of-the-curve-secret",
        container(volumes={"data": {"path": "/mnt/curve", "emptyDir": True}}),
        "spec.containers[0].volumes.data.path",
    ),
    Case(
        "two-volumes-at-one-path",
        container(volumes={"a": {"path": "/data"}, "b": {"path": "/data"}}),
        "spec.containers[0].volumes.b.path",
    ),
    Case(
        "volume-named-like-the-curve-volume",
        container(volumes={"curve-cert": {"path": "/data"}}),
        "spec.containers[0].volumes.curve-cert",
    ),
    Case(
        "host-path-with-backsteps",
        container(volumes={"host": {"path": "/data", "hostPath": "/data/../etc"}}),
        "spec.containers[0].volumes.host.hostPath",
    ),
    # --- sizes ------------------------------------------------------------------------------
    Case("size-0", spec(size=0), "spec.size"),
    Case("size-minus-1", spec(size=-1), "spec.size"),
    Case("size-10-9", spec(size=10**9), ("spec.size", "spec.maxSize")),
    Case("max-size-10-6", spec(maxSize=10**6), "spec.maxSize"),
    Case("max-size-below-size", spec(size=4, maxSize=2), "spec.maxSize"),
    Case("size-a-string", spec(size="4"), "spec.size"),
    Case("size-a-bool", spec(size=True), "spec.size"),
    Case("tasks-minus-1", spec(tasks=-1), "spec.tasks"),
    Case("port-70000", container(ports=[70000]), "spec.containers[0].ports[0]"),
    Case("max-size-100000-accepted", spec(size=4, maxSize=100_000), check=hosts_are(100_000)),
    Case(
        "deadline-beyond-int64",
        spec(deadlineSeconds=10**30),
        "spec.deadlineSeconds",
    ),
    Case(
        "pod-overhead-without-runtime-class",
        spec(pod={"resources": {"cpu": 1}}),
        ("spec.pod.resources", "spec.pod.runtimeClassName"),
    ),
    Case(
        "node-affinity-without-values",
        spec(pod={"nodeAffinity": {"zone": []}}),
        "spec.pod.nodeAffinity.zone",
    ),
    Case(
        "lead-broker-address-with-a-comma",
        spec(
            size=1,
            flux={
                "bursting": {
                    "leadBroker": {"address": "10.0.0.1,evil", "name": "lead", "size": 2},
                    "clusters": [{"name": "flux-sample", "size": 1}],
                }
            },
        ),
        "spec.flux.bursting.leadBroker.address",
    ),
    # A lead or bursted cluster of more ranks than an Indexed Job holds rendered a hostlist
    # range Flux refuses (l-[1-2147483647]), or crashed planning it (found by make fuzz).
    Case(
        "lead-broker-of-2**31-ranks",
        spec(
            size=1,
            flux={
                "bursting": {
                    "leadBroker": {"address": "10.0.0.1", "name": "lead", "size": 2**31},
                    "clusters": [{"name": "flux-sample", "size": 1}],
                }
            },
        ),
        "spec.flux.bursting.leadBroker.size",
    ),
    *(
        Case(
            f"bursted-cluster-of-{size}-ranks",
            spec(size=1, flux={"bursting": {"clusters": [{"name": "burst", "size": size}]}}),
            "spec.flux.bursting.clusters[0].size",
        )
        for size in (100_001, 2**31)
    ),
    Case(
        "connect-timeout-trailing-newline",
        flux(connectTimeout="5s\n"),
        "spec.flux.connectTimeout",
    ),
    Case(
        "topology-trailing-newline",
        flux(topology="binomial\n"),
        "spec.flux.topology",
    ),
    # --- files ------------------------------------------------------------------------------
    Case("billion-laughs", billion_laughs(9, "top"), ANY_PATH),
    Case(
        "billion-laughs-in-a-checked-field",
        billion_laughs(7, "field"),
        "metadata.lol5",
    ),
    Case("nested-100-levels", nested(100), "extra" + ".a" * 62),
    Case("five-megabytes", GOOD_YAML + b"# " + b"x" * (5 * 1024 * 1024) + b"\n", ""),
    Case("not-utf8", b"metadata: {name: caf\xe9}\nspec: {containers: [{image: u}]}\n", ""),
    Case("utf16", GOOD_YAML.decode().encode("utf-16"), ""),
    Case("duplicate-keys", GOOD_YAML + b"metadata: {name: other}\n", ""),
    Case("a-list", b"- image: ubuntu\n- image: busybox\n", ""),
    Case("a-scalar", b"just a string\n", ""),
    Case("null", b"null\n", ""),
    Case("empty", b"", ""),
    Case("python-object-tag", b"!!python/object/apply:os.system ['touch x']\n", ""),
    Case(
        "python-tag-in-a-field",
        b"metadata: {name: a}\nspec:\n  containers:\n    - image: !!python/object/apply:os.system"
        b" ['touch x']\n",
        "spec.containers[0].image",
    ),
    Case("tabs", b"metadata:\n\tname: x\n", ""),
    Case("nul-byte-in-file", GOOD_YAML.replace(b"flux-sample", b"flux\x00sample"), ANY_PATH),
    Case("infinite-size", GOOD_YAML + b"  size: .inf\n", "spec.size"),
    Case("bom-is-fine", b"\xef\xbb\xbf" + GOOD_YAML, check=hosts_are(1)),
]


# --- running the table ----------------------------------------------------------------------


def params(cases: list[Case]) -> list[Any]:
    return [
        pytest.param(
            c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.bug)] if c.bug else []
        )
        for c in cases
    ]


def assert_refused(err: SpecError, expected: str | tuple[str, ...]) -> None:
    paths = [p.path for p in err.problems]
    allowed = (expected,) if isinstance(expected, str) else expected
    if ANY_PATH not in allowed:
        assert any(p in allowed for p in paths), f"expected a problem at {allowed}, got {paths}"
    for line in err.lines():
        assert line.strip()
        assert len(line) <= MAX_PROBLEM_LINE, f"a {len(line)}-character problem line"


@pytest.mark.parametrize("case", params(CASES))
def test_hostile_input_is_refused_with_its_path_or_arrives_intact(
    case: Case, tmp_path: Path
) -> None:
    path = tmp_path / "minicluster.yaml"
    path.write_bytes(case.content())
    try:
        definitions = load_file(path)
    except SpecError as err:
        error: SpecError | None = err
    else:
        error = None
    if error is not None:
        assert case.refused is not None, f"refused, but it should be accepted: {error}"
        assert_refused(error, case.refused)
        return
    assert case.refused is None, f"accepted, but {case.refused} should be refused"
    for mc in definitions:
        manifests = render(plans.build(mc)).objects()
        assert kubecheck.refusals(manifests) == []
        data = entrypoint(manifests)
        tomllib.loads(data["broker.toml"])
        scripts = {k: v for k, v in data.items() if k.endswith(".sh")}
        assert bash_syntax_errors(scripts, tmp_path) == {}
        if case.check is not None:
            case.check(mc, manifests, tmp_path)
    nothing_ran(tmp_path)


# --- the same files through the CLI ---------------------------------------------------------


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
        timeout=120,
    )


def rendered_by_the_cli(case: Case) -> bool:
    """Files the CLI renders too: the raw ones (its own decoding and YAML path) and the accepted
    specs (its output). A refused spec fails in ``render`` exactly as in ``validate``."""
    return isinstance(case.input, bytes) or case.refused is None


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case through ``validate`` (one run over all files) and, where it adds something,
    through ``render``; the runs go in parallel to keep the suite quick."""
    root = tmp_path_factory.mktemp("hostile-cli")
    for case in CASES:
        (root / case.id).mkdir()
        (root / case.id / "mc.yaml").write_bytes(case.content())
    files = [f"{case.id}/mc.yaml" for case in CASES]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        validate = pool.submit(_cli, ["validate", *files], root)
        renders = {
            case.id: pool.submit(_cli, ["render", "mc.yaml"], root / case.id)
            for case in CASES
            if rendered_by_the_cli(case)
        }
        return {
            "root": root,
            "validate": validate.result(),
            "render": {key: future.result() for key, future in renders.items()},
        }


def _no_traceback(result: subprocess.CompletedProcess[bytes]) -> str:
    stderr = result.stderr.decode("utf-8", errors="replace")
    assert "Traceback" not in stderr
    assert result.returncode in (0, 2), f"exit {result.returncode}: {stderr[:500]}"
    return stderr


def test_the_cli_validates_every_hostile_file_in_one_run(cli_runs: dict[str, Any]) -> None:
    result = cli_runs["validate"]
    stderr = _no_traceback(result)
    assert result.returncode == 2, "some of the files are refused"
    stdout = result.stdout.decode("utf-8")
    for case in CASES:
        if case.bug:
            continue
        name = f"{case.id}/mc.yaml: "
        if case.refused is None:
            assert f"{name}ok " in stdout, case.id
        else:
            assert any(line.startswith(name) for line in stderr.splitlines()), case.id
            assert f"{name}ok " not in stdout, case.id
    for case in CASES:
        nothing_ran(cli_runs["root"] / case.id)


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id) for c in CASES if rendered_by_the_cli(c)]
)
def test_the_cli_renders_a_hostile_file_or_exits_2_without_a_traceback(
    case: Case, cli_runs: dict[str, Any]
) -> None:
    result = cli_runs["render"][case.id]
    stderr = _no_traceback(result)
    if result.returncode == 2:
        assert stderr.startswith("mc.yaml: "), stderr[:500]
    if not case.bug:
        assert result.returncode == (2 if case.refused is not None else 0), stderr[:500]
    if result.returncode == 0:
        documents = [d for d in yaml.safe_load_all(result.stdout.decode("utf-8")) if d]
        assert [documents[0]["kind"], documents[-1]["kind"]] == ["ConfigMap", "Job"]
    nothing_ran(cli_runs["root"] / case.id)


# Inputs without an end: each is refused as soon as the 4 MiB bound is passed, never read into
# memory whole, or, when a path names no regular file, before it is opened (a named pipe blocks
# for ever, waiting for a writer). The child runs with 1 GiB of address space, so a read without
# a bound fails here (MemoryError, exit 70) instead of taking the machine's memory.
TOO_LARGE = "larger than 4194304 bytes, the most accepted"
DEVICE = "is a character device, not a regular file; give a file, or '-' for standard input"
FIFO = "is a named pipe (FIFO), not a regular file"
ENDLESS = [
    (("validate", "/dev/zero"), DEVICE),
    (("validate", "fifo"), FIFO),
    (("validate", "-"), TOO_LARGE),
    (("render", "-n", "x", "-"), TOO_LARGE),
    (("render", "--curve-cert", "/dev/zero", "spec.yaml"), DEVICE),
    (("render", "--curve-cert", "fifo", "spec.yaml"), FIFO),
    (("render", "--no-secret", "--curve-cert", "/dev/zero", "spec.yaml"), DEVICE),
    (("render", "--no-secret", "--curve-cert", "fifo", "spec.yaml"), FIFO),
    (("check", "big.yaml"), TOO_LARGE),
]


@pytest.mark.parametrize(("args", "message"), ENDLESS, ids=lambda a: " ".join(a))
def test_endless_or_huge_input_is_refused_at_the_bound(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    import resource

    (tmp_path / "spec.yaml").write_text(
        "metadata: {name: x}\nspec: {size: 1, containers: [{image: x}]}\n"
    )
    with (tmp_path / "big.yaml").open("w") as big:  # a regular file just over the bound
        big.write("# " + "x" * (4 * 1024 * 1024) + "\n")
    os.mkfifo(tmp_path / "fifo")

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with open("/dev/zero", "rb") as zero:
        result = subprocess.run(
            [sys.executable, "-m", "flux_minicluster.cli.main", *args],
            cwd=tmp_path,
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=limit_memory,
            check=False,
        )
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
