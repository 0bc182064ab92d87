"""Sharder assigns the objects of a ring to live shards, key by key, and moves keys when shards come
and go.

It runs on the leader (a leader-only runnable) over a cache of its own, opened while it leads: the
ring's shard Leases, and of every object of the ring's kinds, whatever shard it is on, only what an
assignment is decided on (name, resourceVersion, shard and drain labels, key), indexed by key. Its
work queue holds keys: every object of a key (a template, its binding and their Works, say) moves
together, as one group:

- every object on the shard that owns the key (``ring.owner``, the shard of the replica it runs
  in weighed ``leader_weight``) and none marked ``drain``: done;
- some object on another live shard: label those ``drain`` and wait until that shard released them
  (removed both labels) — no object of the key is assigned anywhere else meanwhile, so no key is
  reconciled by two shards at once;
- otherwise (the rest unassigned, on the owner, or on shards whose Leases expired — a dead shard
  cannot release, and stopped working before its Lease could expire): label every object with the
  owner, and remove stale drain labels, deepest kinds first, each depth once this cache shows the
  deeper one labelled (``ShardedKind.depth``: the owner sees a key's children before their
  parents).

Every label patch carries the resourceVersion it was decided on (a Conflict retries the key on the
newer objects), and a key is not decided on again until the cache shows the versions the sharder's
own patches made (client-go's controller expectations, by version). A membership controller follows
the Leases: when the set of live shards changes it enqueues every key, and it looks again when the
first live Lease would expire unless renewed. A new object is assigned on first sight (its ADDED
event).
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Mapping
from typing import Any, Final

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.cache.cache import Cache
from reconcile.cache.informer import Transform
from reconcile.cache.options import ByObject, CacheOptions
from reconcile.client.client import Client
from reconcile.controller import Controller, ControllerOptions
from reconcile.errors import Conflict, NotFound
from reconcile.event import Event, EventType
from reconcile.gvk import GVK
from reconcile.leaderelection import LEASE
from reconcile.manager import Manager
from reconcile.objects import Obj, object_key, resource_version_of
from reconcile.reconciler import Request, Result
from reconcile.sharding.membership import Membership
from reconcile.sharding.metrics import SharderMetrics
from reconcile.sharding.ring import Ring, ShardedKind, owner, relabel
from reconcile.source import Kind
from reconcile.workqueue import DEFAULT_PRIORITY

__all__ = ["CONFLICT_RETRY", "EXPIRY_SLACK", "KEY_INDEX", "ORPHAN_PRIORITY", "Sharder"]

log = structlog.get_logger("reconcile.sharding")

CONFLICT_RETRY: Final = 0.1
"""Seconds before a key whose label patch met a newer object (or with a kind not synced yet)
is settled again."""
OWN_WRITE_WAIT: Final = 2.0
"""Seconds a key waits at most for the sharder's cache to show the versions its own label
patches made (a watch relisted meanwhile may never show one of them)."""
_WRITTEN_SWEEP: Final = 10_000
"""Versions remembered at which the expired ones are forgotten."""
EXPIRY_SLACK: Final = 0.1
"""Seconds after a Lease's expiry at which membership is looked at again."""
ORPHAN_PRIORITY: Final = 10
"""The sharder's queue priority of keys with an object on a dead shard (default 0): their
retries keep it, their later steps (a key's children are labelled first, its parents after)
go above it."""
_MEMBERSHIP: Final = Request("membership")
_KEY: Final = "shardingKey"
"""Where the sharder's cache keeps an object's ring key (``_slim``)."""
KEY_INDEX: Final = "sharding:key"
"""The index of the sharder's cache that groups objects by their ring key."""


class _Step(enum.Enum):
    """What one settling of a key did."""

    SETTLED = "settled"
    """Nothing left to do, or drains asked for (their releases enqueue the key)."""
    CHANGED = "changed"
    """An object changed since the decision: decide again on the newer one."""
    DEEPER_LABELLED = "deeper labelled"
    """The deepest stale objects were labelled; the rest once the cache shows them."""


class _Membership:
    """Every Lease event asks the one membership request again."""

    def requests(self, event: Event) -> list[Request]:
        return [_MEMBERSHIP]


class _ByKey:
    """An object's event enqueues its key."""

    def requests(self, event: Event) -> list[Request]:
        keys = {_key_of(obj) for obj in (event.obj, event.old) if obj}
        return [Request(key) for key in keys if key is not None]


class Sharder:
    """Assigns the objects of ``ring`` to its live shards; add it to the manager (leader only).

    Args:
        manager: whose client reads and labels the objects.
        ring: the kinds to assign and the labels to use.
        namespace: where the shard Leases are (default: the manager's leader election
            namespace, as ``Shard``'s default).
        workers: keys settled concurrently (label patches are I/O: many at once).
        leader_shard: the shard of this replica, if it has one of ``ring``'s: while it leads it
            takes ``leader_weight`` times a shard's share of the keys (weighted rendezvous
            hashing), the sharder's own cache being part of its load.
        leader_weight: from 0 (no keys unless it is alone) to 1 (default: a share like any).

    Raises:
        ValueError: (at construction) a ``leader_weight`` outside [0, 1].
    """

    def __init__(
        self,
        manager: Manager,
        ring: Ring,
        *,
        namespace: str | None = None,
        workers: int = 32,
        leader_shard: str | None = None,
        leader_weight: float = 1.0,
    ) -> None:
        if not 0.0 <= leader_weight <= 1.0:
            raise ValueError(f"leader_weight must be within [0, 1], got {leader_weight}")
        self.manager = manager
        self.ring = ring
        self.weights: dict[str, float] = (
            {leader_shard: leader_weight} if leader_shard is not None else {}
        )
        """Shard -> weight in the ring's hashing (absent: 1)."""
        self.namespace = namespace or manager.options.leader_election_namespace or "default"
        self.membership = Membership()
        self.live: tuple[str, ...] | None = None
        self._workers = workers
        self._metrics = SharderMetrics.for_registry(manager.registry)
        self._drains: dict[str, float] = {}
        self._written: dict[tuple[GVK, str], tuple[str, float]] = {}
        """(kind, object) -> the resourceVersion its last label patch made, and until when to
        wait for the cache to show it (client-go's controller expectations, by version)."""
        self._waiting: dict[str, int] = {}
        """Keys put off until the cache shows the sharder's own patches of them -> the queue
        priority they are woken with: one above the one they were settled at, so a key whose
        move has begun goes before the keys not begun (each key's wait for its own writes then
        overlaps other keys' patches, rather than a wave of children waiting for the last
        child's event before a wave of parents)."""
        self._cache: Cache | None = None
        self._client: Client = manager.api_reader
        self._keys: Controller | None = None
        ring.subscribe(self._watch_new_kind)

    def __repr__(self) -> str:
        return f"Sharder(ring={self.ring.name!r})"

    @property
    def cache(self) -> Cache | None:
        """Its own cache, once it has led: the ring's shard Leases, and of every object of the
        ring only its name, resourceVersion, shard and drain labels and key."""
        return self._cache

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Assign until cancelled (the manager runs it while this replica leads)."""
        # A pool of its own: the watches of every kind of the ring would otherwise take the
        # connections the controllers (and the Lease renewals) need.
        client = self.manager.pooled_client()
        try:
            await self._run(client, task_status)
        finally:
            self._cache, self.live = None, None
            if client is not self.manager.api_reader:
                with anyio.CancelScope(shield=True):
                    await client.close()

    async def _run(self, client: Client, task_status: TaskStatus[None]) -> None:
        cache = Cache(client, options=self._cache_options())
        self._cache, self._client = cache, client
        registry = self.manager.registry
        keys = Controller(
            f"sharder-{self.ring.name}",
            self._reconcile_key,
            options=ControllerOptions(max_concurrent_reconciles=self._workers),
            registry=registry,
        )
        for kind in self.ring.kinds:
            self._watch(cache, keys, kind)
        self._keys = keys
        membership = Controller(
            f"sharder-{self.ring.name}-leases", self._reconcile_membership, registry=registry
        )
        membership.watch(Kind(cache, LEASE, _Membership()))
        async with anyio.create_task_group() as group:
            await group.start(cache.run)
            group.start_soon(membership.run)
            group.start_soon(keys.run)
            task_status.started()

    def _watch_new_kind(self, kind: ShardedKind) -> None:
        # While leading; else run() watches every kind the ring has by then.
        if self._cache is not None and self._keys is not None:
            self._watch(self._cache, self._keys, kind)

    def _watch(self, cache: Cache, keys: Controller, kind: ShardedKind) -> None:
        cache.configure(kind.gvk, ByObject(transform=_slim(self.ring, kind)))
        cache.index_field(kind.gvk, KEY_INDEX, _key_index)
        matters = functools.partial(_assignment_changed, self.ring)
        own = functools.partial(self._not_own_write, kind.gvk)
        keys.watch(Kind(cache, kind.gvk, _ByKey(), (own, matters), metadata_only=True))

    def admission_shard(self, kind: ShardedKind, obj: Mapping[str, Any]) -> str | None:
        """The shard a new object of ``kind`` is labelled with as it is created, or None to
        leave it to first sight: this replica does not lead (only the sharder's cache knows the
        key's other objects), no shard is live, the key is unknown, or some object of the key
        is not settled on the owner (a move under way is decided by the sharder's queue alone:
        assigning here could split the key between two shards)."""
        live = self.live
        if self._cache is None or not live:
            return None
        key = kind.key(obj)
        if key is None or key in self._waiting:
            return None
        desired = self._owner(live, key)
        group = self._group(key)
        if group is None:
            return None
        for _, other in group:
            labels = _labels(other)
            if labels.get(self.ring.shard_label) != desired or self.ring.drain_label in labels:
                return None
        return desired

    def _owner(self, live: tuple[str, ...], key: str) -> str | None:
        return owner(live, key, self.weights)

    def _not_own_write(self, gvk: GVK[Any], event: Event) -> bool:
        """False for the event of a label patch of the sharder's own: the key was settled with
        it already, and looking again before the cache shows the key's other patches would
        patch them again on the versions they replaced (each a Conflict, and a retry). A key
        put off until the cache showed it is woken here, at its priority."""
        if event.type is not EventType.UPDATE:
            return True
        written_key = (gvk, object_key(event.obj))
        written = self._written.get(written_key)
        if written is None or written[0] != resource_version_of(event.obj):
            return True
        del self._written[written_key]
        key = _key_of(event.obj)
        if key is not None and key in self._waiting and self._keys is not None:
            self._keys.queue.add(Request(key), priority=self._waiting[key])
        return False

    def _cache_options(self) -> CacheOptions:
        leases = ByObject(namespaces=(self.namespace,), label_selector=self.ring.lease_label)
        return CacheOptions(by_object={LEASE: leases})

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
        """Enqueue the keys the new membership moves (or that are not settled): at 10,000 keys
        the others would hold a dead shard's keys back behind a whole pass of no-ops. A dead
        shard's keys go first (``ORPHAN_PRIORITY``): no replica reconciles them until they are
        assigned, while new objects and drains wait in a queue that a bulk of creates fills."""
        assert self._cache is not None
        assert self._keys is not None
        live, ring = self.live or (), self.ring
        unsettled: dict[str, int] = {}
        for kind in ring.kinds:
            for informer in self._cache.get_informers(kind.gvk, metadata_only=True):
                for obj in informer.indexer.values():
                    key = _key_of(obj)
                    labels = _labels(obj)
                    current = labels.get(ring.shard_label)
                    if key is None or (
                        ring.drain_label not in labels and current == self._owner(live, key)
                    ):
                        continue
                    orphaned = current is not None and current not in live
                    priority = ORPHAN_PRIORITY if orphaned else DEFAULT_PRIORITY
                    unsettled[key] = max(priority, unsettled.get(key, DEFAULT_PRIORITY))
        for key, priority in unsettled.items():
            self._keys.queue.add(Request(key), priority=priority)

    # --- assignment ------------------------------------------------------------------------------

    async def _reconcile_key(self, request: Request) -> Result | None:
        live = self.live
        if not live:
            return None  # no shard yet: every key is enqueued when the first one appears
        key = request.name
        assert self._keys is not None
        woken = self._keys.queue.priority_of(request) + 1
        self._waiting.pop(key, None)
        group = self._group(key)
        if group is None:
            return Result(requeue_after=CONFLICT_RETRY)
        if any(self._behind(kind, obj) for kind, obj in group):
            # Looked at again when the cache shows the patch (_not_own_write), or at the latest
            # once the wait is over (a relist may never show that very version).
            self._waiting[key] = woken
            return Result(requeue_after=OWN_WRITE_WAIT)
        if not group:
            self._drains.pop(key, None)
            return None
        step = await self._settle(key, group, self._owner(live, key), live, woken)
        log.debug("key settled", key=key, step=step.name)
        if step is _Step.CHANGED:
            # Changed since (a status write, often): decide again on the version the cache is
            # about to show. Not a failure: the rate limiter's backoff (and its shared 10 qps
            # bucket) would hold a whole move back behind the busiest objects.
            return Result(requeue_after=CONFLICT_RETRY)
        if step is _Step.DEEPER_LABELLED:  # the rest once the cache shows these
            return Result(requeue_after=OWN_WRITE_WAIT)
        return None

    def _group(self, key: str) -> list[tuple[ShardedKind, dict[str, Any]]] | None:
        """Every object of ``key``, None while a kind's informer has not synced (a key decided
        on a part of its objects could be split between two shards)."""
        assert self._cache is not None
        group: list[tuple[ShardedKind, dict[str, Any]]] = []
        for kind in self.ring.kinds:
            for informer in self._cache.get_informers(kind.gvk, metadata_only=True):
                if not informer.has_synced():
                    return None
                group.extend((kind, obj) for obj in informer.indexer.by_index(KEY_INDEX, key))
        return group

    def _behind(self, kind: ShardedKind, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` is cached at a version older than the sharder's own last patch of
        it made (so deciding on it would patch it again)."""
        key = (kind.gvk, object_key(obj))
        written = self._written.get(key)
        if written is None:
            return False
        version, until = written
        if version == resource_version_of(obj) or anyio.current_time() > until:
            del self._written[key]
            return False
        return True

    async def _settle(
        self,
        key: str,
        group: list[tuple[ShardedKind, dict[str, Any]]],
        desired: str | None,
        live: tuple[str, ...],
        woken: int,
    ) -> _Step:
        """Take the key one step towards ``desired``; if it has another step after this one,
        it is woken at priority ``woken`` once the cache shows this one."""
        ring = self.ring
        elsewhere = [
            (kind, obj)
            for kind, obj in group
            if _labels(obj).get(ring.shard_label) not in (None, desired)
            and _labels(obj).get(ring.shard_label) in live
        ]
        if elsewhere:
            self._drains.setdefault(key, anyio.current_time())
            drains = [(k, o) for k, o in elsewhere if ring.drain_label not in _labels(o)]
            drained = await self._label_all(drains, {ring.drain_label: "true"})
            return _Step.SETTLED if drained else _Step.CHANGED
        stale = [
            (kind, obj)
            for kind, obj in group
            if _labels(obj).get(ring.shard_label) != desired or ring.drain_label in _labels(obj)
        ]
        assigned = {ring.shard_label: desired, ring.drain_label: None}
        depths = sorted({kind.depth for kind, _ in stale}, reverse=True)
        deepest = [(k, o) for k, o in stale if depths and k.depth == depths[0]]
        if len(depths) > 1:
            # Woken by these patches' events (_not_own_write), which a busy loop often handles
            # before this settle returns: marked once they are handled, the key would sleep
            # until OWN_WRITE_WAIT, and so would every depth of a move after it.
            self._waiting[key] = woken
        if not await self._label_all(deepest, assigned):
            return _Step.CHANGED
        for _, obj in deepest:
            if _labels(obj).get(ring.shard_label) != desired:
                self._metrics.assignments.labels(ring.name, desired).inc()
        if len(depths) > 1:
            # Their parents once this cache shows them: the shard's watches of their kind see
            # them about then, and a patch having returned says nothing of when they do.
            return _Step.DEEPER_LABELLED
        moved = any(_labels(obj).get(ring.shard_label) not in (None, desired) for _, obj in stale)
        started = self._drains.pop(key, None)
        if started is not None:
            self._metrics.moves.labels(ring.name, "drained").inc()
            self._metrics.drain_seconds.labels(ring.name).observe(anyio.current_time() - started)
        elif moved:
            self._metrics.moves.labels(ring.name, "dead").inc()
        return _Step.SETTLED

    async def _label_all(
        self, objects: list[tuple[ShardedKind, dict[str, Any]]], labels: Mapping[str, str | None]
    ) -> bool:
        """Patch ``labels`` on every object at once; False when one of them changed meanwhile."""
        changed = False

        async def label(kind: ShardedKind, obj: Mapping[str, Any]) -> None:
            nonlocal changed
            try:
                await self._label(kind, obj, labels)
            except Conflict:
                changed = True
                self._metrics.conflicts.labels(self.ring.name).inc()

        async with anyio.create_task_group() as group:
            for kind, obj in objects:
                group.start_soon(label, kind, obj)
        return not changed

    async def _label(
        self, kind: ShardedKind, obj: Mapping[str, Any], labels: Mapping[str, str | None]
    ) -> None:
        """Patch ``labels`` on ``obj``, if it is still the version the decision was made on.

        Raises:
            Conflict: it changed since.
        """
        with contextlib.suppress(NotFound):  # gone: nothing left to assign
            version = await relabel(self._client, kind.gvk, obj, labels)
            now = anyio.current_time()
            if len(self._written) >= _WRITTEN_SWEEP:  # versions no event or look ever showed
                self._written = {k: w for k, w in self._written.items() if w[1] >= now}
            self._written[(kind.gvk, object_key(obj))] = (version, now + OWN_WRITE_WAIT)


def _slim(ring: Ring, kind: ShardedKind) -> Transform:
    """What the sharder keeps of an object: its name, version, ring labels and key (computed
    here, once). It holds every object of the ring, not a shard: the rest of the metadata
    (annotations, owner references, managedFields...) would be most of its memory."""

    def slim(obj: Obj) -> Obj:
        metadata = obj.get("metadata") or {}
        labels = metadata.get("labels") or {}
        kept = {n: labels[n] for n in (ring.shard_label, ring.drain_label) if n in labels}
        own = {k: metadata[k] for k in ("name", "namespace", "resourceVersion") if k in metadata}
        if kept:
            own["labels"] = kept
        key = kind.key(obj)
        return {"metadata": own, _KEY: key} if key is not None else {"metadata": own}

    return slim


def _key_of(obj: Mapping[str, Any]) -> str | None:
    """The ring key ``_slim`` kept with the object."""
    key = obj.get(_KEY)
    return str(key) if key is not None else None


def _assignment_changed(ring: Ring, event: Event) -> bool:
    """Objects come and go, shards release them, keys change; any other change (a status
    written, most often) leaves the key where it is, and would only fill the queue a move
    waits in."""
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    if _key_of(event.old) != _key_of(event.obj):
        return True
    labels = (ring.shard_label, ring.drain_label)
    before, after = _labels(event.old), _labels(event.obj)
    return any(before.get(label) != after.get(label) for label in labels)


def _key_index(obj: Obj) -> list[str]:
    key = _key_of(obj)
    return [key] if key is not None else []


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}
