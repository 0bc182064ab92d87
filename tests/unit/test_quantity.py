"""Quantities parse, add and print like the apiserver's (canonical form, nano precision, cap)."""

from __future__ import annotations

import pytest

from reconcile import Quantity, QuantityError, QuantityFormat


@pytest.mark.parametrize(
    ("text", "canonical", "milli", "units"),
    [
        ("100m", "100m", 100, 1),
        ("0.5", "500m", 500, 1),
        ("1000m", "1", 1000, 1),
        ("1.5Gi", "1536Mi", 1_610_612_736_000, 1_610_612_736),
        ("128Mi", "128Mi", 134_217_728_000, 134_217_728),
        ("0.1Ki", "102400m", 102_400, 103),
        ("1025", "1025", 1_025_000, 1025),
        ("1500000000", "1500M", 1_500_000_000_000, 1_500_000_000),
        ("1e3", "1e3", 1_000_000, 1000),
        ("2E3", "2e3", 2_000_000, 2000),
        ("1E", "1E", 10**21, 10**18),
        ("0.0000000001", "1n", 1, 1),
        ("-1.5", "-1500m", -1500, -2),
        ("8Ei", "9223372036854775807", 9223372036854775807000, 9223372036854775807),
        (2.048, "2048m", 2048, 3),
        (2, "2", 2000, 2),
        (".5", "500m", 500, 1),
        ("0", "0", 0, 0),
    ],
)
def test_parse_and_canonical_form(
    text: str | float, canonical: str, milli: int, units: int
) -> None:
    quantity = Quantity.parse(text)
    assert str(quantity) == canonical
    assert quantity.milli_value() == milli
    assert quantity.value() == units


@pytest.mark.parametrize("text", ["", "abc", "1x", "1.2.3", "Mi", "1 Mi", True, None, float("nan")])
def test_not_a_quantity(text: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)  # type: ignore[arg-type]


def test_adding_takes_the_first_nonzero_format() -> None:
    assert str(Quantity.parse("100m") + Quantity.parse("200m")) == "300m"
    assert str(Quantity() + Quantity.parse("1Gi")) == "1Gi"
    assert str(Quantity.parse("1Gi") + Quantity.parse("512Mi")) == "1536Mi"
    assert str(Quantity.parse("1") + Quantity.parse("1Ki")) == "1025"
    assert str(Quantity() + Quantity()) == "0"


def test_constructors_and_float() -> None:
    assert str(Quantity.from_milli(1500, QuantityFormat.DECIMAL_SI)) == "1500m"
    assert str(Quantity.from_units(2048, QuantityFormat.BINARY_SI)) == "2Ki"
    assert str(Quantity.from_units(1000, QuantityFormat.BINARY_SI)) == "1k"
    assert Quantity.parse("250m").as_float() == 0.25


def test_subtraction_is_exact_and_keeps_the_format() -> None:
    free = Quantity.parse("4") - Quantity.parse("1500m") - Quantity.parse("500m")
    assert (free.milli_value(), str(free)) == (2000, "2")
    assert str(Quantity.parse("8Gi") - Quantity.parse("2Gi")) == "6Gi"
    assert (Quantity.parse("1") - Quantity.parse("3")).value() == -2


def test_a_quantity_with_thousands_of_digits_is_a_quantity_error() -> None:
    # int() refuses more than 4,300 digits with a ValueError that is not a QuantityError.
    with pytest.raises(QuantityError, match="too many digits"):
        Quantity.parse("1" * 5000)
