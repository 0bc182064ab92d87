"""Available replicas from a Cluster's resource summary, like Karmada's general estimator."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import ReplicaRequirements
from controllers.scheduler import available_replicas


def cluster(summary: dict[str, Any] | None) -> dict[str, Any]:
    status = {} if summary is None else {"resourceSummary": summary}
    return {"metadata": {"name": "c"}, "status": status}


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
