"""EventRecorder keeps what it writes within what the apiserver accepts."""

from __future__ import annotations

from typing import Any

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
