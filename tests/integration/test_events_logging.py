"""Events are written and aggregated on the real apiserver; reconcile logs carry their context."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import structlog

from reconcile import (
    GVK,
    Channel,
    ClusterConfig,
    Controller,
    EnqueueRequestForObject,
    EventBroadcaster,
    Request,
    Result,
)
from reconcile.client.client import Client
from testenv import ControlPlane, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENT = GVK("", "v1", "Event")


async def _client(host: ControlPlane) -> Client:
    config = await ClusterConfig.from_kubeconfig(
        host.kubeconfig, temp_dir=host.directory / "client"
    )
    return Client(config)


async def _configmap(client: Client, namespace: str, name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})


async def test_repeated_events_are_aggregated_into_one_with_a_count(
    host: ControlPlane, namespace: str
) -> None:
    async with await _client(host) as client:
        subject = await _configmap(client, namespace, "subject")
        broadcaster = EventBroadcaster(client)
        recorder = broadcaster.recorder("tester")
        async with anyio.create_task_group() as group:
            await group.start(broadcaster.run)
            for _ in range(3):
                recorder.event(subject, "Warning", "ApplyFailed", "member1 refused the object")
            recorder.event(subject, "Normal", "Applied", "applied to member2")

            async def recorded() -> list[dict[str, Any]] | None:
                events = (await client.list(EVENT, namespace=namespace))["items"]
                counts = sorted((e["reason"], e.get("count")) for e in events)
                return events if counts == [("Applied", 1), ("ApplyFailed", 3)] else None

            events = await eventually(recorded, timeout=20)
            group.cancel_scope.cancel()
    failed = next(e for e in events if e["reason"] == "ApplyFailed")
    assert failed["type"] == "Warning"
    assert failed["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert failed["involvedObject"]["kind"] == "ConfigMap"
    assert failed["source"]["component"] == "tester"
    assert broadcaster.dropped == 0


async def test_ten_similar_events_are_combined_into_one_event_on_the_apiserver(
    host: ControlPlane, namespace: str
) -> None:
    async with await _client(host) as client:
        subject = await _configmap(client, namespace, "flappy")
        broadcaster = EventBroadcaster(client)
        recorder = broadcaster.recorder("tester")
        async with anyio.create_task_group() as group:
            await group.start(broadcaster.run)
            for index in range(12):
                recorder.event(subject, "Warning", "ApplyFailed", f"member{index} refused")

            async def recorded() -> list[dict[str, Any]] | None:
                events = (await client.list(EVENT, namespace=namespace))["items"]
                combined = [e for e in events if e["message"].startswith("(combined")]
                return events if combined and combined[0].get("count") == 3 else None

            events = await eventually(recorded, timeout=20)
            group.cancel_scope.cancel()
    messages = sorted(e["message"] for e in events)
    assert messages == sorted(
        [f"member{index} refused" for index in range(9)]
        + ["(combined from similar events): member11 refused"]
    )
    assert broadcaster.failed == 0


async def test_reconcile_logs_carry_controller_request_and_reconcile_id() -> None:
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](10)
    seen = anyio.Event()

    async def reconcile(request: Request) -> Result | None:
        structlog.get_logger("test").info("working")
        seen.set()
        return None

    controller = Controller("logged", reconcile)
    controller.watch(Channel(receive, EnqueueRequestForObject()))
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        async with anyio.create_task_group() as group:
            await group.start(controller.run)
            await send.send({"metadata": {"name": "obj", "namespace": "ns"}})
            with anyio.fail_after(5):
                await seen.wait()
            group.cancel_scope.cancel()
    working = next(entry for entry in logs if entry["event"] == "working")
    assert working["controller"] == "logged"
    assert working["namespace"] == "ns"
    assert working["name"] == "obj"
    assert len(working["reconcile_id"]) == 12
