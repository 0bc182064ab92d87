"""Available replicas from a Cluster's resource summary, like Karmada's general estimator."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from controllers.api import ReplicaRequirements
from controllers.scheduler import available_replicas, parse_quantity


def cluster(summary: dict[str, Any] | None) -> dict[str, Any]:
    status = {} if summary is None else {"resourceSummary": summary}
    return {"metadata": {"name": "c"}, "status": status}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("500m", Fraction(1, 2), id="a milli suffix means thousandths"),
        pytest.param("1.5Gi", Fraction(3 * 2**29), id="a binary suffix scales a fraction exactly"),
        pytest.param("2e3", Fraction(2000), id="a decimal exponent multiplies by a power of ten"),
        pytest.param("4k", Fraction(4000), id="a decimal suffix multiplies by a power of ten"),
        pytest.param(8, Fraction(8), id="a JSON number is read as itself"),
        pytest.param("12E", Fraction(12 * 10**18), id="E alone is exa, not an exponent"),
    ],
)
def test_quantities_parse_exactly(text: str | int, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="an empty string is not a quantity"),
        pytest.param("abc", id="letters alone are not a quantity"),
        pytest.param("1.2.3", id="two decimal points are not a quantity"),
        pytest.param("5Qi", id="an unknown suffix is not a quantity"),
    ],
)
def test_invalid_quantities_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(text)


SUMMARY = {
    "allocatable": {"pods": "110", "cpu": "4", "memory": "8Gi"},
    "allocated": {"pods": "10", "cpu": "1500m", "memory": "2Gi"},
    "allocating": {"pods": "0", "cpu": "500m"},
}


@pytest.mark.parametrize(
    ("summary", "requirements", "expected"),
    [
        pytest.param(None, None, 0, id="no resource summary fits nothing"),
        pytest.param(SUMMARY, None, 100, id="without requirements the free pod slots count"),
        pytest.param(
            SUMMARY, {"resourceRequest": {"cpu": "500m"}}, 4, id="cpu in millicores: 2000m / 500m"
        ),
        pytest.param(
            SUMMARY,
            {"resourceRequest": {"cpu": "100m", "memory": "1Gi"}},
            6,
            id="the scarcest resource decides: 6Gi / 1Gi beats 2000m / 100m",
        ),
        pytest.param(
            SUMMARY,
            {"resourceRequest": {"nvidia.com/gpu": "1"}},
            0,
            id="a resource the cluster does not offer fits nothing",
        ),
        pytest.param(
            {"allocatable": {"pods": "3", "cpu": "64"}},
            {"resourceRequest": {"cpu": "1"}},
            3,
            id="free pod slots cap the answer",
        ),
        pytest.param(
            {"allocatable": {"pods": "5", "cpu": "1"}, "allocated": {"cpu": "1"}},
            {"resourceRequest": {"cpu": "10m"}},
            0,
            id="no free cpu fits nothing",
        ),
        pytest.param(
            {"allocatable": {"pods": "5"}, "allocated": {"pods": "7"}},
            None,
            0,
            id="over-allocated pods never go negative",
        ),
    ],
)
def test_available_replicas(
    summary: dict[str, Any] | None, requirements: ReplicaRequirements | None, expected: int
) -> None:
    assert available_replicas(cluster(summary), requirements) == expected
