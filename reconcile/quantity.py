"""Quantity is a Kubernetes resource quantity ("100m", "1.5Gi", "2e3") with the apiserver's rules.

Interpreters sum container requests, Lua scripts add quantities (``kube.resourceAdd``) and the
scheduler's estimator subtracts what is allocated from what is allocatable, so the results must
read like the apiserver's: values keep nano precision (anything finer rounds up, away
from zero), are capped at 2^63-1, and print in canonical form, the largest suffix of the value's
format that keeps the number whole (``0.5`` → ``500m``, ``1.5Gi`` → ``1536Mi``, ``1000m`` → ``1``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = ["Quantity", "QuantityError", "QuantityFormat"]

_NANO: Final = 10**9
_MAX_NANOS: Final = (2**63 - 1) * _NANO
_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIX: Final = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL_EXA: Final = ("E", 18)
_DECIMAL_SUFFIX: Final = {exp: suffix for suffix, exp in (*_DECIMAL.items(), _DECIMAL_EXA)}
_NUMBER: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT: Final = re.compile(r"[eE]([+-]?[0-9]+)")
_PATTERN_TEXT: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


class QuantityError(ValueError):
    """A string is not a Kubernetes quantity."""


class QuantityFormat(StrEnum):
    """How a quantity prints: SI suffixes (k, M), binary suffixes (Ki, Mi) or exponents (e3)."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


def _ceil_div(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded up, for non-negative numbers."""
    return -(-numerator // denominator)


def _away_from_zero(nanos_numerator: int, denominator: int) -> int:
    magnitude = _ceil_div(abs(nanos_numerator), denominator)
    return -magnitude if nanos_numerator < 0 else magnitude


def _cap(nanos: int) -> int:
    return max(-_MAX_NANOS, min(_MAX_NANOS, nanos))


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity: ``nanos`` billionths of a unit, printed in ``format``.

    ``format`` None is the zero quantity nothing was added to yet (Go's ``Quantity{}``); adding to
    a zero quantity takes the other operand's format, as the apiserver does.
    """

    nanos: int = 0
    format: QuantityFormat | None = None

    @classmethod
    def parse(cls, value: str | int | float) -> Quantity:
        """Parse ``"1.5Gi"``, ``"100m"``, ``"2e3"``; JSON numbers are read as their decimal text.

        Raises:
            QuantityError: the value is not a quantity.
        """
        text = _text_of(value)
        match = _NUMBER.fullmatch(text)
        if match is None or not (match.group(2) or match.group(3)):
            raise QuantityError(
                f"quantity {text!r} must match the regular expression {_PATTERN_TEXT}"
            )
        sign, whole, fraction, suffix = (
            match.group(1),
            match.group(2),
            match.group(3) or "",
            match.group(4),
        )
        try:
            digits = int((whole + fraction) or "0")
        except ValueError:  # Python's 4,300-digit limit on int(str): far past any real quantity
            raise QuantityError(f"quantity of {len(text)} characters has too many digits") from None
        scale = 10 ** len(fraction)
        if suffix in _BINARY:
            numerator, denominator = digits * 2 ** _BINARY[suffix] * _NANO, scale
            quantity_format = QuantityFormat.BINARY_SI
        else:
            exponent, quantity_format = _decimal_suffix(text, suffix)
            numerator, denominator = _decimal_fraction(digits, exponent + 9, scale)
        nanos = _cap(_away_from_zero(numerator, denominator))
        if sign == "-":
            nanos = -nanos
        if quantity_format is QuantityFormat.BINARY_SI and -_NANO < nanos < _NANO:
            # The apiserver shows values below one binary unit as decimals rather than round them.
            quantity_format = QuantityFormat.DECIMAL_SI
        return cls(nanos, quantity_format)

    @classmethod
    def from_milli(cls, milli: int, quantity_format: QuantityFormat) -> Quantity:
        """A quantity of ``milli`` thousandths (Go's ``NewMilliQuantity``)."""
        return cls(_cap(milli * 10**6), quantity_format)

    @classmethod
    def from_units(cls, units: int, quantity_format: QuantityFormat) -> Quantity:
        """A quantity of whole ``units`` (Go's ``NewQuantity``)."""
        return cls(_cap(units * _NANO), quantity_format)

    def __add__(self, other: Quantity) -> Quantity:
        quantity_format = other.format if self.nanos == 0 else self.format
        return Quantity(_cap(self.nanos + other.nanos), quantity_format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return self + -other

    def milli_value(self) -> int:
        """The value in thousandths, rounded up (CPU is counted in millicores)."""
        return _away_from_zero(self.nanos, 10**6)

    def value(self) -> int:
        """The value in whole units, rounded up (memory is counted in bytes)."""
        return _away_from_zero(self.nanos, _NANO)

    def as_float(self) -> float:
        """The value as a float, possibly inexact (``kube.getResourceQuantity``)."""
        return self.nanos / _NANO

    def __str__(self) -> str:
        if self.nanos == 0:
            return "0"
        quantity_format = self.format or QuantityFormat.DECIMAL_EXPONENT
        if quantity_format is QuantityFormat.BINARY_SI:
            exact_units = self.nanos % _NANO == 0
            if exact_units and abs(self.nanos) >= 1024 * _NANO:
                return _binary_text(self.nanos // _NANO)
            quantity_format = QuantityFormat.DECIMAL_SI
        return _decimal_text(self.nanos, quantity_format)


def _text_of(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"quantity must be a string or a number, got {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity must be finite, got {value}")
        return repr(value)
    return str(value)


def _decimal_suffix(text: str, suffix: str) -> tuple[int, QuantityFormat]:
    if suffix in _DECIMAL:
        return _DECIMAL[suffix], QuantityFormat.DECIMAL_SI
    if suffix == _DECIMAL_EXA[0]:
        return _DECIMAL_EXA[1], QuantityFormat.DECIMAL_SI
    exponent = _EXPONENT.fullmatch(suffix)
    if exponent is None:
        raise QuantityError(f"quantity {text!r} has an unknown suffix {suffix!r}")
    return int(exponent.group(1)), QuantityFormat.DECIMAL_EXPONENT


def _decimal_fraction(digits: int, nano_exponent: int, scale: int) -> tuple[int, int]:
    """digits * 10**nano_exponent / scale as a fraction, without building absurd powers."""
    if digits == 0:
        return 0, 1
    # Past these bounds the value is above the cap, or below one nano (which rounds up to one).
    limit = len(str(digits)) + 60
    nano_exponent = max(-limit, min(limit, nano_exponent))
    if nano_exponent >= 0:
        return digits * 10**nano_exponent, scale
    return digits, scale * 10**-nano_exponent


def _binary_text(units: int) -> str:
    sign, magnitude, power = "-" if units < 0 else "", abs(units), 0
    while magnitude % 1024 == 0 and power < 6:
        magnitude //= 1024
        power += 1
    return f"{sign}{magnitude}{_BINARY_SUFFIX[power]}"


def _decimal_text(nanos: int, quantity_format: QuantityFormat) -> str:
    sign, mantissa, exponent = "-" if nanos < 0 else "", abs(nanos), -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3  # canonical exponents are multiples of three
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if exponent == 0:
        suffix = ""
    elif quantity_format is QuantityFormat.DECIMAL_SI and exponent in _DECIMAL_SUFFIX:
        suffix = _DECIMAL_SUFFIX[exponent]
    else:
        suffix = f"e{exponent}"
    return f"{sign}{mantissa}{suffix}"
