"""TemplateStatusWriter: a source withdrawn while it works; reads from the cache, no-op writes."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from controllers.api import AggregatedStatusItem, ObjectReference
from controllers.interpreter import Interpreter
from controllers.status import TemplateStatusWriter
from controllers.status.template import OwnWrites
from reconcile import GVK, Cache, CachedClient, EventRecorder
from reconcile.client.options import Target, WriteOptions
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXAMPLE = Path(__file__).parents[2] / "examples" / "workload-interpreter"
WORKLOAD = GVK("workload.example.io", "v1alpha1", "Workload")
SUM_READY = """
function AggregateStatus(desiredObj, statusItems)
  local ready = 0
  for i = 1, #statusItems do ready = ready + statusItems[i].status.readyReplicas end
  desiredObj.status = {readyReplicas = ready}
  return desiredObj
end
"""
CUSTOMIZATION = {
    "apiVersion": "config.karmada.io/v1alpha1",
    "kind": "ResourceInterpreterCustomization",
    "metadata": {"name": "workload"},
    "spec": {
        "target": {"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload"},
        "customizations": {"statusAggregation": {"luaScript": SUM_READY}},
    },
}


class Events:
    """Collects what would become Events."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.recorded.append((type, reason, message))


class WithdrawingReader(FakeClient):
    """Reads like the fake, but the customization is withdrawn during the first read."""

    def __init__(self, interpreter: Interpreter) -> None:
        super().__init__(crds=[EXAMPLE / "workload-crd.yaml"])
        self.interpreter = interpreter
        self.withdraw = False

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        if self.withdraw:
            self.interpreter.remove_customization("workload")
        return await super().get(*args, **kwargs)


async def _writer() -> tuple[TemplateStatusWriter, WithdrawingReader, Events]:
    interpreter = Interpreter(thirdparty=None, native=None)
    await interpreter.apply_customization(CUSTOMIZATION)
    reader = WithdrawingReader(interpreter)
    workload = {
        "apiVersion": "workload.example.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"replicas": 3},
    }
    await reader.create(workload)
    events = Events()
    return TemplateStatusWriter(reader, interpreter, cast(EventRecorder, events)), reader, events


RESOURCE = ObjectReference(
    apiVersion="workload.example.io/v1alpha1", kind="Workload", namespace="default", name="nginx"
)
ITEMS = [
    AggregatedStatusItem(clusterName="member1", applied=True, status={"readyReplicas": 2}),
    AggregatedStatusItem(clusterName="member2", applied=True, status={"readyReplicas": 1}),
]


async def test_status_is_aggregated_onto_the_template() -> None:
    writer, reader, events = await _writer()
    assert await writer.update(RESOURCE, ITEMS) is True
    template = await reader.get(WORKLOAD, "nginx", namespace="default")
    assert template["status"] == {"readyReplicas": 3}
    assert [reason for _, reason, _ in events.recorded] == ["AggregateStatusSucceed"]


async def test_a_source_withdrawn_meanwhile_is_no_failure() -> None:
    writer, reader, events = await _writer()
    reader.withdraw = True
    assert await writer.update(RESOURCE, ITEMS) is False
    assert events.recorded == [], "no Warning: nothing aggregates the kind any more"
    template = await reader.get(WORKLOAD, "nginx", namespace="default")
    assert "status" not in template


# --- reads from the cache, and no write that changes nothing (issue #29, requests per template) ---

DEPLOYMENT = GVK("apps", "v1", "Deployment")
READY = {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}


class CountingFake(FakeClient):
    """The fake apiserver, counting live reads and status writes of Deployments."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gets = 0
        self.status_writes = 0

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        self.gets += target.gvk == DEPLOYMENT
        return await super()._get(target, metadata_only=metadata_only)

    async def _update(
        self, target: Target, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        self.status_writes += target.gvk == DEPLOYMENT and target.subresource == "status"
        return await super()._update(target, body, options)


class BehindCache(CachedClient):
    """A cached client whose cache still holds ``stale`` (it has not seen a later write)."""

    stale: dict[str, Any] | None = None

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        if self.stale is not None and target.gvk == DEPLOYMENT:
            return copy.deepcopy(self.stale)
        return await super()._get(target, metadata_only=metadata_only)


def _deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


WEB = ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="default", name="web")


def _ready_items() -> list[AggregatedStatusItem]:
    return [
        AggregatedStatusItem(clusterName=name, applied=True, status=dict(READY))
        for name in ("member1", "member2")
    ]


@asynccontextmanager
async def _cached_writer() -> AsyncIterator[tuple[TemplateStatusWriter, CountingFake, Cache]]:
    fake = CountingFake(objects=[_deployment()])
    cache = Cache(fake, sync_timeout=10)
    events = Events()
    writer = TemplateStatusWriter(
        BehindCache(fake, cache), Interpreter(), cast(EventRecorder, events)
    )
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        cache.get_informer(DEPLOYMENT)  # what the detector holds: every template kind watched
        await cache.wait_for_cache_sync()
        yield writer, fake, cache
        group.cancel_scope.cancel()


async def test_a_cached_template_is_not_read_live_and_a_no_op_status_not_written() -> None:
    async with _cached_writer() as (writer, fake, cache):
        assert await writer.update(WEB, _ready_items()) is True
        assert (fake.gets, fake.status_writes) == (0, 1)
        # Again at once, whether or not the cache has seen the write yet: nothing to write.
        assert await writer.update(WEB, _ready_items()) is False

        async def caught_up() -> bool:
            cached = await cache.get(DEPLOYMENT, "web", namespace="default")
            return (cached.get("status") or {}).get("readyReplicas") == 2

        await eventually(caught_up, timeout=10)
        assert await writer.update(WEB, _ready_items()) is False
        assert (fake.gets, fake.status_writes) == (0, 1)
        assert len(writer.own_writes) == 0, "forgotten once the cache holds the write"


async def test_a_status_written_meanwhile_by_someone_else_is_a_conflict_then_read_live() -> None:
    async with _cached_writer() as (writer, fake, _):
        reader = cast(BehindCache, writer.reader)
        reader.stale = await fake.get(DEPLOYMENT, "web", namespace="default")
        live = await fake.get(DEPLOYMENT, "web", namespace="default")
        await fake.update_status({**live, "status": {"replicas": 7}})  # someone else's write
        fake.gets = fake.status_writes = 0
        assert await writer.update(WEB, _ready_items()) is True
        # The write from the stale view is refused (Conflict), the live read decides.
        assert (fake.gets, fake.status_writes) == (1, 2)
        template = await fake.get(DEPLOYMENT, "web", namespace="default")
        assert template["status"]["readyReplicas"] == 2


async def test_own_writes_overlay_an_older_cached_object_until_the_cache_catches_up() -> None:
    writes = OwnWrites(size=2)
    meta = {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "5"}
    old: dict[str, Any] = {"metadata": meta, "spec": {"replicas": 2}}
    written = {"metadata": {**meta, "resourceVersion": "7"}, "status": {"x": 1}}
    writes.note(DEPLOYMENT, written)
    seen = writes.newest(DEPLOYMENT, old)
    assert seen["status"] == {"x": 1}
    assert seen["metadata"]["resourceVersion"] == "7"
    assert seen["spec"] == old["spec"]
    assert "status" not in old, "the cached object is not changed"
    newer = {"metadata": {**meta, "resourceVersion": "8"}}
    assert writes.newest(DEPLOYMENT, newer) is newer
    assert len(writes) == 0
    replaced = {"metadata": {**meta, "uid": "other", "resourceVersion": "1"}}
    writes.note(DEPLOYMENT, written)
    assert writes.newest(DEPLOYMENT, replaced) is replaced, "another object of the same name"
    for name in ("b", "c", "d"):
        writes.note(
            DEPLOYMENT, {"metadata": {"name": name, "namespace": "n", "resourceVersion": "1"}}
        )
    assert len(writes) == 2, "bounded: the oldest forgotten"
