"""ShardedProvider on fake clusters: each replica engages the clusters the ring gives its shard.

Two replicas, each a ``ShardedProvider`` over ``FakeClusters`` of the same names engaging a
``RecordingEngager``, see the same shard Leases (fed to each one's ``LiveShards`` under a clock
of the test's). Every cluster is engaged by exactly one of them, the one ``owner`` names; a
shard that leaves hands its clusters over at once; one that joins gets its share only after the
old owner let them go and the handover wait passed.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from reconcile import Manager
from reconcile.sharding import LiveShards, Ring, Shard, ShardedProvider, owner
from testenv import FakeClient, FakeClusters, eventually
from tests.builders import RecordingEngager

pytestmark = pytest.mark.anyio

NAMES = [f"member-{i}" for i in range(12)]
HANDOVER = 0.3


def lease(name: str, *, holder: str | None = None, renewed: int = 0) -> dict[str, Any]:
    spec = {"holderIdentity": name if holder is None else holder, "leaseDurationSeconds": 15}
    return {"metadata": {"name": name}, "spec": {**spec, "renewTime": str(renewed)}}


@dataclass
class Replica:
    sharded: ShardedProvider
    clusters: FakeClusters
    engager: RecordingEngager


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def replica(name: str, clock: Callable[[], float], handover: float = HANDOVER) -> Replica:
    ring = Ring("clusters")
    shard = Shard(Manager(client=FakeClient()), ring, name=name)
    members = LiveShards(ring, "default", clock=clock)
    clusters = FakeClusters(NAMES)
    sharded = ShardedProvider(clusters, shard, handover=handover, members=members)
    return Replica(sharded, clusters, RecordingEngager())


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Replica, Replica, Callable[..., None]]]:
    clock = Clock()
    a, b = replica("a", clock), replica("b", clock)

    def leases(*items: dict[str, Any]) -> None:
        for r in (a, b):
            r.sharded.members.observe(items)

    async with anyio.create_task_group() as group:
        for r in (a, b):
            await group.start(r.sharded.run, r.engager)
        yield a, b, leases
        group.cancel_scope.cancel()


async def test_every_cluster_is_engaged_by_the_one_replica_its_shard_owns(
    pair: tuple[Replica, Replica, Callable[..., None]],
) -> None:
    a, b, leases = pair
    assert a.engager.engaged == set() == b.engager.engaged  # no Lease seen: nothing is ours
    leases(lease("a"), lease("b"))

    async def split() -> bool:
        both = a.engager.engaged | b.engager.engaged
        return both == set(NAMES) and not a.engager.engaged & b.engager.engaged

    await eventually(split, timeout=5)
    for name in NAMES:
        engaged_by = "a" if name in a.engager.engaged else "b"
        assert owner(["a", "b"], name) == engaged_by
    assert a.engager.engaged  # 12 names: both get some
    assert b.engager.engaged


async def test_a_shard_that_leaves_hands_its_clusters_over_at_once(
    pair: tuple[Replica, Replica, Callable[..., None]],
) -> None:
    a, b, leases = pair
    leases(lease("a"), lease("b"))
    await eventually(lambda: _engaged(a, b, len(NAMES)), timeout=5)
    start = anyio.current_time()
    leases(lease("a"), lease("b", holder=""))  # b released its Lease (it stopped)
    await eventually(lambda: _is(a.engager.engaged, set(NAMES)), timeout=5)
    assert anyio.current_time() - start < HANDOVER  # a dead owner is not waited for
    await eventually(lambda: _is(b.engager.engaged, set()), timeout=5)


async def test_a_shard_that_joins_waits_for_the_handover_after_the_old_owner_let_go(
    pair: tuple[Replica, Replica, Callable[..., None]],
) -> None:
    a, b, leases = pair
    leases(lease("a"))
    await eventually(lambda: _is(a.engager.engaged, set(NAMES)), timeout=5)
    a.engager.take()
    leases(lease("a"), lease("b"))
    bs = {name for name in NAMES if owner(["a", "b"], name) == "b"}
    await eventually(lambda: _is(a.engager.engaged, set(NAMES) - bs), timeout=5)
    assert sorted(a.engager.take()) == sorted(("disengage", n) for n in bs)
    assert b.engager.engaged == set()  # a let go at once; b waits
    assert b.sharded.waiting == bs
    await eventually(lambda: _is(b.engager.engaged, bs), timeout=5)
    assert b.sharded.waiting == frozenset()


async def test_a_joining_shard_that_loses_a_cluster_during_its_wait_never_engages_it(
    pair: tuple[Replica, Replica, Callable[..., None]],
) -> None:
    a, b, leases = pair
    leases(lease("a"))
    await eventually(lambda: _is(a.engager.engaged, set(NAMES)), timeout=5)
    leases(lease("a"), lease("b"))
    await eventually(lambda: _truthy(b.sharded.waiting), timeout=5)
    leases(lease("a"), lease("b", holder=""))  # b stops before the handover
    await eventually(lambda: _is(a.engager.engaged, set(NAMES)), timeout=5)
    await anyio.sleep(HANDOVER * 1.5)
    assert b.engager.calls == []
    assert b.sharded.waiting == frozenset()


async def test_a_silent_lease_runs_out_and_its_clusters_move() -> None:
    clock = Clock()
    a = replica("a", clock)
    async with anyio.create_task_group() as group:
        await group.start(a.sharded.run, a.engager)
        a.sharded.members.observe([lease("a"), lease("b")])
        mine = {name for name in NAMES if owner(["a", "b"], name) == "a"}
        await eventually(lambda: _is(a.engager.engaged, mine), timeout=5)
        clock.now = 10.0
        a.sharded.members.observe([lease("a", renewed=1), lease("b")])  # a renews, b does not
        clock.now = 16.0
        a.sharded.members.refresh()  # b's Lease ran out
        await eventually(lambda: _is(a.engager.engaged, set(NAMES)), timeout=5)
        group.cancel_scope.cancel()


async def test_the_wrapped_providers_changes_follow_through_when_owned() -> None:
    clock = Clock()
    a = replica("a", clock)
    async with anyio.create_task_group() as group:
        await group.start(a.sharded.run, a.engager)
        a.sharded.members.observe([lease("a")])
        await eventually(lambda: _is(a.engager.engaged, set(NAMES)), timeout=5)
        a.clusters.remove("member-3")
        a.clusters.add("member-99")
        await a.clusters.settled()
        assert a.engager.engaged == (set(NAMES) - {"member-3"}) | {"member-99"}
        a.sharded.members.observe([])  # a's own Lease gone: it engages nothing
        await eventually(lambda: _is(a.engager.engaged, set()), timeout=5)
        group.cancel_scope.cancel()


async def test_a_refused_cluster_is_logged_and_the_others_engaged() -> None:
    a = replica("a", Clock())
    a.engager.refuse = ("member-0",)
    async with anyio.create_task_group() as group:
        await group.start(a.sharded.run, a.engager)
        a.sharded.members.observe([lease("a")])
        await eventually(lambda: _is(a.engager.engaged, set(NAMES) - {"member-0"}), timeout=5)
        assert a.sharded.engaged == frozenset(NAMES) - {"member-0"}
        group.cancel_scope.cancel()


async def test_a_replica_whose_first_look_shows_itself_among_others_waits() -> None:
    clock = Clock()
    b = replica("b", clock)
    async with anyio.create_task_group() as group:
        await group.start(b.sharded.run, b.engager)
        # Its own Lease was up before its watch first listed: as a join, the owners among the
        # others may still hold its clusters.
        b.sharded.members.observe([lease("a"), lease("b")])
        bs = {name for name in NAMES if owner(["a", "b"], name) == "b"}
        await eventually(lambda: _is(b.sharded.waiting, bs), timeout=5)
        assert b.engager.engaged == set()
        await eventually(lambda: _is(b.engager.engaged, bs), timeout=5)
        group.cancel_scope.cancel()


async def test_of_three_a_dead_shards_clusters_go_to_the_others_at_once() -> None:
    clock = Clock()
    replicas = [replica(name, clock) for name in ("a", "b", "c")]
    async with anyio.create_task_group() as group:
        for r in replicas:
            r.sharded.members.observe([lease("a"), lease("b"), lease("c")])
            await group.start(r.sharded.run, r.engager)
        for r in replicas:  # a first view is a join: each waits its handover once
            mine = {n for n in NAMES if owner(["a", "b", "c"], n) == r.sharded.name}
            await eventually(functools.partial(_holds, r, mine), timeout=5)
        start = anyio.current_time()
        for r in replicas:
            r.sharded.members.observe([lease("a"), lease("b"), lease("c", holder="")])
        for r in replicas[:2]:
            mine = {n for n in NAMES if owner(["a", "b"], n) == r.sharded.name}
            await eventually(functools.partial(_holds, r, mine), timeout=5)
        assert anyio.current_time() - start < HANDOVER  # c's clusters were not waited for
        group.cancel_scope.cancel()


def test_bad_arguments_are_refused() -> None:
    manager = Manager(client=FakeClient())
    one, two = Ring("one"), Ring("two")
    shard = Shard(manager, one, two, name="a")
    with pytest.raises(ValueError, match="several rings"):
        ShardedProvider(FakeClusters(), shard)
    with pytest.raises(ValueError, match="does not serve ring 'three'"):
        ShardedProvider(FakeClusters(), shard, ring=Ring("three"))
    with pytest.raises(ValueError, match="handover must not be negative"):
        ShardedProvider(FakeClusters(), shard, ring=one, handover=-1)
    assert ShardedProvider(FakeClusters(), shard, ring=two).handover == shard.config.lease_duration


async def _engaged(a: Replica, b: Replica, count: int) -> bool:
    return len(a.engager.engaged | b.engager.engaged) == count


async def _holds(r: Replica, clusters: set[str]) -> bool:
    return r.engager.engaged == clusters


async def _is(value: object, expected: object) -> bool:
    return value == expected


async def _truthy(value: object) -> bool:
    return bool(value)
