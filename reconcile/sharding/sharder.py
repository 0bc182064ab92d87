"""Sharder assigns each object of a ring to a live shard, and moves objects when shards come and go.

It runs on the leader (a leader-only runnable) over a cache of its own, opened while it leads: the
ring's shard Leases, and the metadata (PartialObjectMetadata) of every object of the ring's kinds,
whatever shard they are on. One controller per kind reconciles an object's label:

- unassigned, or assigned to a shard whose Lease is no longer live: label it with the shard that
  owns its key (``ring.owner``) at once — a dead shard cannot let go, and has stopped working on
  its objects before its Lease could expire;
- assigned to a live shard that no longer owns its key: label it ``drain``, and wait for that shard
  to release it (remove both labels) before assigning it to the new owner — so no key is
  reconciled by two shards at once;
- assigned where it belongs but still marked ``drain`` (the owner changed back meanwhile): remove
  the drain label.

Every label patch carries the resourceVersion it was decided on (a Conflict retries on the newer
object). A membership controller follows the Leases: when the set of live shards changes it
enqueues every object again, and it looks again when the first live Lease would expire unless
renewed. A new object is assigned on first sight (at its ADDED event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.cache import Cache
from reconcile.cacheoptions import ByObject, CacheOptions
from reconcile.controller import Controller, ControllerOptions
from reconcile.errors import NotFound
from reconcile.event import Event
from reconcile.handler import EnqueueRequestForObject
from reconcile.leaderelection import LEASE
from reconcile.manager import Manager
from reconcile.reconciler import Request, Result
from reconcile.sharding.membership import Membership
from reconcile.sharding.metrics import SharderMetrics
from reconcile.sharding.ring import Ring, ShardedKind, owner
from reconcile.source import Kind

__all__ = ["EXPIRY_SLACK", "Sharder"]

log = structlog.get_logger("reconcile.sharding")

EXPIRY_SLACK: Final = 0.1
"""Seconds after a Lease's expiry at which membership is looked at again."""
_MEMBERSHIP: Final = Request("membership")


class _Membership:
    """Every Lease event asks the one membership request again."""

    def requests(self, event: Event) -> list[Request]:
        return [_MEMBERSHIP]


class Sharder:
    """Assigns the objects of ``ring`` to its live shards; add it to the manager (leader only).

    Args:
        manager: whose client reads and labels the objects.
        ring: the kinds to assign and the labels to use.
        namespace: where the shard Leases are (default: the manager's leader election
            namespace, as ``Shard``'s default).
        workers: concurrent label patches per kind.
    """

    def __init__(
        self, manager: Manager, ring: Ring, *, namespace: str | None = None, workers: int = 4
    ) -> None:
        self.manager = manager
        self.ring = ring
        self.namespace = namespace or manager.options.leader_election_namespace or "default"
        self.membership = Membership()
        self.live: tuple[str, ...] | None = None
        self._workers = workers
        self._metrics = SharderMetrics.for_registry(manager.registry)
        self._drains: dict[tuple[str, str], float] = {}
        self._cache: Cache | None = None
        self._assigners: list[Controller] = []

    def __repr__(self) -> str:
        return f"Sharder(ring={self.ring.name!r})"

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Assign until cancelled (the manager runs it while this replica leads)."""
        cache = Cache(self.manager.api_reader, options=self._cache_options())
        self._cache = cache
        registry = self.manager.registry
        options = ControllerOptions(max_concurrent_reconciles=self._workers)
        self._assigners = [
            self._assigner(cache, kind, options, registry) for kind in self.ring.kinds
        ]
        membership = Controller(
            f"sharder-{self.ring.name}", self._reconcile_membership, registry=registry
        )
        membership.watch(Kind(cache, LEASE, _Membership()))
        async with anyio.create_task_group() as group:
            await group.start(cache.run)
            for controller in (membership, *self._assigners):
                group.start_soon(controller.run)
            task_status.started()

    def _cache_options(self) -> CacheOptions:
        leases = ByObject(namespaces=(self.namespace,), label_selector=self.ring.lease_label)
        return CacheOptions(by_object={LEASE: leases})

    def _assigner(
        self, cache: Cache, kind: ShardedKind, options: ControllerOptions, registry: Any
    ) -> Controller:
        async def assign(request: Request) -> Result | None:
            return await self._assign(cache, kind, request)

        controller = Controller(
            f"sharder-{self.ring.name}-{kind.gvk.kind.lower()}",
            assign,
            options=options,
            registry=registry,
        )
        controller.watch(Kind(cache, kind.gvk, EnqueueRequestForObject(), metadata_only=True))
        return controller

    # --- membership ------------------------------------------------------------------------------

    async def _reconcile_membership(self, request: Request) -> Result | None:
        assert self._cache is not None
        leases = await self._cache.list(
            LEASE, namespace=self.namespace, label_selector=self.ring.lease_label
        )
        self.membership.observe(leases["items"])
        live = self.membership.live()
        if live != self.live:
            log.info("shards changed", ring=self.ring.name, live=list(live))
            self.live = live
            self._metrics.live_shards.labels(self.ring.name).set(len(live))
            await self._enqueue_all()
        expiry = self.membership.next_expiry()
        return Result(requeue_after=expiry + EXPIRY_SLACK) if expiry is not None else None

    async def _enqueue_all(self) -> None:
        assert self._cache is not None
        for kind, controller in zip(self.ring.kinds, self._assigners, strict=True):
            listed = await self._cache.list(kind.gvk, metadata_only=True)
            for item in listed["items"]:
                metadata = item["metadata"]
                controller.queue.add(Request(metadata["name"], metadata.get("namespace") or ""))

    # --- assignment ------------------------------------------------------------------------------

    async def _assign(self, cache: Cache, kind: ShardedKind, request: Request) -> Result | None:
        live = self.live
        if not live:
            return None  # no shard yet: assigned when the first one appears
        try:
            obj = await cache.get(
                kind.gvk, request.name, namespace=request.namespace or None, metadata_only=True
            )
        except NotFound:
            self._drains.pop((kind.gvk.kind, _key(request)), None)
            return None
        key = kind.key(obj)
        if key is None:
            return None
        await self._settle(kind, obj, owner(live, key), live)
        return None

    async def _settle(
        self, kind: ShardedKind, obj: Mapping[str, Any], desired: str | None, live: tuple[str, ...]
    ) -> None:
        ring = self.ring
        labels = obj["metadata"].get("labels") or {}
        current, draining = labels.get(ring.shard_label), ring.drain_label in labels
        drain_key = (kind.gvk.kind, _object_key(obj))
        if current == desired:
            if draining:
                await self._label(kind, obj, {ring.drain_label: None})
            return
        if current and current in live:
            if not draining:
                await self._label(kind, obj, {ring.drain_label: "true"})
                self._drains[drain_key] = anyio.current_time()
            return
        await self._label(kind, obj, {ring.shard_label: desired, ring.drain_label: None})
        self._metrics.assignments.labels(ring.name, desired).inc()
        started = self._drains.pop(drain_key, None)
        if started is not None:
            self._metrics.moves.labels(ring.name, "drained").inc()
            self._metrics.drain_seconds.labels(ring.name).observe(anyio.current_time() - started)
        elif current:
            self._metrics.moves.labels(ring.name, "dead").inc()

    async def _label(
        self, kind: ShardedKind, obj: Mapping[str, Any], labels: Mapping[str, str | None]
    ) -> None:
        """Patch ``labels`` on ``obj``, if it is still the version the decision was made on.

        Raises:
            Conflict: it changed since (the controller retries on the newer object).
        """
        metadata = obj["metadata"]
        patch = {"metadata": {"resourceVersion": metadata["resourceVersion"], "labels": labels}}
        try:
            await self.manager.api_reader.patch(
                kind.gvk, metadata["name"], patch, namespace=metadata.get("namespace") or None
            )
        except NotFound:
            return


def _key(request: Request) -> str:
    return f"{request.namespace}/{request.name}" if request.namespace else request.name


def _object_key(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    namespace = metadata.get("namespace") or ""
    return f"{namespace}/{metadata['name']}" if namespace else str(metadata["name"])
