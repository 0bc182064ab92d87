"""Benchmark of WorkQueue: microseconds per add + get + done, against a naive asyncio baseline.

Run ``python bench/workqueue.py [items]``. Two scenarios, each for 1 and 8 workers:

- prefilled: every key is added, then the workers drain the queue; no worker suspends while a key
  is ready, so this is the queue's uncontended hot path.
- streaming: a producer adds keys in batches of 64 and yields to the loop after each batch; each
  worker yields once per key, like a reconcile that awaits once. Workers block in get() and are
  woken by adds, so this adds the event loop's cost of switching tasks.

WorkQueue runs with metrics on (a WorkQueueMetrics on a private registry) and off. The baseline is
asyncio.Queue plus a set for dedup, which has no per-key exclusivity, priorities or metrics. Each
figure is the best of three runs.

When Go is installed, the same run also times controller-runtime's priority queue (its default
metrics on) on "prefilled, 1 worker" through bench/workqueue_go, built once into
~/.cache/reconcile/bench (a binary per source hash), and prints ours / Go's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol

import anyio
import anyio.lowlevel
from prometheus_client import CollectorRegistry

from reconcile.metrics import WorkQueueMetrics
from reconcile.workqueue import QueueShutDown, WorkQueue

__all__ = ["Baseline", "main", "prefilled_seconds"]

DEFAULT_ITEMS: Final = 200_000
BATCH: Final = 64
RUNS: Final = 3
GO_SOURCE: Final = Path(__file__).with_name("workqueue_go")
GO_FILES: Final = ("go.mod", "go.sum", "main.go")


class Queue(Protocol):
    """What the benchmark drives: the common subset of WorkQueue and the baseline."""

    def add(self, item: int) -> None: ...

    async def get(self) -> int: ...

    def done(self, item: int) -> None: ...

    def shutdown(self) -> None: ...


class Baseline:
    """asyncio.Queue with a set of pending keys for dedup; shutdown via a sentinel per worker."""

    def __init__(self, workers: int) -> None:
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        self._pending: set[int] = set()
        self._workers = workers

    def add(self, item: int) -> None:
        if item in self._pending:
            return
        self._pending.add(item)
        self._queue.put_nowait(item)

    async def get(self) -> int:
        item = await self._queue.get()
        if item < 0:
            raise QueueShutDown
        self._pending.discard(item)
        return item

    def done(self, item: int) -> None:
        self._queue.task_done()

    def shutdown(self) -> None:
        for _ in range(self._workers):
            self._queue.put_nowait(-1)


async def _worker(queue: Queue, processed: list[int], yield_each: bool) -> None:
    count = 0
    try:
        while True:
            item = await queue.get()
            queue.done(item)
            count += 1
            if yield_each:
                await anyio.lowlevel.checkpoint()
    except QueueShutDown:
        processed.append(count)


async def _run(queue: Queue, items: int, workers: int, *, streaming: bool) -> float:
    """Seconds to push ``items`` keys through ``queue`` with ``workers`` workers."""
    processed: list[int] = []
    start = time.perf_counter()
    async with anyio.create_task_group() as task_group:
        if not streaming:
            for item in range(items):
                queue.add(item)
        for _ in range(workers):
            task_group.start_soon(_worker, queue, processed, streaming)
        if streaming:
            for first in range(0, items, BATCH):
                for item in range(first, min(first + BATCH, items)):
                    queue.add(item)
                await anyio.lowlevel.checkpoint()
        queue.shutdown()
    elapsed = time.perf_counter() - start
    assert sum(processed) == items, f"processed {sum(processed)} of {items}"
    return elapsed


async def prefilled_seconds(queue: Queue, items: int) -> float:
    """Seconds for "prefilled, 1 worker": add ``items`` keys, then get and done each one."""
    return await _run(queue, items, 1, streaming=False)


def _ours(metrics: bool) -> Callable[[int], Queue]:
    def make(workers: int) -> Queue:
        recorder = WorkQueueMetrics(CollectorRegistry()).for_queue("bench") if metrics else None
        return WorkQueue[int](metrics=recorder)

    return make


async def _best(make: Callable[[int], Queue], items: int, workers: int, streaming: bool) -> float:
    runs = [await _run(make(workers), items, workers, streaming=streaming) for _ in range(RUNS)]
    return min(runs) / items * 1e6


def _calibration() -> float:
    """Nanoseconds per dict store on this machine, to compare figures across machines."""
    table: dict[int, int] = {}
    start = time.perf_counter()
    for key in range(1_000_000):
        table[key] = key
    return (time.perf_counter() - start) / 1_000_000 * 1e9


def _go_binary() -> Path | None:
    """The Go benchmark's binary, built on first use; None without a Go toolchain."""
    go = shutil.which("go")
    if go is None:
        return None
    digest = hashlib.sha256()
    for name in GO_FILES:
        digest.update((GO_SOURCE / name).read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "reconcile" / "bench"
    binary = cache / f"workqueue-go-{digest.hexdigest()[:16]}"
    if not binary.exists():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"building {GO_SOURCE} (once, into {cache}) ...", flush=True)
        partial = binary.with_suffix(".partial")
        # go.sum is complete: readonly fails loudly instead of editing the checkout.
        env = {**os.environ, "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}
        subprocess.run([go, "build", "-o", str(partial), "."], cwd=GO_SOURCE, env=env, check=True)
        partial.rename(binary)
    return binary


def _go_figure(items: int) -> float | None:
    """µs per add+get+done of controller-runtime's priority queue, best of RUNS; None without Go."""
    binary = _go_binary()
    if binary is None:
        return None
    argv = [str(binary), "-items", str(items), "-runs", str(RUNS)]
    report = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    return float(min(report["us_per_key"]))


async def main(items: int = DEFAULT_ITEMS) -> None:
    """Print µs per key for each scenario and the ratio WorkQueue (metrics on) / baseline."""
    # Go first, so that its build (once) and its figure come right before ours.
    go = _go_figure(items)
    print(f"{items} keys, best of {RUNS} runs, µs per add+get+done")
    print(f"(this machine: {_calibration():.0f} ns per `table[key] = key` in a loop)")
    print(f"{'scenario':<22}{'workqueue+metrics':>18}{'workqueue':>12}{'baseline':>12}{'ratio':>8}")
    candidates: dict[str, Callable[[int], Queue]] = {
        "metrics": _ours(metrics=True),
        "plain": _ours(metrics=False),
        "baseline": Baseline,
    }
    ours = math.nan
    for streaming in (False, True):
        for workers in (1, 8):
            figures: dict[str, float] = {}
            for label, make in candidates.items():
                figures[label] = await _best(make, items, workers, streaming)
            scenario = f"{'streaming' if streaming else 'prefilled'}, {workers} worker(s)"
            ratio = figures["metrics"] / figures["baseline"]
            print(
                f"{scenario:<22}{figures['metrics']:>18.3f}{figures['plain']:>12.3f}"
                f"{figures['baseline']:>12.3f}{ratio:>8.2f}"
            )
            if not streaming and workers == 1:
                ours = figures["metrics"]
    _print_go(ours, go)


def _print_go(ours: float, go: float | None) -> None:
    if go is None:
        print("controller-runtime's priority queue: skipped (no `go` on PATH)")
        return
    print(
        f"prefilled, 1 worker, metrics on: ours {ours:.3f} µs, controller-runtime's priority "
        f"queue {go:.3f} µs, ours / Go = {ours / go:.2f}"
    )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ITEMS)
