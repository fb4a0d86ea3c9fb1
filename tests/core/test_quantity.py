"""Quantities users write in resources: exact values for valid ones, a clear refusal for typos."""

from __future__ import annotations

from decimal import Decimal

import pytest

from flux_minicluster.core.kube.quantity import parse_quantity


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("500m", Decimal("0.5")),
        ("2", Decimal(2)),
        ("1.5Gi", Decimal(1536 * 1024**2)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("1e+3", Decimal(1000)),
        ("1e-3", Decimal("0.001")),
        ("1.5e2", Decimal(150)),
        ("1E", Decimal(10**18)),  # the exa suffix, not an exponent
        ("1Ki", Decimal(1024)),
        ("12Mi", Decimal(12 * 1024**2)),
        ("2Ti", Decimal(2 * 1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("100n", Decimal("0.0000001")),
        ("10u", Decimal("0.00001")),
        ("0.1k", Decimal(100)),
        ("4M", Decimal(4 * 10**6)),
        ("8G", Decimal(8 * 10**9)),
        ("3T", Decimal(3 * 10**12)),
        ("1P", Decimal(10**15)),
        ("+1", Decimal(1)),
        ("-1.5", Decimal("-1.5")),
        (".5", Decimal("0.5")),
        ("1.", Decimal(1)),
        ("0", Decimal(0)),
        ("007", Decimal(7)),
        ("123456789012345678901234567890Ei", Decimal(123456789012345678901234567890 * 1024**6)),
        (5, Decimal(5)),
        (0.25, Decimal("0.25")),
        (0.1, Decimal("0.1")),
    ],
)
def test_valid_quantities_parse_to_their_exact_value(
    value: str | int | float, expected: Decimal
) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "10GG",
        "",
        " 1",
        "1 ",
        "1K",  # kilo is lowercase k; K only in Ki
        "1ki",
        "1KiB",
        "1mi",
        "1e",
        "1e1.5",
        "e3",
        "Gi",
        "-",
        "+",
        ".",
        "1.2.3",
        "1,5",
        "0x10",
        "1m1",
        "--1",
        "\u0661",  # an Arabic-Indic digit: str.isdigit() says yes, Kubernetes says no
        "1e99999999999",
        True,
        float("nan"),
        float("inf"),
        None,
        [1],
    ],
)
def test_invalid_quantities_are_refused_with_examples(value: object) -> None:
    with pytest.raises(ValueError, match=r"is not a Kubernetes quantity \(examples: 500m, 2, "):
        parse_quantity(value)  # type: ignore[arg-type]


def test_message_quotes_the_value_as_written() -> None:
    expected = "'10GG' is not a Kubernetes quantity (examples: 500m, 2, 1.5Gi, 1e3)"
    with pytest.raises(ValueError, match="10GG") as excinfo:
        parse_quantity("10GG")
    assert str(excinfo.value) == expected
