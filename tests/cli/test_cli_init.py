"""`minicluster init`, `--version` and `--cwd`: starting a project of your own."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.cli import minicluster, minicluster_plain


def test_init_writes_a_project_that_renders_validates_and_checks(tmp_path: Path) -> None:
    result = minicluster("init", "my-hpc", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    project = tmp_path / "my-hpc"
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["name"] == "my-hpc"
    assert (project / "stacks" / "Pulumi.dev.yaml").is_file()
    assert minicluster("validate", "minicluster.yaml", cwd=project).returncode == 0
    rendered = minicluster("render", "--stack", "dev", "-d", "rendered", cwd=project)
    assert rendered.returncode == 0, rendered.stderr
    kinds = sorted(p.name.split("-")[1] for p in (project / "rendered" / "dev").glob("*.yaml"))
    assert kinds == ["configmap", "job", "namespace", "networkpolicy", "secret", "service"]
    checked = minicluster("check", "--stack", "dev", cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # From a subfolder too, as pulumi finds its project in the parents.
    (project / "sub").mkdir()
    assert minicluster("render", "--stack", "dev", cwd=project / "sub").returncode == 0


def test_init_never_overwrites(tmp_path: Path) -> None:
    assert minicluster("init", "p", cwd=tmp_path).returncode == 0
    again = minicluster("init", "p", cwd=tmp_path)
    assert again.returncode == 2
    assert "already has Pulumi.yaml" in again.stderr


def test_init_of_an_empty_name_writes_nothing(tmp_path: Path) -> None:
    result = minicluster("init", "", cwd=tmp_path)
    assert result.returncode == 2
    assert "give the new project's folder" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_outside_a_project_says_so(tmp_path: Path) -> None:
    result = minicluster("render", "--stack", "local", cwd=tmp_path)
    assert result.returncode == 2
    assert "no Pulumi project (Pulumi.yaml)" in result.stderr
    assert "minicluster init" in result.stderr


def test_cwd_finds_the_project_elsewhere(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    result = minicluster("--cwd", str(root), "render", "--stack", "local", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_version() -> None:
    result = minicluster("--version", cwd=Path.cwd())
    assert result.returncode == 0
    assert result.stdout.startswith("minicluster 0.")


def test_every_subcommand_has_a_description() -> None:
    from flux_minicluster.cli.main import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        assert command.description, name


def test_a_plain_install_runs_every_product_command(tmp_path: Path) -> None:
    """``pip install flux-minicluster`` without the dev extra: init, validate, render, check and
    demo all work; the schema check that needs kubernetes-validate says it was skipped."""
    assert minicluster_plain("init", "p", cwd=tmp_path).returncode == 0
    project = tmp_path / "p"
    for command in (
        ("validate", "minicluster.yaml"),
        ("render", "minicluster.yaml", "-d", "out"),
        ("check", "minicluster.yaml"),
        ("render", "--stack", "dev", "-d", "rendered"),
        ("check", "--stack", "dev"),
    ):
        result = minicluster_plain(*command, cwd=project)
        assert result.returncode == 0, (command, result.stderr)
    demo = minicluster_plain("demo", cwd=project)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "Schema check skipped" in demo.stdout
    assert "kubernetes-validate" in demo.stdout
    assert "flux-minicluster[dev]" not in demo.stdout  # no index serves the package
    assert "validates strict" not in demo.stdout


def test_init_requires_the_package_as_it_is_installed_and_pins_the_sdks(tmp_path: Path) -> None:
    """No index serves flux-minicluster: requirements.txt points at this install (here an
    editable checkout, PEP 610's direct_url.json) and pins the Pulumi SDKs beside it."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    assert minicluster("init", "p", cwd=tmp_path).returncode == 0
    lines = [
        line
        for line in (tmp_path / "p" / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    requirements = {r.name: r for r in map(Requirement, lines)}
    ours = requirements.pop("flux-minicluster")
    assert ours.url == Path(__file__).resolve().parents[2].as_uri()
    assert {name: str(r.specifier) for name, r in requirements.items()} == {
        sdk: f"=={md.version(sdk)}" for sdk in ("pulumi", "pulumi-kubernetes", "pulumi-command")
    }


def test_init_quotes_the_folder_it_tells_you_to_cd_into(tmp_path: Path) -> None:
    result = minicluster("init", "bad name!", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "  cd 'bad name!'\n" in result.stdout


def test_every_argument_and_option_has_help_text() -> None:
    import argparse

    from flux_minicluster.cli.main import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    assert isinstance(sub.choices, dict)
    missing = [
        f"{name} {action.metavar or action.dest}"
        for name, command in sub.choices.items()
        for action in command._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert missing == []


def test_init_here_in_a_repository_keeps_its_gitignore_and_needs_no_cd(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("node_modules/\n*.cert")  # no final newline
    (repo / "README.md").write_text("mine\n")
    result = minicluster("init", ".", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "is in this folder. Next:" in result.stdout
    assert "cd ." not in result.stdout
    lines = (repo / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules/", "*.cert"]  # kept as it was, added to
    assert lines.count("*.cert") == 1
    assert {"venv/", "rendered/"} <= set(lines)
    assert (repo / "README.md").read_text() == "mine\n"
    assert minicluster("validate", "minicluster.yaml", cwd=repo).returncode == 0


def test_init_into_a_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("mine\n")
    result = minicluster("init", "README.md", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "README.md is a file; init writes a project into a folder (new or not)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]
