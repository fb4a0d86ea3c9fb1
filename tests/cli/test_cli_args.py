"""The command line as kubectl and pulumi users expect it: argument errors said by the command
they belong to, help when nothing is asked, -V/version, and shell completion."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from flux_minicluster.cli.completion import script
from flux_minicluster.cli.main import build_parser, main, subcommands

HELLO = Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as done:  # argparse's own exits (--version, errors)
        code = int(done.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["-V"], 0, "minicluster 0."),
        (["--version"], 0, "minicluster 0."),
        (["version"], 0, "minicluster 0."),
        ([], 0, "usage: minicluster [-h]"),
        (["--bogus"], 2, "minicluster: error: unrecognized arguments: --bogus"),
        (["validate", "--bogus", "x.yaml"], 2, "usage: minicluster validate"),
        (["validate", "--bogus", "x.yaml"], 2, "minicluster validate: error: unrecognized"),
        (["render", "-o", "json", "-d", "{tmp}", str(HELLO)], 2, "--output: json goes to"),
    ],
)
def test_arguments_are_said_as_kubectl_says_them(
    argv: list[str], code: int, said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path / "out")) for a in argv]
    got, out, err = _run(argv, capsys)
    assert got == code, out + err
    assert said in (out if code == 0 else err)
    assert "required: COMMAND" not in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # -o json -d DIR writes nothing


def _bash_complete(line: str, tmp_path: Path) -> list[str]:
    """What bash offers for ``line`` (the cursor at its end) with the generated script."""
    (tmp_path / "completion.bash").write_text(script(build_parser(), "bash"))
    words = line.split(" ")
    program = (
        f"source {tmp_path / 'completion.bash'}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_minicluster; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(
        ["bash", "-c", program], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return sorted(filter(None, done.stdout.splitlines()))


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("minicluster re", ["render"]),
        ("minicluster c", ["check", "completion"]),
        ("minicluster render --output", ["--output", "--output-dir"]),
        ("minicluster render -o ", ["json", "yaml"]),
        ("minicluster status -o j", ["json"]),
        ("minicluster --cwd sub ren", ["render"]),
        ("minicluster completion ", ["bash", "fish", "zsh"]),
        ("minicluster demo -d s", ["sub"]),  # folders only
        ("minicluster validate m", ["mc.yaml"]),
    ],
)
def test_bash_completes_commands_options_and_values(
    line: str, offered: list[str], tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "somefile").write_text("")
    (tmp_path / "mc.yaml").write_text("")
    assert _bash_complete(line, tmp_path) == offered


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_command_and_option_is_in_each_shells_script(shell: str) -> None:
    parser = build_parser()
    text = script(parser, shell)
    for name, command in subcommands(parser).items():
        assert name in text
        for action in command._actions:
            for option in action.option_strings:
                spelled = option if shell != "fish" else option.lstrip("-")
                assert spelled in text, (shell, name, option)


def test_completion_is_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["completion", "bash"], capsys)
    assert code == 0
    assert "complete -o default -o filenames -F _minicluster minicluster" in out
