"""workqueue defines WorkQueue, the rate-limited, deduplicating queue between events and workers.

Event handlers add keys; a controller's workers get a key, reconcile it and mark it done. The
semantics are client-go's: a key waiting in the queue is added once however often it is added (it
is *dirty*); a key being processed is never handed to a second worker: if it is added meanwhile it
is *parked* and queued again when the first worker calls ``done``. Keys can be added after a delay
or through a RateLimiter, and carry an optional priority as in controller-runtime's priority queue:
ready keys are handed out highest priority first, FIFO within a priority.

Lifetime: delayed keys become ready through a loop that the queue's owner runs, either
``await task_group.start(queue.run)`` or ``async with queue:``. The loop ends when the queue shuts
down (and shuts the queue down when it is cancelled), so it never outlives its owner.

Shutdown: ``shutdown()`` stops accepting keys and drops the delayed ones; workers still get what is
queued (with ``discard=True``, nothing more), then ``get()`` raises QueueShutDown.
``shutdown_with_drain(timeout)`` also waits until the queued, parked and in-flight keys are done.

Errors::

    QueueShutDown       get() on a shut-down queue with nothing left
    anyio.WouldBlock    get_nowait() with nothing ready
    ValueError          done() for a key that no worker got
    TimeoutError        shutdown_with_drain() past its deadline

Everything runs on one event loop; none of the methods is thread-safe.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Final, Generic, Self, TypeVar

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

from reconcile.flowcontrol import Clock, MonotonicClock
from reconcile.metrics import NoopQueueMetrics, QueueMetrics
from reconcile.ratelimiter import RateLimiter, default_controller_rate_limiter

__all__ = [
    "DEFAULT_PRIORITY",
    "LOW_PRIORITY",
    "QueueShutDown",
    "YIELD_EVERY",
    "WorkQueue",
]

T = TypeVar("T", bound=Hashable)

DEFAULT_PRIORITY: Final = 0
"""Priority of a plain ``add``: live changes."""
LOW_PRIORITY: Final = -100
"""Priority of initial-list and resync events, so that live changes jump ahead after a restart."""
YIELD_EVERY: Final = 0.001
"""Seconds of ready ``get`` calls after which one yields to the event loop (a real checkpoint)."""


class QueueShutDown(Exception):
    """The work queue is shut down and has nothing left to hand out."""


class WorkQueue(Generic[T]):
    """A deduplicating FIFO of keys with priorities, delayed adds and per-key exclusivity.

    Args:
        rate_limiter: decides ``add_rate_limited`` delays; defaults to
            ``default_controller_rate_limiter()``.
        metrics: the recorder from ``WorkQueueMetrics.for_queue``; defaults to no metrics.
        clock: times delayed adds and ``get``'s yield budget: any object with
            ``now() -> float`` and ``async sleep(seconds)`` (``math.inf`` sleeps until
            cancelled); defaults to ``time.monotonic`` and ``anyio.sleep``. Tests pass a fake
            clock to step time.

    Workers loop on ``item = await queue.get()`` (or ``async for item in queue``) and must call
    ``queue.done(item)`` when finished, whatever the outcome. A ``get`` passes a checkpoint
    before it hands a key out, even when one is ready, once ``YIELD_EVERY`` seconds went by since
    the last one: a worker whose reconciles never await (cache reads only) still lets watches,
    probes and Lease renewals run at least that often, and a cancelled worker takes no further
    key after that checkpoint. Reconciles that take longer (any that wait on the apiserver) pass
    one at every ``get``; a burst of quick ones pays for a turn of the loop once per budget
    rather than per key (a turn costs about twice the queue's own work for a key).
    """

    __slots__ = (
        "_buckets",
        "_clock",
        "_default",
        "_drained",
        "_exit_stack",
        "_getters",
        "_heap",
        "_metrics",
        "_now",
        "_on_add",
        "_on_done",
        "_on_drop",
        "_on_get",
        "_ordered",
        "_parked",
        "_processing",
        "_queued",
        "_rate_limiter",
        "_running",
        "_seq",
        "_shutting_down",
        "_simple",
        "_sleep_scope",
        "_stale",
        "_waiting",
        "_yield_at",
        "priority_cap",
    )

    def __init__(
        self,
        *,
        rate_limiter: RateLimiter | None = None,
        metrics: QueueMetrics | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._rate_limiter = (
            default_controller_rate_limiter() if rate_limiter is None else rate_limiter
        )
        self._metrics: QueueMetrics = NoopQueueMetrics() if metrics is None else metrics
        # Bound once: the hot path calls these for every key.
        self._on_add = self._metrics.add
        self._on_get = self._metrics.get
        self._on_done = self._metrics.done
        self._on_drop = self._metrics.drop
        self._clock: Clock = MonotonicClock() if clock is None else clock
        # get() reads it for every key: time.monotonic itself unless a clock was passed.
        self._now = time.monotonic if clock is None else clock.now
        # Ready keys: one FIFO per priority, listed highest priority first. While only the
        # default FIFO exists and holds no stale entry (_simple), get() pops it directly.
        self._default: deque[T] = deque()
        self._buckets: dict[int, deque[T]] = {DEFAULT_PRIORITY: self._default}
        self._ordered: list[tuple[int, deque[T]]] = [(DEFAULT_PRIORITY, self._default)]
        self._simple = True
        # client-go's dirty set is _queued (ready, with its priority) plus _parked (re-added
        # while processing, queued again by done()).
        self._queued: dict[T, int] = {}
        self._parked: dict[T, int] = {}
        self._processing: dict[T, int] = {}  # key -> the priority it was queued with
        # Raising a queued key's priority leaves its old entry in the lower FIFO; these counts
        # skip such entries, which always precede any live entry of the key in that FIFO.
        self._stale: dict[tuple[int, T], int] = {}
        self._getters: deque[anyio.Event] = deque()
        self._shutting_down = False
        self.priority_cap: int | None = None
        """While set, keys are added at no more than this priority (a controller on a standby:
        what it saw before leading waits behind what changes after)."""
        self._drained: anyio.Event | None = None
        # Delayed keys: key -> (ready time, sequence, priority); the heap may hold superseded
        # entries, recognised by their sequence number.
        self._waiting: dict[T, tuple[float, int, int]] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._sleep_scope: anyio.CancelScope | None = None
        self._running = False
        self._exit_stack: AsyncExitStack | None = None
        # When a get() with a key ready next yields to the loop; 0.0: the first one does.
        self._yield_at = 0.0

    def __len__(self) -> int:
        """Keys ready to be handed out (not the parked, in-flight or delayed ones)."""
        return len(self._queued)

    def shutting_down(self) -> bool:
        """Whether ``shutdown`` was called."""
        return self._shutting_down

    def add(self, item: T, *, priority: int = DEFAULT_PRIORITY) -> None:
        """Queue ``item`` unless it is already due; dropped after shutdown.

        A key already queued is not queued twice, but a higher ``priority`` raises its place. A
        key being processed is parked and queued again when its worker calls ``done``.
        """
        if self._shutting_down:
            return
        if self._waiting:
            # Due now supersedes due later: one reconcile, not a second one when the delay ends
            # (controller-runtime's priority queue keeps one entry per key, with the earlier time
            # and the higher priority).
            waiting = self._waiting.pop(item, None)
            if waiting is not None:
                priority = max(priority, waiting[2])
        if self.priority_cap is not None and priority > self.priority_cap:
            priority = self.priority_cap
        queued = self._queued.get(item)
        if queued is not None:
            if priority > queued:
                self._raise_priority(item, queued, priority)
            return
        if item in self._processing:
            self._park(item, priority)
            return
        self._queued[item] = priority
        if priority == DEFAULT_PRIORITY:
            self._default.append(item)
        else:
            self._bucket(priority).append(item)
        self._on_add(item)
        if self._getters:
            self._getters.popleft().set()

    async def get(self) -> T:
        """The next ready key, waiting for one if needed; the caller must ``done()`` it.

        Raises:
            QueueShutDown: the queue is shut down and nothing is left to hand out.
        """
        if self._queued:
            # Yield (and see a cancellation) once per budget, not per key: see the class doc.
            if self._now() >= self._yield_at:
                await anyio.lowlevel.checkpoint()
                self._yield_at = self._now() + YIELD_EVERY
            if self._queued:
                return self._take()
        # Waiting for a key is a checkpoint too: no extra turn of the loop per live event.
        return await self._wait_and_take()

    def get_nowait(self) -> T:
        """The next ready key without waiting; the caller must ``done()`` it.

        Raises:
            anyio.WouldBlock: no key is ready.
            QueueShutDown: the queue is shut down and nothing is left to hand out.
        """
        if self._queued:
            return self._take()
        if self._shutting_down:
            raise QueueShutDown
        raise anyio.WouldBlock

    def done(self, item: T) -> None:
        """Mark ``item`` finished; if it was added while processed, queue it again now.

        Raises:
            ValueError: ``item`` is not being processed (``done`` without ``get``, or twice).
        """
        try:
            del self._processing[item]
        except KeyError:
            raise ValueError(f"done({item!r}) without get(): it is not being processed") from None
        self._on_done(item)
        if self._parked:
            priority = self._parked.pop(item, None)
            if priority is not None:
                self._enqueue(item, priority)
        if self._drained is not None and self._idle():
            self._drained.set()

    def add_after(self, item: T, delay: float, *, priority: int = DEFAULT_PRIORITY) -> None:
        """Add ``item`` once ``delay`` seconds have passed; ``delay <= 0`` adds it now.

        If ``item`` is already waiting, it keeps the earlier of the two ready times and the
        higher priority. Delayed keys are dropped at shutdown and become ready only while
        ``run()`` is running.
        """
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item, priority=priority)
            return
        ready = self._clock.now() + delay
        waiting = self._waiting.get(item)
        if waiting is not None:
            waiting_ready, waiting_seq, waiting_priority = waiting
            if waiting_ready <= ready:
                if priority > waiting_priority:
                    self._waiting[item] = (waiting_ready, waiting_seq, priority)
                return
            priority = max(priority, waiting_priority)
        seq = next(self._seq)
        self._waiting[item] = (ready, seq, priority)
        heapq.heappush(self._heap, (ready, seq, item))
        if self._heap[0][1] == seq and self._sleep_scope is not None:
            # A new earliest key: wake the delay loop to sleep until its time instead.
            self._sleep_scope.cancel()

    def add_rate_limited(self, item: T, *, priority: int = DEFAULT_PRIORITY) -> None:
        """Add ``item`` after the rate limiter's delay for it (which counts the retry)."""
        if self._shutting_down:
            return
        self._metrics.retry()
        self.add_after(item, self._rate_limiter.when(item), priority=priority)

    def forget(self, item: T) -> None:
        """Clear the rate limiter's history of ``item``; does not remove it from the queue."""
        self._rate_limiter.forget(item)

    def priority_of(self, item: T) -> int:
        """The priority ``item`` was queued with, while a worker processes it.

        A retry or a requeue keeps it (controller-runtime's ``GetWithPriority``): a low-priority
        resync that fails does not overtake live changes when it comes back.

        Raises:
            ValueError: ``item`` is not being processed.
        """
        try:
            return self._processing[item]
        except KeyError:
            raise ValueError(f"{item!r} is not being processed") from None

    def num_requeues(self, item: T) -> int:
        """How often ``item`` was rate-limited since it was last forgotten."""
        return self._rate_limiter.num_requeues(item)

    def remove(self, matches: Callable[[T], bool]) -> int:
        """Drop the queued, parked and delayed keys that ``matches``; returns how many.

        Keys a worker is processing stay (their worker calls ``done``); the rate limiter forgets
        the dropped ones. For a cluster that went away: its keys would only fail
        (sigs.k8s.io/multicluster-runtime stops the cluster's sources; we also drop its keys).
        """
        queued = [item for item in self._queued if matches(item)]
        parked = [item for item in self._parked if matches(item)]
        waiting = [item for item in self._waiting if matches(item)]
        for item in queued:
            del self._queued[item]
            self._on_drop(item)
        if queued:
            self._drop_entries(set(queued))
        for item in parked:
            del self._parked[item]
            self._on_drop(item)
        for item in waiting:
            del self._waiting[item]  # its heap entry is now superseded: skipped when due
        for item in (*queued, *parked, *waiting):
            self._rate_limiter.forget(item)
        if self._drained is not None and self._idle():
            self._drained.set()
        return len(queued) + len(parked) + len(waiting)

    def _drop_entries(self, gone: set[T]) -> None:
        for _, bucket in self._ordered:
            kept = [item for item in bucket if item not in gone]
            bucket.clear()  # in place: _default must stay the same deque
            bucket.extend(kept)
        if self._stale:
            self._stale = {key: n for key, n in self._stale.items() if key[1] not in gone}
        self._prune()

    def shutdown(self, *, discard: bool = False) -> None:
        """Stop accepting keys and drop the delayed ones; workers still get the queued keys.

        With ``discard``, the queued and parked keys are dropped too, so ``get()`` raises
        QueueShutDown at once: a stopping controller takes no new work, however much is queued
        (the keys are only memory: the next leader's initial list brings every object back).
        """
        if discard:
            self._drop_queued()
        if self._shutting_down:
            return
        self._shutting_down = True
        self._waiting.clear()
        self._heap.clear()
        if self._sleep_scope is not None:
            self._sleep_scope.cancel()
        while self._getters:
            self._getters.popleft().set()

    async def shutdown_with_drain(self, timeout: float) -> None:
        """Shut down, then wait until every queued, parked and in-flight key is done.

        Delayed keys are dropped, not waited for. Workers must keep running meanwhile.

        Raises:
            TimeoutError: keys are still unfinished after ``timeout`` seconds.
        """
        self.shutdown()
        if self._idle():
            return
        if self._drained is None:
            self._drained = anyio.Event()
        with anyio.move_on_after(timeout):
            await self._drained.wait()
        if not self._idle():
            raise TimeoutError(
                f"work queue not drained after {timeout}s: "
                f"{len(self._queued) + len(self._parked)} queued, "
                f"{len(self._processing)} in flight"
            )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Move delayed keys to the queue when they are due, until the queue shuts down.

        Reports readiness through ``task_status`` (use ``task_group.start``). When it ends,
        whether by ``shutdown()`` or by cancellation, the queue is shut down.

        Raises:
            RuntimeError: ``run()`` is already running.
        """
        if self._running:
            raise RuntimeError("the work queue's run() is already running")
        self._running = True
        try:
            task_status.started()
            while not self._shutting_down:
                deadline = self._promote_ready()
                with anyio.CancelScope() as scope:
                    self._sleep_scope = scope
                    # A deadline already passed must not become a negative (invalid) sleep.
                    await self._clock.sleep(max(0.0, deadline - self._clock.now()))
                self._sleep_scope = None
        finally:
            self._sleep_scope = None
            self._running = False
            self.shutdown()

    async def __aenter__(self) -> Self:
        """Run the delay loop in a task group for the duration of the ``async with`` block."""
        async with AsyncExitStack() as stack:
            task_group = await stack.enter_async_context(anyio.create_task_group())
            await task_group.start(self.run)
            self._exit_stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        """Shut the queue down (without draining) and wait for the delay loop to end.

        An exception from the block propagates unchanged, not wrapped in an ExceptionGroup.
        """
        self.shutdown()
        stack, self._exit_stack = self._exit_stack, None
        assert stack is not None, "__aexit__ without __aenter__"
        # The loop ends by itself once the queue is shut down, so the task group is left
        # cleanly and the block's own exception (if any) is the one that propagates.
        await stack.aclose()
        return None

    def __aiter__(self) -> Self:
        """Iterate over keys until the queue is shut down and empty; ``done()`` each one."""
        return self

    async def __anext__(self) -> T:
        """The next key, as ``get()``; ends the iteration instead of raising QueueShutDown."""
        try:
            return await self.get()
        except QueueShutDown:
            raise StopAsyncIteration from None

    def _take(self) -> T:
        item = self._default.popleft() if self._simple else self._pop_by_priority()
        self._processing[item] = self._queued.pop(item)
        if not self._queued:
            # A dict keeps the table of its largest size: a burst's would stay for good.
            self._queued = {}
        self._on_get(item)
        return item

    def _pop_by_priority(self) -> T:
        for priority, bucket in self._ordered:
            while bucket:
                item = bucket.popleft()
                if not self._consume_stale(priority, item):
                    self._prune()
                    return item
        raise AssertionError("work queue has queued keys but no live entry")  # pragma: no cover

    async def _wait_and_take(self) -> T:
        while not self._queued:
            if self._shutting_down:
                raise QueueShutDown
            event = anyio.Event()
            self._getters.append(event)
            try:
                await event.wait()
            except BaseException:
                if not event.is_set():
                    self._getters.remove(event)
                elif self._queued and self._getters:
                    # An add chose this getter, which was cancelled before taking: pass it on.
                    self._getters.popleft().set()
                raise
        return self._take()

    def _enqueue(self, item: T, priority: int) -> None:
        self._queued[item] = priority
        self._bucket(priority).append(item)
        if self._getters:
            self._getters.popleft().set()

    def _park(self, item: T, priority: int) -> None:
        parked = self._parked.get(item)
        if parked is None:
            self._parked[item] = priority
            self._on_add(item)
        elif priority > parked:
            self._parked[item] = priority

    def _raise_priority(self, item: T, old: int, new: int) -> None:
        key = (old, item)
        self._stale[key] = self._stale.get(key, 0) + 1
        self._queued[item] = new
        self._bucket(new).append(item)
        self._simple = False

    def _consume_stale(self, priority: int, item: T) -> bool:
        if not self._stale:
            return False
        key = (priority, item)
        count = self._stale.get(key)
        if count is None:
            return False
        if count == 1:
            del self._stale[key]
        else:
            self._stale[key] = count - 1
        return True

    def _bucket(self, priority: int) -> deque[T]:
        bucket = self._buckets.get(priority)
        if bucket is None:
            bucket = deque()
            self._buckets[priority] = bucket
            self._ordered = sorted(
                [*self._ordered, (priority, bucket)], key=_priority_of, reverse=True
            )
            self._simple = False
        return bucket

    def _prune(self) -> None:
        """Drop emptied non-default FIFOs, so priorities used once do not pile up."""
        kept = [entry for entry in self._ordered if entry[1] or entry[0] == DEFAULT_PRIORITY]
        if len(kept) != len(self._ordered):
            self._ordered = kept
            self._buckets = dict(kept)
        self._simple = len(self._ordered) == 1 and not self._stale

    def _drop_queued(self) -> None:
        for item in itertools.chain(self._queued, self._parked):
            self._on_drop(item)
        self._queued.clear()
        self._parked.clear()
        self._stale.clear()
        for _, bucket in self._ordered:
            bucket.clear()
        self._prune()
        if self._drained is not None and self._idle():
            self._drained.set()

    def _idle(self) -> bool:
        return not (self._queued or self._parked or self._processing)

    def _promote_ready(self) -> float:
        """Add the delayed keys that are due; the ready time of the next one, or inf."""
        now = self._clock.now()
        heap = self._heap
        while heap:
            ready, seq, item = heap[0]
            waiting = self._waiting.get(item)
            if waiting is not None and waiting[1] == seq:
                if ready > now:
                    return ready
                del self._waiting[item]
                self.add(item, priority=waiting[2])
            heapq.heappop(heap)
        return math.inf


def _priority_of(entry: tuple[int, deque[T]]) -> int:
    return entry[0]
