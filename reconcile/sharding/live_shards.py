"""LiveShards follows which shards of a ring are live, read-only, on any replica.

The sharder follows the ring's shard Leases on the leader only; an assignment every replica makes
for itself (``ShardedProvider``: which clusters it engages) needs every replica to see them. A
``LiveShards`` lists and watches the Leases that carry the ring's label in a cache of its own (one
informer, no writes), judges them with ``Membership`` (the same rule as the sharder: a Lease is
live while held and changed within its duration, by this process's clock), and tells its
subscribers whenever the set of live shards changes — at a Lease event, or when a silent Lease
runs out. A watch that stops delivering makes every Lease look silent: after a lease duration
such a replica sees no live shard, itself included, rather than an old view.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.cache.cache import Cache
from reconcile.cache.informer import FuncHandler
from reconcile.cache.options import ByObject, CacheOptions
from reconcile.client.client import Client
from reconcile.leaderelection import LEASE
from reconcile.sharding.membership import Membership
from reconcile.sharding.ring import Ring
from reconcile.sharding.sharder import EXPIRY_SLACK

__all__ = ["LiveShards"]

log = structlog.get_logger("reconcile.sharding")

Listener = Callable[[tuple[str, ...]], None]


class LiveShards:
    """The live shards of ``ring`` whose Leases are in ``namespace``; ``run`` keeps it current.

    Args:
        ring: whose Leases (labelled ``ring.lease_label``) are followed.
        namespace: where the shards' Leases are (``Shard.config.lease_namespace``).
        clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(
        self, ring: Ring, namespace: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ring = ring
        self.namespace = namespace
        self.membership = Membership(clock)
        self.live: tuple[str, ...] | None = None
        """The live shards, sorted; None until the Leases were first observed."""
        self._listeners: list[Listener] = []

    def __repr__(self) -> str:
        return f"LiveShards(ring={self.ring.name!r}, namespace={self.namespace!r})"

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(live)`` at every change of the live shards (it must not block)."""
        self._listeners.append(listener)

    def observe(self, leases: Iterable[Mapping[str, Any]]) -> None:
        """Take the ring's Leases as they are now, and tell the subscribers if that changed
        the live shards (``run`` calls it; tests call it with Leases of their own)."""
        self.membership.observe(leases)
        self.refresh()

    def refresh(self) -> None:
        """Judge the Leases seen last against the clock (one may have run out meanwhile)."""
        live = self.membership.live()
        if live == self.live:
            return
        log.info("live shards", ring=self.ring.name, live=list(live))
        self.live = live
        for listener in list(self._listeners):
            listener(live)

    async def run(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow the Leases through ``client`` until cancelled; started once they were listed
        and observed."""
        scope = ByObject(namespaces=(self.namespace,), label_selector=self.ring.lease_label)
        cache = Cache(client, options=CacheOptions(by_object={LEASE: scope}))
        wake = anyio.Event()

        def changed(*_: Any) -> None:
            wake.set()

        async with anyio.create_task_group() as group:
            await group.start(cache.run)
            informer = cache.get_informer(LEASE, namespace=self.namespace)
            informer.add_event_handler(FuncHandler(changed, changed, changed))
            await cache.wait_for_cache_sync()
            started = False
            while True:
                wake = anyio.Event()
                self.observe(informer.indexer.values())
                if not started:
                    task_status.started()
                    started = True
                expiry = self.membership.next_expiry()
                with anyio.move_on_after(expiry + EXPIRY_SLACK if expiry is not None else 3600):
                    await wake.wait()
