"""Programs in TypeScript, Go and YAML using the component package (``components/``), on the
real Pulumi CLI: the work area, the environment and the steps test_multilanguage.py takes.

What the toolchain gives (tests/e2e/toolchain/languages.py) and why:

- the real ``pulumi-language-yaml``: YAML programs run as ``pulumi up`` runs them;
- no ``pulumi-language-nodejs`` nor ``pulumi-language-go`` (refused by the module proxy): their
  SDKs come from ``sdkgen`` (pkg/v3's codegen, as ``pulumi package add`` has a host run it) and
  their programs run through their SDK's Automation API (tests/e2e/drivers/), where the program
  process serves the language runtime and the CLI needs no language host;
- the real ``pulumi-language-python`` (built from ../shared/vendor), which the CLI starts the
  ``runtime: python`` component package with, as it does for a user.

The environment leaves the dev venv's bin/ off PATH: its ``pulumi-resource-minicluster`` console
script would serve the same provider, and the point is that the CLI starts the component
package from ``components/PulumiPlugin.yaml``.

The work area mirrors the repository, ``<root>/components`` and ``<root>/templates`` beside
``<root>/examples/<language>`` (copies), so the examples' ``../../components`` holds as
committed and the checkout's ``components/`` is never written. Installing the package
(``get-schema``, ``package add``), the CLI has the host create ``venv`` (PulumiPlugin.yaml's
``virtualenv: venv``) and pip install requirements.txt into it, then fetch the providers the
SDKs in it name: ``package_venv`` makes that venv see the dev venv's packages (the pinned SDKs;
nothing to download) and ``install_plugins`` puts the toolchain's providers into PULUMI_HOME's
plugin cache.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from controlplane import ControlPlane
from stackrun import engine_env

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "e2e"
COMPONENTS = REPO / "components"
GOLDEN_SCHEMA = COMPONENTS / "schema.json"
EXAMPLES = REPO / "examples"
DRIVERS = E2E / "drivers"


def _toolchain_module(name: str) -> ModuleType:
    """tests/e2e/toolchain/<name>.py, loaded by path (``build`` is also a PyPI package)."""
    path = E2E / "toolchain" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"e2e_toolchain_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


toolchain_build = _toolchain_module("build")
toolchain_languages = _toolchain_module("languages")

# examples/hello-world.yaml: what every example program declares inline.
HELLO = yaml.safe_load((EXAMPLES / "hello-world.yaml").read_text())
NAMESPACE = HELLO["metadata"]["namespace"]
NAME = HELLO["metadata"]["name"]
# The outputs every example exports (the component's, but the secret curveCert and the
# RESTful ones a v1alpha2 cluster does not have).
EXPORTS = (
    "jobName",
    "serviceName",
    "namespace",
    "leadBrokerHost",
    "hostlist",
    "size",
    "maxSize",
    "curvePublicKey",
)
PACKAGES = {"minicluster": "../../components"}  # every example's Pulumi.yaml `packages:`
MANAGED_BY = "app.kubernetes.io/managed-by=flux-minicluster"
# What a MiniCluster creates (pods are the Job controller's): api path, collection.
COLLECTIONS = (
    ("/api/v1", "configmaps"),
    ("/api/v1", "secrets"),
    ("/api/v1", "services"),
    ("/apis/batch/v1", "jobs"),
    ("/apis/networking.k8s.io/v1", "networkpolicies"),
)
# Set by the API server for each object it stores: never the same twice.
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def venv_python() -> Path:
    """The interpreter with the project's packages: this one inside a venv, else .venv's."""
    if sys.prefix != sys.base_prefix:
        return Path(sys.executable)
    return REPO / ".venv" / "bin" / "python"


def package_venv(venv: Path, python: Path) -> None:
    """The component package's ``venv``: a virtualenv of the dev venv's interpreter whose
    site-packages reach the dev venv's through a .pth file. The language host runs ``python -m
    venv`` over it (harmless on a venv; it fails on a symlink) and pip finds every line of
    requirements.txt satisfied, at the pinned SDK versions, so it installs nothing."""
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = sysconfig.get_paths()["purelib"] if Path(sys.executable) == python else None
    if purelib is None:
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "flux-minicluster-dev-venv.pth").write_text(f"{purelib}\n")


def install_plugins(bindir: Path, env: dict[str, str], cwd: Path) -> None:
    """The toolchain's providers in PULUMI_HOME's plugin cache, at the versions the Python SDKs
    of the venv ask for: installing a package's dependencies (``pulumi package add``,
    ``get-schema``) looks for them there, not on PATH, and would download them."""
    for package, plugin in (("pulumi-kubernetes", "kubernetes"), ("pulumi-command", "command")):
        binary = bindir / f"pulumi-resource-{plugin}"
        version = metadata.version(package)
        args = ["plugin", "install", "resource", plugin, version, "--file", str(binary)]
        subprocess.run(
            [str(bindir / "pulumi"), *args],
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )


@dataclass
class Polyglot:
    """The toolchain's CLI, language pieces and one file:// backend, and a work area."""

    bin: Path
    root: Path
    env: dict[str, str]
    go_env: dict[str, str]
    node_modules: Path
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def create(cls, bindir: Path, where: Path) -> Polyglot:
        keydir = bindir.parent
        home, backend, root = where / "pulumi-home", where / "state", where / "work"
        for path in (home, backend, root / "examples"):
            path.mkdir(parents=True)
        shutil.copytree(
            COMPONENTS,
            root / "components",
            ignore=shutil.ignore_patterns("venv", "__pycache__", "*.egg-info"),
        )
        # The package reads the repository's templates/ beside components/ (templating.py).
        shutil.copytree(REPO / "templates", root / "templates")
        python = venv_python()
        package_venv(root / "components" / "venv", python)
        venv_bin = str(python.parent)
        outside = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
        env = engine_env(bindir, home, backend)
        env["PATH"] = os.pathsep.join([str(bindir), *outside])
        install_plugins(bindir, env, root)
        go_env = {**env, **toolchain_languages.go_sdk_env(toolchain_build)}
        go_env["PATH"] = env["PATH"]
        return cls(
            bin=bindir,
            root=root,
            env=env,
            go_env=go_env,
            node_modules=keydir / toolchain_languages.NODE_DIR / "node_modules",
        )

    # -- commands ------------------------------------------------------------------------------

    def run(
        self,
        *args: str | Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        check: bool = True,
        timeout: float = 600,
        step: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        t0 = time.monotonic()
        proc = subprocess.run(
            [str(a) for a in args],
            cwd=cwd,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if step:
            self.timings[step] = time.monotonic() - t0
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(map(str, args))} (in {cwd}) exited {proc.returncode}\n"
                f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
            )
        return proc

    def timed(self, step: str, call: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        try:
            return call()
        finally:
            self.timings[step] = time.monotonic() - t0

    def pulumi(self, *args: str, cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run(self.bin / "pulumi", *args, cwd=cwd, **kw)

    # -- the work area -------------------------------------------------------------------------

    def example(self, language: str) -> Path:
        """A fresh copy of examples/<language> in the work area."""
        dest = self.root / "examples" / language
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(EXAMPLES / language, dest)
        return dest

    def generated_sdk(self, language: str) -> Path:
        """The SDK ``pulumi package add`` would generate for ``language`` (nodejs, go) from
        the golden schema, written once by sdkgen."""
        out = self.root / "gen"
        if not (out / language).is_dir():
            self.run(
                self.bin / "sdkgen",
                "-schema",
                GOLDEN_SCHEMA,
                "-out",
                out,
                "-lang",
                language,
                cwd=self.root,
                step=f"sdkgen {language}",
            )
        return out / language

    def add_sdk(self, project: Path, language: str) -> Path:
        """``sdks/minicluster`` in ``project``, where ``pulumi package add`` puts it."""
        dest = project / "sdks" / "minicluster"
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(self.generated_sdk(language), dest)
        return dest

    def link_node_modules(self, project: Path) -> None:
        """``node_modules`` as ``npm install`` leaves it for the example: @pulumi/pulumi and
        @types from the toolchain, @pulumi/minicluster a link to ``sdks/minicluster`` (npm links
        a ``file:`` dependency)."""
        modules = project / "node_modules"
        (modules / "@pulumi").mkdir(parents=True, exist_ok=True)
        (modules / "@pulumi" / "pulumi").symlink_to(self.node_modules / "@pulumi" / "pulumi")
        (modules / "@types").symlink_to(self.node_modules / "@types")
        (modules / "@pulumi" / "minicluster").symlink_to(Path("../../sdks/minicluster"))

    def tsc(self, *args: str | Path, cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run(self.bin / "tsc", *args, cwd=cwd, **kw)

    def go(self, *args: str | Path, cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run("go", *args, cwd=cwd, env=self.go_env, **kw)

    # -- stacks --------------------------------------------------------------------------------

    def init_stack(self, project: Path, stack: str, kubeconfig: Path, cert: str) -> None:
        """A stack of ``project`` on the control plane, with the certificate as the secret
        config value ``curveCert`` the examples read."""
        self.pulumi("stack", "init", stack, cwd=project)
        self.pulumi(
            "config", "set", "-s", stack, "kubernetes:kubeconfig", str(kubeconfig), cwd=project
        )
        self.pulumi("config", "set", "-s", stack, "--secret", "curveCert", "--", cert, cwd=project)

    def state(self, project: Path, stack: str) -> str:
        """``pulumi stack export`` of the stack (secrets stay encrypted)."""
        return self.pulumi("stack", "export", "-s", stack, cwd=project).stdout


def driver_result(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``RESULT <json>`` line an Automation API driver prints."""
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line.removeprefix("RESULT ")))
    raise AssertionError(f"no RESULT line:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


# --- what landed in the cluster ---------------------------------------------------------------


def minicluster_objects(cp: ControlPlane) -> dict[str, dict[str, Any]]:
    """Every object our component created in the examples' namespace, keyed ``Kind/name``,
    without what the API server sets on its own (uids, versions, timestamps, status; the Job's
    uid wherever the Job controller copied it, e.g. its selector)."""
    objects = {}
    for base, plural in COLLECTIONS:
        path = f"{base}/namespaces/{NAMESPACE}/{plural}?labelSelector={MANAGED_BY}"
        listing = cp.api("GET", path)
        kind = listing["kind"].removesuffix("List")
        for item in listing["items"]:
            obj = copy.deepcopy(item)
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", listing["apiVersion"])
            meta = obj["metadata"]
            uid = meta["uid"]
            for key in SERVER_SET:
                meta.pop(key, None)
            obj.pop("status", None)
            objects[f"{kind}/{meta['name']}"] = json.loads(json.dumps(obj).replace(uid, "<uid>"))
    return objects


def differences(want: Any, got: Any, path: str = "") -> list[str]:
    """Where two objects differ, one line each (for a readable assertion message)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for key in sorted(set(want) | set(got)):
            if key not in got:
                out.append(f"{path}.{key}: only in the Python program's")
            elif key not in want:
                out.append(f"{path}.{key}: only in this program's")
            else:
                out += differences(want[key], got[key], f"{path}.{key}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (w, g) in enumerate(zip(want, got, strict=True)) for d in
                differences(w, g, f"{path}[{i}]")]  # fmt: skip
    if want == got:
        return []
    if isinstance(want, str) and isinstance(got, str) and "\n" in want + got:
        pairs = zip(want.splitlines(), got.splitlines(), strict=False)
        line, w, g = next(((i, w, g) for i, (w, g) in enumerate(pairs, 1) if w != g), (0, "", ""))
        return [f"{path}: line {line}: {w!r} != {g!r}"]
    return [f"{path}: {json.dumps(want)[:200]} != {json.dumps(got)[:200]}"]


def wait_gone(cp: ControlPlane, timeout: float = 60) -> None:
    """Until nothing of the MiniCluster is left (its pods included)."""
    deadline = time.monotonic() + timeout
    while True:
        left = list(minicluster_objects(cp))
        pods = cp.api("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
        left += [f"Pod/{p['metadata']['name']}" for p in pods]
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"left after destroy: {left}")
        time.sleep(0.3)
