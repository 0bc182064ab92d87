"""SharedInformer and Cache on a scripted ListerWatcher: notifications, replay, sync, foot-guns."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import reconcile.cache.informer
import reconcile.cache.store
from reconcile.cache.cache import Cache, CacheNotStarted, CacheSyncError
from reconcile.cache.informer import FuncHandler, SharedInformer
from reconcile.cache.reflector import Backoff
from reconcile.client.client import ListerWatcher
from reconcile.errors import Forbidden
from reconcile.gvk import GVK
from reconcile.labels import Selector
from reconcile.objects import Obj
from testenv import eventually
from tests.unit.scripted import HANG, Script, cm, initial_events_end, page

pytestmark = pytest.mark.asyncio(loop_scope="session")

FAST = Backoff(initial=0.001, maximum=0.01, jitter=0.0)
CONFIGMAP = GVK("", "v1", "ConfigMap")


class Recorder:
    """An ResourceEventHandler writing down what it is told, as (kind, name, version) tuples."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.events.append(("add", _name(obj), is_in_initial_list))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.events.append(("update", _name(new), _rv(old), _rv(new)))

    def on_delete(self, obj: Obj) -> None:
        self.events.append(("delete", _name(obj), _rv(obj)))


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _rv(obj: Obj) -> str:
    return str(obj["metadata"]["resourceVersion"])


async def _true(value: bool) -> bool:
    return value


async def test_events_reach_handlers_in_order_with_old_and_new() -> None:
    script = Script(
        lists=[page("10", cm("a", "1"), cm("b", "2"))],
        watches=[
            [
                {"type": "MODIFIED", "object": cm("a", "11")},
                {"type": "ADDED", "object": cm("c", "12")},
                {"type": "DELETED", "object": cm("b", "13")},
                HANG,
            ]
        ],
    )
    informer = SharedInformer(script, name="cm", backoff=FAST)
    recorder = Recorder()
    registration = informer.add_event_handler(recorder)
    assert not registration.has_synced()
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await eventually(lambda: _true(len(recorder.events) == 5))
        group.cancel_scope.cancel()
    assert recorder.events == [
        ("add", "a", True),
        ("add", "b", True),
        ("update", "a", "1", "11"),
        ("add", "c", False),
        ("delete", "b", "13"),
    ]
    assert registration.has_synced()
    assert sorted(informer.indexer.keys()) == ["ns/a", "ns/c"]


async def test_relist_turns_into_adds_updates_and_deletes_of_the_difference() -> None:
    informer = SharedInformer(Script([], []), name="cm")
    recorder = Recorder()
    informer.add_event_handler(recorder)
    informer.replace([cm("a", "1"), cm("b", "2")], "2")
    recorder.events.clear()
    informer.replace([cm("a", "5"), cm("c", "6")], "6")
    assert recorder.events == [
        ("delete", "b", "2"),
        ("update", "a", "1", "5"),
        ("add", "c", False),
    ]


async def test_a_late_handler_gets_the_store_replayed_and_is_synced_at_once() -> None:
    informer = SharedInformer(Script([], []), name="cm")
    informer.replace([cm("a", "1"), cm("b", "2")], "2")
    late = Recorder()
    registration = informer.add_event_handler(late)
    assert registration.has_synced()
    assert sorted(late.events) == [("add", "a", True), ("add", "b", True)]


async def test_a_failing_handler_does_not_starve_the_others() -> None:
    informer = SharedInformer(Script([], []), name="cm")

    def explode(obj: Obj, initial: bool) -> None:
        raise RuntimeError("handler bug")

    informer.add_event_handler(FuncHandler(add=explode))
    recorder = Recorder()
    informer.add_event_handler(recorder)
    informer.replace([cm("a", "1")], "1")
    assert recorder.events == [("add", "a", True)]


async def test_managed_fields_are_dropped_before_storing() -> None:
    informer = SharedInformer(Script([], []), name="cm")
    obj = cm("a", "1")
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    informer.replace([obj], "1")
    stored = informer.indexer.get("ns/a")
    assert stored is not None
    assert "managedFields" not in stored["metadata"]
    kept = SharedInformer(Script([], []), name="cm", transform=None)
    obj = cm("a", "1")
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    kept.replace([obj], "1")
    assert "managedFields" in (kept.indexer.get("ns/a") or {})["metadata"]


async def test_resync_sends_updates_with_equal_versions() -> None:
    informer = SharedInformer(Script([page("1", cm("a", "1"))], [[HANG]]), name="cm")
    recorder = Recorder()
    informer.add_event_handler(recorder, resync_period=0.02)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await eventually(lambda: _true(("update", "a", "1", "1") in recorder.events))
        group.cancel_scope.cancel()


async def test_the_first_resync_comes_one_period_after_the_initial_list() -> None:
    informer = SharedInformer(Script([page("1", cm("a", "1"))], [[HANG]]), name="cm")
    recorder = Recorder()
    informer.add_event_handler(recorder, resync_period=2.0)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await informer.wait_for_sync()
        synced = anyio.current_time()
        await eventually(lambda: _true(("update", "a", "1", "1") in recorder.events), timeout=5)
        first_resync = anyio.current_time() - synced
        group.cancel_scope.cancel()
    # The resync clock looks every second: before, the first look resynced (about 1 s).
    assert first_resync >= 1.9, first_resync


# --- the cache, and the seed's foot-guns ---------------------------------------------------------


class Source:
    """A ListerWatcherSource handing out one scripted collection per GVK kind."""

    def __init__(self, scripts: dict[str, Script]) -> None:
        self.scripts = scripts

    def lister_watcher(self, gvk: GVK, **_scope: Any) -> ListerWatcher:
        return self.scripts[gvk.kind]


def _cache(**scripts: Script) -> Cache:
    return Cache(Source(scripts), sync_timeout=5)


async def test_reads_before_start_raise() -> None:
    cache = _cache(ConfigMap=Script([], []))
    with pytest.raises(CacheNotStarted):
        await cache.get(CONFIGMAP, "a", namespace="ns")


async def test_start_in_background_then_wait_really_waits() -> None:
    script = Script([page("1", cm("a", "1"))], [[HANG]])
    cache = _cache(ConfigMap=script)
    cache.get_informer(CONFIGMAP)
    async with anyio.create_task_group() as group:
        # The seed's foot-gun: wait called before the background start has even begun.
        group.start_soon(cache.run)
        await cache.wait_for_cache_sync()
        assert cache.has_synced()
        got = await cache.get(CONFIGMAP, "a", namespace="ns")
        got["metadata"]["name"] = "changed"
        again = await cache.get(CONFIGMAP, "a", namespace="ns")
        assert again["metadata"]["name"] == "a", "reads are copies"
        group.cancel_scope.cancel()


async def test_an_informer_requested_after_start_starts_and_syncs() -> None:
    secrets = Script([page("3", cm("s", "3"))], [[HANG]])
    cache = _cache(ConfigMap=Script([page("1")], [[HANG]]), Secret=secrets)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        await cache.wait_for_cache_sync()
        late = cache.get_informer(GVK("", "v1", "Secret"))
        await cache.wait_for_cache_sync()
        assert late.has_synced()
        listed = await cache.list(GVK("", "v1", "Secret"))
        assert [o["metadata"]["name"] for o in listed["items"]] == ["s"]
        assert listed["kind"] == "SecretList"
        group.cancel_scope.cancel()


async def test_a_forbidden_informer_fails_the_wait_with_the_reason() -> None:
    forbidden = Forbidden(
        {"code": 403, "reason": "Forbidden", "message": 'configmaps is forbidden: User "x"'}
    )
    cache = _cache(ConfigMap=Script([forbidden] * 100, []))
    cache.get_informer(CONFIGMAP)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        with anyio.fail_after(5), pytest.raises(CacheSyncError, match="forbidden") as caught:
            await cache.wait_for_cache_sync()
        assert isinstance(caught.value.cause, Forbidden)
        group.cancel_scope.cancel()


async def test_wait_times_out_with_the_pending_informer_named() -> None:
    cache = Cache(Source({"ConfigMap": Script([], [])}), sync_timeout=0.1)
    cache.get_informer(CONFIGMAP)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        with pytest.raises(CacheSyncError, match="Kind=ConfigMap"):
            await cache.wait_for_cache_sync()
        group.cancel_scope.cancel()


async def test_index_and_selector_queries() -> None:
    script = Script(
        [
            page(
                "1",
                {"metadata": {"name": "a", "namespace": "x", "labels": {"app": "web"}}},
                {"metadata": {"name": "b", "namespace": "y", "labels": {"app": "db"}}},
                {"metadata": {"name": "c", "namespace": "x", "labels": {"app": "db"}}},
            )
        ],
        [[HANG]],
    )
    cache = _cache(ConfigMap=script)
    cache.get_informer(CONFIGMAP)
    cache.index_field(CONFIGMAP, "app", lambda o: [o["metadata"]["labels"]["app"]])
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        by_app = await cache.list(CONFIGMAP, index=("app", "db"))
        assert sorted(o["metadata"]["name"] for o in by_app["items"]) == ["b", "c"]
        in_x = await cache.list(CONFIGMAP, namespace="x", label_selector="app=db")
        assert [o["metadata"]["name"] for o in in_x["items"]] == ["c"]
        cache.index_field(CONFIGMAP, "field:data.colour", lambda o: ["n/a"])
        by_field = await cache.list(CONFIGMAP, field_selector="data.colour=n/a,metadata.name=a")
        assert [o["metadata"]["name"] for o in by_field["items"]] == ["a"]
        with pytest.raises(ValueError, match="needs an index"):
            await cache.list(CONFIGMAP, field_selector="spec.other=x")
        group.cancel_scope.cancel()


async def test_an_index_registered_twice_with_one_function_is_one_index() -> None:
    cache = _cache(ConfigMap=Script([], []))
    informer = cache.get_informer(CONFIGMAP)

    def app(obj: Obj) -> list[str]:
        return [obj["metadata"]["labels"]["app"]]

    cache.index_field(CONFIGMAP, "app", app)
    cache.index_field(CONFIGMAP, "app", app)  # a second controller sharing it
    assert informer.indexer.index_names().count("app") == 1
    with pytest.raises(ValueError, match="already has an index named 'app'"):
        cache.index_field(CONFIGMAP, "app", lambda o: [])
    for name, value in (("a", "web"), ("b", "db"), ("c", "db")):
        informer.indexer.upsert({"metadata": {"name": name, "labels": {"app": value}}})
    assert informer.indexer.index_values("app") == ["db", "web"]


async def test_an_equality_label_list_examines_only_the_matching_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items = [
        {
            "metadata": {
                "name": f"o{i}",
                "namespace": "ns",
                "labels": {"id": str(i), "team": str(i % 2)},
            }
        }
        for i in range(1000)
    ]
    cache = _cache(ConfigMap=Script([page("1", *items)], [[HANG]]))
    cache.get_informer(CONFIGMAP)
    examined: list[str] = []
    matches = Selector.matches_object

    def counting(self: Selector, obj: Obj) -> bool:
        examined.append(obj["metadata"]["name"])
        return matches(self, obj)

    monkeypatch.setattr(Selector, "matches_object", counting)

    async def names(selector: str, namespace: str | None = None) -> list[str]:
        examined.clear()
        found = await cache.list(CONFIGMAP, label_selector=selector, namespace=namespace)
        return sorted(o["metadata"]["name"] for o in found["items"])

    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        assert await names("id=7") == ["o7"]
        assert examined == ["o7"]
        assert await names("id in (3,4),team=1", namespace="ns") == ["o3"]
        assert sorted(examined) == ["o3", "o4"]  # the narrowest requirement's; team=1 is checked
        assert await names("id=nothing") == []
        assert examined == []
        assert cache.scans == {}
        assert len(await names("id!=3")) == 999  # no index serves it: a counted scan
        assert len(examined) == 1000
        assert cache.scans == {CONFIGMAP: 1}
        group.cancel_scope.cancel()


# A watch-list's objects are staged (transformed, encoded) as they arrive, stored at its bookmark.


async def test_a_watch_list_transforms_each_object_on_arrival_and_notifies_at_the_bookmark() -> (
    None
):
    seen: list[str] = []

    def noting(obj: Obj) -> Obj:
        seen.append(_name(obj))
        obj["metadata"].pop("managedFields", None)
        return obj

    with_fields = cm("a", "11")
    with_fields["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    events = [{"type": "ADDED", "object": obj} for obj in (with_fields, cm("b", "12"))]
    script = Script(lists=[], watches=[], watch_lists=[[*events, HANG]])
    informer = SharedInformer(script, name="cm", backoff=FAST, transform=noting)
    recorder = Recorder()
    registration = informer.add_event_handler(recorder)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await eventually(lambda: _true(seen == ["a", "b"]))
        # Transformed on arrival; no handler told, nothing stored, until the bookmark.
        assert recorder.events == []
        assert len(informer.indexer) == 0
        assert not registration.has_synced()
        group.cancel_scope.cancel()
    script = Script(lists=[], watches=[], watch_lists=[[*events, initial_events_end("15"), HANG]])
    informer = SharedInformer(script, name="cm", backoff=FAST)
    informer.add_event_handler(recorder)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await informer.wait_for_sync()
        group.cancel_scope.cancel()
    assert recorder.events == [("add", "a", True), ("add", "b", True)]
    assert sorted(informer.indexer.keys()) == ["ns/a", "ns/b"]
    assert "managedFields" not in (informer.indexer.get("ns/a") or {})["metadata"]
    assert informer.indexer.index_keys("namespace", "ns") == ["ns/a", "ns/b"]


async def test_a_staged_relist_turns_into_adds_updates_and_deletes_of_the_difference() -> None:
    informer = SharedInformer(Script([], []), name="cm")
    recorder = Recorder()
    registration = informer.add_event_handler(recorder)
    staged = {f"ns/{name}": informer.stage(cm(name, rv)) for name, rv in (("a", "1"), ("b", "2"))}
    informer.replace_encoded(staged, "2")
    assert registration.has_synced()
    assert recorder.events == [("add", "a", True), ("add", "b", True)]
    recorder.events.clear()
    staged = {f"ns/{name}": informer.stage(cm(name, rv)) for name, rv in (("a", "5"), ("c", "6"))}
    informer.replace_encoded(staged, "6")
    assert recorder.events == [
        ("delete", "b", "2"),
        ("update", "a", "1", "5"),
        ("add", "c", False),
    ]


async def test_a_staged_sync_without_handlers_decodes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded: list[bytes] = []
    decode = reconcile.cache.store.decode

    def counting(encoded: bytes) -> Obj:
        decoded.append(encoded)
        return decode(encoded)

    informer = SharedInformer(Script([], []), name="cm")
    staged = {f"ns/{name}": informer.stage(cm(name, "1")) for name in ("a", "b")}
    monkeypatch.setattr(reconcile.cache.informer, "decode", counting)
    monkeypatch.setattr(reconcile.cache.store, "decode", counting)
    informer.replace_encoded(staged, "1")
    assert decoded == []  # the namespace index comes from the keys
    assert informer.has_synced()
    assert informer.indexer.index_keys("namespace", "ns") == ["ns/a", "ns/b"]
    # An index added later, or a handler, decodes what it needs.
    informer.add_indexers({"name": lambda obj: [obj["metadata"]["name"]]})
    assert informer.indexer.index_keys("name", "b") == ["ns/b"]
    assert len(decoded) == 2
