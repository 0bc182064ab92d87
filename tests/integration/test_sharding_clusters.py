"""Sharding clusters against the real kube-apiserver: shard Leases on the host decide which replica
engages which cluster.

Two managers in this process, each with a ``Shard`` of a ring of no kinds and a
``ShardedProvider`` over ``FakeClusters`` of the same names. A watcher samples both managers'
engaged clusters every few milliseconds for the whole test: a cluster engaged by both at once
fails it. Every cluster ends up engaged by exactly one replica, the ring's owner; a replica that
joins takes its share only after the handover; a replica that stops hands its clusters over within
a bound.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import pytest
from anyio.abc import TaskGroup

from reconcile import Manager
from reconcile.sharding import Ring, Shard, ShardedProvider, owner
from testenv import ControlPlane, FakeClusters, eventually, manager_for
from tests.builders import scaled

pytestmark = pytest.mark.asyncio(loop_scope="session")

NAMES = [f"member-{i}" for i in range(10)]
LEASE_DURATION = scaled(2.0)
RENEW_DEADLINE = scaled(1.5)
RETRY_PERIOD = scaled(0.3)
HANDOVER = scaled(1.0)
BOUND = scaled(10.0)
"""How long a change of the shards may take to show in the engaged clusters."""


@dataclass
class Replica:
    manager: Manager
    sharded: ShardedProvider
    stopped: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class Fleet:
    host: ControlPlane
    group: TaskGroup
    ring: Ring
    replicas: dict[str, Replica] = field(default_factory=dict)
    overlaps: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    async def add(self, name: str) -> Replica:
        manager = await manager_for(self.host)
        shard = Shard(
            manager,
            self.ring,
            name=name,
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        )
        manager.add(shard)
        sharded = ShardedProvider(FakeClusters(NAMES), shard, handover=HANDOVER)
        manager.add_provider(sharded)
        replica = self.replicas[name] = Replica(manager, sharded)
        await self.group.start(self._run, replica)
        return replica

    async def _run(self, replica: Replica, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            await replica.manager.start(task_status=task_status)
        finally:
            replica.stopped.set()

    async def stop(self, name: str) -> None:
        replica = self.replicas.pop(name)
        replica.manager.stop()
        with anyio.fail_after(scaled(30)):
            await replica.stopped.wait()

    def engaged(self) -> dict[str, set[str]]:
        return {name: set(r.manager.engaged()) for name, r in self.replicas.items()}

    async def watch_overlaps(self) -> None:
        while True:
            seen: dict[str, str] = {}
            for replica, clusters in self.engaged().items():
                for cluster in clusters:
                    if cluster in seen:
                        self.overlaps.append((cluster, frozenset((seen[cluster], replica))))
                    seen[cluster] = replica
            await anyio.sleep(0.005)

    async def split_over(self, shards: list[str]) -> dict[str, set[str]]:
        """Wait until each cluster is engaged by its owner among ``shards`` only."""
        expected = {s: {n for n in NAMES if owner(shards, n) == s} for s in shards}

        async def split() -> bool:
            return self.engaged() == expected

        await eventually(split, timeout=BOUND)
        return expected


@contextlib.asynccontextmanager
async def fleet_of(host: ControlPlane) -> AsyncIterator[Fleet]:
    async with anyio.create_task_group() as group:
        fleet = Fleet(host, group, Ring(f"clusters-{secrets.token_hex(3)}"))
        group.start_soon(fleet.watch_overlaps)
        yield fleet
        for name in list(fleet.replicas):
            await fleet.stop(name)
        group.cancel_scope.cancel()


async def test_each_cluster_is_engaged_by_one_replica_and_moves_when_one_stops(
    host: ControlPlane,
) -> None:
    async with fleet_of(host) as fleet:
        await _join_and_leave(fleet)


async def _join_and_leave(fleet: Fleet) -> None:
    await fleet.add("shard-a")
    await fleet.split_over(["shard-a"])
    await fleet.add("shard-b")
    start = anyio.current_time()
    split = await fleet.split_over(["shard-a", "shard-b"])
    assert split["shard-a"]
    assert split["shard-b"]  # ten names: both get some
    assert anyio.current_time() - start >= HANDOVER  # the joining shard waited
    assert fleet.overlaps == []

    await fleet.stop("shard-a")  # releases its Lease once its runnables stopped
    start = anyio.current_time()
    await fleet.split_over(["shard-b"])
    assert anyio.current_time() - start < BOUND
    assert fleet.overlaps == []
