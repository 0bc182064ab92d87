"""Controller semantics on a Channel source: retries, terminal errors, requeue, concurrency."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import pairwise

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from prometheus_client import CollectorRegistry

from reconcile import (
    Channel,
    Controller,
    ControllerOptions,
    EnqueueRequestForObject,
    ItemExponentialFailureRateLimiter,
    Request,
    Result,
    TerminalError,
)
from reconcile.objects import Obj
from testenv import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _obj(name: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns"}}


@asynccontextmanager
async def _running(
    controller: Controller,
) -> AsyncIterator[MemoryObjectSendStream[Obj]]:
    send, receive = anyio.create_memory_object_stream[Obj](100)
    controller.watch(Channel(receive, EnqueueRequestForObject()))
    async with anyio.create_task_group() as group:
        await group.start(controller.run)
        yield send
        group.cancel_scope.cancel()


def _sample(registry: CollectorRegistry, metric: str, /, **labels: str) -> float:
    return registry.get_sample_value(metric, labels) or 0.0


async def _true(value: bool) -> bool:
    return value


async def test_failures_are_retried_with_growing_delays_then_succeed() -> None:
    registry = CollectorRegistry()
    stamps: list[float] = []

    async def flaky(request: Request) -> Result | None:
        stamps.append(anyio.current_time())
        if len(stamps) <= 4:
            raise RuntimeError("not yet")
        return None

    limiter = ItemExponentialFailureRateLimiter(base=0.02, max_delay=10)
    controller = Controller(
        "flaky", flaky, options=ControllerOptions(rate_limiter=limiter), registry=registry
    )
    async with _running(controller) as send:
        await send.send(_obj("a"))
        await eventually(lambda: _true(len(stamps) == 5), timeout=10)
    gaps = [later - earlier for earlier, later in pairwise(stamps)]
    # The delays this limiter hands out for four failures (0.02, 0.04, 0.08, 0.16): each retry
    # waits at least its own (less timer granularity), and a loaded machine may add to it but
    # not a whole second.
    reference = ItemExponentialFailureRateLimiter(base=0.02, max_delay=10)
    delays = [reference.when("a") for _ in gaps]
    assert delays == pytest.approx([0.02, 0.04, 0.08, 0.16])
    for gap, delay in zip(gaps, delays, strict=True):
        assert delay - 0.005 <= gap <= delay + 1.0, (gaps, delays)
    labels = {"controller": "flaky"}
    assert _sample(registry, "controller_runtime_reconcile_total", result="error", **labels) == 4
    assert _sample(registry, "controller_runtime_reconcile_total", result="success", **labels) == 1
    assert _sample(registry, "controller_runtime_reconcile_errors_total", **labels) == 4
    retries = _sample(registry, "workqueue_retries_total", name="flaky", controller="flaky")
    assert retries == 4
    assert controller.queue.num_requeues(Request("a", "ns")) == 0, "success forgets the backoff"


async def test_terminal_errors_are_not_retried_and_bugs_count_as_panics() -> None:
    registry = CollectorRegistry()
    calls: Counter[str] = Counter()

    async def reconcile(request: Request) -> Result | None:
        calls[request.name] += 1
        if request.name == "terminal":
            raise TerminalError("spec can never work")
        if request.name == "bug" and calls["bug"] == 1:
            raise KeyError("missing")
        return None

    controller = Controller("t", reconcile, registry=registry)
    async with _running(controller) as send:
        await send.send(_obj("terminal"))
        await send.send(_obj("bug"))
        await eventually(lambda: _true(calls["bug"] == 2), timeout=10)
        await send.send(_obj("after"))
        await eventually(lambda: _true(calls["after"] == 1), timeout=10)
    assert calls["terminal"] == 1
    labels = {"controller": "t"}
    assert _sample(registry, "controller_runtime_terminal_reconcile_errors_total", **labels) == 1
    assert _sample(registry, "controller_runtime_reconcile_panics_total", **labels) == 1


async def test_requeue_after_looks_again_later() -> None:
    calls: list[float] = []

    async def periodic(request: Request) -> Result | None:
        calls.append(anyio.current_time())
        return Result(requeue_after=0.05) if len(calls) < 3 else None

    registry = CollectorRegistry()
    async with _running(Controller("p", periodic, registry=registry)) as send:
        await send.send(_obj("x"))
        await eventually(lambda: _true(len(calls) == 3), timeout=10)
    assert all(b - a >= 0.05 for a, b in pairwise(calls))
    assert (
        _sample(
            registry, "controller_runtime_reconcile_total", controller="p", result="requeue_after"
        )
        == 2
    )


async def test_concurrency_is_bounded_and_keys_never_run_twice_at_once() -> None:
    running: set[str] = set()
    peak = 0
    overlaps: list[str] = []
    done: Counter[str] = Counter()

    async def slow(request: Request) -> Result | None:
        nonlocal peak
        if request.name in running:
            overlaps.append(request.name)
        running.add(request.name)
        peak = max(peak, len(running))
        await anyio.sleep(0.01)
        running.discard(request.name)
        done[request.name] += 1
        return None

    controller = Controller("c", slow, options=ControllerOptions(max_concurrent_reconciles=3))
    async with _running(controller) as send:
        for _ in range(5):
            for index in range(10):
                await send.send(_obj(f"k{index}"))
        await eventually(lambda: _true(len(done) == 10 and not running), timeout=10)
    assert peak == 3
    assert overlaps == []


async def test_stop_lets_the_in_flight_reconcile_finish() -> None:
    started, finished = anyio.Event(), anyio.Event()

    async def slow(request: Request) -> Result | None:
        started.set()
        await anyio.sleep(0.2)
        finished.set()
        return None

    controller = Controller("s", slow, options=ControllerOptions(graceful_shutdown_timeout=5))
    async with _running(controller) as send:
        await send.send(_obj("a"))
        with anyio.fail_after(5):
            await started.wait()
    assert finished.is_set(), "cancellation waited for the reconcile in flight"
