"""Unit tests of application failover: the unhealthy timer and toleration, the task options,
state preservation (JSONPath, injection), and the controller's evictions on a fake host."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from controllers.api import AggregatedStatusItem
from controllers.eviction.applicationfailover import (
    CLUSTER_RESOURCE_BINDING_PRODUCER,
    RESOURCE_BINDING_PRODUCER,
    ApplicationFailoverController,
    task_options,
)
from controllers.eviction.jsonpath import JsonPathError, evaluate
from controllers.eviction.preservation import (
    StatePreservationError,
    injected_labels,
    preserved_label_state,
)
from controllers.eviction.taintmanager import purge_mode_for
from controllers.eviction.unhealthy import UnhealthyTracker, toleration_of
from controllers.interpreter import Interpreter
from reconcile import GVK, ApiError, NotFound, Request


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def items(**health: str) -> list[AggregatedStatusItem]:
    return [
        AggregatedStatusItem(clusterName=c, health=h, status={"id": f"{c}-1"})  # type: ignore[typeddict-item]
        for c, h in health.items()
    ]


def targets(*clusters: str, tasks: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "clusters": [{"name": c, "replicas": 1} for c in clusters],
        "gracefulEvictionTasks": [{"fromCluster": t} for t in tasks],
    }


# --- the decision ------------------------------------------------------------------------------


def test_a_copy_is_evicted_once_unhealthy_for_the_toleration() -> None:
    clock = Clock()
    tracker = UnhealthyTracker(clock)
    spec = targets("m1", "m2")
    first = tracker.detect("ns/b", spec, items(m1="Unhealthy", m2="Healthy"), 10)
    assert (first.evict, first.retry) == ([], 10), "the timer starts at the first sight"
    clock.now += 9
    later = tracker.detect("ns/b", spec, items(m1="Unhealthy", m2="Healthy"), 10)
    assert later.evict == []
    assert later.retry == pytest.approx(1)
    clock.now += 1
    assert tracker.detect("ns/b", spec, items(m1="Unhealthy", m2="Healthy"), 10).evict == ["m1"]


def test_healthy_again_within_the_toleration_resets_the_timer() -> None:
    clock = Clock()
    tracker = UnhealthyTracker(clock)
    spec = targets("m1", "m2")
    tracker.detect("ns/b", spec, items(m1="Unhealthy"), 10)
    clock.now += 8
    assert tracker.detect("ns/b", spec, items(m1="Healthy"), 10).retry is None
    assert tracker.since("ns/b") == {}
    clock.now += 8
    again = tracker.detect("ns/b", spec, items(m1="Unhealthy"), 10)
    assert (again.evict, again.retry) == ([], 10), "counted from zero"


def test_unknown_keeps_the_timer_running() -> None:
    clock = Clock()
    tracker = UnhealthyTracker(clock)
    spec = targets("m1")
    tracker.detect("ns/b", spec, items(m1="Unhealthy"), 10)
    clock.now += 6
    tracker.detect("ns/b", spec, items(m1="Unknown"), 10)
    clock.now += 4
    assert tracker.detect("ns/b", spec, items(m1="Unhealthy"), 10).evict == ["m1"]


def test_clusters_being_evicted_or_no_longer_targets_are_not_counted() -> None:
    clock = Clock()
    tracker = UnhealthyTracker(clock)
    tracker.detect("ns/b", targets("m1", "m2"), items(m1="Unhealthy", m2="Unhealthy"), 10)
    clock.now += 20
    moved = targets("m2", tasks=("m1",))
    assert tracker.detect("ns/b", moved, items(m1="Unhealthy", m2="Unhealthy"), 10).evict == ["m2"]
    assert set(tracker.since("ns/b")) == {"m2"}, "m1 left the targets: its time is dropped"


def test_a_zero_toleration_evicts_at_first_sight_and_bindings_are_apart() -> None:
    tracker = UnhealthyTracker(Clock())
    assert tracker.detect("a", targets("m1"), items(m1="Unhealthy"), 0).evict == ["m1"]
    assert tracker.detect("b", targets("m1"), items(m1="Unhealthy"), 5).evict == []
    tracker.forget("b")
    assert tracker.since("b") == {}


@pytest.mark.parametrize(
    ("application", "seconds"),
    [
        ({}, 300),
        ({"decisionConditions": {}}, 300),
        ({"decisionConditions": {"tolerationSeconds": 2}}, 2),
    ],
    ids=["unset", "empty", "set"],
)
def test_toleration_default(application: dict[str, Any], seconds: float) -> None:
    assert toleration_of(application) == seconds


@pytest.mark.parametrize(
    ("application", "options"),
    [
        ({}, {"purge_mode": "Graciously", "grace_period_seconds": None}),
        (
            {"purgeMode": "Gracefully", "gracePeriodSeconds": 30},
            {"purge_mode": "Gracefully", "grace_period_seconds": 30},
        ),
        ({"purgeMode": "Never"}, {"purge_mode": "Never", "suppress_deletion": True}),
        ({"purgeMode": "Immediately"}, {"purge_mode": "Immediately"}),
        ({"purgeMode": "Directly"}, {"purge_mode": "Directly"}),
    ],
    ids=["default", "gracefully", "never", "immediately", "directly"],
)
def test_task_options(application: dict[str, Any], options: dict[str, Any]) -> None:
    assert task_options(application) == options


@pytest.mark.parametrize(
    ("failover", "mode"),
    [
        (None, "Directly"),
        ({"cluster": {}}, "Gracefully"),
        ({"cluster": {"purgeMode": "Directly"}}, "Directly"),
        ({"application": {"purgeMode": "Never"}}, "Directly"),
    ],
    ids=["flag", "cluster-default", "cluster", "application-only"],
)
def test_cluster_failover_purge_mode(failover: dict[str, Any] | None, mode: str) -> None:
    binding = {"spec": {"failover": failover} if failover else {}}
    assert purge_mode_for(binding, "Directly") == mode


# --- state preservation ------------------------------------------------------------------------

STATUS = {
    "jobStatus": {"jobID": "abc123", "state": "FAILED"},
    "replicas": 2,
    "ready": True,
    "conditions": [{"type": "Ready", "status": "False"}, {"type": "Synced", "status": "True"}],
}


@pytest.mark.parametrize(
    ("template", "text"),
    [
        ("{.jobStatus.jobID}", "abc123"),
        ("{ .jobStatus.jobID }", "abc123"),
        ("{$.replicas}", "2"),
        ("{.ready}", "true"),
        ("id-{.jobStatus.jobID}-{.replicas}", "id-abc123-2"),
        ("{.conditions[0].type}", "Ready"),
        ("{.conditions[-1].type}", "Synced"),
        ("{.conditions[*].type}", "Ready Synced"),
        ('{.conditions[?(@.type=="Synced")].status}', "True"),
        ("{.conditions[?(@.type != 'Synced')].type}", "Ready"),
        ("{..jobID}", "abc123"),
        ("{.jobStatus['state']}", "FAILED"),
        ("{.conditions[0:1].type}", "Ready"),
        ("{.jobStatus}", '{"jobID":"abc123","state":"FAILED"}'),
    ],
)
def test_jsonpath(template: str, text: str) -> None:
    assert evaluate(template, STATUS) == text


@pytest.mark.parametrize(
    "template",
    ["{.jobStatus.missing}", "{.conditions[5].type}", "{.a", "{range .x}{end}", "{.a b}"],
)
def test_jsonpath_errors(template: str) -> None:
    with pytest.raises(JsonPathError):
        evaluate(template, STATUS)


RULES = {
    "rules": [{"aliasLabelName": "failover.example.io/job-id", "jsonPath": "{.jobStatus.jobID}"}]
}


def test_the_failed_clusters_state_is_preserved() -> None:
    aggregated = cast(
        list[AggregatedStatusItem],
        [{"clusterName": "m2", "status": {}}, {"clusterName": "m1", "status": STATUS}],
    )
    assert preserved_label_state(RULES, aggregated, "m1") == {
        "failover.example.io/job-id": "abc123"
    }
    assert preserved_label_state(None, aggregated, "m1") == {}


@pytest.mark.parametrize(
    ("rules", "status", "message"),
    [
        (RULES, None, "not yet been collected"),
        ({"rules": [{"aliasLabelName": "x", "jsonPath": "{.nope}"}]}, STATUS, "nope is not found"),
        (
            {"rules": [{"aliasLabelName": "x", "jsonPath": "{.jobStatus}"}]},
            STATUS,
            "not a valid label value",
        ),
    ],
    ids=["not-collected", "missing-field", "bad-value"],
)
def test_state_that_cannot_be_preserved_is_a_clear_error(
    rules: dict[str, Any], status: dict[str, Any] | None, message: str
) -> None:
    item: dict[str, Any] = {"clusterName": "m1"}
    if status is not None:
        item["status"] = status
    with pytest.raises(StatePreservationError, match=message):
        preserved_label_state(rules, [cast(AggregatedStatusItem, item)], "m1")


def last_task(purge_mode: str, before: list[str] | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {
        "fromCluster": "m1",
        "purgeMode": purge_mode,
        "preservedLabelState": {"k": "v"},
    }
    if before is not None:
        task["clustersBeforeFailover"] = before
    return {
        "gracefulEvictionTasks": [{"fromCluster": "old", "preservedLabelState": {"o": "1"}}, task]
    }


@pytest.mark.parametrize(
    ("spec", "cluster", "count", "labels"),
    [
        (last_task("Immediately", ["m1"]), "m2", 1, {"k": "v"}),
        (last_task("Directly"), "m2", 1, {"k": "v"}),
        (last_task("Immediately", ["m1"]), "m2", 2, {}),
        (last_task("Graciously", ["m1"]), "m2", 1, {}),
        (last_task("Gracefully", ["m1"]), "m2", 1, {}),
        (last_task("Immediately", ["m1", "m2"]), "m2", 1, {}),
        ({}, "m2", 1, {}),
    ],
    ids=[
        "immediately",
        "directly",
        "several-targets",
        "graciously",
        "gracefully",
        "not-new",
        "no-task",
    ],
)
def test_injection_follows_karmadas_restrictions(
    spec: dict[str, Any], cluster: str, count: int, labels: dict[str, str]
) -> None:
    assert injected_labels(spec, cluster, count) == labels


# --- the controller ----------------------------------------------------------------------------

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"}


def binding(
    application: dict[str, Any] | None, *, namespace: str = "ns", **health: str
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resource": DEPLOYMENT,
        "clusters": [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}],
    }
    if application is not None:
        spec["failover"] = {"application": application}
    meta: dict[str, Any] = {"name": "web-deployment", "resourceVersion": "1"}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding" if namespace else "ClusterResourceBinding",
        "metadata": meta,
        "spec": spec,
        "status": {
            "aggregatedStatus": [
                {"clusterName": c, "health": h, "status": STATUS} for c, h in health.items()
            ]
        },
    }


class FakeClient:
    def __init__(self, obj: dict[str, Any] | None, fail: bool = False) -> None:
        self.obj, self.fail, self.updates = obj, fail, cast(list[dict[str, Any]], [])

    async def get(self, gvk: GVK, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.obj is None:
            raise NotFound({"code": 404, "reason": "NotFound", "message": name})
        return copy.deepcopy(self.obj)

    async def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise ApiError({"code": 409, "reason": "Conflict", "message": "modified"})
        self.updates.append(obj)
        self.obj = obj
        return obj


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


def controller(client: FakeClient, clock: Clock) -> tuple[ApplicationFailoverController, Recorder]:
    recorder = Recorder()
    reconciler = ApplicationFailoverController(
        client,  # type: ignore[arg-type]
        recorder,  # type: ignore[arg-type]
        Interpreter(),
        UnhealthyTracker(clock),
    )
    return reconciler, recorder


APPLICATION = {
    "decisionConditions": {"tolerationSeconds": 2},
    "purgeMode": "Graciously",
    "gracePeriodSeconds": 60,
    "statePreservation": RULES,
}


@pytest.mark.asyncio
async def test_the_controller_evicts_after_the_toleration_with_karmadas_task() -> None:
    clock = Clock()
    client = FakeClient(binding(APPLICATION, m1="Unhealthy", m2="Healthy"))
    reconciler, recorder = controller(client, clock)
    request = Request("web-deployment", "ns")
    first = await reconciler.reconcile(request)
    assert first is not None
    assert first.requeue_after == 2
    assert client.updates == []
    clock.now += 2
    assert await reconciler.reconcile(request) is None
    [updated] = client.updates
    assert updated["spec"]["clusters"] == [{"name": "m2", "replicas": 1}]
    [task] = updated["spec"]["gracefulEvictionTasks"]
    assert task["fromCluster"] == "m1"
    assert task["replicas"] == 2
    assert task["reason"] == "ApplicationFailure"
    assert task["producer"] == RESOURCE_BINDING_PRODUCER
    assert task["purgeMode"] == "Graciously"
    assert task["gracePeriodSeconds"] == 60
    assert task["preservedLabelState"] == {"failover.example.io/job-id": "abc123"}
    assert task["clustersBeforeFailover"] == ["m1", "m2"]
    assert [e[:2] for e in recorder.events] == [("Normal", "EvictWorkloadFromClusterSucceed")]


@pytest.mark.asyncio
async def test_a_cluster_binding_gets_the_cluster_producer() -> None:
    clock = Clock()
    application = {"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": "Never"}
    client = FakeClient(binding(application, namespace="", m2="Unhealthy"))
    reconciler, _ = controller(client, clock)
    await reconciler.reconcile(Request("web-deployment"))
    [task] = client.updates[0]["spec"]["gracefulEvictionTasks"]
    assert task["producer"] == CLUSTER_RESOURCE_BINDING_PRODUCER
    assert task["suppressDeletion"] is True
    assert "preservedLabelState" not in task
    assert "clustersBeforeFailover" not in task


@pytest.mark.asyncio
async def test_without_failover_or_status_nothing_happens() -> None:
    for obj in (binding(None, m1="Unhealthy"), binding(APPLICATION), None):
        client = FakeClient(obj)
        reconciler, _ = controller(client, Clock())
        assert await reconciler.reconcile(Request("web-deployment", "ns")) is None
        assert client.updates == []
        assert reconciler.tracker.since("ns/web-deployment") == {}


@pytest.mark.asyncio
async def test_state_not_extractable_is_an_event_and_the_eviction_waits() -> None:
    clock = Clock()
    application = {**APPLICATION, "decisionConditions": {"tolerationSeconds": 0}}
    application["statePreservation"] = {"rules": [{"aliasLabelName": "x", "jsonPath": "{.nope}"}]}
    client = FakeClient(binding(application, m1="Unhealthy"))
    reconciler, recorder = controller(client, clock)
    result = await reconciler.reconcile(Request("web-deployment", "ns"))
    assert result is not None
    assert result.requeue_after == 5.0
    assert client.updates == []
    assert recorder.events[0][:2] == ("Warning", "EvictWorkloadFromClusterFailed")
    assert "nope is not found" in recorder.events[0][2]


@pytest.mark.asyncio
async def test_a_failed_write_is_an_event_and_raises_for_backoff() -> None:
    application = {**APPLICATION, "decisionConditions": {"tolerationSeconds": 0}}
    client = FakeClient(binding(application, m1="Unhealthy"), fail=True)
    reconciler, recorder = controller(client, Clock())
    with pytest.raises(ApiError):
        await reconciler.reconcile(Request("web-deployment", "ns"))
    assert recorder.events[0][:2] == ("Warning", "EvictWorkloadFromClusterFailed")
    assert "m1" in reconciler.tracker.since("ns/web-deployment"), "evicted again next time"
