"""EngagedSource is one watch of a multi-cluster controller: a source per engaged cluster.

It starts, in each cluster its ``Engaged`` selector covers, the source its factory makes for that
cluster (a ``Kind`` on the cluster's cache, whose events carry the cluster's name, so Requests
do): in those engaged when the controller starts, then in each engaged later, and stops it when
the cluster is disengaged (sigs.k8s.io/multicluster-runtime's multi-cluster ``Kind`` source).

A member never holds up the controller or the other members: each cluster's source starts and
waits for its sync in a task of its own; one that cannot start (the owner kind's discovery of an
unreachable member) is retried with backoff, one that does not sync in time is logged while its
informers keep retrying (the reflector backs off, then resumes the watch when the member
returns). Only the manager's own cluster, when included, is waited for by ``wait_for_sync``, as
a single-cluster source would be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, cast

import anyio
import structlog
from anyio.abc import TaskGroup

from reconcile.event import Event
from reconcile.handler import AsyncEventHandler, EventHandler, is_async_handler
from reconcile.multicluster.engaged import Engaged
from reconcile.reconciler import Request
from reconcile.source import Source
from reconcile.workqueue import WorkQueue

if TYPE_CHECKING:
    from reconcile.cluster import Cluster

__all__ = ["EngagedSource", "SourceFactory", "in_cluster"]

log = structlog.get_logger("reconcile.multicluster")

SourceFactory = Callable[[str, "Cluster"], Source]
"""Makes the source of one cluster, given its name and the cluster."""

START_BACKOFF: Final = (1.0, 30.0)
"""Seconds between attempts to start a cluster's source: first, then at most (doubling)."""
STOP_TIMEOUT: Final = 10.0
"""Seconds ``disengage`` waits for a cluster's source tasks to end."""


@dataclass
class _Running:
    source: Source
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    settled: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    error: Exception | None = None


class EngagedSource:
    """A controller's watch in every cluster ``selector`` covers, started as they are engaged.

    Args:
        selector: which clusters.
        make: the source of one cluster (called once per engagement).
        clusters: the clusters engaged now, by name ("" the manager's own), read at start.
        description: how logs and errors name the watch.
        sync_timeout: seconds a cluster's source may take to sync before a warning is logged.
    """

    def __init__(
        self,
        selector: Engaged,
        make: SourceFactory,
        clusters: Callable[[], Mapping[str, Cluster]],
        *,
        description: str = "",
        sync_timeout: float = 120.0,
    ) -> None:
        self.selector = selector
        self._make = make
        self._clusters = clusters
        self._description = description or "source"
        self.sync_timeout = sync_timeout
        self._queue: WorkQueue[Request] | None = None
        self._group: TaskGroup | None = None
        self._running: dict[str, _Running] = {}

    def __str__(self) -> str:
        return f"{self._description} in {self.selector}"

    @property
    def clusters(self) -> frozenset[str]:
        """The clusters this watch runs in now."""
        return frozenset(self._running)

    def synced(self, name: str) -> bool:
        """Whether the source in cluster ``name`` delivered its initial state."""
        running = self._running.get(name)
        return running is not None and running.settled.is_set() and running.error is None

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Start the source in every covered cluster engaged now; never waits for one."""
        self._queue, self._group = queue, task_group
        for name, cluster in list(self._clusters().items()):
            self._start_in(name, cluster)
        await anyio.lowlevel.checkpoint()

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait for the manager's own cluster's source, if covered; members sync in the background.

        Raises:
            Exception: what the own cluster's source raised (CacheSyncError, ...).
            TimeoutError: it did not sync within ``timeout``.
        """
        own = self._running.get("")
        if own is None:
            await anyio.lowlevel.checkpoint()
            return
        with anyio.fail_after(timeout):
            await own.settled.wait()
        if own.error is not None:
            raise own.error

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Start the source in ``cluster`` if covered and the controller runs."""
        self._start_in(name, cluster)
        await anyio.lowlevel.checkpoint()

    async def disengage(self, name: str) -> None:
        """Stop the source in cluster ``name`` and wait (bounded) until its tasks ended.

        Once this returns, nothing of it enqueues any more.
        """
        running = self._running.pop(name, None)
        if running is None:
            return
        running.scope.cancel()
        _stop(running.source)  # at once: no event between now and the task's end
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT):
            await running.stopped.wait()

    def _start_in(self, name: str, cluster: Cluster) -> None:
        if self._group is None or name in self._running or not self.selector.selects(name):
            return
        running = _Running(self._make(name, cluster))
        try:
            self._group.start_soon(self._run, name, running, name=f"{self} in {name or '(own)'}")
        except RuntimeError:  # the controller stopped: its task group is closed
            self._group = None
            return
        self._running[name] = running

    async def _run(self, name: str, running: _Running) -> None:
        try:
            with running.scope:
                async with anyio.create_task_group() as group:
                    if not await self._start_with_backoff(name, running, group):
                        return
                    await self._wait_for_sync(name, running)
                    await anyio.sleep_forever()
        finally:
            _stop(running.source)
            running.settled.set()
            running.stopped.set()

    async def _start_with_backoff(self, name: str, running: _Running, group: TaskGroup) -> bool:
        """Whether the source started; a member's is retried until it does or is disengaged."""
        assert self._queue is not None
        delay, most = START_BACKOFF
        while True:
            try:
                await running.source.start(self._queue, group)
                return True
            except Exception as error:
                if name == "":  # the own cluster fails as a single-cluster source would
                    running.error = error
                    return False
                log.warning(
                    "source could not start in cluster, retrying",
                    source=str(self),
                    cluster=name,
                    error=str(error),
                    retry_in=delay,
                )
            await anyio.sleep(delay)
            delay = min(most, delay * 2)

    async def _wait_for_sync(self, name: str, running: _Running) -> None:
        try:
            await running.source.wait_for_sync(self.sync_timeout)
        except Exception as error:
            running.error = error
            # Its informers go on retrying: events flow once the cluster answers.
            log.warning(
                "source did not sync in cluster, its informers keep retrying",
                source=str(self),
                cluster=name,
                error=str(error),
            )
        finally:
            running.settled.set()


def _stop(source: Source) -> None:
    stop = getattr(source, "stop", None)
    if callable(stop):
        stop()


def in_cluster(
    handler: EventHandler | AsyncEventHandler, cluster: str
) -> EventHandler | AsyncEventHandler:
    """``handler``, its Requests without a cluster put in ``cluster`` (multicluster-runtime's
    ``Lift``): a map function written for one cluster maps within the cluster of its event.

    ``EnqueueRequestForObject`` and ``EnqueueRequestForOwner`` take the event's cluster already;
    a map function's Request naming a cluster keeps it. One with ``cluster=""`` (unset) cannot
    reach the manager's own cluster from a member's event: name another cluster explicitly.
    """
    if not cluster:
        return handler
    if is_async_handler(handler):
        return _AsyncInCluster(cast(AsyncEventHandler, handler), cluster)
    return _InCluster(cast(EventHandler, handler), cluster)


def _tagged(requests: Iterable[Request], cluster: str) -> list[Request]:
    return [r if r.cluster else Request(r.name, r.namespace, cluster) for r in requests]


@dataclass(frozen=True)
class _InCluster:
    handler: EventHandler
    cluster: str

    def requests(self, event: Event) -> Iterable[Request]:
        return _tagged(self.handler.requests(event), self.cluster)


@dataclass(frozen=True)
class _AsyncInCluster:
    handler: AsyncEventHandler
    cluster: str

    async def requests(self, event: Event) -> Iterable[Request]:
        return _tagged(await self.handler.requests(event), self.cluster)
