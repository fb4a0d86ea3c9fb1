"""Hostlists decide which pod gets which Flux rank, so order and padding must survive exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flux_minicluster.core.flux.hostlist import (
    HostlistError,
    block,
    compress,
    count,
    expand,
    iter_hosts,
)

EXAMPLES = [
    # The Flux Operator's own forms (reference §2.11).
    ("flux-sample-[0-3]", ["flux-sample-0", "flux-sample-1", "flux-sample-2", "flux-sample-3"]),
    ("flux-sample-[0]", ["flux-sample-0"]),
    (
        "flux-sample-[0-3],gffw-compute-a-[001-003]",
        [
            *(f"flux-sample-{i}" for i in range(4)),
            "gffw-compute-a-001",
            "gffw-compute-a-002",
            "gffw-compute-a-003",
        ],
    ),
    ("flux-sample-0,flux-sample-[1-3]", [f"flux-sample-{i}" for i in range(4)]),
    # RFC 29 test vectors.
    ("", []),
    ("foox,fooy,fooz", ["foox", "fooy", "fooz"]),
    ("[1-3,5-6]", ["1", "2", "3", "5", "6"]),
    ("foo[1-5]", ["foo1", "foo2", "foo3", "foo4", "foo5"]),
    ("foo[0-4]-eth2", [f"foo{i}-eth2" for i in range(5)]),
    ("foo1,foo1,foo1", ["foo1", "foo1", "foo1"]),
    ("[00-02]", ["00", "01", "02"]),
    ("[00-2]", ["00", "01", "02"]),
    ("foo[1,1,2,1]", ["foo1", "foo1", "foo2", "foo1"]),
    # Order as written, never sorted; padding per range from its low bound.
    ("n[3,1-2]", ["n3", "n1", "n2"]),
    ("b,a", ["b", "a"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("n[08-10]", ["n08", "n09", "n10"]),
    ("n[098-100]", ["n098", "n099", "n100"]),
    ("lead.example.com,burst-[1-2]", ["lead.example.com", "burst-1", "burst-2"]),
]


@pytest.mark.parametrize(("hostlist", "hosts"), EXAMPLES)
def test_expand_and_count_agree_with_the_written_order(hostlist: str, hosts: list[str]) -> None:
    assert expand(hostlist) == hosts
    assert list(iter_hosts(hostlist)) == hosts
    assert count(hostlist) == len(hosts)


MALFORMED = [
    ("flux-sample-[0-3", "never closed"),
    ("flux-sample-0-3]", "without a matching '['"),
    ("a[1-2],b]", "'b]'"),
    ("a[1[2]]", "nested"),
    ("a[3-1]", "reversed range '3-1'"),
    ("a[x]", "'x' inside [...]"),
    ("a[1-b]", "'1-b' inside [...]"),
    ("a[-1]", "'-1' inside [...]"),
    ("a[]", "empty entry"),
    ("a[1,,2]", "empty entry"),
    ("a,,b", "term 2 is empty"),
    ("a,", "term 2 is empty"),
    (",a", "term 1 is empty"),
    ("a[1]b[2]", "only one [...] group"),
    ("a b", "' ' is not allowed"),
    ("a,\tb", "'\\t' is not allowed"),
    ("h\u00f6st", "not allowed in a host name"),
    ("a[0-1048576]", "more than 1048576 hosts"),
]


@pytest.mark.parametrize(("hostlist", "fragment"), MALFORMED)
def test_malformed_hostlists_are_refused_with_the_reason(hostlist: str, fragment: str) -> None:
    for call in (expand, count, iter_hosts):
        with pytest.raises(HostlistError) as excinfo:
            call(hostlist)
        assert fragment in str(excinfo.value)
        assert isinstance(excinfo.value, ValueError)


def test_error_names_the_bad_term_not_just_the_whole_list() -> None:
    with pytest.raises(HostlistError) as excinfo:
        expand("good-[0-3],bad-[5-2],other")
    assert excinfo.value.term == "bad-[5-2]"
    assert "'bad-[5-2]'" in str(excinfo.value)


def test_counting_never_expands() -> None:
    huge = ",".join(["node-[0-1048575]"] * 200)  # 209,715,200 hosts: no list of them would fit
    assert count(huge) == 200 * 1048576
    assert next(iter_hosts(huge)) == "node-0"


@pytest.mark.parametrize(
    ("hosts", "expected"),
    [
        (["a-0", "a-1", "a-2", "b"], "a-[0-2],b"),
        ([f"flux-sample-{i}" for i in range(4)], "flux-sample-[0-3]"),
        (
            ["gffw-compute-a-001", "gffw-compute-a-002", "gffw-compute-a-003"],
            "gffw-compute-a-[001-003]",
        ),
        (["n8", "n9", "n10", "n11"], "n[8-11]"),
        (["n-09", "n-010"], "n-09,n-010"),  # brackets would not be shorter
        (["node-9", "node-010", "node-011"], "node-[9,010-011]"),
        (["n-3", "n-1", "n-2", "n-1"], "n-[3,1-2,1]"),  # order and repeats kept
        (["foo0-eth2", "foo1-eth2", "foo2-eth2"], "foo[0-2]-eth2"),
        (["solo-7"], "solo-7"),
        (["a1", "a2"], "a1,a2"),
        ([], ""),
    ],
)
def test_compress_keeps_order_and_prefers_the_shorter_form(hosts: list[str], expected: str) -> None:
    assert compress(hosts) == expected
    assert expand(expected) == hosts


@pytest.mark.parametrize("bad", ["", "a b", "a,b", "a[1]", "x]"])
def test_compress_refuses_names_a_hostlist_cannot_carry(bad: str) -> None:
    with pytest.raises(HostlistError):
        compress(["ok-1", bad])


@pytest.mark.parametrize(
    ("prefix", "size", "expected"),
    [
        ("flux-sample-", 4, "flux-sample-[0-3]"),
        ("flux-sample-", 1, "flux-sample-[0]"),
        ("burst-", 65536, "burst-[0-65535]"),
    ],
)
def test_block_matches_the_operator(prefix: str, size: int, expected: str) -> None:
    assert block(prefix, size) == expected
    assert count(expected) == size


@pytest.mark.parametrize(
    ("prefix", "size"), [("x-", 0), ("x-", -3), ("x-", 1048577), ("bad,prefix-", 2)]
)
def test_block_refuses_sizes_and_prefixes_flux_would_not_read(prefix: str, size: int) -> None:
    with pytest.raises(ValueError, match=r"at least one host|at most 1048576 hosts|not allowed"):
        block(prefix, size)


# --- properties -------------------------------------------------------------------------------

_AFFIX_CHARS = st.sampled_from(list("abz-._:09"))
_numbered = st.builds(
    lambda prefix, n, width, suffix: f"{prefix}{str(n).zfill(width)}{suffix}",
    st.sampled_from(["a-", "node", "x1y", "", "gffw-compute-a-", "r2n"]),
    st.integers(0, 120),
    st.integers(1, 4),
    st.sampled_from(["", "-eth0", ".local", "z"]),
)
_plain = st.text(_AFFIX_CHARS, min_size=1, max_size=8)
host_lists = st.lists(st.one_of(_numbered, _plain), max_size=40)


def _run_of_neighbours(start: int, length: int, width: int) -> list[str]:
    return [f"c-{str(n).zfill(width)}" for n in range(start, start + length)]


host_lists_with_runs = st.lists(
    st.one_of(
        st.builds(lambda h: [h], st.one_of(_numbered, _plain)),
        st.builds(_run_of_neighbours, st.integers(0, 200), st.integers(1, 30), st.integers(1, 3)),
    ),
    max_size=8,
).map(lambda chunks: [host for chunk in chunks for host in chunk])

_range_text = st.builds(
    lambda lo, span, width: (
        str(lo).zfill(width) if span == 0 else f"{str(lo).zfill(width)}-{lo + span}"
    ),
    st.integers(0, 500),
    st.integers(0, 40),
    st.integers(1, 4),
)
_term_text = st.one_of(
    _plain,
    st.builds(
        lambda prefix, ranges, suffix: f"{prefix}[{','.join(ranges)}]{suffix}",
        st.text(_AFFIX_CHARS, max_size=6),
        st.lists(_range_text, min_size=1, max_size=5),
        st.text(_AFFIX_CHARS, max_size=4),
    ),
)
hostlist_texts = st.lists(_term_text, max_size=6).map(",".join)


@given(st.one_of(host_lists, host_lists_with_runs))
def test_compress_round_trips_exactly_and_is_never_longer(hosts: list[str]) -> None:
    packed = compress(hosts)
    assert expand(packed) == hosts
    assert count(packed) == len(hosts)
    assert len(packed) <= len(",".join(hosts))


@given(hostlist_texts)
def test_count_agrees_with_expansion(hostlist: str) -> None:
    hosts = expand(hostlist)
    assert count(hostlist) == len(hosts)
    assert list(iter_hosts(hostlist)) == hosts
    assert expand(compress(hosts)) == hosts
