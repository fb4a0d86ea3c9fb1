"""Kubernetes' size limits, refused before anything is created, at the spec field responsible.

A ConfigMap's or Secret's data over 1 MiB, annotations over 256 KiB, an object too large for
etcd to store (1.5 MiB per request): the API server refuses each, but only once ``pulumi up``
has created everything before it. Rendering refuses them first (``validate``, ``render`` and
the component all render), naming the spec field that made the object large; kubecheck applies
the same rule to any manifest. tests/e2e/test_server_validation.py holds the rule against a
real API server: the same limits, the same verdicts; tests/cli/test_cli_sizes.py the exit code
and message of the command line.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.sizecases import JUST_UNDER, TOO_LARGE, render_unchecked

from flux_minicluster import kubecheck
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube import limits
from flux_minicluster.core.planning.plan import build
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import render


@pytest.mark.parametrize(("doc", "field", "fragment"), TOO_LARGE.values(), ids=list(TOO_LARGE))
def test_an_object_too_large_is_refused_at_its_spec_field(
    doc: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(SpecError) as info:
        render(build(parse(doc)))
    (problem,) = info.value.problems
    assert problem.path == field
    assert fragment in problem.message
    # kubecheck, over the objects as rendered without the check, says the same of the object.
    objects = render_unchecked(doc)
    assert any("too large" in e for e in kubecheck.semantic_errors(objects))


@pytest.mark.parametrize("doc", JUST_UNDER.values(), ids=list(JUST_UNDER))
def test_an_object_just_under_the_limits_renders(doc: dict[str, Any]) -> None:
    objects = render(build(parse(doc))).objects()
    assert not [e for e in kubecheck.semantic_errors(objects) if "too large" in e]


def test_a_secret_counts_its_decoded_data_and_string_data() -> None:
    secret = {
        "kind": "Secret",
        "data": {"a": "eHh4"},  # 3 bytes decoded
        "stringData": {"b": "x" * limits.MAX_DATA_BYTES},
    }
    assert limits.data_bytes(secret) == limits.MAX_DATA_BYTES + 3
    assert [w for w, _ in limits.size_problems(secret)] == ["data"]
    del secret["data"]
    assert limits.size_problems(secret) == []


@given(st.recursive(st.text() | st.integers() | st.none(), lambda c: st.lists(c, max_size=4)))
def test_the_stored_size_counts_json_as_json_writes_it(value: Any) -> None:
    """stored_bytes counts the JSON of keys and list items without writing most of it: the same
    number as writing it (the estimate is held against the real API server in e2e)."""
    import json

    manifest = {"metadata": {"name": "x", "annotations": {str(value): "v"}}, "data": [value]}
    written = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False)
    assert limits.stored_bytes(manifest) == len(written.encode()) + _written_fieldset(manifest)


def _written_fieldset(value: Any) -> int:
    """The managedFields field set's size, spelled out with json.dumps at every step."""
    import json

    if isinstance(value, dict):
        return 2 + sum(len(json.dumps(str(k))) + 4 + _written_fieldset(v) for k, v in value.items())
    if isinstance(value, list):
        total = 2
        for index, item in enumerate(value):
            if isinstance(item, dict) and "name" in item:
                key = json.dumps(json.dumps({"name": item["name"]}, separators=(",", ":")))
                total += len(key) + 4 + 7 + _written_fieldset(item)
            else:
                total += len(json.dumps(f"v:{json.dumps(item)}" if item else f"i:{index}")) + 4
        return total
    return 2


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(st.text(max_size=8), children, max_size=6)
        | st.lists(st.fixed_dictionaries({"name": st.text(max_size=6)}, optional={"v": children}))
    ),
    max_leaves=40,
)


@pytest.mark.parametrize(
    "value",
    [
        [0] * 20_000,  # falsy items are counted by index: the worst case
        [""] * 5_000,
        [{}] * 5_000,
        [[]] * 5_000,
        ["é" * 50] * 100,
        [{"name": '"' * 20}] * 50,
        {"\u2603" * 30: [False] * 300},
    ],
    ids=["zeros", "empty-strings", "empty-maps", "empty-lists", "non-ascii", "quotes", "mixed"],
)
def test_the_field_set_bound_holds_at_its_worst(value: Any) -> None:
    _assert_bounded(value)


@given(_JSON)
def test_the_field_set_is_at_most_its_bound_times_the_json(value: Any) -> None:
    """Rendering counts the stored size only of an object whose JSON is large enough to reach
    the limit (``stored_bytes_may_exceed``): the bound it relies on."""
    _assert_bounded(value)


def _assert_bounded(value: Any) -> None:
    import json

    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert _written_fieldset(value) <= limits.FIELDSET_JSON_RATIO * len(text.encode())
    assert limits.stored_bytes({"v": value}) <= (1 + limits.FIELDSET_JSON_RATIO) * len(
        json.dumps({"v": value}, separators=(",", ":"), ensure_ascii=False).encode()
    )


# What kubectl v1.32 wrote as the last-applied annotation of this ConfigMap (`kubectl create
# --save-config --dry-run=client -o json`): keys sorted, <, > and & and U+2028 escaped, é and the
# tab as JSON has them, the annotations it keeps (and an empty mapping for none), a newline.
KUBECTL_SAW = (
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default", "annotations": {"a": "b"}},
        "data": {"s": "echo > /dev/null 2>&1 && x < y \u2028 é \t"},
    },
    '{"apiVersion":"v1","data":{"s":"echo \\u003e /dev/null 2\\u003e\\u00261 \\u0026\\u0026 x '
    '\\u003c y \\u2028 é \\t"},"kind":"ConfigMap","metadata":{"annotations":{"a":"b"},"name":"x",'
    '"namespace":"default"}}\n',
)


@pytest.mark.parametrize("own", [{"a": "b"}, None], ids=["annotated", "no-annotations"])
def test_the_client_apply_annotation_is_counted_as_kubectl_writes_it(
    own: dict[str, str] | None,
) -> None:
    obj, written = KUBECTL_SAW
    meta = dict(obj["metadata"])
    if own is None:
        del meta["annotations"]
        written = written.replace('"annotations":{"a":"b"}', '"annotations":{}')
    total = sum(len(k) + len(v.encode()) for k, v in (own or {}).items())
    expected = total + len(limits.LAST_APPLIED_ANNOTATION) + len(written.encode())
    assert limits.client_apply_annotations_bytes({**obj, "metadata": meta}) == expected
