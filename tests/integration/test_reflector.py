"""The reflector against real kube-apiservers: WatchList on 1.37, and a server without it.

The session's host runs kube-apiserver with its defaults (watch cache on, WatchList on). A second
environment of this module's own runs it with ``--watch-cache=false`` and
``--feature-gates=WatchList=false``: the server client-go's pagination and fallback are for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pytest
import pytest_asyncio

from reconcile.cache.informer import FuncHandler, SharedInformer
from reconcile.cache.options import CacheOptions
from reconcile.cache.reflector import Backoff, Reflector, is_resource_version_too_large
from reconcile.client.client import Client, ListerWatcher
from reconcile.client.config import ClusterConfig
from reconcile.errors import ApiError
from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv import ControlPlane, Environment, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
FAST = Backoff(initial=0.05, maximum=0.5, jitter=0.1)
LEGACY_FLAGS = {"watch-cache": "false", "feature-gates": "WatchList=false"}


async def _client(plane: ControlPlane) -> Client:
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config, qps=500, burst=1000)


@pytest_asyncio.fixture(loop_scope="session")
async def client(host: ControlPlane) -> AsyncIterator[Client]:
    async with await _client(host) as live:
        yield live


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def legacy() -> AsyncIterator[ControlPlane]:
    """A kube-apiserver without watch cache and without WatchList, for this module only."""
    async with Environment(apiserver_flags=LEGACY_FLAGS) as env:
        yield env.host


def _cm(name: str, namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


class Counting:
    """A ListerWatcher that writes down each list, watch-list and watch it passes on."""

    def __init__(self, inner: ListerWatcher) -> None:
        self.inner = inner
        self.lists: list[dict[str, Any]] = []
        self.watch_lists: list[dict[str, Any]] = []
        self.watches: list[dict[str, Any]] = []

    async def list(self, **kwargs: Any) -> dict[str, Any]:
        self.lists.append(kwargs)
        return await self.inner.list(**kwargs)

    def watch(self, **kwargs: Any) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        (self.watch_lists if kwargs.get("send_initial_events") else self.watches).append(kwargs)
        return self.inner.watch(**kwargs)


class Names:
    """A reflector sink that keeps the names it holds and every event it got."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.replaced: list[list[str]] = []

    def replace(self, items: list[Obj], resource_version: str) -> None:
        self.replaced.append(sorted(i["metadata"]["name"] for i in items))
        self.names = set(self.replaced[-1])

    def apply(self, event_type: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if event_type == "DELETED":
            self.names.discard(name)
        else:
            self.names.add(name)


async def _is(value: bool) -> bool:
    return value


async def test_an_informer_syncs_through_a_watch_list_and_sees_later_events(
    client: Client, namespace: str
) -> None:
    for name in ("a", "b", "c"):
        await client.create(_cm(name, namespace))
    counting = Counting(client.lister_watcher(CONFIGMAP, namespace=namespace))
    informer = SharedInformer(counting, name="cms", backoff=FAST)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        with anyio.fail_after(20):
            await informer.wait_for_sync()
        assert sorted(informer.indexer.keys()) == [f"{namespace}/{n}" for n in "abc"]
        assert informer.reflector.last_sync_via == "watch-list"
        assert counting.lists == []  # no list request at all
        assert counting.watch_lists[0]["resource_version"] == ""  # the latest state, consistent

        await client.create(_cm("d", namespace))
        await client.patch(CONFIGMAP, "a", {"data": {"v": "2"}}, namespace=namespace)
        await client.delete(CONFIGMAP, "b", namespace=namespace)

        async def caught_up() -> bool:
            a = informer.indexer.get(f"{namespace}/a")
            names = {obj["metadata"]["name"] for obj in informer.indexer.values()}
            return names == {"a", "c", "d"} and a is not None and a.get("data") == {"v": "2"}

        await eventually(caught_up, timeout=20)
        # The events came on the watch-list's own stream: no second watch was opened.
        assert counting.watches == []
        group.cancel_scope.cancel()


async def test_a_metadata_only_watch_list_is_staged_as_it_streams_and_notified_at_its_end(
    client: Client, namespace: str
) -> None:
    for name in ("a", "b", "c"):
        await client.create({**_cm(name, namespace), "data": {"big": name * 4096}})
    metadata = CacheOptions().scope_of(CONFIGMAP).transform_for(metadata_only=True)
    assert metadata is not None
    staged_before: list[int] = []  # how many objects the reflector held when each one arrived

    def noting(obj: Obj) -> Obj:
        staged_before.append(len(informer.reflector._initial or ()))
        return metadata(obj)

    added: list[tuple[str, bool, bool]] = []
    lister = client.lister_watcher(CONFIGMAP, namespace=namespace, metadata_only=True)
    informer = SharedInformer(lister, name="cms metadata", backoff=FAST, transform=noting)
    informer.add_event_handler(
        FuncHandler(
            add=lambda obj, initial: added.append(
                (obj["metadata"]["name"], initial, informer.has_synced())
            )
        )
    )
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        with anyio.fail_after(20):
            await informer.wait_for_sync()
        group.cancel_scope.cancel()
    assert informer.reflector.last_sync_via == "watch-list"
    # Each object went through the transform as it arrived, while the earlier ones were staged;
    # the handler heard of all three at the bookmark, as one replace, before has_synced.
    assert staged_before == [0, 1, 2]
    assert sorted(added) == [("a", True, False), ("b", True, False), ("c", True, False)]
    stored = informer.indexer.get(f"{namespace}/a")
    assert stored is not None
    assert stored["kind"] == "PartialObjectMetadata"
    assert "data" not in stored
    assert "managedFields" not in stored["metadata"]


async def test_without_watch_cache_or_watch_list_it_pages_and_falls_back_to_list_and_watch(
    legacy: ControlPlane,
) -> None:
    namespace = "paging"
    await legacy.create_namespace(namespace)
    async with await _client(legacy) as client:
        for index in range(5):
            await client.create(_cm(f"cm{index}", namespace))
        counting = Counting(client.lister_watcher(CONFIGMAP, namespace=namespace))
        sink = Names()
        reflector = Reflector(counting, sink, name="cms", page_size=2, backoff=FAST)
        async with anyio.create_task_group() as group:
            group.start_soon(reflector.run)
            await eventually(lambda: _is(reflector.synced), timeout=20)
            # The server answered the watch-list 422 (WatchList off): not asked again.
            assert len(counting.watch_lists) == 1
            assert not reflector.use_watch_list
            assert reflector.last_sync_via == "list"
            # resourceVersion "0" with a limit, then the server's continue tokens: 2 + 2 + 1.
            first, *rest = counting.lists
            assert (first["resource_version"], first["limit"]) == ("0", 2)
            assert [bool(call["continue_"]) for call in rest] == [True, True]
            assert sink.replaced == [[f"cm{index}" for index in range(5)]]

            await client.create(_cm("late", namespace))
            await client.delete(CONFIGMAP, "cm0", namespace=namespace)
            wanted = {"cm1", "cm2", "cm3", "cm4", "late"}
            await eventually(lambda: _is(sink.names == wanted), timeout=20)
            group.cancel_scope.cancel()


async def test_the_apiservers_too_large_resource_version_answer_is_recognised(
    client: Client, namespace: str
) -> None:
    listing = await client.list(CONFIGMAP, namespace=namespace)
    ahead = str(int(listing["metadata"]["resourceVersion"]) + 1_000_000)
    with anyio.fail_after(20), pytest.raises(ApiError) as caught:
        # The watch cache waits about 3 s for the version, then answers 504.
        await client.list(
            CONFIGMAP,
            namespace=namespace,
            resource_version=ahead,
            resource_version_match="NotOlderThan",
        )
    assert caught.value.code == 504
    assert is_resource_version_too_large(caught.value)
