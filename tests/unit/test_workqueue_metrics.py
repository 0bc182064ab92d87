"""A WorkQueue's metrics move as client-go's do, on the registry they were given and no other."""

from __future__ import annotations

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from reconcile.metrics import DURATION_BUCKETS, NoopQueueMetrics, QueueMetrics, WorkQueueMetrics
from reconcile.ratelimiter import ItemExponentialFailureRateLimiter
from reconcile.workqueue import WorkQueue
from tests.builders import FakeClock

LABELS = {"name": "widgets", "controller": "widget"}

FAMILIES = {
    "workqueue_depth",
    "workqueue_adds",
    "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "workqueue_retries",
}


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(100.0)


@pytest.fixture
def queue(registry: CollectorRegistry, clock: FakeClock) -> WorkQueue[str]:
    metrics = WorkQueueMetrics(registry, clock=clock).for_queue("widgets", "widget")
    limiter = ItemExponentialFailureRateLimiter(1.0, 10.0)
    return WorkQueue[str](metrics=metrics, rate_limiter=limiter)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, {**LABELS, **labels})


def test_families_have_the_upstream_names_and_labels(
    registry: CollectorRegistry, queue: WorkQueue[str]
) -> None:
    queue.add("a")
    families = {family.name: family for family in registry.collect()}
    assert set(families) == FAMILIES
    counters = {name for name, family in families.items() if family.type == "counter"}
    assert counters == {"workqueue_adds", "workqueue_retries"}
    for family in families.values():
        for metric_sample in family.samples:
            assert {"name", "controller"} <= set(metric_sample.labels)
    text = generate_latest(registry).decode()
    assert 'workqueue_adds_total{controller="widget",name="widgets"} 1.0' in text
    assert 'workqueue_depth{controller="widget",name="widgets"} 1.0' in text


def test_duration_buckets_are_decades_from_ten_nanoseconds_to_a_thousand_seconds(
    registry: CollectorRegistry, queue: WorkQueue[str]
) -> None:
    expected = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
    assert expected == DURATION_BUCKETS
    buckets = {
        metric_sample.labels["le"]
        for family in registry.collect()
        for metric_sample in family.samples
        if metric_sample.name == "workqueue_queue_duration_seconds_bucket"
    }
    labels = ["1e-08", "1e-07", "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1.0"]
    assert buckets == {*labels, "10.0", "100.0", "1000.0", "+Inf"}


def test_adds_count_new_keys_and_depth_counts_waiting_ones(
    registry: CollectorRegistry, queue: WorkQueue[str]
) -> None:
    assert sample(registry, "workqueue_adds_total") == 0
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert sample(registry, "workqueue_adds_total") == 2, "a deduplicated add is not counted"
    assert sample(registry, "workqueue_depth") == 2
    key = queue.get_nowait()
    assert sample(registry, "workqueue_depth") == 1
    queue.add(key)
    queue.add(key)
    assert sample(registry, "workqueue_adds_total") == 3, "parking counts once"
    assert sample(registry, "workqueue_depth") == 2, "a parked key is waiting too"
    queue.done(key)
    assert sample(registry, "workqueue_depth") == 2
    queue.done(queue.get_nowait())
    queue.done(queue.get_nowait())
    assert sample(registry, "workqueue_depth") == 0
    assert sample(registry, "workqueue_adds_total") == 3


def test_queue_duration_is_the_wait_from_add_to_get(
    registry: CollectorRegistry, queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    clock.time += 0.5
    queue.get_nowait()
    name = "workqueue_queue_duration_seconds"
    assert sample(registry, f"{name}_sum") == 0.5
    assert sample(registry, f"{name}_count") == 1
    assert sample(registry, f"{name}_bucket", le="0.1") == 0
    assert sample(registry, f"{name}_bucket", le="1.0") == 1
    assert sample(registry, f"{name}_bucket", le="+Inf") == 1


def test_a_parked_key_waits_from_its_add_while_processing(
    registry: CollectorRegistry, queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    queue.get_nowait()
    clock.time += 1.0
    queue.add("a")
    clock.time += 2.0
    queue.done("a")
    clock.time += 4.0
    queue.get_nowait()
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 6.0
    assert sample(registry, "workqueue_queue_duration_seconds_count") == 2


def test_work_duration_is_the_time_from_get_to_done(
    registry: CollectorRegistry, queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    queue.add("b")
    queue.get_nowait()
    clock.time += 2.0
    queue.done("a")
    queue.get_nowait()
    clock.time += 0.001
    queue.done("b")
    name = "workqueue_work_duration_seconds"
    assert sample(registry, f"{name}_sum") == pytest.approx(2.001)
    assert sample(registry, f"{name}_count") == 2
    assert sample(registry, f"{name}_bucket", le="0.0001") == 0
    assert sample(registry, f"{name}_bucket", le="0.01") == 1
    assert sample(registry, f"{name}_bucket", le="1.0") == 1
    assert sample(registry, f"{name}_bucket", le="10.0") == 2


def test_unfinished_and_longest_running_are_computed_at_scrape_time(
    registry: CollectorRegistry, queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    queue.add("b")
    queue.get_nowait()
    clock.time += 1.0
    queue.get_nowait()
    clock.time += 2.0
    assert sample(registry, "workqueue_unfinished_work_seconds") == 5.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 3.0
    clock.time += 1.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 4.0
    queue.done("a")
    assert sample(registry, "workqueue_unfinished_work_seconds") == 3.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 3.0
    queue.done("b")
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0


def test_retries_count_rate_limited_adds(
    registry: CollectorRegistry, queue: WorkQueue[str]
) -> None:
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    queue.add_after("b", 1.0)
    assert sample(registry, "workqueue_retries_total") == 2
    queue.shutdown()
    queue.add_rate_limited("a")
    assert sample(registry, "workqueue_retries_total") == 2, "not counted after shutdown"


def test_queues_report_separately_and_a_label_pair_is_taken_once(
    registry: CollectorRegistry,
) -> None:
    metrics = WorkQueueMetrics(registry)
    first = WorkQueue[str](metrics=metrics.for_queue("widgets", "widget"))
    second = WorkQueue[str](metrics=metrics.for_queue("gadgets", "gadget"))
    first.add("a")
    second.add("a")
    second.add("b")
    assert sample(registry, "workqueue_depth") == 1
    assert registry.get_sample_value("workqueue_depth", {"name": "gadgets", "controller": "gadget"})
    with pytest.raises(ValueError, match="'widgets' of controller 'widget' exists"):
        metrics.for_queue("widgets", "widget")


def test_metrics_are_registered_once_per_registry(registry: CollectorRegistry) -> None:
    metrics = WorkQueueMetrics.for_registry(registry)
    assert WorkQueueMetrics.for_registry(registry) is metrics
    with pytest.raises(ValueError, match="workqueue"):
        WorkQueueMetrics(registry)
    other = CollectorRegistry()
    assert WorkQueueMetrics.for_registry(other) is not metrics


def test_keys_a_discarding_shutdown_drops_leave_the_depth(
    registry: CollectorRegistry, queue: WorkQueue[str]
) -> None:
    for key in ("a", "b", "c"):
        queue.add(key)
    busy = queue.get_nowait()
    queue.add(busy)  # parked while it is processed
    assert sample(registry, "workqueue_depth") == 3
    queue.shutdown(discard=True)
    assert sample(registry, "workqueue_depth") == 0, "dropped keys are not waiting any more"
    queue.done(busy)
    assert sample(registry, "workqueue_depth") == 0


def test_nothing_lands_on_the_global_registry(registry: CollectorRegistry) -> None:
    queue = WorkQueue[str](metrics=WorkQueueMetrics(registry).for_queue("widgets", "widget"))
    queue.add("a")
    assert sample(registry, "workqueue_adds_total") == 1
    assert prometheus_client.REGISTRY.get_sample_value("workqueue_adds_total", LABELS) is None


def test_a_queue_without_metrics_uses_the_noop_recorder() -> None:
    recorder: QueueMetrics = NoopQueueMetrics()
    queue = WorkQueue[str](metrics=recorder)
    queue.add("a")
    queue.done(queue.get_nowait())
    plain = WorkQueue[str]()
    plain.add("a")
    assert plain.get_nowait() == "a"


def test_a_drained_burst_gives_its_memory_back(registry: CollectorRegistry) -> None:
    # A controller sees 10,000 keys once (a start, a move of shards) and a few after: the
    # queue's and its metrics' dicts sized for the burst would be kept for good.
    import gc
    import tracemalloc

    queue: WorkQueue[str] = WorkQueue(
        metrics=WorkQueueMetrics(registry).for_queue("burst", "burst")
    )
    keys = [f"namespace/object-{i:05d}" for i in range(10_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for key in keys:
            queue.add(key)
        for _ in keys:
            queue.done(queue.get_nowait())
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 64 * 1024, kept
