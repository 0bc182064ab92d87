"""The scheduler between its own spec and status writes: no second scheduling from a stale cache.

The spec write of a result enqueues the binding again (a generation change); the cache may then
hold exactly the version that write returned, without the status written right after it.
Scheduling that view again would write the status from a stale resourceVersion: a Conflict, then
a live read (issue #29, requests per template).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from controllers.api import CLUSTER_GVK, RESOURCE_BINDING_GVK, crd_paths
from controllers.scheduler.controller import (
    CONFLICT_RETRY,
    SchedulerController,
    WrittenResults,
)
from reconcile import Cache, CachedClient, EventBroadcaster, Request, Result
from reconcile.client.options import Target, WriteOptions
from testenv import FakeClient, eventually
from tests.builders import cluster, ready_cluster_status

pytestmark = pytest.mark.asyncio(loop_scope="session")


class CountingFake(FakeClient):
    """The fake apiserver, keeping every binding write's answer and counting live reads."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.writes: list[tuple[str, dict[str, Any]]] = []
        self.live_gets = 0

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        self.live_gets += target.gvk == RESOURCE_BINDING_GVK
        return await super()._get(target, metadata_only=metadata_only)

    async def _update(
        self, target: Target, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        written = await super()._update(target, body, options)
        if target.gvk == RESOURCE_BINDING_GVK:
            self.writes.append((target.subresource or "spec", written))
        return written


class ViewClient(CachedClient):
    """A cached client whose cache shows ``view`` of the binding when one is set."""

    view: dict[str, Any] | None = None

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        if self.view is not None and target.gvk == RESOURCE_BINDING_GVK:
            return copy.deepcopy(self.view)
        return await super()._get(target, metadata_only=metadata_only)


def _binding() -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "web-deployment",
            "namespace": "default",
            "labels": {"propagationpolicy.karmada.io/permanent-id": "id"},
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "replicas": 2,
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided"},
            },
        },
    }


def _member(name: str) -> dict[str, Any]:
    return {**cluster(name), "status": ready_cluster_status()}


@asynccontextmanager
async def _scheduler() -> AsyncIterator[tuple[SchedulerController, CountingFake, ViewClient]]:
    fake = CountingFake(
        crds=crd_paths(), objects=[_member("member1"), _member("member2"), _binding()]
    )
    cache = Cache(fake, sync_timeout=10)
    client = ViewClient(fake, cache)
    controller = SchedulerController(client, EventBroadcaster(fake).recorder("scheduler"))
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        for gvk in (CLUSTER_GVK, RESOURCE_BINDING_GVK):
            cache.get_informer(gvk)
        await cache.wait_for_cache_sync()
        yield controller, fake, client
        group.cancel_scope.cancel()


REQUEST = Request("web-deployment", "default")


async def test_the_version_between_our_writes_is_looked_at_again_not_scheduled_again() -> None:
    async with _scheduler() as (controller, fake, client):
        assert await controller.reconcile(REQUEST) is None
        assert [what for what, _ in fake.writes] == ["spec", "status"]
        spec_written = fake.writes[0][1]

        # The reconcile the spec write enqueued, while the cache has not seen the status yet.
        client.view = spec_written
        assert await controller.reconcile(REQUEST) == Result(requeue_after=CONFLICT_RETRY)
        assert len(fake.writes) == 2, "no status written from the stale view"
        assert fake.live_gets == 0, "no Conflict, so no live read"

        # Once the cache holds the status write: nothing to do, and the entry is forgotten.
        client.view = None

        async def status_cached() -> bool:
            cached = await client.get(RESOURCE_BINDING_GVK, "web-deployment", namespace="default")
            return bool((cached.get("status") or {}).get("conditions"))

        await eventually(status_cached, timeout=10)
        assert await controller.reconcile(REQUEST) is None
        assert len(fake.writes) == 2
        assert len(controller.written) == 0


async def test_written_results_are_bounded_and_only_match_the_exact_version() -> None:
    written = WrittenResults(size=2)
    binding = {"metadata": {"uid": "a", "resourceVersion": "5"}}
    written.note(binding)
    later = {"metadata": {"uid": "a", "resourceVersion": "6"}}
    assert not written.between_writes(later)
    assert len(written) == 0, "the cache moved on: forgotten"
    written.note(binding)
    assert written.between_writes(binding)
    assert written.between_writes(binding), "kept while the cache stays there"
    for uid in "bcd":
        written.note({"metadata": {"uid": uid, "resourceVersion": "1"}})
    assert len(written) == 2
