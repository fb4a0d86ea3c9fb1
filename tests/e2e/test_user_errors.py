"""A mistake in a stack's config, as a user makes it: `pulumi config set`, then `pulumi preview`,
with the real CLI running ``__main__.py`` through the real ``pulumi-language-python``.

The language host prints an exception as "Program failed with an unhandled exception" and a
traceback, but a ``pulumi.RunError`` as its message alone; the program raises a config or spec
problem as one (``deploy.component.usererror``), so the user reads the one line that names the
key, as ``minicluster`` prints it. The program stops before it registers anything, so no control
plane is needed: nothing reaches a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from realcli import Cli
from stackrun import PREFIX, copy_project

if TYPE_CHECKING:  # the fixtures' types; tests/conftest.py is also a module named conftest
    from conftest import Toolchain

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.needs(
        "pulumi", "pulumi-language-python", "pulumi-resource-command", "pulumi-resource-kubernetes"
    ),
]

STACK = "local"


@pytest.mark.parametrize(
    ("config", "line"),
    [
        (
            ("--path", f"{PREFIX}:cluster.namepsace", "foo"),
            f"{PREFIX}:cluster.namepsace: unknown field; did you mean 'namespace'?",
        ),
        (
            ("--path", f"{PREFIX}:minicluster.file", "examples/nope.yaml"),
            f"{PREFIX}:minicluster.file: ",
        ),
        (
            # Pulumi masks a secret's text wherever it appears in the output: a value that is
            # no part of the message, so the message is read as the user reads it.
            ("--secret", f"{PREFIX}:curveCert", "garbage-3f9a"),
            f"{PREFIX}:curveCert: not a certificate Flux accepts: line 1: this line is not a "
            "section",
        ),
    ],
    ids=["typo", "spec-file", "certificate"],
)
@pytest.mark.parametrize("verb", ["preview", "up"])
def test_a_config_mistake_is_its_line_without_a_traceback(
    toolchain: Toolchain, tmp_path: Path, config: tuple[str, ...], line: str, verb: str
) -> None:
    project = copy_project(tmp_path / "project")
    cli = Cli.create(toolchain.bin, tmp_path, project)
    cli.env["PULUMI_BACKEND_URL"] = f"file://{tmp_path / 'state'}"
    (tmp_path / "state").mkdir()
    cli.pulumi("stack", "init", STACK)
    cli.pulumi("config", "set", *config, "-s", STACK)
    extra = ("--yes",) if verb == "up" else ()
    failed = cli.pulumi(verb, *extra, "-s", STACK, check=False)
    said = failed.stdout + failed.stderr
    assert failed.returncode != 0, said
    assert line in said, said
    assert "Traceback" not in said, said
    assert "unhandled exception" not in said, said
    assert "garbage-3f9a" not in said  # a secret value is never echoed
