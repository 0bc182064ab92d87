"""Reflector against a scripted ListerWatcher: list/watch order, versions, 410s, errors."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pytest

import reconcile.cache.reflector
from reconcile.cache.reflector import (
    RELEASE_HEAP_AFTER,
    WATCH_LIST_ENV,
    Backoff,
    BackoffManager,
    Reflector,
    is_resource_version_too_large,
)
from reconcile.errors import Forbidden, ServerTimeout, TooManyRequests, api_error
from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv import FakeClient, eventually
from tests.unit.scripted import HANG, Script, cm, gone, initial_events_end, page

pytestmark = pytest.mark.asyncio(loop_scope="session")

FAST = Backoff(initial=0.001, maximum=0.01, jitter=0.0)
CONFIGMAP = GVK("", "v1", "ConfigMap")


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def replace(self, items: list[Obj], resource_version: str) -> None:
        self.calls.append(("replace", ([i["metadata"]["name"] for i in items], resource_version)))

    def apply(self, event_type: str, obj: Obj) -> None:
        self.calls.append((event_type, obj["metadata"]["name"]))


async def _run_until(
    script: Script, done: Callable[[Reflector, Sink], bool], **options: Any
) -> tuple[Reflector, Sink]:
    sink = Sink()
    reflector = Reflector(script, sink, name="test", backoff=FAST, **options)

    async def finished() -> bool:
        return done(reflector, sink)

    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(finished, timeout=5)
        group.cancel_scope.cancel()
    return reflector, sink


async def test_lists_from_the_watch_cache_then_watches_from_the_list_version() -> None:
    script = Script(
        lists=[page("10", cm("a", "9"))],
        watches=[
            [
                {"type": "ADDED", "object": cm("b", "11")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
            ]
        ],
    )
    reflector, sink = await _run_until(script, lambda _r, _s: len(script.watch_calls) == 2)
    assert script.list_calls[0]["resource_version"] == "0"
    assert sink.calls == [("replace", (["a"], "10")), ("ADDED", "b")]
    assert script.watch_calls[0]["resource_version"] == "10"
    # The stream ended: re-watch from where the bookmark left us, without relisting.
    assert script.watch_calls[1]["resource_version"] == "15"
    assert len(script.list_calls) == 1
    assert reflector.synced


async def test_items_get_the_kind_of_their_list() -> None:
    captured: list[Obj] = []

    class Capture(Sink):
        def replace(self, items: list[Obj], resource_version: str) -> None:
            captured.extend(items)

    reflector = Reflector(Script([page("1", cm("a", "1"))], []), Capture(), name="t")
    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(lambda: _value(bool(captured)))
        group.cancel_scope.cancel()
    assert captured[0]["apiVersion"] == "v1"
    assert captured[0]["kind"] == "ConfigMap"


async def _value(value: bool) -> bool:
    return value


async def test_an_expired_watch_relists_from_the_last_version() -> None:
    script = Script(
        lists=[page("10", cm("a", "9")), page("20", cm("b", "19"))],
        watches=[
            [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}]
        ],
    )
    _, sink = await _run_until(script, lambda r, _s: r.relists == 2)
    assert [c["resource_version"] for c in script.list_calls] == ["0", "10"]
    assert sink.calls[-1] == ("replace", (["b"], "20"))


async def test_a_gone_list_falls_back_to_a_quorum_read() -> None:
    script = Script(
        lists=[page("10"), gone(), page("30", cm("c", "29"))],
        watches=[[{"type": "ERROR", "object": {"kind": "Status", "code": 410}}]],
    )
    await _run_until(script, lambda r, _s: r.relists == 2)
    assert [c["resource_version"] for c in script.list_calls] == ["0", "10", ""]
    # "0" and "" ask for pages; the watch cache answered "0" whole, so a versioned relist is left
    # unpaginated for the watch cache to serve, asking for "not older than" that version.
    assert [c["limit"] for c in script.list_calls] == [500, None, 500]
    assert script.list_calls[1]["resource_version_match"] == "NotOlderThan"


async def test_pages_are_followed_and_replaced_as_one() -> None:
    script = Script(
        lists=[page("10", cm("a", "1"), token="next"), page("10", cm("b", "2"))], watches=[]
    )
    _, sink = await _run_until(script, lambda r, _s: r.synced)
    assert script.list_calls[1]["continue_"] == "next"
    assert script.list_calls[1]["resource_version"] is None
    assert sink.calls == [("replace", (["a", "b"], "10"))]


async def test_errors_are_kept_until_a_list_succeeds_and_retried_with_backoff() -> None:
    forbidden = Forbidden({"code": 403, "reason": "Forbidden", "message": "cannot list"})
    states: list[BaseException | None] = []
    script = Script(lists=[forbidden, forbidden, page("5")], watches=[])
    sink = Sink()
    reflector = Reflector(
        script,
        sink,
        name="test",
        backoff=FAST,
        on_state=lambda: states.append(reflector.last_error),
    )
    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(lambda: _value(reflector.synced))
        group.cancel_scope.cancel()
    assert states[:2] == [forbidden, forbidden]
    assert states[2] is None
    assert reflector.last_error is None


async def test_an_inactive_watch_is_reconnected_from_the_same_version() -> None:
    script = Script(lists=[page("10")], watches=[[HANG], [HANG]])
    await _run_until(script, lambda _r, _s: len(script.watch_calls) >= 2, inactivity_timeout=0.05)
    assert [c["resource_version"] for c in script.watch_calls[:2]] == ["10", "10"]
    assert len(script.list_calls) == 1


async def test_a_refused_watch_backs_off_and_rewatches_without_relisting() -> None:
    script = Script(
        lists=[page("10")],
        watches=[ConnectionRefusedError("down"), [{"type": "ADDED", "object": cm("a", "11")}]],
    )
    reflector, _ = await _run_until(script, lambda _r, s: ("ADDED", "a") in s.calls)
    assert len(script.list_calls) == 1
    assert isinstance(reflector.last_error, ConnectionRefusedError)


async def test_backoff_grows_to_its_cap() -> None:
    backoff = Backoff(initial=1, maximum=10, factor=2, jitter=0)
    assert [backoff.delay(n) for n in range(1, 6)] == [1, 2, 4, 8, 10]
    jittered = Backoff(initial=1, maximum=10, factor=2, jitter=1.0)
    assert all(2 <= jittered.delay(2) <= 4 for _ in range(50))


@pytest.mark.parametrize(
    ("listed", "released"), [(RELEASE_HEAP_AFTER - 1, 0), (RELEASE_HEAP_AFTER, 1)]
)
async def test_a_large_list_returns_its_freed_memory_once_stored(
    monkeypatch: pytest.MonkeyPatch, listed: int, released: int
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(reconcile.cache.reflector, "release_heap", lambda: calls.append(1))
    items = [cm(f"o{i}", "1") for i in range(listed)]
    script = Script(lists=[page("10", *items)], watches=[HANG])
    await _run_until(script, lambda r, _s: r.synced)
    assert len(calls) == released


async def test_releasing_the_heap_after_a_large_list_lowers_the_rss() -> None:
    probe = """
import gc, orjson
from reconcile.cache.store import Indexer, release_heap
def rss(): return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0])
data = {f"k{j}": "v" * 600 for j in range(4)}
listed = orjson.loads(orjson.dumps([
    {"metadata": {"name": f"cm{i}", "namespace": "n"}, "data": data} for i in range(10000)
]))
store = Indexer()
for obj in listed:
    store.upsert(obj)
del listed, obj
gc.collect()
before = rss()
release_heap()
print(before, rss())
"""
    out = await anyio.run_process([sys.executable, "-I", "-c", probe])
    before, after = map(int, out.stdout.split())
    assert before - after > 10_000, (before, after)  # KiB: the list's strings went back


EXPIRED: Any = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}


def too_large() -> ServerTimeout:
    """kube-apiserver 1.37's answer to a list at a resourceVersion it has not reached."""
    status = {
        "kind": "Status",
        "status": "Failure",
        "code": 504,
        "reason": "Timeout",
        "message": "Timeout: Too large resource version: 999999999, current: 215",
        "details": {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    }
    error = api_error(504, status)
    assert isinstance(error, ServerTimeout)
    return error


class Timed(Script):
    """A Script that notes when each list call came."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        super().__init__(lists, watches)
        self.list_times: list[float] = []

    async def list(self, **kwargs: Any) -> dict[str, Any]:
        self.list_times.append(anyio.current_time())
        return await super().list(**kwargs)


async def test_backoff_defaults_are_client_gos() -> None:
    # client-go's reflector: NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock).
    assert Backoff() == Backoff(initial=0.8, maximum=30.0, factor=2.0, jitter=1.0, reset_after=120)


async def test_the_backoff_manager_grows_to_its_cap_and_resets_after_a_quiet_period() -> None:
    now = [0.0]
    backoff = Backoff(initial=1, maximum=4, factor=2, jitter=0, reset_after=120)
    manager = BackoffManager(backoff, clock=lambda: now[0])
    delays = []
    for _ in range(4):
        delays.append(manager.next_delay())
        now[0] += 10
    assert delays == [1, 2, 4, 4]
    now[0] += 110  # 120 s since the last backoff: not yet quiet for longer than reset_after
    assert manager.next_delay() == 4
    now[0] += 121
    assert manager.next_delay() == 1


async def test_repeated_410s_relist_with_a_growing_backoff() -> None:
    script = Timed(lists=[page(str(10 * n)) for n in range(1, 5)], watches=[[EXPIRED]] * 4)
    backoff = Backoff(initial=0.05, maximum=1.0, factor=2.0, jitter=0.0)
    reflector = Reflector(script, Sink(), name="test", backoff=backoff)
    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(lambda: _value(len(script.list_times) == 4), timeout=10)
        group.cancel_scope.cancel()
    gaps = [b - a for a, b in zip(script.list_times, script.list_times[1:], strict=False)]
    # Lower bounds only: a loaded machine makes the gaps longer, never shorter (less the clock's
    # resolution). Without a backoff every relist follows its 410 at once.
    for gap, wanted in zip(gaps, [0.05, 0.1, 0.2], strict=True):
        assert gap >= wanted - 0.01, gaps
    assert reflector.last_error is None  # an expired watch is routine, not an error


async def test_a_paged_first_list_keeps_later_relists_paged() -> None:
    # With the watch cache off the apiserver pages even a resourceVersion "0" list; client-go's
    # reflector then keeps paging its relists (paginatedResult).
    script = Script(
        lists=[
            page("10", cm("a", "1"), token="t1"),
            page("10", cm("b", "2")),
            page("20", cm("c", "3"), token="t2"),
            page("20", cm("d", "4")),
        ],
        watches=[[EXPIRED]],
    )
    _, sink = await _run_until(script, lambda r, _s: r.relists == 2, page_size=1)
    calls = [(c["resource_version"], c["limit"], c["continue_"]) for c in script.list_calls]
    assert calls == [("0", 1, None), (None, 1, "t1"), ("10", 1, None), (None, 1, "t2")]
    assert script.list_calls[2]["resource_version_match"] == "NotOlderThan"
    assert script.list_calls[3]["resource_version_match"] is None  # the token carries it
    assert sink.calls == [("replace", (["a", "b"], "10")), ("replace", (["c", "d"], "20"))]


async def test_an_expired_continue_token_falls_back_to_one_full_list() -> None:
    script = Script(
        lists=[
            page("10", cm("a", "1"), token="t1"),
            gone(),
            page("12", cm("a", "1"), cm("b", "11")),
        ],
        watches=[],
    )
    _, sink = await _run_until(script, lambda r, _s: r.synced)
    # As client-go's pager (FullListIfExpired): the same read again, without limit or token.
    full = script.list_calls[2]
    assert (full["resource_version"], full["limit"], full["continue_"]) == ("0", None, None)
    assert sink.calls == [("replace", (["a", "b"], "12"))]


class CompactAfterFirstPage:
    """Lists through a FakeClient, and compacts its history once a first page was served."""

    def __init__(self, fake: FakeClient) -> None:
        self._fake = fake
        self._lw = fake.lister_watcher(CONFIGMAP, namespace="ns")
        self.compacted = False

    async def list(self, **kwargs: Any) -> dict[str, Any]:
        listing = await self._lw.list(**kwargs)
        if listing["metadata"].get("continue") and not self.compacted:
            await self._fake.create(_configmap("late"))  # history moves past the token's version
            self._fake.compact()
            self.compacted = True
        return listing

    def watch(self, **kwargs: Any) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        return self._lw.watch(**kwargs)


def _configmap(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


async def test_a_continue_token_expired_in_the_fake_falls_back_to_a_full_list() -> None:
    fake = FakeClient(objects=[_configmap(f"cm{i}") for i in range(3)])
    lister = CompactAfterFirstPage(fake)
    names: list[str] = []

    class Names(Sink):
        def replace(self, items: list[Obj], resource_version: str) -> None:
            names.extend(i["metadata"]["name"] for i in items)

    reflector = Reflector(
        lister, Names(), name="test", backoff=FAST, page_size=1, use_watch_list=False
    )
    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(lambda: _value(reflector.synced), timeout=5)
        group.cancel_scope.cancel()
    assert lister.compacted
    assert sorted(names) == ["cm0", "cm1", "cm2", "late"]


async def test_too_large_resource_version_is_recognised_by_cause_or_by_message() -> None:
    assert is_resource_version_too_large(too_large())
    old_style = api_error(
        504,
        {
            "kind": "Status",
            "reason": "Timeout",
            "message": "Too large resource version: 9, current: 5",
        },
    )
    assert is_resource_version_too_large(old_style)
    assert not is_resource_version_too_large(
        api_error(504, {"kind": "Status", "reason": "Timeout", "message": "request timed out"})
    )
    assert not is_resource_version_too_large(gone())


async def test_a_too_large_resource_version_relists_with_a_quorum_read() -> None:
    # An apiserver behind the version the reflector last saw (HA: another apiserver's watch cache
    # lags) answers 504 ResourceVersionTooLarge; client-go marks the version unavailable.
    script = Script(lists=[page("10"), too_large(), page("30", cm("c", "29"))], watches=[[EXPIRED]])
    reflector, sink = await _run_until(script, lambda r, _s: r.relists == 2)
    assert [c["resource_version"] for c in script.list_calls] == ["0", "10", ""]
    assert sink.calls[-1] == ("replace", (["c"], "30"))
    assert reflector.last_error is None


# WatchList (client-go's default since 1.35): a watch with sendInitialEvents syncs the store.


async def test_syncs_through_a_watch_list_and_keeps_watching_on_its_stream() -> None:
    script = Script(
        lists=[],
        watches=[],
        watch_lists=[
            [
                {"type": "ADDED", "object": cm("a", "11")},
                {"type": "ADDED", "object": cm("b", "12")},
                initial_events_end("15"),
                {"type": "ADDED", "object": cm("c", "16")},
            ]
        ],
    )
    reflector, sink = await _run_until(script, lambda _r, _s: len(script.watch_calls) == 1)
    assert script.list_calls == []
    first = script.watch_list_calls[0]
    assert (first["resource_version"], first["send_initial_events"]) == ("", True)
    # The initial events reach the sink as one replace at the bookmark's version, then events.
    assert sink.calls == [("replace", (["a", "b"], "15")), ("ADDED", "c")]
    assert reflector.synced
    assert reflector.last_sync_via == "watch-list"
    # The stream ended: a plain watch continues from the last event.
    assert script.watch_calls[0]["resource_version"] == "16"
    assert not script.watch_calls[0].get("send_initial_events")


async def test_a_refused_watch_list_falls_back_to_list_and_watch_for_good() -> None:
    script = Script(lists=[page("10", cm("a", "9")), page("20")], watches=[[EXPIRED]])
    reflector, sink = await _run_until(script, lambda r, _s: r.relists == 2)
    assert len(script.watch_list_calls) == 1  # refused once (422): not asked again on relist
    assert [c["resource_version"] for c in script.list_calls] == ["0", "10"]
    assert sink.calls[0] == ("replace", (["a"], "10"))
    assert reflector.last_sync_via == "list"
    assert reflector.last_error is None


async def test_a_watch_list_that_ends_before_its_bookmark_falls_back_to_a_list() -> None:
    # A server (or proxy) that ignores sendInitialEvents: a plain watch that never says the
    # initial state is complete. What it sent never reaches the sink.
    script = Script(
        lists=[page("10", cm("a", "9"))],
        watches=[],
        watch_lists=[[{"type": "ADDED", "object": cm("half", "3")}]],
    )
    reflector, sink = await _run_until(script, lambda r, _s: r.synced)
    assert sink.calls == [("replace", (["a"], "10"))]
    assert reflector.last_sync_via == "list"
    assert not reflector.use_watch_list


async def test_an_expired_watch_list_streams_again_from_the_latest_state() -> None:
    script = Script(
        lists=[],
        watches=[[EXPIRED]],
        watch_lists=[
            [{"type": "ADDED", "object": cm("a", "9")}, initial_events_end("10")],
            [EXPIRED],
            [{"type": "ADDED", "object": cm("b", "29")}, initial_events_end("30")],
        ],
    )
    _, sink = await _run_until(script, lambda r, _s: r.relists == 2)
    assert [c["resource_version"] for c in script.watch_list_calls] == ["", "10", ""]
    assert sink.calls == [("replace", (["a"], "10")), ("replace", (["b"], "30"))]
    assert script.list_calls == []


async def test_a_throttled_watch_list_backs_off_and_streams_again() -> None:
    throttled = TooManyRequests({"code": 429, "reason": "TooManyRequests"})
    script = Script(
        lists=[],
        watches=[],
        watch_lists=[
            throttled,
            [{"type": "ADDED", "object": cm("a", "9")}, initial_events_end("10")],
        ],
    )
    reflector, sink = await _run_until(script, lambda r, _s: r.synced)
    assert len(script.watch_list_calls) == 2
    assert sink.calls == [("replace", (["a"], "10"))]
    assert reflector.use_watch_list


async def test_watch_list_can_be_turned_off_by_option_or_by_client_gos_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Script(lists=[page("10")], watches=[], watch_lists=[])
    await _run_until(script, lambda r, _s: r.synced, use_watch_list=False)
    assert script.watch_list_calls == []
    monkeypatch.setenv(WATCH_LIST_ENV, "false")
    assert not Reflector(script, Sink(), name="t").use_watch_list
    monkeypatch.setenv(WATCH_LIST_ENV, "true")
    assert Reflector(script, Sink(), name="t").use_watch_list


class StagingSink(Sink):
    """A sink that stages: the reflector hands it each initial object as it arrives."""

    def stage(self, obj: Obj) -> bytes:
        self.calls.append(("stage", obj["metadata"]["name"]))
        return str(obj["metadata"]["name"]).encode()

    def replace_encoded(self, items: Mapping[str, bytes], resource_version: str) -> None:
        self.calls.append(("replace_encoded", (dict(items), resource_version)))


async def _run_staging(script: Script, done: Callable[[Reflector], bool]) -> StagingSink:
    sink = StagingSink()
    reflector = Reflector(script, sink, name="test", backoff=FAST)
    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(lambda: _value(done(reflector)), timeout=5)
        assert reflector.synced == any(c[0] == "replace_encoded" for c in sink.calls)
        group.cancel_scope.cancel()
    return sink


async def test_a_staging_sink_gets_each_watch_list_object_as_it_arrives() -> None:
    added = [{"type": "ADDED", "object": cm(name, "1")} for name in ("a", "b", "c")]
    script = Script(lists=[], watches=[], watch_lists=[[*added, HANG]])
    sink = await _run_staging(script, lambda r: len(r._initial or ()) == 3)
    # Staged one by one before any bookmark; nothing else reached the sink.
    assert sink.calls == [("stage", "a"), ("stage", "b"), ("stage", "c")]


async def test_staged_objects_reach_the_sink_as_one_replace_at_the_bookmark() -> None:
    throttled = {"type": "ERROR", "object": {"kind": "Status", "code": 429}}
    script = Script(
        lists=[],
        watches=[],
        watch_lists=[
            [{"type": "ADDED", "object": cm("lost", "3")}, throttled],
            [
                {"type": "ADDED", "object": cm("a", "11")},
                {"type": "ADDED", "object": cm("b", "12")},
                {"type": "DELETED", "object": cm("b", "13")},
                initial_events_end("25"),
                HANG,
            ],
        ],
    )
    sink = await _run_staging(script, lambda r: r.synced)
    # The throttled attempt starts over: what it staged is dropped, not delivered.
    assert sink.calls == [
        ("stage", "lost"),
        ("stage", "a"),
        ("stage", "b"),
        ("replace_encoded", ({"ns/a": b"a"}, "25")),
    ]
