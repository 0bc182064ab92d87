"""The workload-rebalancer's status logic: Karmada's spec → status merge, triggers, the TTL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.workloadrebalancer import needs_trigger, observed_workloads, time_left


def ref(name: str, kind: str = "Deployment", namespace: str = "default") -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": kind, "namespace": namespace, "name": name}


def rebalancer(
    workloads: list[dict[str, str]],
    observed: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": "r", "generation": 1},
        "spec": {"workloads": workloads, **spec},
        "status": {"observedWorkloads": observed or []},
    }


def test_new_workloads_start_open_and_are_sorted() -> None:
    found = observed_workloads(rebalancer([ref("b"), ref("a"), ref("a", kind="StatefulSet")]))
    assert found == [
        {"workload": ref("a")},
        {"workload": ref("b")},
        {"workload": ref("a", kind="StatefulSet")},
    ]


def test_a_listed_workload_keeps_its_outcome() -> None:
    done = {"workload": ref("a"), "result": "Failed", "reason": "ReferencedBindingNotFound"}
    assert observed_workloads(rebalancer([ref("a")], [done])) == [done]


def test_an_unlisted_workload_stays_only_if_it_succeeded() -> None:
    succeeded = {"workload": ref("old"), "result": "Successful"}
    failed = {"workload": ref("gone"), "result": "Failed", "reason": "ReferencedBindingNotFound"}
    found = observed_workloads(rebalancer([ref("new")], [succeeded, failed]))
    assert found == [{"workload": ref("new")}, succeeded]


def test_a_cluster_scoped_workload_has_no_namespace() -> None:
    (item,) = observed_workloads(
        rebalancer([{"apiVersion": "v1", "kind": "Namespace", "name": "x"}])
    )
    assert item == {"workload": {"apiVersion": "v1", "kind": "Namespace", "name": "x"}}


@pytest.mark.parametrize(
    ("created", "triggered", "expected"),
    [
        pytest.param("2024-05-02T00:00:00Z", None, True, id="never triggered"),
        pytest.param("2024-05-02T00:00:00Z", "2024-05-01T00:00:00Z", True, id="triggered before"),
        pytest.param("2024-05-02T00:00:00Z", "2024-05-02T00:00:00Z", False, id="by this one"),
        pytest.param("2024-05-02T00:00:00Z", "2024-05-03T00:00:00Z", False, id="by a later one"),
        pytest.param("2024-05-02T00:00:00Z", "garbage", True, id="unreadable is replaced"),
    ],
)
def test_needs_trigger(created: str, triggered: str | None, expected: bool) -> None:
    assert needs_trigger(created, triggered) is expected


NOW = datetime(2024, 5, 2, 0, 0, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ttl", "finished", "expected"),
    [
        pytest.param(None, "2024-05-02T00:00:00Z", None, id="no ttl: kept"),
        pytest.param(30, None, None, id="not finished: kept"),
        pytest.param(30, "2024-05-02T00:00:00Z", timedelta(seconds=20), id="20 s left"),
        pytest.param(0, "2024-05-02T00:00:00Z", timedelta(seconds=-10), id="0: due at once"),
    ],
)
def test_time_left(ttl: int | None, finished: str | None, expected: timedelta | None) -> None:
    obj = rebalancer([ref("a")])
    if ttl is not None:
        obj["spec"]["ttlSecondsAfterFinished"] = ttl
    if finished:
        obj["status"]["finishTime"] = finished
    assert time_left(obj, NOW) == expected
