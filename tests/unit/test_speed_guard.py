"""Speed guards: the work queue's and the informer store's hot paths against a naive baseline.

Issue #29: a checkpoint on every ``WorkQueue.get`` made the queue 3.3x slower and no test noticed.
Each guard times ours and a baseline doing the least the same job needs, interleaved in one
process, in this thread's CPU time with the cyclic GC off, takes the best of 20 short rounds of
each (a loaded machine only ever adds time) and fails on the ratio ours / baseline beyond a
recorded bound: a ratio, never an absolute time, so it holds on a slower or faster machine. The
bounds are about 1.4x the ratios measured on the 2-core development machine at load average 5-7
(docs/benchmarks.md, "Work queue"), well below what a 2x slower hot path gives.

Each guard measures in a fresh interpreter: late in the suite, the heap of thousands of earlier
tests slowed the store's allocation-heavy rounds more than the baseline's (2.85 measured there,
1.6-1.9 alone), which is the suite's state, not the code's.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import orjson
from prometheus_client import CollectorRegistry

from bench.workqueue import Baseline, prefilled_seconds
from reconcile.cache.store import Indexer
from reconcile.metrics import WorkQueueMetrics
from reconcile.objects import Obj
from reconcile.workqueue import WorkQueue

ROUNDS: Final = 20
QUEUE_KEYS: Final = 5_000
STORE_OBJECTS: Final = 1_000
QUEUE_BOUND: Final = 2.6
"""WorkQueue with metrics / asyncio.Queue + set, prefilled, 1 worker: 1.73-1.86 measured; 6.37
with a checkpoint on every get (4c79ad6), 3.91 with the per-key cost doubled."""
STORE_BOUND: Final = 2.7
"""Indexer (upsert, upsert again, get) / a dict of orjson encodings: 1.64-1.94 measured; 3.20
with a busy wait in Indexer._put that more than doubles the store's cost per object."""


Round = Callable[[], Awaitable[object]]


async def _cpu_seconds(round_: Round) -> float:
    """This thread's CPU time for one round, without the cyclic GC: time that other processes
    take from a shared machine, and collections that fall on either side, are not the code's."""
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        await round_()
        return time.thread_time() - start
    finally:
        gc.enable()


async def _best(ours: Round, baseline: Round) -> float:
    """min(ours) / min(baseline) over ROUNDS rounds, the two interleaved in each round."""
    timed: list[float] = []
    other: list[float] = []
    for _ in range(ROUNDS):
        timed.append(await _cpu_seconds(ours))
        other.append(await _cpu_seconds(baseline))
    return min(timed) / min(other)


async def _queue_round() -> float:
    recorder = WorkQueueMetrics(CollectorRegistry()).for_queue("guard")
    return await prefilled_seconds(WorkQueue[int](metrics=recorder), QUEUE_KEYS)


async def _baseline_queue_round() -> float:
    return await prefilled_seconds(Baseline(1), QUEUE_KEYS)


async def queue_ratio() -> float:
    """WorkQueue / asyncio.Queue + set, best of ROUNDS."""
    return await _best(_queue_round, _baseline_queue_round)


def _in_fresh_process(ratio: str) -> float:
    """The ratio this module's ``ratio`` function measures, in a new interpreter."""
    code = f"import anyio, tests.unit.test_speed_guard as g; print(anyio.run(g.{ratio}))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).resolve().parents[2],  # the repository, where tests/ and bench/ are
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.split()[-1])


def test_the_work_queue_stays_within_its_bound_of_a_plain_asyncio_queue() -> None:
    ratio = _in_fresh_process("queue_ratio")
    assert ratio <= QUEUE_BOUND, f"WorkQueue / asyncio.Queue = {ratio:.2f} > {QUEUE_BOUND}"


def _objects() -> list[Obj]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"cm-{index}",
                "namespace": f"ns-{index % 10}",
                "labels": {"app": f"app-{index % 50}"},
                "resourceVersion": str(index),
            },
            "data": {"key": "value" * 20},
        }
        for index in range(STORE_OBJECTS)
    ]


async def _store_round(objects: list[Obj]) -> float:
    start = time.perf_counter()
    store = Indexer()
    for obj in objects:
        store.upsert(obj)
    for obj in objects:
        store.upsert(obj)  # an update: the old object leaves its index entries
    for obj in objects:
        store.get(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")
    return time.perf_counter() - start


async def _baseline_store_round(objects: list[Obj]) -> float:
    start = time.perf_counter()
    store: dict[str, bytes] = {}
    for _ in range(2):
        for obj in objects:
            store[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = orjson.dumps(obj)
    for obj in objects:
        orjson.loads(store[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"])
    return time.perf_counter() - start


async def store_ratio() -> float:
    """Indexer / dict of encodings, best of ROUNDS."""
    objects = _objects()
    return await _best(lambda: _store_round(objects), lambda: _baseline_store_round(objects))


def test_the_informer_store_stays_within_its_bound_of_a_dict_of_encodings() -> None:
    ratio = _in_fresh_process("store_ratio")
    assert ratio <= STORE_BOUND, f"Indexer / dict of encodings = {ratio:.2f} > {STORE_BOUND}"
