"""Each component argument declared once (``deploy.component.arguments``), and what follows from
the declaration: the checks, the inputs other languages see, the stack config's keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from pulumi.provider.experimental.util import camel_case

from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.deploy.component import declaring
from flux_minicluster.deploy.component.arguments import ARGUMENTS, MiniClusterArgs
from flux_minicluster.deploy.component.declaring import Arg, Stack
from flux_minicluster.deploy.component.preparing import prepare
from flux_minicluster.deploy.stack import stackconfig
from flux_minicluster.deploy.stack.stackconfig import PROJECT, parse_stack_config

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HELLO = "examples/hello-world.yaml"
PLACED = [argument for argument in ARGUMENTS if argument.arg.stack is not None]


def _config(**minicluster: Any) -> dict[str, Any]:
    return {"minicluster": {"file": HELLO, **minicluster}}


# --- the machinery, on an argument made up here ------------------------------------------------


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


class _Args(TypedDict, total=False):
    spec: Annotated[dict[str, Any], Arg(required="the spec")]
    flag: Annotated[bool, Arg(check=declaring.message(_flag), stack=Stack("minicluster"))]
    """A new argument."""
    group: Annotated[str, Arg(needs=("flag", "the flag it groups"))]


def test_a_declared_argument_is_checked_and_offered_to_other_languages() -> None:
    declared = declaring.declared(_Args)
    assert [(a.name, a.python) for a in declared] == [
        ("spec", dict[str, Any]),
        ("flag", bool),
        ("group", str),
    ]
    found = declaring.problems(declared, {"flag": 1, "flg": True, "group": "g"})
    assert [(p.path, p.message) for p in found] == [
        ("flg", found[0].message),
        ("spec", "required: the spec"),
        ("flag", "must be true or false"),
    ]
    assert "did you mean 'flag'" in found[0].message
    assert [p.message for p in declaring.problems(declared, {"spec": {}, "group": "g"})] == [
        "needs flag: the flag it groups"
    ]
    inputs = declaring.schema_inputs(declared, "Inputs")
    assert set(inputs.__annotations__) == {"spec", "flag", "group"}
    assert inputs.__required_keys__ == {"spec"}


# --- the component's arguments --------------------------------------------------------------------


def test_the_arguments_are_the_fields_of_miniclusterargs() -> None:
    assert [a.name for a in ARGUMENTS] == list(MiniClusterArgs.__annotations__)
    assert [a.name for a in ARGUMENTS if a.arg.required] == ["spec"]


def test_every_problem_found_before_the_spec_is_read_is_said_at_once() -> None:
    with pytest.raises(SpecError) as caught:
        prepare("mc", {"wait": "soon", "namespace": 3, "wait_timeout": 0})
    assert [p.path for p in caught.value.problems] == ["spec", "namespace", "wait", "wait_timeout"]
    assert caught.value.source == "MiniClusterArgs"


# --- the stack config ----------------------------------------------------------------------------


@pytest.mark.parametrize("argument", PLACED, ids=[a.name for a in PLACED])
def test_the_stack_config_takes_its_arguments_as_keys(argument: declaring.Argument) -> None:
    assert argument.arg.stack is not None
    section = argument.arg.stack.section
    model = stackconfig.StackConfig.model_fields[section].annotation
    assert model is not None
    assert argument.name in model.model_fields
    default = parse_stack_config(_config()).arguments()
    if argument.arg.stack.default is None:
        assert argument.name not in default
    else:
        assert default[argument.name] == argument.arg.stack.default


def test_the_stack_passes_the_argument_keys_to_the_component() -> None:
    config = parse_stack_config(
        {
            **_config(queue="team-a", managedBy="m", waitTimeout=60, wait="none", autoscale=True),
            "cluster": {"networkPolicy": False},
        }
    )
    assert config.arguments() == {
        "wait": "none",
        "network_policy": False,
        "queue": "team-a",
        "managed_by": "m",
        "wait_timeout": 60,
        "autoscale": True,
    }


@pytest.mark.parametrize(
    ("minicluster", "said"),
    [
        (
            {"waitTimeout": 0},
            "minicluster.waitTimeout: must be a positive number of seconds, got 0",
        ),
        ({"autoscale": {"idle": 3}}, "minicluster.autoscale.idle: "),
        ({"wait": "soon"}, "minicluster.wait: "),
        ({"wiat": "none"}, "minicluster.wiat: unknown field; did you mean 'wait'?"),
    ],
)
def test_an_argument_key_is_checked_where_the_stack_config_says_it(
    minicluster: dict[str, Any], said: str
) -> None:
    with pytest.raises(SpecError) as caught:
        parse_stack_config(_config(**minicluster))
    assert f"{PROJECT}:{said}" in str(caught.value)


# --- the docs name every argument ----------------------------------------------------------------


def _named(page: str) -> set[str]:
    return set(re.findall(r"`([A-Za-z_]+)`", (DOCS / page).read_text()))


def test_the_docs_name_every_argument_and_stack_key() -> None:
    assert {a.name for a in ARGUMENTS} <= _named("component.md")
    assert {camel_case(a.name) for a in ARGUMENTS} <= _named("multilanguage.md")
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in (DOCS / "stacks.md").read_text().splitlines()
        if line.startswith(f"| `{PROJECT}:")
    }
    for argument in PLACED:
        assert argument.arg.stack is not None
        row = rows[f"{PROJECT}:{argument.arg.stack.section}"]
        assert f"`{camel_case(argument.name)}`" in row, argument.name
