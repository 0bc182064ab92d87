"""EventRecorder keeps what it writes within what the apiserver accepts."""

from __future__ import annotations

from typing import Any

import aiohttp
import anyio
import pytest

from reconcile import EVENT_MESSAGE_LIMIT, GVK, TRUNCATED_MARKER, EventBroadcaster

pytestmark = pytest.mark.asyncio(loop_scope="session")


class _Writer:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.created.append(obj)
        return obj

    async def patch(
        self, target: GVK, name: str, patch: Any, /, *, namespace: str | None = None
    ) -> dict[str, Any]:
        return {}


async def test_a_long_event_message_is_cut_to_the_limit_in_bytes_with_a_marker() -> None:
    writer = _Writer()
    broadcaster = EventBroadcaster(writer)
    subject = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}
    async with anyio.create_task_group() as group:
        await group.start(broadcaster.run)
        broadcaster.recorder("tester").event(subject, "Warning", "Failed", "é" * 5000)
        with anyio.fail_after(5):
            while not writer.created:
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    message = writer.created[0]["message"]
    assert len(message.encode()) <= EVENT_MESSAGE_LIMIT
    assert message.endswith(TRUNCATED_MARKER)


async def test_aggregation_remembers_a_bounded_number_of_events_least_recent_forgotten() -> None:
    writer = _Writer()
    patched: list[str] = []

    async def patch(target: GVK, name: str, patch: Any, /, *, namespace: str | None = None) -> Any:
        patched.append(name)
        return {}

    writer.patch = patch  # type: ignore[method-assign]
    broadcaster = EventBroadcaster(writer, remembered=3)
    recorder = broadcaster.recorder("tester")

    def subject(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "n"},
        }

    async def settled(creates: int, patches: int) -> None:
        with anyio.fail_after(5):
            while len(writer.created) < creates or len(patched) < patches:
                await anyio.sleep(0.01)

    async with anyio.create_task_group() as group:
        await group.start(broadcaster.run)
        for name in ("a", "b", "c"):
            recorder.event(subject(name), "Normal", "Synced", "ok")
        await settled(3, 0)
        recorder.event(subject("a"), "Normal", "Synced", "ok")  # a repeat: a is now the newest
        await settled(3, 1)
        recorder.event(subject("d"), "Normal", "Synced", "ok")  # pushes out b, the oldest
        await settled(4, 1)
        recorder.event(subject("a"), "Normal", "Synced", "ok")  # still remembered
        recorder.event(subject("b"), "Normal", "Synced", "ok")  # forgotten: a new Event
        await settled(5, 2)
        group.cancel_scope.cancel()
    assert [e["involvedObject"]["name"] for e in writer.created] == ["a", "b", "c", "d", "b"]
    assert len(broadcaster.correlator) == 3


async def test_a_failing_write_of_any_kind_is_counted_and_the_next_event_written() -> None:
    writer = _Writer()
    failures = [RuntimeError("not leader"), aiohttp.ServerDisconnectedError(), KeyError("kind")]

    async def create(obj: dict[str, Any]) -> dict[str, Any]:
        if failures:
            raise failures.pop(0)
        writer.created.append(obj)
        return obj

    writer.create = create  # type: ignore[method-assign]
    broadcaster = EventBroadcaster(writer)
    subject = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}
    async with anyio.create_task_group() as group:
        await group.start(broadcaster.run)
        for reason in ("One", "Two", "Three", "Four"):
            broadcaster.recorder("tester").event(subject, "Normal", reason, "m")
        with anyio.fail_after(5):
            while not writer.created:
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert broadcaster.failed == 3
    assert [e["reason"] for e in writer.created] == ["Four"]


async def test_every_outcome_of_a_recorded_event_is_counted_in_the_events_metric() -> None:
    from prometheus_client import CollectorRegistry

    from reconcile.metrics import register_event_metrics

    writer = _Writer()
    broadcaster = EventBroadcaster(writer, buffer=3)
    registry = CollectorRegistry()
    register_event_metrics(registry, broadcaster)
    subject = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}
    recorder = broadcaster.recorder("tester")
    for index in range(5):  # nothing writes yet: 3 fit the buffer, 2 are dropped
        recorder.event(subject, "Normal", "Synced", f"step {index % 2}")

    def count(outcome: str) -> float | None:
        return registry.get_sample_value("reconcile_events_total", {"outcome": outcome})

    assert count("dropped") == 2
    async with anyio.create_task_group() as group:
        await group.start(broadcaster.run)
        with anyio.fail_after(5):
            while (count("created") or 0) + (count("patched") or 0) < 3:
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    # "step 0", "step 1", then "step 0" again: a repeat patches the Event written for it.
    assert (count("created"), count("patched"), count("failed")) == (2, 1, 0)
    assert len(writer.created) == 2
