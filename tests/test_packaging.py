"""The wheel users install carries the templates, and the core stays free of Pulumi."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("*.whl")
    return built


def test_wheel_contains_every_template(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.name for p in (ROOT / "templates").glob("*.j2"))
    assert templates, "templates/ has no templates"
    missing = [t for t in templates if f"flux_minicluster/_templates/{t}" not in names]
    assert not missing


def test_wheel_has_the_console_script(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        entry = next(n for n in zf.namelist() if n.endswith("entry_points.txt"))
        assert "minicluster = flux_minicluster.cli.main:main" in zf.read(entry).decode()


@pytest.mark.parametrize(
    "module",
    [
        "flux_minicluster.core.spec.definition",
        "flux_minicluster.core.validation.crossfield",
        "flux_minicluster.policy",
    ],
)
def test_core_modules_import_without_pulumi(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r});"
        "bad = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'));"
        "sys.exit(repr(bad) if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


# What importing each entry point must not load: start-up a user pays on every run. The package
# root exports MiniCluster lazily (the CLI and the core never pay for Pulumi or the spec model),
# and the component imports the policy rules, the CLI and v1alpha1's models only when a run uses
# them. (The keygen Command's SDK stays a plain import: Pulumi evaluates the component's type
# hints, ``keygen: local.Command | None``, when it registers the component.)
@pytest.mark.parametrize(
    ("module", "not_loaded"),
    [
        ("flux_minicluster", ["pulumi", "pulumi_kubernetes", "pydantic", "jinja2", "yaml"]),
        (
            "flux_minicluster.deploy.component.minicluster",
            [
                "flux_minicluster.policy",
                "flux_minicluster.cli",
                "flux_minicluster.core.spec.v1alpha1",
            ],
        ),
    ],
)
def test_importing_loads_only_what_a_run_uses(module: str, not_loaded: list[str]) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r});"
        f"bad = sorted(m for m in sys.modules if m.startswith(tuple({not_loaded!r})));"
        "sys.exit(repr(bad) if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_a_users_own_components_folder_does_not_shadow_the_package(tmp_path: Path) -> None:
    """A user's project commonly has a ``components/`` package of its own; both must import."""
    (tmp_path / "components").mkdir()
    (tmp_path / "components" / "__init__.py").write_text("MINE = True\n")
    code = (
        "import components; from flux_minicluster import MiniCluster, MiniClusterArgs;"
        "assert components.MINE and MiniCluster.__name__ == 'MiniCluster'"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_installed_wheel_works_under_its_own_name(wheel: Path, tmp_path: Path) -> None:
    """A normal (not editable) install into a fresh virtualenv: import, --version, and a project
    started with `minicluster init` that renders and checks its stack, away from this checkout."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    subprocess.run([*pip, str(wheel)], check=True, timeout=600, capture_output=True)
    python, cli = str(venv / "bin" / "python"), str(venv / "bin" / "minicluster")
    away = tmp_path / "elsewhere"
    away.mkdir()

    def ok(*command: str, cwd: Path = away) -> str:
        result = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    found = ok(python, "-c", "import flux_minicluster, sys; print(flux_minicluster.__file__)")
    assert "site-packages" in found
    ok(python, "-c", "from flux_minicluster import MiniCluster")
    assert ok(cli, "--version").startswith("minicluster ")
    ok(cli, "init", "proj")
    project = away / "proj"
    ok(cli, "render", "--stack", "dev", "-d", "rendered", cwd=project)
    assert sorted(p.name for p in (project / "rendered" / "dev").glob("*-job-*.yaml"))
    ok(cli, "check", "--stack", "dev", cwd=project)
    # No index serves the package: the project's requirements name the wheel it came from.
    assert (
        f"flux-minicluster @ {wheel.resolve().as_uri()}\n"
        in (project / "requirements.txt").read_text()
    )
    # A plain install has no dev extra: demo skips the schema check that needs it, and says so.
    assert "Schema check skipped" in ok(cli, "demo", cwd=project)


def test_no_module_imports_the_package_root() -> None:
    """The package root sits on top of the Pulumi layer (it re-exports the component): a module
    below it that imports it would close a cycle import-linter's layers cannot see (the root is
    not a layer of its own). The release is read from ``flux_minicluster.version``."""
    import ast

    package = ROOT / "components" / "flux_minicluster"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                bare = any(a.name == "flux_minicluster" for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module == "flux_minicluster":
                # a submodule through the root (``from flux_minicluster import kubecheck``) is
                # fine; a name the root defines is not
                bare = any(
                    not (package / a.name).is_dir() and not (package / f"{a.name}.py").exists()
                    for a in node.names
                )
            else:
                bare = False
            if bare:
                offenders.append(f"{path.relative_to(package)}:{node.lineno}")
    assert offenders == []
