"""``minicluster completion bash|zsh|fish``: shell completion, read off the argument parser.

kubectl and pulumi users expect ``<tool> completion <shell>``. The scripts are generated from the
very parser ``main`` uses (its commands, each command's options and the values an option allows),
so a new command or option completes without editing a script, and nothing is installed beside
the package. What completes:

* the commands, then each command's options (``-o``/``--output`` and the like);
* an option's allowed values (``-o yaml|json``, ``completion bash|zsh|fish``);
* folders after an option whose value is a folder (``DIR``), files everywhere else.

zsh runs the bash script through its ``bashcompinit`` layer, which zsh ships for exactly this.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

__all__ = ["script"]

FOLDER_METAVAR = "DIR"


@dataclass(frozen=True)
class _Option:
    names: tuple[str, ...]
    help: str
    choices: tuple[str, ...]
    takes_value: bool
    folder: bool


@dataclass(frozen=True)
class _Command:
    name: str
    help: str
    options: tuple[_Option, ...]
    choices: tuple[str, ...]
    """The values its positional argument allows (``completion``'s shells), if it has any."""
    files: bool
    """Whether it takes files or folders (a positional argument without choices)."""


def _options(parser: argparse.ArgumentParser) -> tuple[_Option, ...]:
    return tuple(
        _Option(
            names=tuple(a.option_strings),
            help=str(a.help or ""),
            choices=tuple(str(c) for c in a.choices or ()),
            takes_value=a.nargs != 0,
            folder=a.metavar == FOLDER_METAVAR,
        )
        for a in parser._actions
        if a.option_strings
    )


def _commands(parser: argparse.ArgumentParser) -> tuple[_Command, ...]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {str(c.dest): str(c.help or "") for c in sub._choices_actions}
    return tuple(
        _Command(
            name=name,
            help=helps.get(name, ""),
            options=_options(command),
            choices=tuple(
                str(c)
                for a in command._actions
                if not a.option_strings and a.choices
                for c in a.choices
            ),
            files=any(not a.option_strings and not a.choices for a in command._actions),
        )
        for name, command in sub.choices.items()
    )


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser``'s program for ``shell`` (bash, zsh or fish)."""
    if shell == "fish":
        return _fish(parser)
    text = _bash(parser)
    if shell == "zsh":
        return (
            "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n"
            + text
        )
    return text


def _words(options: tuple[_Option, ...]) -> str:
    return " ".join(n for o in options for n in o.names)


def _value_cases(prefix: str, options: tuple[_Option, ...]) -> list[str]:
    """bash ``case`` arms completing the value after an option: its choices, or folders."""
    arms = []
    for option in options:
        if not option.takes_value or not (option.choices or option.folder):
            continue
        pattern = "|".join(f"{prefix}{n}" for n in option.names)
        if option.choices:
            reply = f'COMPREPLY=($(compgen -W {shlex.quote(" ".join(option.choices))} -- "$cur"))'
        else:
            reply = 'COMPREPLY=($(compgen -d -- "$cur"))'
        arms.append(f"        {pattern}) {reply}; return ;;")
    return arms


def _bash(parser: argparse.ArgumentParser) -> str:
    prog = parser.prog
    function = "_" + prog.replace("-", "_")
    top = _options(parser)
    commands = _commands(parser)
    skip = "|".join(n for o in top if o.takes_value for n in o.names) or "--"
    first = " ".join(c.name for c in commands) + " " + _words(top)
    words = [f'        "") words={shlex.quote(first)} ;;']
    values = _value_cases(":", top)
    positional = []
    for c in commands:
        words.append(f"        {c.name}) words={shlex.quote(_words(c.options))} ;;")
        values += _value_cases(f"{c.name}:", c.options)
        if c.choices:
            positional.append(
                f"        {c.name}) COMPREPLY=($(compgen -W {shlex.quote(' '.join(c.choices))}"
                ' -- "$cur")); return ;;'
            )
    return "\n".join(
        [
            f"# {prog} completion for bash: source <({prog} completion bash)",
            f"{function}() {{",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
            '    local command="" words="" i',
            "    for ((i = 1; i < COMP_CWORD; i++)); do",
            '        case "${COMP_WORDS[i]}" in',
            f"            {skip}) ((i++)) ;;",
            "            -*) ;;",
            '            *) command="${COMP_WORDS[i]}"; break ;;',
            "        esac",
            "    done",
            '    case "$command:$prev" in',
            *values,
            "    esac",
            '    case "$command" in',
            *words,
            "    esac",
            '    if [[ -z "$command" || "$cur" == -* ]]; then',
            '        COMPREPLY=($(compgen -W "$words" -- "$cur"))',
            "        return",
            "    fi",
            '    case "$command" in',
            *positional,
            "    esac",
            '    COMPREPLY=($(compgen -f -- "$cur"))',
            "}",
            f"complete -o default -o filenames -F {function} {prog}",
            "",
        ]
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(prog: str, condition: str, option: _Option) -> str:
    parts = [f"complete -c {prog} -n {_fish_quote(condition)}"]
    for name in option.names:
        if name.startswith("--"):
            parts.append(f"-l {name[2:]}")
        else:
            parts.append(f"-s {name[1:]}")
    if option.choices:
        parts.append(f"-x -a {_fish_quote(' '.join(option.choices))}")
    elif option.folder:
        parts.append("-x -a '(__fish_complete_directories)'")
    elif option.takes_value:
        parts.append("-r")
    if option.help:
        parts.append(f"-d {_fish_quote(option.help.split(';')[0][:80])}")
    return " ".join(parts)


def _fish(parser: argparse.ArgumentParser) -> str:
    prog = parser.prog
    commands = _commands(parser)
    lines = [
        f"# {prog} completion for fish: {prog} completion fish > "
        f"~/.config/fish/completions/{prog}.fish",
        f"complete -c {prog} -f",
    ]
    lines += [_fish_option(prog, "__fish_use_subcommand", o) for o in _options(parser)]
    for c in commands:
        lines.append(
            f"complete -c {prog} -n '__fish_use_subcommand' -a {c.name} -d {_fish_quote(c.help)}"
        )
        seen = f"__fish_seen_subcommand_from {c.name}"
        lines += [_fish_option(prog, seen, o) for o in c.options]
        if c.choices:
            lines.append(
                f"complete -c {prog} -n {_fish_quote(seen)} -x -a "
                f"{_fish_quote(' '.join(c.choices))}"
            )
        elif c.files:
            lines.append(f"complete -c {prog} -n {_fish_quote(seen)} -F")
    return "\n".join(lines) + "\n"
