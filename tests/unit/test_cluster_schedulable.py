"""A Cluster counts as schedulable only once the scheduler would consider it: Ready, its APIs
listed, and its not-ready and unreachable taints removed (each written separately, in turn)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.cluster import cluster_schedulable
from controllers.cluster.taints import NOT_READY_TAINT, UNREACHABLE_TAINT


def cluster(ready: str | None = "True", apis: bool = True, taints: Any = ()) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    if apis:
        status["apiEnablements"] = [{"groupVersion": "apps/v1", "resources": []}]
    return {"metadata": {"name": "member1"}, "spec": {"taints": list(taints)}, "status": status}


def test_a_ready_untainted_cluster_with_its_apis_is_schedulable() -> None:
    other = {"key": "example.com/dedicated", "effect": "NoSchedule"}
    assert cluster_schedulable(cluster(taints=[other]))


@pytest.mark.parametrize(
    "obj",
    [
        cluster(ready=None),
        cluster(ready="False"),
        cluster(apis=False),
        cluster(taints=[NOT_READY_TAINT]),
        cluster(taints=[UNREACHABLE_TAINT]),
    ],
    ids=["no Ready yet", "not Ready", "APIs not listed", "not-ready taint", "unreachable taint"],
)
def test_anything_short_of_that_is_not(obj: dict[str, Any]) -> None:
    assert not cluster_schedulable(obj)
