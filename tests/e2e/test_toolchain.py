"""Smoke tests of the e2e toolchain: the real Pulumi CLI and plugins built from the Go module
proxy, and the throwaway control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) the other e2e tests deploy to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from controlplane import COMPLETE_AFTER, ControlPlane

if TYPE_CHECKING:  # the fixtures' types; tests/conftest.py is also a module named conftest
    from conftest import PulumiEnv, Toolchain

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]

PINS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["flux-minicluster"]["toolchain"]


def apply(cp: ControlPlane, obj: dict[str, object]) -> None:
    cp.kubectl("apply", "-f", "-", input=json.dumps(obj))


def pod_phases(cp: ControlPlane, namespace: str, selector: str) -> dict[str, str]:
    out = cp.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in json.loads(out)["items"]}


# -- the binaries ----------------------------------------------------------------------------


@pytest.mark.needs("pulumi")
def test_pulumi_version(pulumi_env: PulumiEnv, tmp_path: Path) -> None:
    out = pulumi_env.run("version", cwd=tmp_path).stdout.strip()
    assert out == PINS["pulumi"]


@pytest.mark.needs("pulumi", "pulumi-resource-kubernetes")
def test_kubernetes_provider_serves_its_schema(pulumi_env: PulumiEnv, tmp_path: Path) -> None:
    # the CLI starts the plugin and asks it over gRPC for the schema our main.go embeds
    binary = Path(pulumi_env.env["PATH"].split(":")[0]) / "pulumi-resource-kubernetes"
    out = pulumi_env.run("package", "get-schema", str(binary), cwd=tmp_path).stdout
    schema = json.loads(out)
    assert schema["name"] == "kubernetes"
    assert schema["version"] == PINS["pulumi-kubernetes-version"]
    assert "kubernetes:batch/v1:Job" in schema["resources"]


# -- the control plane -----------------------------------------------------------------------


def test_apiserver_reports_the_pinned_release(control_plane: ControlPlane) -> None:
    version = control_plane.api("GET", "/version")
    assert version["gitVersion"] == PINS["kubernetes"]
    major, minor = PINS["kubernetes"].lstrip("v").split(".")[:2]
    assert (version["major"], version["minor"]) == (major, minor)
    assert control_plane.api("GET", "/readyz") == "ok"
    assert control_plane.startup_seconds is not None
    assert control_plane.startup_seconds < 60


def test_kubectl_pod_becomes_running_and_ready(control_plane: ControlPlane) -> None:
    cp = control_plane
    cp.kubectl("create", "namespace", "smoke")
    apply(
        cp,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hello", "namespace": "smoke"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                    }
                ]
            },
        },
    )
    cp.kubectl("wait", "-n", "smoke", "pod/hello", "--for=condition=Ready", "--timeout=60s")
    pod = json.loads(cp.kubectl("get", "-n", "smoke", "pod/hello", "-o", "json").stdout)
    assert pod["status"]["phase"] == "Running"
    assert pod["spec"]["nodeName"] in cp.node_names  # bound by the real scheduler
    assert pod["status"]["podIP"]
    cp.kubectl("delete", "namespace", "smoke", "--timeout=60s")


def test_annotated_indexed_job_completes_and_plain_job_keeps_running(
    control_plane: ControlPlane,
) -> None:
    cp = control_plane
    cp.kubectl("create", "namespace", "jobs")

    def job(name: str, completions: int, annotations: dict[str, str]) -> dict[str, object]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "jobs"},
            "spec": {
                "completionMode": "Indexed",
                "completions": completions,
                "parallelism": completions,
                "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "initContainers": [{"name": "init", "image": "busybox"}],
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                            }
                        ],
                    },
                },
            },
        }

    apply(cp, job("finite", 2, {COMPLETE_AFTER: "1s"}))
    # 16 brokers of 1 cpu / 2Gi, as a persistent MiniCluster: they must all run, and stay.
    apply(cp, job("persistent", 16, {}))
    cp.kubectl("wait", "-n", "jobs", "job/finite", "--for=condition=Complete", "--timeout=90s")
    finite = json.loads(cp.kubectl("get", "-n", "jobs", "job/finite", "-o", "json").stdout)
    assert finite["status"]["succeeded"] == 2
    assert sorted(finite["status"]["completedIndexes"].split(",")) in (["0", "1"], ["0-1"])

    cp.wait_for(
        "16 persistent pods Running",
        lambda: list(pod_phases(cp, "jobs", "job-name=persistent").values()) == ["Running"] * 16,
        timeout=90,
    )
    time.sleep(3)  # well past the finite job's 1s: nothing completes without the annotation
    assert set(pod_phases(cp, "jobs", "job-name=persistent").values()) == {"Running"}
    persistent = json.loads(cp.kubectl("get", "-n", "jobs", "job/persistent", "-o", "json").stdout)
    assert persistent["status"].get("active") == 16
    assert not persistent["status"].get("succeeded")

    # foreground deletion (pulumi-kubernetes' default) needs kcm's garbage collector and the
    # pods to go away: both happen here.
    t0 = time.monotonic()
    cp.kubectl("delete", "-n", "jobs", "job/persistent", "--cascade=foreground", "--timeout=60s")
    assert time.monotonic() - t0 < 30
    assert pod_phases(cp, "jobs", "job-name=persistent") == {}


def test_three_control_planes_at_once(control_plane_factory) -> None:  # type: ignore[no-untyped-def]
    planes = [control_plane_factory("burst") for _ in range(3)]
    assert len({cp.server for cp in planes}) == 3
    for cp in planes:
        cp.kubectl("create", "namespace", f"only-in-{cp.name}")
    for cp in planes:
        names = cp.kubectl("get", "namespaces", "-o", "name").stdout.split()
        assert f"namespace/only-in-{cp.name}" in names
        assert sum(n.startswith("namespace/only-in-") for n in names) == 1
        assert cp.api("GET", "/version")["gitVersion"] == PINS["kubernetes"]


# -- the whole chain: CLI -> language host -> plugins -> API server ---------------------------


def write_project(dirpath: Path, pulumi_env: PulumiEnv, program: str) -> Path:
    dirpath.mkdir(parents=True, exist_ok=True)
    venv = pulumi_env.python.parent.parent
    (dirpath / "Pulumi.yaml").write_text(
        textwrap.dedent(f"""\
        name: e2e-smoke
        runtime:
          name: python
          options:
            toolchain: pip
            virtualenv: {venv}
        """)
    )
    (dirpath / "__main__.py").write_text(textwrap.dedent(program))
    return dirpath


CONFIGMAP_PROGRAM = """\
    import os

    import pulumi
    import pulumi_kubernetes as k8s

    provider = k8s.Provider(
        "harness", kubeconfig=open(os.environ["E2E_KUBECONFIG"]).read()
    )
    cm = k8s.core.v1.ConfigMap(
        "smoke",
        metadata={"name": "e2e-smoke", "namespace": "default"},
        data={"hello": "world"},
        opts=pulumi.ResourceOptions(provider=provider),
    )
    pulumi.export("name", cm.metadata["name"])
"""


@pytest.mark.needs("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")
def test_pulumi_up_and_destroy_a_configmap(
    pulumi_env: PulumiEnv, control_plane: ControlPlane, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "project", pulumi_env, CONFIGMAP_PROGRAM)
    pulumi_env.env["E2E_KUBECONFIG"] = str(control_plane.kubeconfig)
    pulumi_env.run("stack", "init", "dev", cwd=project)
    pulumi_env.run("up", "--yes", "--skip-preview", "--non-interactive", cwd=project)
    cm = json.loads(control_plane.kubectl("get", "configmap", "e2e-smoke", "-o", "json").stdout)
    assert cm["data"] == {"hello": "world"}
    outputs = json.loads(pulumi_env.run("stack", "output", "--json", cwd=project).stdout)
    assert outputs == {"name": "e2e-smoke"}
    pulumi_env.run("destroy", "--yes", "--skip-preview", "--non-interactive", cwd=project)
    gone = control_plane.kubectl("get", "configmap", "e2e-smoke", check=False)
    assert gone.returncode != 0
    assert "NotFound" in gone.stderr


@pytest.mark.needs("pulumi", "pulumi-language-python", "pulumi-resource-command")
def test_pulumi_up_runs_a_local_command(pulumi_env: PulumiEnv, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    project = write_project(
        tmp_path / "project",
        pulumi_env,
        f"""\
        import pulumi
        from pulumi_command import local

        cmd = local.Command("touch", create="echo hi > {marker} && echo created",
                            delete="rm -f {marker}")
        pulumi.export("stdout", cmd.stdout)
    """,
    )
    pulumi_env.run("stack", "init", "dev", cwd=project)
    pulumi_env.run("up", "--yes", "--skip-preview", "--non-interactive", cwd=project)
    assert marker.read_text() == "hi\n"
    outputs = json.loads(pulumi_env.run("stack", "output", "--json", cwd=project).stdout)
    assert outputs == {"stdout": "created"}
    pulumi_env.run("destroy", "--yes", "--skip-preview", "--non-interactive", cwd=project)
    assert not marker.exists()


AUTOMATION_SCRIPT = """\
    # Pulumi's Automation API with an inline program: the SDK serves the language runtime
    # itself and runs `pulumi up --client=...`, so no pulumi-language-python is involved.
    import json
    import os
    import sys

    import pulumi
    import pulumi_kubernetes as k8s
    from pulumi import automation as auto


    def program():
        provider = k8s.Provider(
            "harness", kubeconfig=open(os.environ["E2E_KUBECONFIG"]).read()
        )
        cm = k8s.core.v1.ConfigMap(
            "inline",
            metadata={"name": "e2e-inline", "namespace": "default"},
            data={"via": "automation"},
            opts=pulumi.ResourceOptions(provider=provider),
        )
        pulumi.export("name", cm.metadata["name"])


    stack = auto.create_or_select_stack(
        stack_name="dev",
        project_name="e2e-inline",
        program=program,
        opts=auto.LocalWorkspaceOptions(
            work_dir=os.environ["E2E_WORKDIR"],
            pulumi_home=os.environ["PULUMI_HOME"],
            pulumi_command=auto.PulumiCommand(
                root=os.environ["E2E_PULUMI_ROOT"], skip_version_check=True
            ),
            project_settings=auto.ProjectSettings(name="e2e-inline", runtime="python"),
        ),
    )
    if sys.argv[1] == "up":
        result = stack.up(on_output=print)
        outputs = {k: v.value for k, v in result.outputs.items()}
    else:
        result = stack.destroy(on_output=print)
        outputs = {}
    print("RESULT " + json.dumps({"result": result.summary.result, "outputs": outputs}))
"""


@pytest.mark.needs("pulumi", "pulumi-resource-kubernetes")
def test_automation_api_inline_program_up_and_destroy(
    pulumi_env: PulumiEnv, control_plane: ControlPlane, toolchain: Toolchain, tmp_path: Path
) -> None:
    script = tmp_path / "inline.py"
    script.write_text(textwrap.dedent(AUTOMATION_SCRIPT))
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = dict(
        pulumi_env.env,
        E2E_KUBECONFIG=str(control_plane.kubeconfig),
        E2E_WORKDIR=str(workdir),
        E2E_PULUMI_ROOT=str(toolchain.bin.parent),
    )

    def run(verb: str) -> dict[str, object]:
        proc = subprocess.run(
            [str(pulumi_env.python), str(script), verb],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, f"{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}"
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
        return dict(json.loads(line.removeprefix("RESULT ")))

    assert run("up") == {"result": "succeeded", "outputs": {"name": "e2e-inline"}}
    cm = json.loads(control_plane.kubectl("get", "configmap", "e2e-inline", "-o", "json").stdout)
    assert cm["data"] == {"via": "automation"}
    assert run("destroy")["result"] == "succeeded"
    assert control_plane.kubectl("get", "configmap", "e2e-inline", check=False).returncode != 0


# -- Flux (toolchain/flux.py) -----------------------------------------------------------------


@pytest.mark.needs("flux")
def test_flux_is_the_pinned_release_with_fluxion(toolchain: Toolchain) -> None:
    link = toolchain.bin / "flux"
    assert link.is_symlink()
    prefix = link.resolve().parent.parent
    assert prefix.parent.parent.name == "flux"  # <cache root>/flux/<flux key>/prefix
    out = subprocess.run([str(link), "version"], capture_output=True, text=True, check=True)
    versions = dict(line.split(":", 1) for line in out.stdout.splitlines() if ":" in line)
    assert versions["libflux-core"].strip() == PINS["flux"]["core"]
    assert (prefix / "lib" / "flux" / "modules" / "sched-fluxion-resource.so").exists()


def test_the_flux_piece_without_the_sources_says_where_they_belong(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "FLUX_MINICLUSTER_VENDOR": str(tmp_path / "vendor"),
        "FLUX_MINICLUSTER_CACHE": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "e2e" / "toolchain" / "build.py"), "--piece", "flux"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert (
        f"{tmp_path / 'vendor'}/flux-core-{PINS['flux']['core']}.tar.gz is missing" in proc.stderr
    )
    assert "../shared/vendor" in proc.stderr
    assert list((tmp_path / "cache").glob("flux/*/prefix/bin/flux")) == []
