"""ShardedProvider spreads the clusters of a provider over the replicas: each engages its share.

The objects of a ring are assigned by the leader's sharder, which labels them; the clusters a
provider engages are not objects of the host (kubeconfig files, Secrets, a test environment), so
each replica decides for itself, by the same rendezvous hashing (``ring.owner``) over the same
live shards (``LiveShards``, from the shards' Leases), keyed by the cluster's name: of the
clusters the wrapped provider engages, a replica engages only those its shard owns, and
disengages a cluster as soon as it sees that it no longer owns it.

Handover. A cluster must not be reconciled by two replicas at once for long. Rendezvous hashing
moves a cluster only from or to the shard that left or joined, so there are two cases:

- its owner left: a shard's Lease is released only after every runnable of its manager stopped
  (``Shard.release``), and one that cannot renew stops before its Lease expires — the new owner
  engages at once;
- a shard joined (or this replica's own Lease just appeared): the old owner is still live and
  disengages when its own watch shows the new Lease, so the new owner waits ``handover``
  seconds (default: the shard's lease duration) before engaging, and engages then only if it
  still owns the cluster. This is timebertt's drain step made a bound instead of an
  acknowledgement (a cluster has no object for the old owner to release): correct as long as
  every replica sees a Lease change, and finishes the reconciles in flight in a disengaged
  cluster, within ``handover`` seconds. A replica whose watch stops delivering sees every
  Lease run out within a lease duration and then engages nothing (``LiveShards``).

A replica whose own Lease is not live engages nothing. Errors of the engager (a name another
provider engaged) are logged, as a provider would; the wrapped provider never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.client.client import Client
from reconcile.client.config import ClusterConfig
from reconcile.multicluster.provider import Engager, Provider
from reconcile.sharding.live_shards import LiveShards
from reconcile.sharding.ring import Ring, owner
from reconcile.sharding.shard import Shard

__all__ = ["ShardedProvider"]

log = structlog.get_logger("reconcile.sharding")

_IDLE: Final = 3600.0
"""Seconds the provider sleeps with nothing to wait for (every change wakes it)."""


@dataclass(frozen=True)
class _Wanted:
    """How the wrapped provider wants a cluster engaged."""

    config: ClusterConfig | None
    client: Client | None

    def same(self, other: _Wanted) -> bool:
        # Identity: the wrapped provider hands a new config when the connection changed.
        return self.config is other.config and self.client is other.client


class ShardedProvider:
    """``provider``'s clusters, of which this replica engages those its shard owns.

    Args:
        provider: the provider whose clusters are spread over the shards.
        shard: this replica's shard (added to the manager too: its Lease is its membership).
        ring: the ring whose shards share the clusters; defaults to the shard's only ring (a
            ring of no kinds will do: ``Ring("clusters")``).
        handover: seconds a cluster taken from a live shard waits before it is engaged here
            (see the module); defaults to the shard's lease duration.
        members: the ring's ``LiveShards``, if the caller runs it (one for several providers);
            by default the provider runs its own over a client of the shard's manager.

    Raises:
        ValueError: (at construction) no ``ring`` for a shard of several, a ring the shard
            does not serve, or a negative ``handover``.
    """

    def __init__(
        self,
        provider: Provider,
        shard: Shard,
        *,
        ring: Ring | None = None,
        handover: float | None = None,
        members: LiveShards | None = None,
    ) -> None:
        if ring is None:
            if len(shard.rings) != 1:
                raise ValueError(f"{shard!r} has several rings: name the one to shard clusters by")
            ring = shard.rings[0]
        if ring not in shard.rings:
            raise ValueError(f"{shard!r} does not serve ring {ring.name!r}")
        if handover is not None and handover < 0:
            raise ValueError(f"handover must not be negative, got {handover}")
        self.provider = provider
        self.shard = shard
        self.name = shard.name
        self.handover = shard.config.lease_duration if handover is None else handover
        self._runs_members = members is None
        self.members = members or LiveShards(ring, shard.config.lease_namespace)
        self._wanted: dict[str, _Wanted] = {}
        self._engaged: dict[str, _Wanted] = {}
        self._due: dict[str, float] = {}
        """Clusters owned here but taken from a live shard -> when they may be engaged."""
        self._before: tuple[str, ...] | None = None
        """The live shards the last assignment was decided on (None: none yet)."""
        self._lock = anyio.Lock()
        self._wake = anyio.Event()
        self.members.subscribe(self._changed)

    def __repr__(self) -> str:
        return f"ShardedProvider({self.provider!r}, shard={self.name!r})"

    @property
    def engaged(self) -> frozenset[str]:
        """The clusters this replica engaged."""
        return frozenset(self._engaged)

    @property
    def waiting(self) -> frozenset[str]:
        """The clusters owned here that wait for their handover."""
        return frozenset(self._due)

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow the live shards and run the wrapped provider; started once the shards'
        Leases were listed (when it runs its own ``LiveShards``), the provider reported started
        and the clusters then owned here (and not handed over) were engaged."""
        async with anyio.create_task_group() as group:
            if self._runs_members:
                await group.start(self._follow, self.shard.manager.pooled_client())
            await group.start(self.provider.run, _Wants(self, engager))
            await self._assign(engager)
            task_status.started()
            while True:
                with anyio.move_on_after(self._next_due()):
                    await self._wake.wait()
                self._wake = anyio.Event()
                await self._assign(engager)

    async def _follow(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await self.members.run(client, task_status=task_status)
        finally:
            if client is not self.shard.manager.api_reader:
                with anyio.CancelScope(shield=True):
                    await client.close()

    def _changed(self, live: tuple[str, ...]) -> None:
        self._wake.set()

    def _next_due(self) -> float:
        if not self._due:
            return _IDLE
        return max(0.0, min(self._due.values()) - anyio.current_time())

    async def want(self, engager: Engager, name: str, wanted: _Wanted | None) -> None:
        """The wrapped provider engaged (or, with None, disengaged) ``name``."""
        if wanted is None:
            self._wanted.pop(name, None)
        else:
            self._wanted[name] = wanted
        await self._assign(engager, (name,))

    async def _assign(self, engager: Engager, names: tuple[str, ...] | None = None) -> None:
        """Engage what this shard owns, disengage what it does not (``names``: only those)."""
        async with self._lock:
            live = self.members.live
            if live is None:
                return  # the Leases were not listed yet: nothing is known to be ours
            # Who may hold a cluster now: its owner in the last view decided on, and, if this
            # shard was not in that view (it is joining), its owner among the others.
            others = tuple(shard for shard in live if shard != self.name)
            if self._before is None:
                before: tuple[tuple[str, ...], ...] = (others,)
            elif self.name in self._before:
                before = (self._before,)
            else:
                before = (self._before, others)
            every = set(self._wanted) | set(self._engaged) | set(self._due)
            for name in sorted(every if names is None else names):
                await self._decide(engager, name, live, before)
            if names is None:
                self._before = live

    async def _decide(
        self,
        engager: Engager,
        name: str,
        live: tuple[str, ...],
        before: tuple[tuple[str, ...], ...],
    ) -> None:
        wanted = self._wanted.get(name)
        mine = wanted is not None and self.name in live and owner(live, name) == self.name
        if wanted is None or not mine:
            self._due.pop(name, None)
            if self._engaged.pop(name, None) is not None:
                log.info("cluster not this shard's, disengaging", cluster=name, shard=self.name)
                await engager.disengage(name)
            return
        engaged = self._engaged.get(name)
        if engaged is not None and engaged.same(wanted):
            return
        now = anyio.current_time()
        if engaged is None and name not in self._due:
            holders = {owner(shards, name) for shards in before}
            taken = any(h is not None and h != self.name and h in live for h in holders)
            self._due[name] = now + self.handover if taken else now
            if taken:
                log.info("cluster handed over", cluster=name, shard=self.name, wait=self.handover)
                self._wake.set()  # decided outside run's loop (want): its sleep must shorten
        if engaged is None and self._due[name] > now:
            return
        self._due.pop(name, None)
        try:
            await engager.engage(name, wanted.config, client=wanted.client)
        except Exception as error:  # refused (another provider's name): the others go on
            self._engaged.pop(name, None)
            log.warning("engaging cluster failed", cluster=name, shard=self.name, error=error)
            return
        self._engaged[name] = wanted
        log.info("cluster engaged by its shard", cluster=name, shard=self.name)


class _Wants:
    """The Engager the wrapped provider drives: records what it wants, engages what is ours."""

    def __init__(self, sharded: ShardedProvider, engager: Engager) -> None:
        self._sharded, self._engager = sharded, engager

    async def engage(
        self, name: str, config: ClusterConfig | None = None, *, client: Client | None = None
    ) -> None:
        if not name:
            raise ValueError('cannot engage a cluster named "": that is the manager\'s own')
        if config is None and client is None:
            raise ValueError(f"cannot engage cluster {name!r}: pass a config or a client")
        await self._sharded.want(self._engager, name, _Wanted(config, client))

    async def disengage(self, name: str) -> None:
        await self._sharded.want(self._engager, name, None)
