"""Reflector against a scripted ListerWatcher: list/watch order, versions, 410s, errors."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import reconcile.reflector
from reconcile.errors import Forbidden
from reconcile.reflector import RELEASE_HEAP_AFTER, Backoff, Reflector
from reconcile.store import Obj
from testenv import eventually
from tests.unit.scripted import HANG, Script, cm, gone, page

pytestmark = pytest.mark.asyncio(loop_scope="session")

FAST = Backoff(initial=0.001, maximum=0.01, jitter=0.0)


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
    # Only the quorum read is paginated; a versioned read asks for "not older than" that version.
    assert [c["limit"] for c in script.list_calls] == [None, None, 500]
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
    monkeypatch.setattr(reconcile.reflector, "release_heap", lambda: calls.append(1))
    items = [cm(f"o{i}", "1") for i in range(listed)]
    script = Script(lists=[page("10", *items)], watches=[HANG])
    await _run_until(script, lambda r, _s: r.synced)
    assert len(calls) == released


async def test_releasing_the_heap_after_a_large_list_lowers_the_rss() -> None:
    probe = """
import gc, orjson
from reconcile.store import Indexer, release_heap
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
