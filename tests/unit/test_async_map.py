"""Async map functions and the synchronous by-index lookup, on a cache over testenv's fake.

The case from the newcomer's report: Secrets are referred to by ConfigMaps (``data.secret``), and
a Secret's change must reconcile the ConfigMaps that refer to it; the map function asks the cache
which ones, through an index. Async, it awaits ``Cache.list(..., index=...)``; sync, it calls
``Cache.by_index``. An async map function runs outside the informer's handler: while it waits,
the informer's other handlers still get their events.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable

import anyio
import pytest
from anyio.abc import TaskGroup

from reconcile import (
    GVK,
    EnqueueRequestForObject,
    EnqueueRequestsFromAsyncMapFunc,
    EnqueueRequestsFromMapFunc,
    Kind,
    Request,
    WorkQueue,
)
from reconcile.cache.cache import Cache
from reconcile.objects import Obj
from testenv.fake import FakeClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
INDEX = "field:data.secret"


def _cm(name: str, secret: str) -> Obj:
    meta = {"name": name, "namespace": "ns"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"secret": secret}}


def _secret(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}}


def _by_secret(obj: Obj) -> list[str]:
    return [f"ns/{obj['data']['secret']}"]


@contextlib.asynccontextmanager
async def _cache() -> AsyncIterator[tuple[Cache, TaskGroup]]:
    fake = FakeClient(
        objects=[_cm("a", "s1"), _cm("b", "s1"), _cm("c", "s2"), _secret("s1"), _secret("s2")]
    )
    cache = Cache(fake, sync_timeout=10)
    cache.index_field(CONFIGMAP, INDEX, _by_secret)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        cache.get_informer(CONFIGMAP)
        await cache.wait_for_cache_sync(10)
        yield cache, group
        group.cancel_scope.cancel()


async def _take(queue: WorkQueue[Request], count: int) -> set[Request]:
    found: set[Request] = set()
    with anyio.fail_after(10):
        while len(found) < count:
            item = await queue.get()
            found.add(item)
            queue.done(item)
    return found


def _requests(objects: Iterable[Obj]) -> list[Request]:
    return [Request(o["metadata"]["name"], o["metadata"]["namespace"]) for o in objects]


async def test_an_async_map_function_reads_the_cache_through_an_index() -> None:
    async with _cache() as (cache, group):

        async def referrers(secret: Obj) -> list[Request]:
            value = f"ns/{secret['metadata']['name']}"
            found = await cache.list(CONFIGMAP, index=(INDEX, value))
            return _requests(found["items"])

        queue: WorkQueue[Request] = WorkQueue()
        await Kind(cache, SECRET, EnqueueRequestsFromAsyncMapFunc(referrers)).start(queue, group)
        assert await _take(queue, 3) == {Request("a", "ns"), Request("b", "ns"), Request("c", "ns")}


async def test_a_sync_map_function_looks_up_the_index_without_waiting() -> None:
    async with _cache() as (cache, group):

        def referrers(secret: Obj) -> list[Request]:
            value = f"ns/{secret['metadata']['name']}"
            return _requests(cache.by_index(CONFIGMAP, INDEX, value))

        assert [o["metadata"]["name"] for o in cache.by_index(CONFIGMAP, INDEX, "ns/s1")] == [
            "a",
            "b",
        ]
        queue: WorkQueue[Request] = WorkQueue()
        await Kind(cache, SECRET, EnqueueRequestsFromMapFunc(referrers)).start(queue, group)
        assert await _take(queue, 3) == {Request("a", "ns"), Request("b", "ns"), Request("c", "ns")}


async def test_a_waiting_async_map_function_does_not_hold_up_the_informer() -> None:
    async with _cache() as (cache, group):
        release = anyio.Event()

        async def slow(secret: Obj) -> list[Request]:
            await release.wait()
            return [Request("mapped", "ns")]

        mapped: WorkQueue[Request] = WorkQueue()
        direct: WorkQueue[Request] = WorkQueue()
        await Kind(cache, SECRET, EnqueueRequestsFromAsyncMapFunc(slow)).start(mapped, group)
        await Kind(cache, SECRET, EnqueueRequestForObject()).start(direct, group)
        # Both Secrets reach the other handler of the same informer while the map waits.
        assert await _take(direct, 2) == {Request("s1", "ns"), Request("s2", "ns")}
        assert len(mapped) == 0
        release.set()
        assert await _take(mapped, 1) == {Request("mapped", "ns")}


async def test_a_failing_async_map_function_is_logged_and_the_next_event_mapped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with _cache() as (cache, group):

        async def picky(secret: Obj) -> list[Request]:
            if secret["metadata"]["name"] == "s1":
                raise KeyError("no such thing")
            return [Request("from-s2", "ns")]

        queue: WorkQueue[Request] = WorkQueue()
        await Kind(cache, SECRET, EnqueueRequestsFromAsyncMapFunc(picky)).start(queue, group)
        assert await _take(queue, 1) == {Request("from-s2", "ns")}
    captured = capsys.readouterr()
    assert "event handler failed" in captured.out + captured.err


async def test_an_async_function_given_as_a_sync_map_function_is_refused() -> None:
    async def mapper(obj: Obj) -> list[Request]:
        return []

    with pytest.raises(TypeError, match="is async: use EnqueueRequestsFromAsyncMapFunc"):
        EnqueueRequestsFromMapFunc(mapper)  # type: ignore[arg-type]


async def test_by_index_names_an_unknown_index() -> None:
    async with _cache() as (cache, _):
        with pytest.raises(ValueError, match=r"no index 'field:nope' \(registered: field:data"):
            cache.by_index(CONFIGMAP, "field:nope", "x")
        with pytest.raises(ValueError, match=r"Secret has no index .* \(registered: none\)"):
            cache.by_index(SECRET, INDEX, "ns/s1")
        assert cache.by_index(CONFIGMAP, INDEX, "ns/none") == []
