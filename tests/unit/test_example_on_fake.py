"""The ReplicaSet example, unit-tested on testenv's fake client through real informers."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from examples.replicaset import POD_COUNT_LABEL, setup
from reconcile import GVK, Manager, ManagerOptions
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

REPLICASET = GVK("apps", "v1", "ReplicaSet")
POD = GVK("", "v1", "Pod")


def _replicaset() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": []}},
        },
    }


def _pod(name: str, owner: dict[str, Any], app: str = "web") -> dict[str, Any]:
    reference = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    meta = {
        "name": name,
        "namespace": "demo",
        "labels": {"app": app},
        "ownerReferences": [reference],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


async def test_pod_count_label_follows_pods_on_the_fake() -> None:
    fake = FakeClient()
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    setup(manager)

    async def count_is(expected: str) -> bool:
        current = await fake.get(REPLICASET, "web", namespace="demo")
        return bool(current["metadata"].get("labels", {}).get(POD_COUNT_LABEL) == expected)

    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        owner = await fake.create(_replicaset())
        await eventually(lambda: count_is("0"))
        await fake.create(_pod("a", owner))
        await fake.create(_pod("b", owner))
        await fake.create(_pod("stranger", owner, app="other"))  # owned, but not matching
        await eventually(lambda: count_is("2"))
        await fake.delete(POD, "a", namespace="demo")
        await eventually(lambda: count_is("1"))
        manager.stop()
    final = await fake.get(REPLICASET, "web", namespace="demo")
    assert final["metadata"]["labels"][POD_COUNT_LABEL] == "1"
