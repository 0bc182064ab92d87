"""Controller runs a Reconciler: sources fill a work queue, workers reconcile what comes out.

Two halves, as controller-runtime's warmup and start: ``warmup()`` starts the queue and every
source and waits until all synced (bounded by ``cache_sync_timeout``; a failure names its cause);
``run()`` starts the workers once they have. A manager runs ``warmup()`` on every replica and
``run()`` only on the leader, so a standby's caches and queue are warm when it takes over; a
controller run on its own warms itself up. Sources watched after start begin at once, and one that
cannot start or sync is logged without stopping the controller. Per request, in order: an exception
requeues it with the rate limiter's per-key backoff (the worker lives on); a ``TerminalError`` is
recorded and not retried; an ``ExpectedError`` or an apiserver's refusal (also as the causes of
a ``FinalizeError``: a finalizer racing the deletion gets a 404) is logged in one line, and at
debug level while the key keeps failing the same way (``REPEAT_LOG_INTERVAL``), any other
exception with its traceback; ``Result(requeue_after=s)`` forgets the backoff and looks again
in ``s`` seconds; anything else forgets the backoff. Retries and requeues keep the priority the
key was queued with. One key is never reconciled by two workers at once.

Multi-cluster (``reconcile.multicluster``): the manager tells a controller of each cluster it
engages (``engage``) and disengages (``disengage``); the controller passes it on to its sources
that watch engaged clusters, and on disengagement drops that cluster's requests from its queue,
also those a reconcile in flight requeues afterwards (``reconcile_multicluster_dropped_requests``).
A controller with such a source also counts its reconciles per cluster
(``reconcile.metrics.ClusterMetrics``).

Stopping (cancellation of ``run()``): no worker takes another key, however many are queued; the
reconciles in flight get ``graceful_shutdown_timeout`` (cut short by the manager's grace period on
a lost Lease or a second signal, see ``reconcile.grace``) and are then cancelled.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TypeGuard

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from prometheus_client import CollectorRegistry
from structlog.contextvars import bind_contextvars, reset_contextvars

from reconcile.cache.cache import DEFAULT_CACHE_SYNC_TIMEOUT
from reconcile.errors import ApiError
from reconcile.finalizer import FinalizeError
from reconcile.grace import bounded_grace
from reconcile.metrics import ClusterMetrics, ControllerMetrics, WorkQueueMetrics
from reconcile.ratelimiter import RateLimiter
from reconcile.reconciler import (
    ExpectedError,
    Reconciler,
    ReconcilerFunc,
    Request,
    Result,
    TerminalError,
    as_reconciler,
)
from reconcile.source import Source
from reconcile.workqueue import LOW_PRIORITY, QueueShutDown, WorkQueue

if TYPE_CHECKING:
    from reconcile.cluster import Cluster

__all__ = [
    "DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT",
    "REPEAT_LOG_INTERVAL",
    "Controller",
    "ControllerOptions",
    "SourceSyncError",
]

DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Final = 30.0
REPEAT_LOG_INTERVAL: Final = 300.0
"""Seconds a key failing again with the same error is logged at debug level, after one warning."""
_REPEATS_REMEMBERED: Final = 10_000


def _expected(error: Exception) -> bool:
    """Whether ``error`` is logged in one line: an ExpectedError, an apiserver's refusal, or
    finalizers that failed only with those (a finalizer racing the object's deletion: 404)."""
    if isinstance(error, FinalizeError):
        return all(_expected(cause) for cause in error.errors.values())
    return isinstance(error, ExpectedError | ApiError)


# Python's counterparts of a Go panic (nil dereference, index out of range, bad conversion):
# counted as panics as well as errors.
_PANICS: Final = (
    AssertionError,
    AttributeError,
    IndexError,
    KeyError,
    NameError,
    TypeError,
    ZeroDivisionError,
    RecursionError,
)

log = structlog.get_logger("reconcile.controller")


class _Repeats:
    """The last failure logged per key, so a failure repeating on every retry is logged once."""

    def __init__(self) -> None:
        self._last: dict[Request, tuple[str, float]] = {}

    def is_news(self, request: Request, failure: str) -> bool:
        """Whether ``failure`` of ``request`` deserves a warning, remembering it if so."""
        now = time.monotonic()
        seen = self._last.get(request)
        if seen is not None and seen[0] == failure and now - seen[1] < REPEAT_LOG_INTERVAL:
            return False
        if seen is None and len(self._last) >= _REPEATS_REMEMBERED:
            del self._last[next(iter(self._last))]  # the oldest: a bound, not a cache
        self._last[request] = (failure, now)
        return True

    def forget(self, request: Request) -> None:
        self._last.pop(request, None)


class SourceSyncError(RuntimeError):
    """A controller's source did not sync; the controller does not start its workers."""


@dataclass(frozen=True)
class ControllerOptions:
    """How a controller runs. Every field documents its default."""

    max_concurrent_reconciles: int = 1
    """Workers reconciling in parallel. Defaults to 1."""
    rate_limiter: RateLimiter | None = None
    """Backoff for failed requests. Defaults to default_controller_rate_limiter()."""
    reconcile_timeout: float | None = None
    """Seconds after which one reconcile is cancelled and retried. Defaults to none."""
    cache_sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT
    """Seconds to wait for sources to sync before failing. Defaults to 120."""
    graceful_shutdown_timeout: float = DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
    """Seconds in-flight reconciles may take to finish on stop. Defaults to 30."""
    need_leader_election: bool = True
    """Run the workers only on the leader (sources warm up on every replica). Defaults to True,
    as controller-runtime's ``NeedLeaderElection``."""


class Controller:
    """A named reconciler with its queue, sources and workers; run it with ``run()``."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler | ReconcilerFunc,
        *,
        options: ControllerOptions | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name = name
        self.reconciler = as_reconciler(reconciler)
        self.options = options or ControllerOptions()
        if self.options.max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        registry = registry or CollectorRegistry()
        self._registry = registry
        self.queue: WorkQueue[Request] = WorkQueue(
            rate_limiter=self.options.rate_limiter,
            metrics=WorkQueueMetrics.for_registry(registry).for_queue(name, name),
        )
        self.metrics = ControllerMetrics.for_registry(registry).for_controller(name)
        self.metrics.max_concurrent(self.options.max_concurrent_reconciles)
        self._sources: list[Source] = []
        self._group: TaskGroup | None = None
        self._warming = False
        self._repeats = _Repeats()
        self._synced = anyio.Event()
        self._per_cluster: ClusterMetrics | None = None
        self._disengaged: set[str] = set()

    def watch(self, source: Source) -> None:
        """Add a source; after start it starts (and syncs) at once.

        A source with ``engage`` and ``disengage`` (an ``EngagedSource``) hears of the clusters
        the manager engages, and makes the controller count its reconciles per cluster.
        """
        self._sources.append(source)
        if _is_aware(source) and self._per_cluster is None:
            self._per_cluster = ClusterMetrics.for_registry(self._registry)
        if self._group is not None:
            self._group.start_soon(self._start_late, source)

    async def engage(self, name: str, cluster: Cluster) -> None:
        """The manager engaged ``cluster`` (called ``name``): start the sources watching it.

        Never waits for their sync; a source that fails to start there is logged.
        """
        self._disengaged.discard(name)
        for source in list(self._sources):
            if _is_aware(source):
                try:
                    await source.engage(name, cluster)
                except Exception:
                    log.exception("source failed to engage", controller=self.name, cluster=name)

    async def disengage(self, name: str) -> None:
        """The manager disengages cluster ``name``: stop its sources, drop its requests."""
        self._disengaged.add(name)
        for source in list(self._sources):
            if _is_aware(source):
                try:
                    await source.disengage(name)
                except Exception:
                    log.exception("source failed to disengage", controller=self.name, cluster=name)
        self._drop(lambda request: request.cluster == name, name)
        if self._per_cluster is not None:
            self._per_cluster.forget(self.name, name)

    def _drop(self, matches: Callable[[Request], bool], cluster: str) -> None:
        dropped = self.queue.remove(matches)
        if dropped:
            metrics = self._per_cluster or ClusterMetrics.for_registry(self._registry)
            metrics.dropped_requests(self.name, cluster, dropped)
            log.info(
                "dropped requests of a disengaged cluster",
                controller=self.name,
                cluster=cluster,
                dropped=dropped,
            )

    def need_leader_election(self) -> bool:
        """Whether the manager runs the workers only on the leader (``ControllerOptions``)."""
        return self.options.need_leader_election

    async def _start_late(self, source: Source) -> None:
        assert self._group is not None
        try:  # a late watch must not take the running controller down
            await source.start(self.queue, self._group)
            await source.wait_for_sync(self.options.cache_sync_timeout)
        except Exception as error:
            log.error(
                "source added after start did not sync", controller=self.name, error=str(error)
            )

    async def warmup(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the queue and the sources until cancelled; reports started once they started.

        A second call returns at once: the controller is warm already (whoever started first,
        the manager's warmup or ``run()`` itself, owns the sources).

        Raises:
            SourceSyncError: a source did not sync within cache_sync_timeout.
        """
        if self._warming:
            task_status.started()
            return
        self._warming = True
        self.queue.priority_cap = LOW_PRIORITY  # until run() starts the workers
        async with self.queue, anyio.create_task_group() as group:
            # Set first: a watch() arriving while the sources below start is started too.
            self._group = group
            try:
                for source in list(self._sources):
                    await source.start(self.queue, group)
                task_status.started()
                await self._wait_for_sources()
                self._synced.set()
                await anyio.sleep_forever()
            finally:
                self._group = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the workers once every source synced, until cancelled; warms up if nobody did.

        Raises:
            SourceSyncError: a source did not sync within cache_sync_timeout (workers never start).
        """
        async with anyio.create_task_group() as group:
            if not self._warming:
                await group.start(self.warmup)
            await self._synced.wait()
            # What a standby queued before it led was most likely handled by the old leader:
            # changes from now on go first (controller-runtime's warmup queues them alike).
            self.queue.priority_cap = None
            await self._run_workers(task_status)

    async def _wait_for_sources(self) -> None:
        for source in self._sources:
            try:
                await source.wait_for_sync(self.options.cache_sync_timeout)
            except Exception as error:
                raise SourceSyncError(
                    f"controller {self.name!r}: {source} did not sync: {error}"
                ) from error

    async def _run_workers(self, task_status: TaskStatus[None]) -> None:
        workers = anyio.CancelScope()
        finished = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(self._host_workers, workers, finished)
            log.info("controller started", controller=self.name)
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                # Stop: no worker takes another key; those in flight get the grace period.
                self.queue.shutdown(discard=True)
                with bounded_grace(self.options.graceful_shutdown_timeout):
                    await finished.wait()
                workers.cancel()

    async def _host_workers(self, workers: anyio.CancelScope, finished: anyio.Event) -> None:
        # Shielded: the controller's cancellation reaches the workers only through the queue's
        # shutdown and, after the grace period, the ``workers`` scope.
        try:
            with anyio.CancelScope(shield=True), workers:
                async with anyio.create_task_group() as group:
                    for index in range(self.options.max_concurrent_reconciles):
                        group.start_soon(self._worker, name=f"{self.name} worker {index}")
        finally:
            finished.set()

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()  # a checkpoint at least once per YIELD_EVERY
            except QueueShutDown:
                return
            try:
                await self._reconcile(request)
            finally:
                self.queue.done(request)

    async def _reconcile(self, request: Request) -> None:
        started = time.perf_counter()
        self.metrics.worker_started()
        context = {
            "controller": self.name,
            "namespace": request.namespace,
            "name": request.name,
            # 48 random bits as 12 hex digits, like the first 12 of a UUID's: uuid4() reads
            # os.urandom, 4 % of a no-op reconcile's CPU in a py-spy profile of bench/reconcile.
            "reconcile_id": f"{random.getrandbits(48):012x}",
        }
        if request.cluster:
            context["cluster"] = request.cluster
        # bind + reset rather than bound_contextvars(), which also reads and restores every
        # bound variable: a third of the controller's own cost of a no-op reconcile (cProfile).
        tokens = bind_contextvars(**context)
        outcome = None
        try:
            outcome = await self._reconcile_and_handle(request)
        finally:
            reset_contextvars(**tokens)
            seconds = time.perf_counter() - started
            self.metrics.worker_finished(seconds)
            if (
                self._per_cluster is not None
                and outcome is not None
                and request.cluster not in self._disengaged  # its series are gone: keep them so
            ):
                self._per_cluster.reconciled(self.name, request.cluster, outcome, seconds)
        if self._disengaged and request.cluster in self._disengaged:
            # Its cluster went while it was in flight: what it requeued would only fail.
            self._drop(request.__eq__, request.cluster)

    async def _reconcile_and_handle(self, request: Request) -> str:
        """Reconcile and requeue as the outcome asks; returns the outcome's result label."""
        priority = self.queue.priority_of(request)
        try:
            result = await self._call(request)
        except TerminalError as error:
            self.queue.forget(request)
            self._repeats.forget(request)
            self.metrics.result("error", terminal=True)
            log.error("reconcile failed terminally, not retrying", error=str(error))
            return "error"
        except Exception as error:
            if _expected(error):
                # Foreseen, or the apiserver's answer says it all (a Conflict is routine, so is
                # a NotFound when the object went away mid-reconcile): one line.
                self.queue.add_rate_limited(request, priority=priority)
                self.metrics.result("error")
                self._log_expected(request, error)
                return "error"
            self.queue.add_rate_limited(request, priority=priority)
            self.metrics.result("error", panic=isinstance(error, _PANICS))
            log.exception("reconcile failed, requeued with backoff")
            return "error"
        return self._handle_result(request, result, priority)

    def _log_expected(self, request: Request, error: Exception) -> None:
        reason = getattr(error, "reason", "") or type(error).__name__
        message = str(error)
        news = self._repeats.is_news(request, f"{reason}: {message}")
        (log.warning if news else log.debug)(
            "reconcile failed, requeued with backoff", reason=reason, error=message
        )

    async def _call(self, request: Request) -> Result | None:
        timeout = self.options.reconcile_timeout
        if timeout is None:
            return await self.reconciler.reconcile(request)
        with anyio.fail_after(timeout):
            return await self.reconciler.reconcile(request)

    def _handle_result(self, request: Request, result: Result | None, priority: int) -> str:
        self.queue.forget(request)
        self._repeats.forget(request)
        if result is not None and result.requeue_after is not None and result.requeue_after > 0:
            self.queue.add_after(request, result.requeue_after, priority=priority)
            self.metrics.result("requeue_after")
            return "requeue_after"
        self.metrics.result("success")
        return "success"


class _Aware(Protocol):
    """``reconcile.multicluster.Aware``, which sits above this layer."""

    async def engage(self, name: str, cluster: Cluster) -> None: ...

    async def disengage(self, name: str) -> None: ...


def _is_aware(source: Source) -> TypeGuard[_Aware]:
    """Whether ``source`` follows engaged clusters (``reconcile.multicluster.Aware``)."""
    return callable(getattr(source, "engage", None)) and callable(
        getattr(source, "disengage", None)
    )
