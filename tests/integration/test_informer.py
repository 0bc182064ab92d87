"""Informers and the cache against the real kube-apiserver: sync, events, restarts, compaction."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio

from reconcile.cache.cache import Cache, CacheSyncError
from reconcile.cache.informer import SharedInformer
from reconcile.cache.reflector import WATCH_LIST_ENV, Backoff
from reconcile.client.client import Client, ListerWatcher
from reconcile.client.config import ClusterConfig
from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv import ControlPlane, Environment, eventually
from tests.builders import configmap

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
FAST = Backoff(initial=0.05, maximum=0.5, jitter=0.1)


async def _client(plane: ControlPlane, kubeconfig: Path | None = None) -> Client:
    config = await ClusterConfig.from_kubeconfig(
        kubeconfig or plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config, qps=500, burst=1000)


@pytest_asyncio.fixture(loop_scope="session")
async def client(host: ControlPlane) -> AsyncIterator[Client]:
    """A host client with a high rate limit: these tests write hundreds of objects."""
    async with await _client(host) as live:
        yield live


class Recorder:
    """Writes down (event, name, data) in arrival order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.events.append(("add", obj["metadata"]["name"], obj.get("data")))

    def on_update(self, old: Obj, new: Obj) -> None:
        names = (old["metadata"]["name"], new["metadata"]["name"])
        self.events.append(("update", names[1], (old.get("data"), new.get("data"))))

    def on_delete(self, obj: Obj) -> None:
        self.events.append(("delete", obj["metadata"]["name"], obj.get("data")))


async def _true(value: bool) -> bool:
    return value


async def _contents(client: Client, namespace: str) -> dict[str, Any]:
    listed = await client.list_all(CONFIGMAP, namespace=namespace)
    return {o["metadata"]["name"]: o.get("data") for o in listed}


def _store(informer: SharedInformer) -> dict[str, Any]:
    return {o["metadata"]["name"]: o.get("data") for o in informer.indexer.values()}


async def test_syncs_a_thousand_configmaps_and_sees_events_in_order(
    client: Client, namespace: str
) -> None:
    async with anyio.create_task_group() as group:
        for start in range(0, 1000, 100):
            group.start_soon(_create_many, client, namespace, start)
    informer = SharedInformer(client.lister_watcher(CONFIGMAP, namespace=namespace), name="cms")
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        with anyio.fail_after(60):
            await informer.wait_for_sync()
        assert len(informer.indexer) == 1000
        assert len(recorder.events) == 1000
        assert {e[0] for e in recorder.events} == {"add"}

        recorder.events.clear()
        await client.create(configmap("live", namespace, v="1"))
        await client.patch(CONFIGMAP, "live", {"data": {"v": "2"}}, namespace=namespace)
        await client.delete(CONFIGMAP, "live", namespace=namespace)
        await eventually(lambda: _true(len(recorder.events) == 3), timeout=20)
        assert recorder.events == [
            ("add", "live", {"v": "1"}),
            ("update", "live", ({"v": "1"}, {"v": "2"})),
            ("delete", "live", {"v": "2"}),
        ]

        late = Recorder()
        registration = informer.add_event_handler(late)
        assert registration.has_synced()
        assert len(late.events) == 1000

        informer.add_indexers({"first-digit": lambda o: [o["metadata"]["name"][4]]})
        assert len(informer.indexer.by_index("first-digit", "7")) == 100
        group.cancel_scope.cancel()


async def _create_many(client: Client, namespace: str, start: int) -> None:
    for index in range(start, start + 100):
        await client.create(configmap(f"cm-{index:04d}", namespace, index=str(index)))


class GatedListerWatcher:
    """A ListerWatcher whose list and watch calls wait at gates the test opens and closes.

    A watch-list (a watch with ``send_initial_events``) syncs like a list: it waits at the lists
    gate.
    """

    def __init__(self, inner: ListerWatcher) -> None:
        self.inner = inner
        self.lists_open = anyio.Event()
        self.watches_open = anyio.Event()
        self.lists_open.set()
        self.watches_open.set()

    def close(self, *, lists: bool = True, watches: bool = True) -> None:
        if lists:
            self.lists_open = anyio.Event()
        if watches:
            self.watches_open = anyio.Event()

    def open(self) -> None:
        self.lists_open.set()
        self.watches_open.set()

    async def list(self, **kwargs: Any) -> dict[str, Any]:
        await self.lists_open.wait()
        return await self.inner.list(**kwargs)

    def watch(self, **kwargs: Any) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        gate = self.lists_open if kwargs.get("send_initial_events") else self.watches_open

        @asynccontextmanager
        async def gated() -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
            await gate.wait()
            async with self.inner.watch(**kwargs) as events:
                yield events

        return gated()


async def test_apiserver_restart_mid_watch_converges_including_deletes(
    restartable: ControlPlane,
) -> None:
    namespace = "restart"
    if "restart" not in await _namespaces(restartable):
        await restartable.create_namespace(namespace)
    async with await _client(restartable) as client:
        for name in ("keep", "change", "remove"):
            await client.create(configmap(name, namespace, v="before"))
        gate = GatedListerWatcher(client.lister_watcher(CONFIGMAP, namespace=namespace))
        informer = SharedInformer(gate, name="cms", backoff=FAST)
        async with anyio.create_task_group() as group:
            group.start_soon(informer.run)
            with anyio.fail_after(20):
                await informer.wait_for_sync()
            gate.close()  # the reconnect will wait until the changes below are made
            await restartable.stop_apiserver()
            await restartable.start_apiserver()
            await client.patch(CONFIGMAP, "change", {"data": {"v": "after"}}, namespace=namespace)
            await client.delete(CONFIGMAP, "remove", namespace=namespace)
            await client.create(configmap("new", namespace, v="after"))
            relists = informer.reflector.relists
            gate.open()

            async def converged() -> bool:
                return _store(informer) == await _contents(client, namespace)

            await eventually(converged, timeout=30)
            assert _store(informer) == {
                "keep": {"v": "before"},
                "change": {"v": "after"},
                "new": {"v": "after"},
            }
            # The restarted server's watch cache no longer has our version: a 410 made it relist.
            assert informer.reflector.relists > relists
            group.cancel_scope.cancel()


async def _namespaces(plane: ControlPlane) -> set[str]:
    listed = await plane.request("GET", "/api/v1/namespaces")
    return {item["metadata"]["name"] for item in listed["items"]}


async def test_a_watch_from_a_compacted_version_relists_and_converges(
    restartable: ControlPlane, testenv: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # list+watch: a watch-list's stream would go on after its sync and see the changes below
    # before the compaction; this test is about a watch that starts from a compacted version.
    monkeypatch.setenv(WATCH_LIST_ENV, "false")
    namespace = "compaction"
    if namespace not in await _namespaces(restartable):
        await restartable.create_namespace(namespace)
    assert testenv.etcd is not None
    async with await _client(restartable) as client:
        await client.create(configmap("old", namespace, v="1"))
        gate = GatedListerWatcher(client.lister_watcher(CONFIGMAP, namespace=namespace))
        gate.close(lists=False)  # let the list through, hold the watch that follows it
        informer = SharedInformer(gate, name="cms", backoff=FAST)
        async with anyio.create_task_group() as group:
            group.start_soon(informer.run)
            with anyio.fail_after(20):
                await informer.wait_for_sync()
            await client.delete(CONFIGMAP, "old", namespace=namespace)
            await client.create(configmap("fresh", namespace, v="2"))
            await testenv.etcd.compact()
            # A restart empties the apiserver's watch cache, so the old version is truly gone.
            await restartable.stop_apiserver()
            await restartable.start_apiserver()
            relists = informer.reflector.relists
            gate.open()

            async def converged() -> bool:
                return _store(informer) == {"fresh": {"v": "2"}}

            await eventually(converged, timeout=30)
            assert informer.reflector.relists > relists
            group.cancel_scope.cancel()


async def test_cache_foot_guns_against_the_real_apiserver(
    host: ControlPlane, client: Client, namespace: str
) -> None:
    await client.create(configmap("seen", namespace))
    cache = Cache(client, sync_timeout=30)
    cache.get_informer(CONFIGMAP)
    async with anyio.create_task_group() as group:
        group.start_soon(cache.run)  # not awaited: the seed's background start
        await cache.wait_for_cache_sync()
        seen = await cache.get(CONFIGMAP, "seen", namespace=namespace)
        assert seen["metadata"]["name"] == "seen"
        # Asked for after start: starts at once and syncs.
        late = cache.get_informer(SECRET)
        await cache.wait_for_cache_sync()
        assert late.has_synced()
        group.cancel_scope.cancel()


async def test_a_user_without_list_rights_fails_sync_with_the_403(host: ControlPlane) -> None:
    nobody = await host.add_user("no-rights")
    async with await _client(host, nobody.kubeconfig) as client:
        cache = Cache(client, sync_timeout=30)
        cache.get_informer(CONFIGMAP)
        async with anyio.create_task_group() as group:
            await group.start(cache.run)
            with anyio.fail_after(10), pytest.raises(CacheSyncError) as caught:
                await cache.wait_for_cache_sync()
            assert "forbidden" in str(caught.value).lower()
            assert "403" in str(caught.value)
            group.cancel_scope.cancel()
