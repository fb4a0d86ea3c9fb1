"""Generated specs, valid and broken, against everything a user relies on when deploying one.

Why property tests on top of the example tables: a MiniCluster spec has dozens of optional fields
whose values end up in Kubernetes names, TOML, hostlists and bash, and the bugs live in the
combinations. Two promises are checked on every generated input:

* validation answers with ``SpecError`` (field path and message) or a definition, never another
  exception: the CLI turns a ``SpecError`` into readable lines, anything else is a traceback;
* a spec that validates renders objects the API server accepts (strict 1.34 schemas plus the
  rules only the server enforces), scripts bash can parse, a ``broker.toml`` that is TOML, and a
  ``hostlist`` that lists exactly the ranks the spec declares, in order: a wrong order means
  brokers take each other's ranks.

``make test`` runs the modest, derandomized ``default`` profile; ``make fuzz`` runs the ``fuzz``
profile (many random examples, see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import re
import time
import tomllib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import assume, event, given, note, target
from hypothesis import strategies as st
from support.scriptharness import bash_syntax_errors
from support.strategies import (
    Attacked,
    Mutated,
    SpecCase,
    attacked_examples,
    dump_yaml,
    hostile_text,
    mutated_cases,
    spec_cases,
    unknown_keys,
)

from flux_minicluster import kubecheck
from flux_minicluster.core.base.errors import SpecError, key_path
from flux_minicluster.core.planning import plan as plans
from flux_minicluster.core.reading.loading import load_text, parse
from flux_minicluster.core.render.manifests import render
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import (
    Container,
    FluxSpec,
    Logging,
    MiniClusterSpec,
    Network,
    PodSpec,
)

K8S_VERSION = "1.34"

# Problems the code under test is known to cause, each pinned by a strict xfail in
# test_hostile.py (the case id is the value). The fuzzer keeps running into them and must keep
# looking for new bugs past them; an entry goes when its hostile case starts passing.
KNOWN_BUGS: dict[str, str] = {}


def unexplained(problems: list[str]) -> list[str]:
    """The problems no known bug explains; a known one is reported as a hypothesis event."""
    left = []
    for problem in problems:
        bug = next((case for rx, case in KNOWN_BUGS.items() if re.search(rx, problem)), None)
        if bug is None:
            left.append(problem)
        else:
            event(f"known bug: test_hostile.py case {bug}")
    return left


# --- an oracle for hostlists, independent of flux_minicluster.core.flux.hostlist -----------------


# flux-core refuses a hostlist range of more hosts than this. The oracle refuses it too, at
# once: expanding the range a wrong render holds (``l-[1-2147483647]``) would fill the memory.
FLUX_RANGE_LIMIT = 1 << 20


def expand(hostlist: str) -> Iterator[str]:
    """The hosts of an RFC 29 hostlist of the forms we render (``p[a-b,c]s`` and plain hosts)."""
    for term in re.findall(r"[^,\[]*(?:\[[^\]]*\])?[^,]*", hostlist):
        if not term:
            continue
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", term)
        if match is None:
            yield term
            continue
        prefix, ids, suffix = match.groups()
        for part in ids.split(","):
            lo, _, hi = part.partition("-")
            width = len(lo)
            first, last = int(lo), int(hi or lo)
            assert last - first < FLUX_RANGE_LIMIT, f"{term}: a range Flux refuses"
            for n in range(first, last + 1):
                yield f"{prefix}{str(n).zfill(width)}{suffix}"


def test_the_oracle_expands_what_flux_would() -> None:
    assert list(expand("a-[0-2],b-[1],lead.example.com,c[08-10]x")) == [
        "a-0",
        "a-1",
        "a-2",
        "b-1",
        "lead.example.com",
        "c08x",
        "c09x",
        "c10x",
    ]
    assert len(list(expand(f"a-[1-{FLUX_RANGE_LIMIT}]"))) == FLUX_RANGE_LIMIT
    with pytest.raises(AssertionError, match="a range Flux refuses"):
        list(expand(f"lead.example.com,l-[1-{2**31 - 1}]"))


# --- checks shared by the properties ---------------------------------------------------------


class AsYaml:
    """A document that ``note`` shows as YAML, dumped only when hypothesis reports a failing
    example (not on each of the thousands that pass)."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc

    def __repr__(self) -> str:
        return dump_yaml(self.doc)


def heredocs(script: str) -> dict[str, str]:
    """The bodies of the quoted heredocs (``<<'END'``) in a script, by delimiter."""
    bodies = {}
    lines = script.split("\n")
    for i, line in enumerate(lines):
        for delimiter in re.findall(r"<<'([A-Za-z0-9_]+)'", line):
            end = lines.index(delimiter, i + 1)
            bodies[delimiter] = "\n".join(lines[i + 1 : end])
    return bodies


def rendered_problems(manifests: list[dict[str, Any]]) -> list[str]:
    """What the API server would refuse in these objects; empty when all is well."""
    return kubecheck.refusals(manifests, (K8S_VERSION,))


def config_map_data(manifests: list[dict[str, Any]]) -> dict[str, str]:
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    data: dict[str, str] = config_map["data"]
    return data


def bootstrap_hosts(broker_toml: str) -> list[str]:
    config = tomllib.loads(broker_toml)
    entries = config["bootstrap"]["hosts"]
    return [h for entry in entries for h in expand(entry["host"])]


# --- valid specs ---------------------------------------------------------------------------


@given(case=spec_cases())
def test_every_valid_spec_renders_what_kubernetes_and_flux_accept(
    case: SpecCase, tmp_path_factory: pytest.TempPathFactory
) -> None:
    note(AsYaml(case.doc))
    mc = parse(case.doc)
    assert (mc.name, mc.spec.max_size) == (case.name, case.doc["spec"].get("maxSize", mc.spec.size))

    manifests = render(plans.build(mc)).objects()
    assert rendered_problems(manifests) == []

    data = config_map_data(manifests)
    expected = case.expected_hosts()
    assert list(expand(data["hostlist"].strip())) == expected, "hostlist ranks"
    assert bootstrap_hosts(data["broker.toml"]) == expected, "broker.toml ranks"

    scripts = {k: v for k, v in data.items() if k.endswith(".sh")}
    assert any(k.startswith("wait-") for k in scripts)
    # The scripts the wait script writes (the batch file, commands.script) run too. The job
    # shell's Lua (LUA_* heredocs, fixed text) is Flux's to parse: e2e runs it in real job shells.
    wait = next(v for k, v in scripts.items() if k.startswith("wait-"))
    written = heredocs(wait)
    scripts.update({f"heredoc-{end}": body for end, body in written.items() if end[:4] != "LUA_"})
    tmp = tmp_path_factory.mktemp("scripts")
    assert bash_syntax_errors(scripts, tmp) == {}

    # commands.script travels inside a quoted heredoc: it must arrive whole, even when one of
    # its lines equals the usual delimiter.
    containers = case.doc["spec"]["containers"]
    flux = next(c for c in containers if c.get("runFlux", len(containers) == 1))
    script = flux.get("commands", {}).get("script")
    if script:
        assert script in heredocs(wait).values()


@given(case=spec_cases())
def test_a_valid_spec_reads_the_same_from_yaml(case: SpecCase) -> None:
    """What users write is YAML: a dumped spec must load to the same definition."""
    (from_yaml,) = load_text(dump_yaml(case.doc), source="fuzz.yaml")
    assert from_yaml == parse(case.doc)


# --- broken specs --------------------------------------------------------------------------


def _load(mutated: Mutated) -> list[MiniClusterDefinition]:
    if mutated.text is not None:
        return load_text(mutated.text, source="fuzz.yaml")
    if isinstance(mutated.doc, dict) and "metadata" not in mutated.doc:
        return [parse(mutated.doc, name="fuzzed")]
    return [parse(mutated.doc)]


@given(mutated=mutated_cases())
def test_a_broken_spec_is_a_spec_error_or_renders_correctly(
    mutated: Mutated, tmp_path_factory: pytest.TempPathFactory
) -> None:
    note(mutated.text if mutated.text is not None else AsYaml(mutated.doc))
    try:
        definitions = _load(mutated)
    except SpecError as err:
        error: SpecError | None = err
    else:
        error = None
    if error is not None:
        assert error.problems, "a SpecError names at least one problem"
        assert all(line.strip() for line in error.lines())
        return
    # Accepted: then it is a valid spec, and must render as one.
    for mc in definitions:
        manifests = render(plans.build(mc)).objects()
        assert unexplained(rendered_problems(manifests)) == []
        data = config_map_data(manifests)
        tomllib.loads(data["broker.toml"])
        assert list(expand(data["hostlist"].strip())) == bootstrap_hosts(data["broker.toml"])
        if not mutated.touches_shell_text():
            # Only user commands are shell by design; any other text must be quoted.
            scripts = {k: v for k, v in data.items() if k.endswith(".sh")}
            tmp = tmp_path_factory.mktemp("scripts")
            assert bash_syntax_errors(scripts, tmp) == {}


# Where a spec holds a model of fixed fields (path in the document, the model, its spelling).
MODEL_LEVELS = [
    (("spec",), MiniClusterSpec, "spec"),
    (("spec", "containers", 0), Container, "spec.containers[0]"),
    (("spec", "flux"), FluxSpec, "spec.flux"),
    (("spec", "pod"), PodSpec, "spec.pod"),
    (("spec", "logging"), Logging, "spec.logging"),
    (("spec", "network"), Network, "spec.network"),
]


@given(case=spec_cases(), level=st.sampled_from(MODEL_LEVELS), key=unknown_keys())
def test_an_unknown_key_is_reported_where_it_was_written(
    case: SpecCase, level: tuple[tuple[str | int, ...], type[Any], str], key: str
) -> None:
    """Whatever its spelling (a type name, a builtin, a field of another level...), a key no
    model reads is an error at its own path, never a crash and never another field's."""
    where, model, prefix = level
    fields = {name for n, f in model.model_fields.items() for name in (n, f.alias)}
    assume(key not in fields)
    doc = copy.deepcopy(case.doc)
    target = doc
    for part in where:
        target = target[part] if isinstance(part, int) else target.setdefault(part, {})
    target[key] = 1
    with pytest.raises(SpecError) as info:
        parse(doc)
    expected = key_path(prefix, key)
    assert any(p.path == expected for p in info.value.problems), info.value.lines()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | hostile_text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(unknown_keys(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_any_value_at_all_is_a_spec_error_or_a_definition(value: Any) -> None:
    with contextlib.suppress(SpecError):
        parse(value, name="fuzzed")


@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=400) | st.binary(max_size=400))
def test_any_file_content_is_a_spec_error_or_a_definition(content: str | bytes) -> None:
    from flux_minicluster.core.reading import yamlio

    with contextlib.suppress(SpecError):
        text = yamlio.decode(content, "fuzz.yaml") if isinstance(content, bytes) else content
        load_text(text, source="fuzz.yaml")


# --- the real examples, attacked --------------------------------------------------------------

# The CPU a file may cost to read, validate and render, per MiB of it (the first MiB whole).
SECONDS_PER_MIB = 1.0


@given(attacked=attacked_examples())
def test_an_attacked_example_is_a_spec_error_or_renders_in_bounded_time(
    attacked: Attacked,
) -> None:
    """Aliases (to a value, or inside what they name), tags with literals that do not read as
    them, deep nesting, thousands of keys and control characters in the string fields of the
    bundled examples: each a SpecError (a RecursionError, a KeyError and a 21-second sort were
    found this way) or a spec that renders, in time linear in the file, from YAML and as the
    plain values a program hands the component."""
    note(attacked.text[:4000])
    size = len(attacked.text.encode())
    budget = SECONDS_PER_MIB * max(size / 2**20, 1)
    spent = _cpu(lambda: _load_and_render(attacked))
    # CPU time on a busy machine has noise: what is over the budget is timed twice more, and
    # the fastest of the three counts.
    if spent > budget:
        spent = min(spent, *(_cpu(lambda: _load_and_render(attacked)) for _ in range(2)))
    # steer the search towards the slowest inputs per byte
    target(spent / max(size / 2**20, 1), label="CPU seconds per MiB (the first MiB whole)")
    assert spent <= budget, f"{spent:.2f} s for {size} bytes"


def _cpu(run: Callable[[], None]) -> float:
    """The CPU ``run`` takes, without the garbage collector: its full passes walk every object
    hypothesis keeps (thousands of generated documents), which a `minicluster` process does
    not have; they made one input of 124 kB take 2 s here and 0.5 s on its own. (Collecting
    first, for a clean start, cost more than the input itself once hypothesis held thousands.)"""
    gc.disable()
    try:
        start = time.process_time()
        run()
        return time.process_time() - start
    finally:
        gc.enable()


def _load_and_render(attacked: Attacked) -> None:
    """The attacked example from YAML and as plain values: a SpecError of at most 101 lines
    (from loading, or from the plan, which reads the annotations), or definitions that
    render."""
    for load in (lambda: load_text(attacked.text, source="fuzz.yaml"), lambda: [_parse(attacked)]):
        try:
            for mc in load():
                render(plans.build(mc)).objects()
        except SpecError as err:
            error: SpecError | None = err
        else:
            error = None
        if error is not None:
            assert error.problems, "a SpecError names at least one problem"
            assert all(line.strip() for line in error.lines())
            assert len(error.lines()) <= 101


def _parse(attacked: Attacked) -> MiniClusterDefinition:
    doc = attacked.doc
    return parse(doc, name="fuzzed" if not isinstance(doc, dict) or "metadata" not in doc else None)
