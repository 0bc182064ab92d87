"""WorkQueue keeps client-go's guarantees: dedup, one worker per key, requeue after done, drain.

Time is stepped with a fake clock and waits are on conditions with deadlines, never on sleeps.
Property tests drive random interleavings of add/get/done, synchronously against a model and
with real worker tasks, and check that no key runs twice at once and nothing is lost or doubled.
"""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskStatus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reconcile.ratelimiter import ItemExponentialFailureRateLimiter
from reconcile.workqueue import LOW_PRIORITY, YIELD_EVERY, QueueShutDown, WorkQueue
from tests.builders import FakeClock

asyncio_test = pytest.mark.asyncio(loop_scope="session")
"""Marks the async tests (strict mode); a module-wide pytestmark would warn on the sync ones."""

WAIT = 5.0
"""Deadline of every condition a test waits for; reached only when the queue is broken."""


def drain_nowait(queue: WorkQueue[str]) -> list[str]:
    """Get and finish every ready key, in the order the queue hands them out."""
    keys = []
    while len(queue):
        key = queue.get_nowait()
        queue.done(key)
        keys.append(key)
    return keys


# --- add, get, done -------------------------------------------------------------------------


def test_keys_come_out_in_fifo_order() -> None:
    queue = WorkQueue[str]()
    for key in "abc":
        queue.add(key)
    assert len(queue) == 3
    assert drain_nowait(queue) == ["a", "b", "c"]


def test_a_queued_key_is_added_once() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert len(queue) == 2
    assert drain_nowait(queue) == ["a", "b"]


def test_a_key_added_while_processing_waits_for_done_then_runs_once_more() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    assert queue.get_nowait() == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0, "parked, not queued: no second worker may get it"
    with pytest.raises(anyio.WouldBlock):
        queue.get_nowait()
    queue.done("a")
    assert len(queue) == 1
    assert drain_nowait(queue) == ["a"]
    assert len(queue) == 0


def test_done_without_get_is_an_error() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    with pytest.raises(ValueError, match=r"done\('a'\) without get\(\)"):
        queue.done("a")
    queue.done(queue.get_nowait())
    with pytest.raises(ValueError, match="not being processed"):
        queue.done("a")


@asyncio_test
async def test_get_waits_for_an_add() -> None:
    queue = WorkQueue[str]()
    got: list[str] = []

    async def worker() -> None:
        got.append(await queue.get())

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            assert got == []
            queue.add("a")
    assert got == ["a"]


@asyncio_test
async def test_one_add_wakes_one_waiting_worker() -> None:
    queue = WorkQueue[str]()
    got: list[str] = []

    async def worker() -> None:
        got.append(await queue.get())

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(worker)
            task_group.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            queue.add("a")
            await anyio.wait_all_tasks_blocked()
            assert got == ["a"]
            queue.add("b")
    assert got == ["a", "b"]


@asyncio_test
async def test_a_woken_worker_cancelled_before_it_runs_hands_the_key_on() -> None:
    queue = WorkQueue[str]()
    got: list[str] = []
    first = anyio.CancelScope()

    async def cancelled_worker() -> None:
        with first:
            got.append(await queue.get())

    async def worker() -> None:
        got.append(await queue.get())

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(cancelled_worker)
            await anyio.wait_all_tasks_blocked()
            task_group.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            first.cancel()  # the first waiter is cancelled, but has not run yet ...
            queue.add("a")  # ... when the add wakes it: it must hand the wakeup on
    assert first.cancelled_caught
    assert got == ["a"]
    assert len(queue) == 0


@asyncio_test
async def test_async_iteration_ends_at_shutdown() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.add("b")
    queue.shutdown()
    seen = []
    with anyio.fail_after(WAIT):
        async for key in queue:
            seen.append(key)
            queue.done(key)
    assert seen == ["a", "b"]


# --- priorities -----------------------------------------------------------------------------


def test_higher_priority_first_then_fifo() -> None:
    queue = WorkQueue[str]()
    queue.add("low1", priority=LOW_PRIORITY)
    queue.add("a")
    queue.add("high", priority=10)
    queue.add("low2", priority=LOW_PRIORITY)
    queue.add("b")
    assert drain_nowait(queue) == ["high", "a", "b", "low1", "low2"]


def test_adding_a_queued_key_with_higher_priority_moves_it_up_once() -> None:
    queue = WorkQueue[str]()
    queue.add("x", priority=LOW_PRIORITY)
    queue.add("y", priority=LOW_PRIORITY)
    queue.add("a")
    queue.add("y")
    assert len(queue) == 3
    assert drain_nowait(queue) == ["a", "y", "x"]


def test_adding_a_queued_key_with_lower_priority_keeps_its_place() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.add("b")
    queue.add("a", priority=LOW_PRIORITY)
    assert drain_nowait(queue) == ["a", "b"]


def test_a_raised_key_added_again_at_its_old_priority_queues_at_the_end() -> None:
    queue = WorkQueue[str]()
    queue.add("x", priority=LOW_PRIORITY)
    queue.add("x")  # leaves a stale entry for x at the head of the low FIFO
    assert drain_nowait(queue) == ["x"]
    queue.add("z", priority=LOW_PRIORITY)
    queue.add("x", priority=LOW_PRIORITY)
    assert drain_nowait(queue) == ["z", "x"]


def test_a_parked_key_is_requeued_with_its_highest_priority() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    assert queue.get_nowait() == "a"
    queue.add("a", priority=LOW_PRIORITY)
    queue.add("a", priority=5)
    queue.add("a", priority=LOW_PRIORITY)
    queue.add("b")
    queue.done("a")
    assert drain_nowait(queue) == ["a", "b"]


def test_fifos_of_priorities_used_once_are_dropped_when_empty() -> None:
    queue = WorkQueue[str]()
    for priority in range(1, 50):
        queue.add(f"k{priority}", priority=priority)
    queue.add("k0")
    assert drain_nowait(queue)[:2] == ["k49", "k48"]
    assert len(queue._ordered) == 1
    queue.add("a")
    queue.add("b")
    assert drain_nowait(queue) == ["a", "b"]


# --- shutdown and drain ---------------------------------------------------------------------


@asyncio_test
async def test_shutdown_hands_out_what_is_queued_then_raises() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.shutdown()
    assert queue.shutting_down()
    queue.add("b")
    assert len(queue) == 1, "adds after shutdown are dropped"
    with anyio.fail_after(WAIT):
        assert await queue.get() == "a"
        with pytest.raises(QueueShutDown):
            await queue.get()
    with pytest.raises(QueueShutDown):
        queue.get_nowait()


@asyncio_test
async def test_shutdown_wakes_waiting_workers() -> None:
    queue = WorkQueue[str]()
    stopped = []

    async def worker() -> None:
        with pytest.raises(QueueShutDown):
            await queue.get()
        stopped.append(True)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            for _ in range(3):
                task_group.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            queue.shutdown()
    assert stopped == [True] * 3


def test_a_key_parked_before_shutdown_still_runs_after_done() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    key = queue.get_nowait()
    queue.add("a")
    queue.shutdown()
    queue.done(key)
    assert drain_nowait(queue) == ["a"]


class Workers:
    """Workers whose keys finish only when the test releases them."""

    def __init__(self, queue: WorkQueue[str]) -> None:
        self.queue = queue
        self.holding: dict[str, anyio.Event] = {}
        self.finished: list[str] = []

    async def run(self) -> None:
        async for key in self.queue:
            release = self.holding[key] = anyio.Event()
            await release.wait()
            del self.holding[key]
            self.queue.done(key)
            self.finished.append(key)

    async def release(self, key: str) -> None:
        self.holding[key].set()
        await anyio.wait_all_tasks_blocked()


@asyncio_test
async def test_drain_waits_for_queued_and_in_flight_keys() -> None:
    queue = WorkQueue[str]()
    workers = Workers(queue)
    drained = anyio.Event()

    async def drain() -> None:
        await queue.shutdown_with_drain(WAIT)
        drained.set()

    for key in "abc":
        queue.add(key)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(workers.run)
            await anyio.wait_all_tasks_blocked()
            assert list(workers.holding) == ["a"]
            queue.add("a")  # parked behind the in-flight "a"
            task_group.start_soon(drain)
            await anyio.wait_all_tasks_blocked()
            for key in "abc":
                await workers.release(key)
                assert not drained.is_set(), f"drained with keys left after {key}"
            assert list(workers.holding) == ["a"], "the parked key runs during the drain"
            await workers.release("a")
            assert drained.is_set()
    assert workers.finished == ["a", "b", "c", "a"]


@asyncio_test
async def test_drain_of_an_idle_queue_returns_at_once() -> None:
    queue = WorkQueue[str]()
    with anyio.fail_after(WAIT):
        await queue.shutdown_with_drain(0)
    assert queue.shutting_down()


@asyncio_test
async def test_drain_times_out_at_its_deadline_naming_what_is_left() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    queue.add("b")
    assert queue.get_nowait() == "a"
    start = anyio.current_time()
    with anyio.fail_after(WAIT), pytest.raises(TimeoutError, match="1 queued, 1 in flight"):
        await queue.shutdown_with_drain(0.05)
    assert anyio.current_time() - start >= 0.05


# --- delayed and rate-limited adds ----------------------------------------------------------


@asyncio_test
async def test_add_after_releases_keys_in_ready_time_order() -> None:
    clock = FakeClock()
    async with WorkQueue[str](clock=clock) as queue:
        queue.add_after("a", 10)
        queue.add_after("b", 5)
        await clock.advance(4.9)
        assert len(queue) == 0
        await clock.advance(0.1)
        assert drain_nowait(queue) == ["b"]
        await clock.advance(5)
        assert drain_nowait(queue) == ["a"]


@asyncio_test
async def test_add_after_again_keeps_the_earlier_time() -> None:
    clock = FakeClock()
    async with WorkQueue[str](clock=clock) as queue:
        queue.add_after("later", 10)
        queue.add_after("later", 20)
        queue.add_after("sooner", 10)
        queue.add_after("sooner", 3)
        await clock.advance(3)
        assert drain_nowait(queue) == ["sooner"]
        await clock.advance(7)
        assert drain_nowait(queue) == ["later"]
        await clock.advance(100)
        assert len(queue) == 0, "each key became ready once"


@asyncio_test
async def test_add_after_keeps_the_higher_priority() -> None:
    clock = FakeClock()
    async with WorkQueue[str](clock=clock) as queue:
        queue.add_after("a", 1)
        queue.add_after("b", 1, priority=LOW_PRIORITY)
        queue.add_after("b", 5, priority=10)
        await clock.advance(1)
        assert drain_nowait(queue) == ["b", "a"]


@asyncio_test
async def test_an_add_supersedes_a_pending_add_after_of_the_key() -> None:
    clock = FakeClock()
    async with WorkQueue[str](clock=clock) as queue:
        queue.add_after("a", 10)
        queue.add("a")
        assert drain_nowait(queue) == ["a"]
        await clock.advance(10)
        assert len(queue) == 0, "the delayed add was folded into the plain one"


@asyncio_test
async def test_an_add_that_supersedes_a_delay_keeps_the_delayed_higher_priority() -> None:
    # controller-runtime's priority queue: adding a key it holds keeps the higher priority of
    # the two (and the earlier ready time); a retry put off at high priority and woken by an
    # event must not drop behind the keys of ordinary events.
    clock = FakeClock()
    async with WorkQueue[str](clock=clock) as queue:
        queue.add("a")
        queue.add_after("urgent", 10, priority=10)
        queue.add("urgent")
        assert drain_nowait(queue) == ["urgent", "a"]


@asyncio_test
async def test_an_add_while_processing_also_supersedes_the_delay() -> None:
    clock = FakeClock()
    async with WorkQueue[str](clock=clock) as queue:
        queue.add("a")
        key = await queue.get()
        queue.add_after("a", 10)
        queue.add("a")  # parked until done
        queue.done(key)
        assert drain_nowait(queue) == ["a"]
        await clock.advance(10)
        assert len(queue) == 0


def test_the_priority_of_a_key_in_flight_is_known_until_done() -> None:
    queue = WorkQueue[str](clock=FakeClock())
    queue.add("low", priority=LOW_PRIORITY)
    key = queue.get_nowait()
    assert queue.priority_of(key) == LOW_PRIORITY
    queue.done(key)
    with pytest.raises(ValueError, match="not being processed"):
        queue.priority_of(key)


async def _ticks_while_draining(queue: WorkQueue[str], clock: FakeClock, step: float) -> int:
    """Turns another task gets while a worker that never awaits drains 100 keys."""
    for index in range(100):
        queue.add(f"k{index}")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        start = ticks
        for _ in range(100):
            key = await queue.get()
            clock.time += step  # the reconcile's time
            queue.done(key)
        group.cancel_scope.cancel()
    return ticks - start


@asyncio_test
async def test_get_yields_to_the_loop_between_keys_that_take_the_budget() -> None:
    clock = FakeClock()
    ticks = await _ticks_while_draining(WorkQueue[str](clock=clock), clock, YIELD_EVERY)
    assert ticks >= 99, "another task ran between the keys"


@asyncio_test
async def test_get_yields_once_per_budget_to_a_burst_of_quick_keys() -> None:
    clock = FakeClock()
    ticks = await _ticks_while_draining(WorkQueue[str](clock=clock), clock, YIELD_EVERY / 10)
    assert 9 <= ticks <= 12, f"{ticks} turns of the loop for 100 keys of a tenth of the budget"


@asyncio_test
async def test_a_worker_cancelled_at_get_takes_no_key() -> None:
    queue = WorkQueue[str]()
    queue.add("a")
    with anyio.CancelScope() as scope:
        scope.cancel()
        await queue.get()
    assert len(queue) == 1, "the key stays queued for another worker"


@asyncio_test
async def test_a_worker_cancelled_after_the_budget_takes_no_key() -> None:
    clock = FakeClock()
    queue = WorkQueue[str](clock=clock)
    queue.add("a")
    queue.add("b")
    queue.done(await queue.get())  # the first get checkpoints and starts the budget
    clock.time += YIELD_EVERY
    with anyio.CancelScope() as scope:
        scope.cancel()
        await queue.get()
    assert len(queue) == 1, "the key stays queued for another worker"


def test_add_after_without_delay_adds_now() -> None:
    queue = WorkQueue[str](clock=FakeClock())
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert drain_nowait(queue) == ["a", "b"]


@asyncio_test
async def test_add_after_before_run_waits_for_run() -> None:
    clock = FakeClock()
    queue = WorkQueue[str](clock=clock)
    queue.add_after("a", 1)
    await clock.advance(1)
    assert len(queue) == 0
    async with queue:
        await anyio.wait_all_tasks_blocked()
        assert drain_nowait(queue) == ["a"]


@asyncio_test
async def test_add_after_with_the_real_clock() -> None:
    async with WorkQueue[str]() as queue:
        queue.add_after("a", 0.01)
        with anyio.fail_after(WAIT):
            assert await queue.get() == "a"


@asyncio_test
async def test_add_rate_limited_uses_the_limiter_and_forget_resets_it() -> None:
    clock = FakeClock()
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    async with WorkQueue[str](clock=clock, rate_limiter=limiter) as queue:
        queue.add_rate_limited("a")
        queue.add_rate_limited("a")  # 2 s, so the 1 s entry wins
        assert queue.num_requeues("a") == 2
        await clock.advance(1)
        assert drain_nowait(queue) == ["a"]
        queue.add_rate_limited("a")
        await clock.advance(3.9)
        assert len(queue) == 0
        await clock.advance(0.1)
        assert drain_nowait(queue) == ["a"]
        queue.forget("a")
        assert queue.num_requeues("a") == 0
        queue.add_rate_limited("a")
        await clock.advance(1)
        assert drain_nowait(queue) == ["a"]


@asyncio_test
async def test_shutdown_drops_delayed_keys_and_stops_the_loop() -> None:
    clock = FakeClock()
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    with anyio.fail_after(WAIT):
        async with WorkQueue[str](clock=clock, rate_limiter=limiter) as queue:
            queue.add_after("a", 1)
            queue.shutdown()
            queue.add_rate_limited("b")
            assert queue.num_requeues("b") == 0, "no retry is counted after shutdown"
            await clock.advance(10)
            assert len(queue) == 0
            with pytest.raises(QueueShutDown):
                await queue.get()


@asyncio_test
async def test_cancelling_run_shuts_the_queue_down() -> None:
    queue = WorkQueue[str]()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            await task_group.start(queue.run)
            assert not queue.shutting_down()
            task_group.cancel_scope.cancel()
    assert queue.shutting_down()


@asyncio_test
async def test_run_twice_is_an_error() -> None:
    queue = WorkQueue[str]()
    with anyio.fail_after(WAIT):
        async with queue:
            with pytest.raises(RuntimeError, match="already running"):
                await queue.run()


@asyncio_test
async def test_leaving_the_block_with_an_error_stops_the_loop_and_raises() -> None:
    queue = WorkQueue[str](clock=FakeClock())

    async def fail_inside() -> None:
        async with queue:
            queue.add_after("a", 100)
            raise KeyError("boom")

    with anyio.fail_after(WAIT), pytest.raises(KeyError, match="boom"):
        await fail_inside()
    assert queue.shutting_down()


# --- properties -----------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c"])
PRIORITIES = st.sampled_from([LOW_PRIORITY, 0, 7])
WORKERS = 3


class QueueModel(RuleBasedStateMachine):
    """Drives a WorkQueue with random add/get/done by several workers against an exact model.

    The model: a key is *due* from an add until a worker gets it; a due key is *ready* unless a
    worker holds it; get hands out the ready key of highest priority, earliest first, where a key
    becomes ready (or is raised to a higher priority) at a point in time given by ``tick``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.queue = WorkQueue[str]()
        self.due: dict[str, int] = {}  # key -> priority
        self.since: dict[str, int] = {}  # ready key -> tick it entered its priority
        self.holding: dict[int, str] = {}
        self.tick = 0

    def _ready(self, key: str) -> None:
        self.tick += 1
        self.since[key] = self.tick

    @rule(key=KEYS, priority=PRIORITIES)
    def add(self, key: str, priority: int) -> None:
        self.queue.add(key, priority=priority)
        held = key in self.holding.values()
        # A new key, or a higher priority, is (re)queued at the end unless a worker holds it.
        if key not in self.due or priority > self.due[key]:
            self.due[key] = priority
            if not held:
                self._ready(key)

    @rule(worker=st.integers(0, WORKERS - 1))
    def get(self, worker: int) -> None:
        if worker in self.holding:
            return
        ready = {key: self.due[key] for key in self.since}
        if not ready:
            with pytest.raises(anyio.WouldBlock):
                self.queue.get_nowait()
            return
        key = self.queue.get_nowait()
        assert key in ready, f"{key} handed out but not ready (ready: {ready})"
        assert key not in self.holding.values(), f"{key} handed to two workers"
        expected = max(ready, key=lambda k: (ready[k], -self.since[k]))
        assert key == expected, f"got {key}, expected {expected} of {ready}"
        del self.due[key], self.since[key]
        self.holding[worker] = key

    @precondition(lambda self: bool(self.holding))
    @rule(worker=st.integers(0, WORKERS - 1))
    def done(self, worker: int) -> None:
        key = self.holding.pop(worker, None)
        if key is None:
            with pytest.raises(ValueError, match="without get"):
                self.queue.done("never-got")
            return
        self.queue.done(key)
        if key in self.due:
            self._ready(key)

    @invariant()
    def lengths_agree(self) -> None:
        assert len(self.queue) == len(self.since)

    def teardown(self) -> None:
        for worker in list(self.holding):
            self.done(worker)
        while self.since:
            self.get(0)
            self.done(0)
        assert not self.due, f"lost keys: {self.due}"
        with pytest.raises(anyio.WouldBlock):
            self.queue.get_nowait()


QueueModel.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
test_queue_matches_its_model = QueueModel.TestCase


Op = tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3)),
        st.tuples(st.just("finish"), st.integers(0, WORKERS - 1)),
    ),
    max_size=60,
)


async def _run_workers(ops: list[Op]) -> list[tuple[str, int]]:
    """Run the ops against real worker tasks; the log of ("add"|"start"|"done", key) events."""
    queue = WorkQueue[int]()
    log: list[tuple[str, int]] = []
    holding: dict[int, int] = {}
    releases: dict[int, anyio.Event] = {}

    async def worker(index: int, task_status: TaskStatus[None]) -> None:
        task_status.started()
        async for key in queue:
            assert key not in holding.values(), f"key {key} on two workers"
            holding[index] = key
            log.append(("start", key))
            release = releases[index] = anyio.Event()
            await release.wait()
            del holding[index]
            queue.done(key)
            log.append(("done", key))

    async def settle() -> None:
        # Let woken workers pass get()'s checkpoint first: wait_all_tasks_blocked sleeps 0.1 s
        # whenever it finds a task that is ready to run.
        for _ in range(2 * WORKERS):
            await anyio.lowlevel.checkpoint()
        await anyio.wait_all_tasks_blocked()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            for index in range(WORKERS):
                await task_group.start(worker, index)
            for op, argument in ops:
                if op == "add":
                    log.append(("add", argument))
                    queue.add(argument)
                elif argument in holding:
                    releases[argument].set()
                await settle()
            while holding:
                for index in list(holding):
                    releases[index].set()
                await settle()
            await queue.shutdown_with_drain(WAIT)
    return log


def _check_log(log: list[tuple[str, int]]) -> None:
    pending: dict[int, bool] = {}  # key -> added since its last start
    running: set[int] = set()
    for event, key in log:
        if event == "add":
            pending[key] = True
        elif event == "start":
            assert pending.get(key), f"key {key} started without an add since its last start"
            assert key not in running, f"key {key} started while running"
            pending[key] = False
            running.add(key)
        else:
            running.remove(key)
    assert not running
    assert not any(pending.values()), f"keys added but never processed after: {pending}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_workers_never_share_a_key_and_lose_nothing(ops: list[Op]) -> None:
    log = anyio.run(_run_workers, ops, backend_options={"loop_factory": asyncio.new_event_loop})
    _check_log(log)


def test_the_log_check_catches_a_lost_key() -> None:
    # The property must be able to fail: a key added after its last run is lost.
    with pytest.raises(AssertionError, match="never processed"):
        _check_log([("add", 1), ("start", 1), ("add", 1), ("done", 1)])
    with pytest.raises(AssertionError, match="without an add"):
        _check_log([("add", 1), ("start", 1), ("done", 1), ("start", 1), ("done", 1)])
