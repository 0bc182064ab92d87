"""A cached list with a label selector examines only the objects its = and in requirements allow.

10,000 ConfigMaps are cached from a fake apiserver; a handful carry ``app``. Every test counts the
objects the cache passes through ``Selector.matches_object`` (the check each candidate gets), so
a list that walked the kind shows as 10,000 examined, whatever its answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from reconcile.cache.cache import Cache
from reconcile.cache.store import Indexer
from reconcile.gvk import GVK
from reconcile.labels import Selector
from reconcile.objects import Obj
from testenv import eventually
from testenv.fake import FakeClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
COUNT = 10_000
# name: (namespace, labels) of the few objects with an app label; the rest carry only "n".
SPECIAL: dict[str, tuple[str, dict[str, str]]] = {
    "o00017": ("a", {"app": "x", "tier": "db"}),
    "o04242": ("b", {"app": "x", "tier": "web"}),
    "o09999": ("a", {"app": "x"}),
    "o00100": ("b", {"app": "y"}),
    "o00200": ("a", {"app": "y", "tier": "db"}),
}


def _configmap(index: int) -> Obj:
    name = f"o{index:05d}"
    namespace, labels = SPECIAL.get(name, ("a" if index % 2 else "b", {}))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"n": str(index), **labels}},
    }


@dataclass
class Cached:
    """The fake, a running cache over it, and the names the cache examined since ``clear``."""

    fake: FakeClient
    cache: Cache
    examined: list[str] = field(default_factory=list)

    async def names(self, selector: str, namespace: str | None = None) -> list[str]:
        """Names a cached list answers, in its order; ``examined`` holds what it looked at."""
        self.examined.clear()
        found = await self.cache.list(CONFIGMAP, label_selector=selector, namespace=namespace)
        return [o["metadata"]["name"] for o in found["items"]]

    async def caught_up(self, written: Obj) -> None:
        """Wait until the cache holds the version ``written`` of its object (or later)."""
        version = int(written["metadata"]["resourceVersion"])
        informer = self.cache.get_informer(CONFIGMAP)

        async def synced() -> bool:
            return int(informer.reflector.last_sync_resource_version or 0) >= version

        await eventually(synced)


@contextlib.asynccontextmanager
async def running(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cached]:
    """A synced cache of the 10,000 objects, counting what its lists examine."""
    fake = FakeClient(objects=[_configmap(i) for i in range(COUNT)])
    cache = Cache(fake, sync_timeout=30)
    cached = Cached(fake, cache)
    matches = Selector.matches_object

    def counting(self: Selector, obj: Any) -> bool:
        cached.examined.append(obj["metadata"]["name"])
        return matches(self, obj)

    monkeypatch.setattr(Selector, "matches_object", counting)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        cache.get_informer(CONFIGMAP)
        await cache.wait_for_cache_sync()
        assert len(cache.get_informer(CONFIGMAP).indexer) == COUNT
        yield cached
        group.cancel_scope.cancel()


async def test_an_equality_list_examines_only_the_labelled_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running(monkeypatch) as cached:
        assert await cached.names("app=x") == ["o00017", "o09999", "o04242"]  # by namespace, name
        assert sorted(cached.examined) == ["o00017", "o04242", "o09999"]
        assert await cached.names("app=nothing") == []
        assert cached.examined == []
        assert cached.cache.scans == {}


async def test_an_in_list_examines_only_the_objects_of_its_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running(monkeypatch) as cached:
        assert await cached.names("app in (y,z)") == ["o00200", "o00100"]
        assert sorted(cached.examined) == ["o00100", "o00200"]
        assert await cached.names("app in (x,y)") == [
            "o00017",
            "o00200",
            "o09999",
            "o00100",
            "o04242",
        ]
        assert len(cached.examined) == 5
        assert cached.cache.scans == {}


async def test_inequalities_are_checked_on_the_candidates_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running(monkeypatch) as cached:
        assert await cached.names("app=x,tier!=db") == ["o09999", "o04242"]
        assert sorted(cached.examined) == ["o00017", "o04242", "o09999"]
        assert await cached.names("app in (x,y),!tier,n") == ["o09999", "o00100"]
        assert len(cached.examined) == 5
        assert cached.cache.scans == {}


@pytest.mark.parametrize("selector", ["tier!=db", "tier", "!tier", "app notin (x)"])
async def test_a_selector_no_index_serves_is_a_counted_scan(
    monkeypatch: pytest.MonkeyPatch, selector: str
) -> None:
    async with running(monkeypatch) as cached:
        await cached.names(selector)
        assert len(cached.examined) == COUNT
        assert cached.cache.scans == {CONFIGMAP: 1}


async def test_a_namespaced_list_with_labels_stays_narrowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running(monkeypatch) as cached:
        assert await cached.names("app=x", namespace="a") == ["o00017", "o09999"]
        assert sorted(cached.examined) == ["o00017", "o09999"]
        assert await cached.names("app in (x,y),tier=db", namespace="b") == []
        assert cached.examined == []
        assert cached.cache.scans == {}


async def test_label_changes_move_objects_between_buckets(monkeypatch: pytest.MonkeyPatch) -> None:
    async with running(monkeypatch) as cached:
        assert await cached.names("app=x") == ["o00017", "o09999", "o04242"]  # builds the index
        fake = cached.fake
        await fake.patch(CONFIGMAP, "o00017", {"metadata": {"labels": {"app": "z"}}}, namespace="a")
        await fake.patch(
            CONFIGMAP, "o04242", {"metadata": {"labels": {"app": None}}}, namespace="b"
        )
        await fake.patch(CONFIGMAP, "o00001", {"metadata": {"labels": {"app": "x"}}}, namespace="a")
        await fake.delete(CONFIGMAP, "o09999", namespace="a")
        last = await fake.patch(
            CONFIGMAP, "o00003", {"metadata": {"labels": {"app": ""}}}, namespace="a"
        )
        await cached.caught_up(last)
        assert await cached.names("app=x") == ["o00001"]
        assert cached.examined == ["o00001"]
        assert await cached.names("app=z") == ["o00017"]
        assert cached.examined == ["o00017"]
        assert await cached.names("app in ()") == ["o00003"]  # the empty value is a value
        assert cached.examined == ["o00003"]
        assert cached.cache.scans == {}


async def test_emptied_buckets_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    async with running(monkeypatch) as cached:
        indexer = cached.cache.get_informer(CONFIGMAP).indexer
        assert await cached.names("app=y") == ["o00200", "o00100"]
        assert sorted(indexer.index_values("label:app")) == ["x", "y"]
        await cached.fake.delete(CONFIGMAP, "o00100", namespace="b")
        await cached.fake.delete(CONFIGMAP, "o00200", namespace="a")
        await eventually(lambda: _true(len(indexer) == COUNT - 2))
        assert indexer.index_values("label:app") == ["x"]


async def _true(value: bool) -> bool:
    return value


async def test_an_index_may_not_take_a_label_index_name() -> None:
    # A "label:app" index of the caller's would answer "app=x" lists with whatever it files.
    cache = Cache(FakeClient(objects=[_configmap(1)]), sync_timeout=5)
    with pytest.raises(ValueError, match="reserved"):
        cache.index_field(CONFIGMAP, "label:app", lambda obj: ["x"])
    cache.index_field(CONFIGMAP, "field:data.app", lambda obj: ["x"])


async def test_a_common_label_beside_a_rare_one_costs_the_rare_ones_bucket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every object carries n=<index>; "n in (...)" of 5,000 values beside app=x must not hand
    # out 5,000 keys per list: the rarest requirement's keys are the candidates.
    handed: list[int] = []
    label_keys = Indexer.label_keys

    def counting(self: Indexer, key: str, value: str) -> list[str]:
        found = label_keys(self, key, value)
        handed.append(len(found))
        return found

    monkeypatch.setattr(Indexer, "label_keys", counting)
    async with running(monkeypatch) as cached:
        values = ",".join(str(i) for i in range(0, COUNT, 2))
        assert await cached.names(f"n in ({values}),app=x") == ["o04242"]
        assert await cached.names(f"app=x,n in ({values},17)") == ["o00017", "o04242"]
        assert set(cached.examined) <= {"o00017", "o04242", "o09999"}
        assert sum(handed) <= 2 * 3  # app=x's three keys per list, not n's 5,000
