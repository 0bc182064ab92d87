"""Shard is one replica's part of one or more rings: its Lease, its cache, and the guard of its
reconcilers.

A ``Shard`` scopes the manager's cache of every kind of its rings to the objects labelled with its
name (a label-selected list and watch: the replica holds only its shard), holds a Lease named after
it and labelled with its rings (renewed like the leader's; the sharder assigns objects only to
shards whose Leases are live), and wraps the reconcilers of the sharded kinds in a guard:

- an object that carries its ring's drain label is not reconciled; the shard's drainer, which
  sees the label in the informers' events whatever predicates the controllers filter theirs with,
  lets it go once no reconcile of any object of its key (a template, its binding, their Works:
  every guard of the ring on this replica counts) runs here: its shard and drain labels are
  removed in one patch, conditional on the resourceVersion the drain was seen in, so it never
  undoes a later assignment; while an object of a key is leaving, the key's other objects are not
  reconciled here (looked at again a second later, in case the drain is called off);
- a request whose object is not in the cache is one of three things, told apart by one live read:
  deleted (the reconciler handles it as before), moved to another shard or not yet assigned (not
  ours: nothing is done — a moved object must not look deleted), or ours but not yet cached
  (looked at again shortly).

A replica whose renewals fail for the renew deadline stops (``LeadershipLost``, as a leader does)
before its Lease can expire, so the sharder never gives its objects away while it still works on
them. On shutdown the Lease is released only after every runnable of the manager stopped, and then
its objects move at once.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.cache.options import ByObject
from reconcile.errors import Conflict, NotFound
from reconcile.gvk import GVK
from reconcile.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LeaderElectionConfig,
    LeaderElector,
)
from reconcile.manager import Manager
from reconcile.objects import Obj
from reconcile.reconciler import Reconciler, ReconcilerFunc, Request, Result, as_reconciler
from reconcile.sharding.metrics import SharderMetrics, register_shard_objects
from reconcile.sharding.ring import Ring, ShardedKind, relabel

__all__ = ["NOT_CACHED_RETRY", "Route", "Shard", "check_shard_name"]

log = structlog.get_logger("reconcile.sharding")

NOT_CACHED_RETRY: Final = 1.0
"""Seconds after which a request for an object assigned here but not yet cached is retried."""
_LABEL_VALUE_LIMIT: Final = 63
_RELEASES: Final = 16
"""Drained objects released at once (each waits for its key's reconciles to end first)."""


class Shard:
    """This replica's shard of ``rings``; add it to the manager (it runs on every replica).

    Args:
        manager: whose cache it scopes and whose client holds the Lease.
        rings: the rings this replica serves; a kind may belong to one of them only.
        name: the shard's name (the Lease's and the label's value); defaults to the host name,
            which is the Pod's name in a Deployment.
        namespace: where the Lease is (default: the manager's leader election namespace).

    Raises:
        ValueError: (at construction) no rings, a kind in two rings, a name that is not a label
            value, or a kind the cache had scoped or read already.
    """

    def __init__(
        self,
        manager: Manager,
        *rings: Ring,
        name: str | None = None,
        namespace: str | None = None,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        renew_deadline: float = DEFAULT_RENEW_DEADLINE,
        retry_period: float = DEFAULT_RETRY_PERIOD,
    ) -> None:
        self.manager = manager
        self.rings = rings
        self.name = name or socket.gethostname()
        _check(self.name, rings)
        labels = {ring.lease_label: "true" for ring in rings}
        self.config = LeaderElectionConfig(
            lease_name=self.name,
            lease_namespace=namespace or manager.options.leader_election_namespace or "default",
            identity=self.name,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            release_on_cancel=False,  # released by release(), once the manager stopped
            labels=labels,
        )
        self._elector: LeaderElector | None = None
        self.held = anyio.Event()
        self._keys: dict[str, _Keys] = {}
        self._drainer = _Drainer(self)
        for ring in rings:
            for kind in ring.kinds:
                self._hold(ring, kind)
            ring.subscribe(functools.partial(self._hold, ring))
        register_shard_objects(manager.registry, manager.cache, rings)
        self.released = SharderMetrics.for_registry(manager.registry).released

    def __repr__(self) -> str:
        return f"Shard({self.name!r}, rings={[r.name for r in self.rings]})"

    def need_leader_election(self) -> bool:
        """Every replica holds its shard."""
        return False

    def ring_of(self, gvk: GVK[Any]) -> Ring:
        """The ring ``gvk`` is sharded by.

        Raises:
            KeyError: no ring of this shard has ``gvk``.
        """
        for ring in self.rings:
            if ring.has(gvk):
                return ring
        raise KeyError(f"{gvk} is not sharded by {self!r}")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the shard's Lease until cancelled.

        Raises:
            LeadershipLost: renewals failed for the renew deadline (the manager then stops).
        """
        task_status.started()
        # The manager's Lease connections: a renewal never waits behind the cache's watches.
        self._elector = LeaderElector(self.manager.lease_client, self.config)
        for ring in self.rings:
            for kind in ring.kinds:
                self._drainer.watch(ring, kind)

        async def hold() -> None:
            self.held.set()
            log.info("holding shard lease", shard=self.name, lease=self.config.lease)
            await self._drainer.run()  # only while holding: a shard without its Lease is done

        await self._elector.run(hold)

    async def release(self) -> None:
        """Give the Lease up (the manager calls it once all its runnables stopped)."""
        if self._elector is not None:
            await self._elector.release()

    def _hold(self, ring: Ring, kind: ShardedKind) -> None:
        """Scope the cache of ``kind`` to this shard (before anything reads it).

        Raises:
            ValueError: another ring of this shard has the kind, or the cache read it already.
        """
        if any(other is not ring and other.has(kind.gvk) for other in self.rings):
            raise ValueError(f"{kind.gvk} is in two rings of {self!r}")
        scope = ByObject(shard_selector=ring.selector(self.name))
        self.manager.cache.configure(kind.gvk, scope)
        if self._elector is not None:  # running: a kind added now is drained from now on
            self._drainer.watch(ring, kind)

    def keys_of(self, ring: Ring) -> _Keys:
        """The per-key bookkeeping every guard of ``ring`` on this replica shares."""
        return self._keys.setdefault(ring.name, _Keys())

    def guard(self, gvk: GVK[Any], reconciler: Reconciler | ReconcilerFunc) -> Reconciler:
        """``reconciler`` for requests of ``gvk``, behind the shard's guard (see the module).

        Raises:
            KeyError: ``gvk`` is not sharded by this shard's rings.
        """
        ring = self.ring_of(gvk)
        return self.guard_by(lambda request: (ring, gvk, request), reconciler)

    def guard_by(self, route: Route, reconciler: Reconciler | ReconcilerFunc) -> Reconciler:
        """``reconciler`` behind the guard, for a queue of several kinds (or of requests that
        encode their kind): ``route(request)`` says which ring, kind and object a request is
        about, or None to pass it through unguarded (a kind no ring shards)."""
        return _Guard(self, route, as_reconciler(reconciler))


class _Keys:
    """What this replica does with each key of one ring: reconciles in flight, objects draining."""

    def __init__(self) -> None:
        self.running: dict[str, int] = {}
        self.idle: dict[str, anyio.Event] = {}
        self.draining: dict[str, set[str]] = {}

    @contextlib.asynccontextmanager
    async def reconciling(self, key: str) -> AsyncIterator[None]:
        self.running[key] = self.running.get(key, 0) + 1
        try:
            yield
        finally:
            self.running[key] -= 1
            if not self.running[key]:
                del self.running[key]
                idle = self.idle.pop(key, None)
                if idle is not None:
                    idle.set()

    async def wait_idle(self, key: str) -> None:
        while self.running.get(key):
            await self.idle.setdefault(key, anyio.Event()).wait()


Route = Callable[[Request], "tuple[Ring, GVK, Request] | None"]
"""Which ring, kind and object a request of a guarded queue is about (None: not sharded)."""


class _Guard:
    def __init__(self, shard: Shard, route: Route, inner: Reconciler) -> None:
        self._shard, self._route, self._inner = shard, route, inner

    async def reconcile(self, request: Request) -> Result | None:
        routed = self._route(request)
        if routed is None:
            return await self._inner.reconcile(request)
        ring, gvk, target = routed
        return await _Guarded(self._shard, ring, gvk, self._inner).reconcile(request, target)


class _Guarded:
    """One request's pass through the guard."""

    def __init__(self, shard: Shard, ring: Ring, gvk: GVK[Any], inner: Reconciler) -> None:
        self._shard, self._ring, self._gvk, self._inner = shard, ring, gvk, inner
        self._keys = shard.keys_of(ring)

    async def reconcile(self, request: Request, target: Request) -> Result | None:
        manager = self._shard.manager
        try:
            obj = await manager.cache.get(
                self._gvk, target.name, namespace=target.namespace or None
            )
        except NotFound:
            return await self._not_cached(request, target)
        key = self._ring.kind(self._gvk).key(obj)
        if key is None:
            return await self._inner.reconcile(request)
        if self._ring.drain_label in _labels(obj):
            return None  # leaving: the shard's drainer lets it go once the key is idle here
        draining = self._keys.draining.get(key, set())
        draining.discard(_object_name(obj))  # its drain was called off, if it had one
        if draining:
            # Another object of the key is leaving: reconciling this one could overlap with
            # the shard that gets the key next. Looked at again if the key stays here.
            return Result(requeue_after=NOT_CACHED_RETRY)
        self._keys.draining.pop(key, None)
        async with self._keys.reconciling(key):
            return await self._inner.reconcile(request)

    async def _not_cached(self, request: Request, target: Request) -> Result | None:
        client = self._shard.manager.api_reader
        try:
            live = await client.get(self._gvk, target.name, namespace=target.namespace or None)
        except NotFound:
            return await self._inner.reconcile(request)  # deleted: the reconciler's own case
        if _labels(live).get(self._ring.shard_label) == self._shard.name:
            return Result(requeue_after=NOT_CACHED_RETRY)
        return None  # another shard's, or not assigned yet


class _Drainer:
    """Lets drained objects go, from the informers' events: whatever predicates the guarded
    controllers filter their events with, a drain label is seen and answered."""

    def __init__(self, shard: Shard) -> None:
        self._shard = shard
        self._watched: set[GVK] = set()
        self._pending: dict[tuple[GVK, str], tuple[Ring, ShardedKind, Obj]] = {}
        self._wake = anyio.Event()

    def watch(self, ring: Ring, kind: ShardedKind) -> None:
        if kind.gvk in self._watched:
            return
        self._watched.add(kind.gvk)
        for informer in self._shard.manager.cache.get_informers(kind.gvk):
            informer.add_event_handler(_DrainEvents(self, ring, kind))

    def drained(self, ring: Ring, kind: ShardedKind, obj: Obj) -> None:
        """``obj`` carries the drain label now (an informer's handler: must not block)."""
        self._pending[(kind.gvk, _object_name(obj))] = (ring, kind, obj)
        key = kind.key(obj)
        if key is not None:
            self._shard.keys_of(ring).draining.setdefault(key, set()).add(_object_name(obj))
        self._wake.set()

    async def run(self) -> None:
        """Release what is drained, until cancelled."""
        limit = anyio.CapacityLimiter(_RELEASES)
        async with anyio.create_task_group() as group:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                pending, self._pending = self._pending, {}
                for ring, kind, obj in pending.values():
                    group.start_soon(self._release, limit, ring, kind, obj)

    async def _release(
        self, limit: anyio.CapacityLimiter, ring: Ring, kind: ShardedKind, obj: Obj
    ) -> None:
        key, name = kind.key(obj), _object_name(obj)
        keys = self._shard.keys_of(ring)
        async with limit:
            if key is not None:
                await keys.wait_idle(key)
            released = await self._let_go(ring, kind, obj)
        leaving = keys.draining.get(key or "")
        if leaving is not None:
            leaving.discard(name)
            if not leaving:
                del keys.draining[key or ""]
        if released:
            self._shard.released.labels(ring.name).inc()
            log.debug("released drained object", shard=self._shard.name, name=name)

    async def _let_go(self, ring: Ring, kind: ShardedKind, obj: Obj) -> bool:
        metadata = obj["metadata"]
        released = {ring.shard_label: None, ring.drain_label: None}
        try:
            await relabel(self._shard.manager.api_reader, kind.gvk, obj, released)
        except (Conflict, NotFound):
            return False  # changed or gone since: the event of that change says what it is now
        except Exception as error:  # the next event (or the sharder's next look) tries again
            log.warning(
                "could not release a drained object", name=metadata["name"], error=str(error)
            )
            return False
        return True


@dataclass
class _DrainEvents:
    drainer: _Drainer
    ring: Ring
    kind: ShardedKind

    def _seen(self, obj: Obj) -> None:
        if self.ring.drain_label in _labels(obj):
            self.drainer.drained(self.ring, self.kind, obj)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self._seen(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._seen(new)

    def on_delete(self, obj: Obj) -> None:
        return


def _object_name(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{obj.get('kind')}:{metadata.get('namespace') or ''}/{metadata['name']}"


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def check_shard_name(name: str) -> None:
    """Refuse a shard name that is not both a Lease name and a label value.

    Raises:
        ValueError: not 1-63 characters of a-z, 0-9, '-' and '.' beginning and ending with a
            letter or digit (a Lease the apiserver refuses would be retried for ever).
    """
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-.")
    if not name or len(name) > _LABEL_VALUE_LIMIT or not set(name) <= allowed:
        raise ValueError(
            f"shard name {name!r} must be 1-63 characters of a-z, 0-9, '-' and '.' "
            "(it names the shard's Lease and is a label value)"
        )
    if not (name[0].isalnum() and name[-1].isalnum()):
        raise ValueError(f"shard name {name!r} must begin and end with a letter or digit")


def _check(name: str, rings: tuple[Ring, ...]) -> None:
    if not rings:
        raise ValueError("a shard needs at least one ring")
    check_shard_name(name)
