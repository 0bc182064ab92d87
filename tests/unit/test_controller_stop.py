"""Controller stop and load semantics: no key after stop, bounded grace, a fair event loop.

Issue #15 items 1, 2, 12 and 13: a stopping controller hands out no queued key, lets the
reconciles in flight finish within the grace period and cancels them after it (at once when the
grace is cut); workers that never await between keys still let other tasks run; a late source that
fails does not stop the controller; retries and requeues keep the key's priority.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest

from reconcile import (
    Controller,
    ControllerOptions,
    GracePeriod,
    ItemExponentialFailureRateLimiter,
    Request,
    Result,
    current_grace,
)
from reconcile.workqueue import LOW_PRIORITY, YIELD_EVERY, WorkQueue
from testenv import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUEUED = 10_000


async def _true(value: bool) -> bool:
    return value


def _fill(controller: Controller, count: int, *, priority: int = 0) -> None:
    for index in range(count):
        controller.queue.add(Request(f"k{index}", "ns"), priority=priority)


@asynccontextmanager
async def _running(controller: Controller) -> AsyncIterator[anyio.abc.TaskGroup]:
    async with anyio.create_task_group() as group:
        await group.start(controller.run)
        yield group
        group.cancel_scope.cancel()


async def test_stop_hands_out_no_queued_key_and_ends_within_the_grace() -> None:
    started = anyio.Event()
    reconciled: list[str] = []

    async def slow(request: Request) -> Result | None:
        reconciled.append(request.name)
        started.set()
        await anyio.sleep(0.3)
        return None

    options = ControllerOptions(max_concurrent_reconciles=4, graceful_shutdown_timeout=5)
    controller = Controller("stop", slow, options=options)
    _fill(controller, QUEUED)
    begun = time.monotonic()
    with anyio.fail_after(10):
        async with _running(controller):
            await started.wait()
            await anyio.wait_all_tasks_blocked()
            stop = time.monotonic()
    assert time.monotonic() - stop < 1.0, "only the in-flight reconciles were waited for"
    assert len(reconciled) == 4, f"{len(reconciled)} reconciled: queued keys were handed out"
    assert time.monotonic() - begun < 5


async def test_in_flight_reconciles_are_cancelled_after_the_grace() -> None:
    finished = False
    started = anyio.Event()

    async def stuck(request: Request) -> Result | None:
        nonlocal finished
        started.set()
        await anyio.sleep(60)
        finished = True
        return None

    controller = Controller("g", stuck, options=ControllerOptions(graceful_shutdown_timeout=0.2))
    _fill(controller, QUEUED)
    with anyio.fail_after(5):
        async with _running(controller):
            await started.wait()
            stop = time.monotonic()
    assert not finished
    assert time.monotonic() - stop < 0.2 + 1.0


async def test_a_cut_grace_cancels_in_flight_reconciles_at_once() -> None:
    started = anyio.Event()
    grace = GracePeriod()

    async def stuck(request: Request) -> Result | None:
        started.set()
        await anyio.sleep(60)
        return None

    token = current_grace.set(grace)
    try:
        controller = Controller("cut", stuck, options=ControllerOptions())  # 30 s grace
        _fill(controller, 1)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as outer, anyio.create_task_group() as group:
                await group.start(controller.run)
                await started.wait()
                outer.start_soon(_cut_later, grace)
                group.cancel_scope.cancel()  # waits out the 30 s grace, unless cut
    finally:
        current_grace.reset(token)


async def _cut_later(grace: GracePeriod) -> None:
    await anyio.sleep(0.1)
    grace.cut()  # as a lost Lease or a second signal does


async def test_workers_that_never_await_leave_the_loop_to_others() -> None:
    done = anyio.Event()
    count = 0
    between: list[int] = []  # reconciles between two turns of another task
    since_tick = 0
    keys = 200

    async def cache_only(request: Request) -> Result | None:
        nonlocal count, since_tick
        count += 1
        since_tick += 1
        # Reads that take get()'s yield budget: quicker ones share a turn of the loop.
        busy_until = time.monotonic() + YIELD_EVERY
        while time.monotonic() < busy_until:
            pass
        if count == keys:
            done.set()
        return None

    async def ticker() -> None:
        nonlocal since_tick
        while True:
            between.append(since_tick)
            since_tick = 0
            await anyio.lowlevel.checkpoint()

    controller = Controller("fair", cache_only, options=ControllerOptions())
    _fill(controller, keys)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(ticker)
            async with _running(controller):
                await done.wait()
            group.cancel_scope.cancel()
    assert max(between) <= 2, f"up to {max(between)} reconciles ran without another task running"


async def test_a_late_source_that_cannot_start_leaves_the_controller_running() -> None:
    calls: list[str] = []

    async def note(request: Request) -> Result | None:
        calls.append(request.name)
        return None

    class Broken:
        async def start(self, queue: WorkQueue[Request], task_group: anyio.abc.TaskGroup) -> None:
            raise RuntimeError("cannot start")

        async def wait_for_sync(self, timeout: float) -> None:
            raise AssertionError("never reached")

    controller = Controller("late", note, options=ControllerOptions())
    with anyio.fail_after(10):
        async with _running(controller):
            controller.watch(Broken())
            await anyio.wait_all_tasks_blocked()
            controller.queue.add(Request("after", "ns"))
            await eventually(lambda: _true(calls == ["after"]), timeout=5)


async def test_retries_and_requeues_keep_the_priority_of_the_key() -> None:
    seen: list[tuple[int, int]] = []

    async def flaky(request: Request) -> Result | None:
        seen.append((len(seen), controller.queue.priority_of(request)))
        if len(seen) == 1:
            raise RuntimeError("once")
        if len(seen) == 2:
            return Result(requeue_after=0.01)
        return None

    limiter = ItemExponentialFailureRateLimiter(base=0.01, max_delay=1)
    controller = Controller("prio", flaky, options=ControllerOptions(rate_limiter=limiter))
    _fill(controller, 1, priority=LOW_PRIORITY)
    with anyio.fail_after(10):
        async with _running(controller):
            await eventually(lambda: _true(len(seen) == 3), timeout=5)
    assert seen == [(0, LOW_PRIORITY), (1, LOW_PRIORITY), (2, LOW_PRIORITY)]


async def test_what_a_standby_queued_waits_behind_changes_after_it_leads() -> None:
    order: list[str] = []

    async def note(request: Request) -> Result | None:
        order.append(request.name)
        return None

    controller = Controller("standby", note, options=ControllerOptions())
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            await group.start(controller.warmup)  # a standby: sources and queue, no workers
            controller.queue.add(Request("seen-while-standing-by", "ns"))
            await group.start(controller.run)  # leadership: the workers start
            controller.queue.add(Request("changed-after", "ns"))
            await eventually(lambda: _true(len(order) == 2), timeout=5)
            group.cancel_scope.cancel()
    assert order == ["changed-after", "seen-while-standing-by"]
