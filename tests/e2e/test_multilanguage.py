"""The MiniCluster from TypeScript, Go and YAML programs: ``components/`` as a component package
on the real Pulumi CLI, against a throwaway control plane.

- the CLI reads the schema from the component package (``pulumi package get-schema
  ./components``): the golden ``components/schema.json``, as Pulumi reads a schema;
- the TypeScript SDK ``pulumi package add`` generates, with examples/typescript, type-checks
  (``tsc --noEmit``); the Go SDK, with examples/go, builds (``go build``);
- each example program deploys the MiniCluster of examples/hello-world.yaml and the objects it
  leaves in the API server are the objects the Python component leaves for the same spec, its
  outputs the same, the certificate secret in its state; then it is destroyed to nothing.

How each program runs (tests/e2e/polyglot.py says why): YAML with ``pulumi package add`` and
``pulumi up``/``destroy`` on the real ``pulumi-language-yaml``; TypeScript and Go, whose
language hosts the module proxy refuses, through their own SDK's Automation API
(tests/e2e/drivers/); the Python baseline through the Python Automation API. The component
package itself is started by the CLI from ``components/PulumiPlugin.yaml`` through the real
``pulumi-language-python``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
import pytest
import yaml
from controlplane import BINARIES, ControlPlane
from polyglot import (
    DRIVERS,
    EXPORTS,
    GOLDEN_SCHEMA,
    HELLO,
    NAME,
    NAMESPACE,
    PACKAGES,
    REPO,
    Polyglot,
    differences,
    driver_result,
    minicluster_objects,
    wait_gone,
)
from pulumi import automation as auto

from flux_minicluster.core.flux import certificate
from flux_minicluster.deploy.component.minicluster import TYPE, MiniCluster

if TYPE_CHECKING:  # the fixtures' types; tests/conftest.py is also a module named conftest
    from conftest import Toolchain

pytestmark = pytest.mark.e2e
STACK = "dev"
KINDS = {"ConfigMap", "Secret", "Service", "Job", "NetworkPolicy"}
ENGINE = ("pulumi", "pulumi-resource-kubernetes", "pulumi-language-python")


# --- fixtures: one work area, one control plane, one certificate, one Python baseline ---------


@pytest.fixture(scope="module")
def poly(
    toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Polyglot:
    reason = toolchain.missing("pulumi")
    if reason:
        pytest.fail(reason, pytrace=False)
    work = Polyglot.create(toolchain.bin, tmp_path_factory.mktemp("polyglot"))
    request.config.pluginmanager.register(_StepTimes(work), "polyglot-step-times")
    return work


class _StepTimes:
    """Prints each step's wall time in the terminal summary (the figures of a run)."""

    def __init__(self, work: Polyglot) -> None:
        self.work = work

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.work.timings:
            terminalreporter.section("test_multilanguage steps (wall seconds)")
            for step, seconds in self.work.timings.items():
                terminalreporter.write_line(f"{seconds:8.1f}  {step}")


@pytest.fixture(scope="module")
def cluster(toolchain: Toolchain) -> Iterator[ControlPlane]:
    """One control plane for every deploy of this module (one after the other: the programs
    all declare the same MiniCluster), with the examples' namespace."""
    reason = toolchain.missing(*BINARIES)
    if reason:
        pytest.fail(reason, pytrace=False)
    with ControlPlane(toolchain.bin, name="polyglot") as cp:
        cp.kubectl("create", "namespace", NAMESPACE)
        yield cp


@pytest.fixture(scope="module")
def cert() -> str:
    return certificate.render(certificate.generate(NAME, f"{NAME}-0"))


@dataclass
class Deployed:
    objects: dict[str, dict[str, Any]]
    outputs: dict[str, Any]


@pytest.fixture(scope="module")
def python_deployed(
    toolchain: Toolchain, poly: Polyglot, cluster: ControlPlane, cert: str
) -> Deployed:
    """What the Python component (``flux_minicluster.deploy.component.minicluster.MiniCluster``)
    leaves in the cluster for examples/hello-world.yaml, and its outputs; destroyed again."""
    reason = toolchain.missing(*ENGINE)
    if reason:
        pytest.fail(reason, pytrace=False)
    project = poly.root / "python"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: minicluster-python\nruntime: python\n")

    def program() -> None:
        config = pulumi.Config()
        hello = MiniCluster(
            "hello",
            {"spec": HELLO, "curve_cert": config.require_secret("curveCert"), "wait": "none"},
        )
        for name in EXPORTS:
            pulumi.export(name, getattr(hello, re.sub(r"([A-Z])", r"_\1", name).lower()))

    workspace = auto.LocalWorkspace(
        work_dir=str(project),
        program=program,
        pulumi_home=poly.env["PULUMI_HOME"],
        env_vars=poly.env,
        pulumi_command=auto.PulumiCommand(root=str(poly.bin.parent), skip_version_check=True),
    )
    stack = auto.Stack.create(STACK, workspace)
    stack.set_config("kubernetes:kubeconfig", auto.ConfigValue(str(cluster.kubeconfig)))
    stack.set_config("curveCert", auto.ConfigValue(cert, secret=True))
    try:
        result = poly.timed("python: up", stack.up)
        deployed = Deployed(
            minicluster_objects(cluster), {k: v.value for k, v in result.outputs.items()}
        )
        assert_certificate_secret(poly.state(project, STACK), cert)
    finally:
        poly.timed("python: destroy", stack.destroy)
        wait_gone(cluster)
    assert {key.split("/")[0] for key in deployed.objects} == KINDS
    return deployed


def assert_same_as_python(
    baseline: Deployed, cluster: ControlPlane, outputs: dict[str, Any], state: str, cert: str
) -> None:
    objects = minicluster_objects(cluster)
    assert sorted(objects) == sorted(baseline.objects)
    for key, obj in objects.items():
        diff = differences(baseline.objects[key], obj)
        assert not diff, f"{key} differs from the Python component's:\n" + "\n".join(diff)
    assert outputs == baseline.outputs
    assert_certificate_secret(state, cert)


def drive(
    poly: Polyglot,
    cluster: ControlPlane,
    cert: str,
    baseline: Deployed,
    project: Path,
    language: str,
    driver: tuple[str | Path, ...],
    program: tuple[str | Path, ...] = (),
) -> None:
    """One program's life through its Automation API driver (``drivers/``): a stack with the
    shared certificate, ``up``, the live objects and outputs compared with the Python
    component's, then ``destroy`` down to nothing, whether or not the comparison held."""
    poly.init_stack(project, STACK, cluster.kubeconfig, cert)
    try:
        up = poly.run(
            *driver, "up", project, STACK, *program, cwd=project,
            step=f"{language}: up (Automation API)",
        )  # fmt: skip
        result = driver_result(up)
        assert result["result"] == "succeeded"
        assert_same_as_python(
            baseline, cluster, result["outputs"], poly.state(project, STACK), cert
        )
    finally:
        down = poly.run(
            *driver, "destroy", project, STACK, *program, cwd=project,
            step=f"{language}: destroy (Automation API)",
        )  # fmt: skip
        assert driver_result(down)["result"] == "succeeded"
        wait_gone(cluster)


def assert_certificate_secret(state: str, cert: str) -> None:
    """The certificate's secret key is nowhere in the stack's state in plain text, and the
    component's ``curveCert`` output is a secret there."""
    secret_key = re.search(r'secret-key = "(.+)"', cert)
    assert secret_key is not None
    deployment = json.loads(state)["deployment"]
    plain = [s for s in _strings(deployment) if secret_key.group(1) in s]
    assert plain == []
    component = next(r for r in deployment["resources"] if r["type"] == TYPE)
    # camelCase from the component provider; the Python class registers its Python names
    output = component["outputs"].get("curveCert", component["outputs"].get("curve_cert"))
    assert "ciphertext" in output


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# --- the schema ---------------------------------------------------------------------------------


@pytest.mark.needs("pulumi", "sdkgen", "pulumi-language-python")
def test_the_cli_reads_the_golden_schema_from_the_component_package(poly: Polyglot) -> None:
    """``pulumi package get-schema ./components``, as the README has a user run it: the CLI
    starts the package from PulumiPlugin.yaml (``runtime: python``) and prints its schema,
    which is the golden file as Pulumi reads a schema (sdkgen -print-spec decodes it into
    Pulumi's own schema.PackageSpec, as the CLI does)."""
    # The language host the CLI starts the package with: the toolchain's real one, and no other.
    host = shutil.which("pulumi-language-python", path=poly.env["PATH"])
    assert host == str(poly.bin / "pulumi-language-python")
    served = poly.pulumi("package", "get-schema", "./components", cwd=poly.root, step="get-schema")
    golden = poly.run(poly.bin / "sdkgen", "-schema", GOLDEN_SCHEMA, "-print-spec", cwd=REPO)
    assert served.stdout == golden.stdout

    schema = json.loads(served.stdout)
    resource = schema["resources"][TYPE]
    written = json.loads(GOLDEN_SCHEMA.read_text())["resources"][TYPE]
    assert set(resource["inputProperties"]) == set(written["inputProperties"])
    assert set(resource["properties"]) == set(written["properties"])
    assert resource["inputProperties"]["curveCert"]["secret"] is True
    assert resource["properties"]["curveCert"]["secret"] is True
    # The golden file holds nothing Pulumi's schema reader would drop or add.
    assert schema == json.loads(GOLDEN_SCHEMA.read_text())


# --- the generated SDKs compile -------------------------------------------------------------------


@pytest.mark.needs("sdkgen", "node-modules")
def test_typescript_sdk_and_example_type_check(poly: Polyglot) -> None:
    project = poly.example("typescript")
    sdk = poly.add_sdk(project, "nodejs")
    poly.link_node_modules(project)
    # The SDK with its own tsconfig (as its postinstall compiles it), then the example with it.
    poly.tsc("--noEmit", "-p", sdk, cwd=project, step="typescript: tsc --noEmit sdk")
    poly.tsc("--noEmit", "-p", ".", cwd=project, step="typescript: tsc --noEmit example")
    # The SDK's types are real: a wrong `wait` or output name does not type-check.
    index = (project / "index.ts").read_text()
    mistake = index.replace("wait: minicluster.Wait.NONE", 'wait: "sometimes"')
    mistake = mistake.replace("hello.jobName", "hello.jobname")
    assert mistake.count("sometimes") == 1
    (project / "mistake.ts").write_text(mistake)
    (project / "tsconfig.mistake.json").write_text(
        json.dumps({"extends": "./tsconfig.json", "files": ["mistake.ts"]})
    )
    proc = poly.tsc("--noEmit", "-p", "tsconfig.mistake.json", cwd=project, check=False)
    assert proc.returncode != 0
    assert """Type '"sometimes"' is not assignable to type 'Wait""" in proc.stdout
    assert "Property 'jobname' does not exist on type 'MiniCluster'" in proc.stdout


@pytest.mark.needs("sdkgen", "node-modules")
@pytest.mark.parametrize(
    ("right", "wrong", "where"),
    [
        ("            tasks: 4,", "            taks: 4,", "MiniClusterSpecArgs"),
        ('image: "ubuntu:24.04"', 'imag: "ubuntu:24.04"', "ContainerArgs"),
        ("logging: { quiet: true }", "logging: { quiet: true, verbose: true }", "LoggingArgs"),
    ],
)
def test_a_misspelt_spec_field_is_a_typescript_compile_error(
    poly: Polyglot, right: str, wrong: str, where: str
) -> None:
    """The spec is typed from the pydantic model (components/schema.json): the example
    type-checks, and the same example with one field misspelt does not, naming the field."""
    project = poly.example("typescript")
    poly.add_sdk(project, "nodejs")
    poly.link_node_modules(project)
    index = (project / "index.ts").read_text()
    assert index.count(right) == 1, right
    field = wrong.strip().split(":")[0] if "verbose" not in wrong else "verbose"
    (project / "mistake.ts").write_text(index.replace(right, wrong))
    (project / "tsconfig.mistake.json").write_text(
        json.dumps({"extends": "./tsconfig.json", "files": ["mistake.ts"]})
    )
    proc = poly.tsc("--noEmit", "-p", "tsconfig.mistake.json", cwd=project, check=False)
    assert proc.returncode != 0, proc.stdout
    assert f"'{field}' does not exist in type" in proc.stdout, proc.stdout
    assert where in proc.stdout, proc.stdout


@pytest.mark.needs("sdkgen", "pulumi-go-sdk")
def test_go_sdk_and_example_build(poly: Polyglot) -> None:
    project = poly.example("go")
    poly.add_sdk(project, "go")
    binary = poly.root / "bin" / "minicluster-go"
    poly.go("build", "-trimpath", "-o", binary, ".", cwd=project, step="go: go build example")
    assert binary.stat().st_size > 0
    # The SDK's types are real: a string where the Wait enum goes does not compile.
    program = project / "minicluster.go"
    source = program.read_text()
    assert "Wait: &wait," in source
    program.write_text(source.replace("Wait: &wait,", 'Wait: "none",'))
    proc = poly.go("build", "-trimpath", "-o", binary, ".", cwd=project, check=False)
    assert proc.returncode != 0
    assert "*minicluster.Wait" in proc.stderr


# --- the programs deploy what the Python component deploys --------------------------------------


@pytest.mark.needs(*ENGINE, "pulumi-language-yaml")
def test_yaml_program_deploys_what_the_python_component_deploys(
    poly: Polyglot, cluster: ControlPlane, cert: str, python_deployed: Deployed
) -> None:
    project = poly.example("yaml")
    program = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert program["packages"] == PACKAGES
    # As a user adds the package: the CLI writes the `packages:` entry the example commits.
    del program["packages"]
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    added = poly.pulumi("package", "add", "../../components", cwd=project, step="yaml: package add")
    assert "Added package minicluster" in added.stderr
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["packages"] == PACKAGES
    version = json.loads(GOLDEN_SCHEMA.read_text())["version"]
    assert (project / "sdks" / "minicluster" / f"minicluster-{version}.yaml").is_file()

    poly.init_stack(project, STACK, cluster.kubeconfig, cert)
    up = ("up", "--yes", "--skip-preview", "--non-interactive", "-s", STACK)
    try:
        poly.pulumi(*up, cwd=project, step="yaml: pulumi up")
        outputs = json.loads(poly.pulumi("stack", "output", "--json", cwd=project).stdout)
        assert_same_as_python(python_deployed, cluster, outputs, poly.state(project, STACK), cert)
    finally:
        down = ("destroy", "--yes", "--skip-preview", "--non-interactive", "-s", STACK)
        poly.pulumi(*down, cwd=project, step="yaml: pulumi destroy")
        wait_gone(cluster)


@pytest.mark.needs(*ENGINE, "sdkgen", "node-modules")
def test_typescript_program_deploys_what_the_python_component_deploys(
    poly: Polyglot, cluster: ControlPlane, cert: str, python_deployed: Deployed
) -> None:
    project = poly.example("typescript")
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["packages"] == PACKAGES
    sdk = poly.add_sdk(project, "nodejs")
    poly.link_node_modules(project)
    # What the SDK's postinstall does (tsc, package.json beside the output), then the example
    # and the Automation API driver.
    poly.tsc(cwd=sdk, step="typescript: tsc sdk")
    shutil.copyfile(sdk / "package.json", sdk / "bin" / "package.json")
    poly.tsc("-p", ".", cwd=project, step="typescript: tsc example")
    shutil.copyfile(DRIVERS / "typescript" / "deploy.ts", project / "deploy.ts")
    options = ("--strict", "--target", "ES2022", "--module", "commonjs", "--types", "node")
    poly.tsc(*options, "--skipLibCheck", "--outDir", "bin", "deploy.ts", cwd=project)

    drive(
        poly, cluster, cert, python_deployed, project, "typescript",
        ("node", "bin/deploy.js"), (project / "bin" / "index.js",),
    )  # fmt: skip


@pytest.mark.needs(*ENGINE, "sdkgen", "pulumi-go-sdk")
def test_go_program_deploys_what_the_python_component_deploys(
    poly: Polyglot, cluster: ControlPlane, cert: str, python_deployed: Deployed
) -> None:
    project = poly.example("go")
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["packages"] == PACKAGES
    # The driver: the example's module and program (minicluster.go), our main.go for its own.
    build = poly.root / "go-driver"
    build.mkdir()
    for name in ("go.mod", "minicluster.go"):
        shutil.copyfile(project / name, build / name)
    shutil.copyfile(DRIVERS / "go" / "main.go", build / "main.go")
    poly.add_sdk(build, "go")
    driver = poly.root / "bin" / "minicluster-go-driver"
    poly.go("build", "-trimpath", "-o", driver, ".", cwd=build, step="go: go build driver")

    drive(poly, cluster, cert, python_deployed, project, "go", (driver,))
