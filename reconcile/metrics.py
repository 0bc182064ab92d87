"""metrics defines the framework's Prometheus metrics, registered on a registry the caller passes.

Nothing is registered on prometheus_client's global default registry unless the caller passes it:
the manager owns one registry and hands it to each part that reports.

Controllers report the ``controller_runtime_*`` families through ``ControllerMetrics``; those
of multi-cluster controllers also report per cluster through ``ClusterMetrics``
(``reconcile_multicluster_*``, label ``cluster``), so the families above keep their label sets.

Work queues report the ``workqueue_*`` families with the labels ``name`` and ``controller``, like
client-go's and controller-runtime's. ``WorkQueueMetrics(registry)`` registers them once per
registry and ``for_queue(name, controller)`` hands out the recorder a WorkQueue calls on add, get,
done and retry. The recorder keeps plain numbers and one custom collector turns them into metric
families when the registry is scraped, so the queue's hot path takes no locks and formats nothing:
depth, unfinished work and the longest running processor are computed at scrape time from the
items' add and start times (client-go refreshes the last two every 500 ms instead).

The histograms' buckets are ``DURATION_BUCKETS``, 10 ns to 1000 s by factors of ten.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Final, Protocol

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

__all__ = [
    "CACHE_LIST_SCANS",
    "CACHE_OBJECTS",
    "MULTICLUSTER_DROPPED",
    "MULTICLUSTER_RECONCILE",
    "MULTICLUSTER_RECONCILE_TIME",
    "ClusterMetrics",
    "DURATION_BUCKETS",
    "RECONCILE_TIME_BUCKETS",
    "ControllerMetrics",
    "ControllerRecorder",
    "register_cache_metrics",
    "NoopQueueMetrics",
    "QueueMetrics",
    "WorkQueueMetrics",
]

DURATION_BUCKETS: Final[tuple[float, ...]] = tuple(10.0**exponent for exponent in range(-8, 4))
"""Upper bounds of the duration histograms: 1e-8, 1e-7, ..., 1e3 seconds (+Inf is implicit)."""

RECONCILE_TIME_BUCKETS: Final[tuple[float, ...]] = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15),
    *(20, 25, 30, 40, 50, 60),
)
"""controller-runtime's reconcile_time_seconds buckets (5 ms to 60 s)."""

_LABELS: Final = ("name", "controller")
# repr() of these bounds is what prometheus_client writes for "le" (1e-08 ... 0.0001 ... 1000.0).
_BUCKET_LABELS: Final = (*(repr(bound) for bound in DURATION_BUCKETS), "+Inf")


class QueueMetrics(Protocol):
    """What a work queue reports about its items; one recorder per queue."""

    def add(self, item: Hashable) -> None:
        """``item`` became due for processing (queued, or parked while it is processed)."""
        ...

    def get(self, item: Hashable) -> None:
        """``item`` was handed to a worker."""
        ...

    def done(self, item: Hashable) -> None:
        """A worker finished ``item``."""
        ...

    def drop(self, item: Hashable) -> None:
        """``item`` stopped waiting without reaching a worker (a discarding shutdown)."""
        ...

    def retry(self) -> None:
        """An item was added back through the rate limiter."""
        ...


class NoopQueueMetrics:
    """The recorder of a queue without metrics: every report is dropped."""

    def add(self, item: Hashable) -> None:
        """Drop the report."""

    def get(self, item: Hashable) -> None:
        """Drop the report."""

    def done(self, item: Hashable) -> None:
        """Drop the report."""

    def drop(self, item: Hashable) -> None:
        """Drop the report."""

    def retry(self) -> None:
        """Drop the report."""


class _QueueSeries:
    """One queue's numbers, kept as plain Python values until a scrape reads them."""

    __slots__ = (
        "_clock",
        "added",
        "adds",
        "queue_counts",
        "queue_sum",
        "retries",
        "started",
        "work_counts",
        "work_sum",
    )

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.added: dict[Hashable, float] = {}
        self.started: dict[Hashable, float] = {}
        self.adds = 0
        self.retries = 0
        # Per-bucket (not cumulative) counts; the last slot is +Inf.
        self.queue_counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.queue_sum = 0.0
        self.work_counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.work_sum = 0.0

    def add(self, item: Hashable) -> None:
        self.adds += 1
        self.added[item] = self._clock()

    def get(self, item: Hashable) -> None:
        now = self._clock()
        added = self.added.pop(item, None)
        if not self.added:
            self.added = {}  # as the work queue's: not the table of a burst for good
        if added is not None:
            waited = now - added
            # bisect_left: the first bound >= the value, i.e. Prometheus' "le" bucket.
            self.queue_counts[bisect_left(DURATION_BUCKETS, waited)] += 1
            self.queue_sum += waited
        self.started[item] = now

    def done(self, item: Hashable) -> None:
        started = self.started.pop(item, None)
        if started is not None:
            worked = self._clock() - started
            self.work_counts[bisect_left(DURATION_BUCKETS, worked)] += 1
            self.work_sum += worked

    def drop(self, item: Hashable) -> None:
        self.added.pop(item, None)

    def retry(self) -> None:
        self.retries += 1


def _cumulative(counts: list[int]) -> list[tuple[str, float]]:
    total = 0
    buckets = []
    for label, count in zip(_BUCKET_LABELS, counts, strict=True):
        total += count
        buckets.append((label, float(total)))
    return buckets


class _WorkQueueCollector(Collector):
    """Builds the workqueue_* families from every queue's series when the registry is scraped."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.series: dict[tuple[str, str], _QueueSeries] = {}

    def describe(self) -> Iterable[Metric]:
        # Names only, so registering twice on one registry fails at once with prometheus' error.
        return self._families()

    def collect(self) -> Iterable[Metric]:
        depth, adds, queue_duration, work_duration, unfinished, longest, retries = self._families()
        now = self._clock()
        # Scrapes may run on prometheus_client's server thread while the event loop mutates the
        # series: list() copies each container in one C call, under the GIL, so nothing changes
        # size while it is read. Values may be one operation apart; Prometheus tolerates that.
        for labels, series in list(self.series.items()):
            values = list(labels)
            running = [now - started for started in list(series.started.values())]
            depth.add_metric(values, len(series.added))
            adds.add_metric(values, series.adds)
            queue_duration.add_metric(
                values, _cumulative(list(series.queue_counts)), series.queue_sum
            )
            work_duration.add_metric(values, _cumulative(list(series.work_counts)), series.work_sum)
            unfinished.add_metric(values, sum(running))
            longest.add_metric(values, max(running, default=0.0))
            retries.add_metric(values, series.retries)
        return [depth, adds, queue_duration, work_duration, unfinished, longest, retries]

    def _families(
        self,
    ) -> tuple[
        GaugeMetricFamily,
        CounterMetricFamily,
        HistogramMetricFamily,
        HistogramMetricFamily,
        GaugeMetricFamily,
        GaugeMetricFamily,
        CounterMetricFamily,
    ]:
        return (
            GaugeMetricFamily("workqueue_depth", "Items waiting in a work queue.", labels=_LABELS),
            CounterMetricFamily(
                "workqueue_adds_total", "Items added to a work queue.", labels=_LABELS
            ),
            HistogramMetricFamily(
                "workqueue_queue_duration_seconds",
                "Seconds an item waited in a work queue before a worker got it.",
                labels=_LABELS,
            ),
            HistogramMetricFamily(
                "workqueue_work_duration_seconds",
                "Seconds a worker took to process an item from a work queue.",
                labels=_LABELS,
            ),
            GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "Seconds of work in progress not yet observed by work_duration; "
                "a steady rise means stuck workers.",
                labels=_LABELS,
            ),
            GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "Seconds the longest running worker of a work queue has been processing its item.",
                labels=_LABELS,
            ),
            CounterMetricFamily(
                "workqueue_retries_total",
                "Items re-added to a work queue by its rate limiter.",
                labels=_LABELS,
            ),
        )


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, WorkQueueMetrics] = (
    weakref.WeakKeyDictionary()
)


class WorkQueueMetrics:
    """The workqueue_* metric families on one registry, and a recorder per queue.

    ``clock`` (default ``time.monotonic``) times the queue and work durations.

    Raises:
        ValueError: from prometheus_client, if the registry already has workqueue metrics; use
            ``for_registry`` to share them.
    """

    def __init__(
        self, registry: CollectorRegistry, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._collector = _WorkQueueCollector(clock)
        registry.register(self._collector)
        _BY_REGISTRY.setdefault(registry, self)

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> WorkQueueMetrics:
        """The registry's workqueue metrics, registering them on first use."""
        existing = _BY_REGISTRY.get(registry)
        return existing if existing is not None else cls(registry)

    def for_queue(self, name: str, controller: str = "") -> QueueMetrics:
        """A recorder for the queue labelled ``name`` and ``controller``, to pass to WorkQueue.

        Raises:
            ValueError: if a queue with these labels already reports here; two queues in one
                series would mix their depths and durations.
        """
        labels = (name, controller)
        if labels in self._collector.series:
            raise ValueError(f"a work queue named {name!r} of controller {controller!r} exists")
        series = _QueueSeries(self._clock)
        self._collector.series[labels] = series
        return series


class ControllerMetrics:
    """The ``controller_runtime_*`` families of one registry; ``for_controller`` labels them.

    Reconciles take milliseconds, not nanoseconds, so these are plain prometheus_client metrics
    (unlike the work queue's scrape-time collector).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["controller"]
        self.total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            labels,
            registry=registry,
        )
        self.terminal = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            labels,
            registry=registry,
        )
        self.panics = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            labels,
            registry=registry,
        )
        self.time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            labels,
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.max_workers = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            labels,
            registry=registry,
        )
        self.active = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            labels,
            registry=registry,
        )

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> ControllerMetrics:
        """The families on ``registry``, registered on first use."""
        found = _CONTROLLER_METRICS.get(registry)
        if found is None:
            found = _CONTROLLER_METRICS[registry] = cls(registry)
        return found

    def for_controller(self, name: str) -> ControllerRecorder:
        """The recorder of controller ``name``."""
        return ControllerRecorder(self, name)


_CONTROLLER_METRICS: weakref.WeakKeyDictionary[CollectorRegistry, ControllerMetrics] = (
    weakref.WeakKeyDictionary()
)


class ControllerRecorder:
    """What one controller reports; every result label is initialised at zero, as in Go."""

    def __init__(self, families: ControllerMetrics, name: str) -> None:
        self._families = families
        self._name = name
        for result in ("success", "error", "requeue", "requeue_after"):
            families.total.labels(name, result)
        for counter in (families.errors, families.terminal, families.panics):
            counter.labels(name)
        self._active = families.active.labels(name)
        self._time = families.time.labels(name)
        # Bound once: labels() hashes and looks up its arguments on every call.
        self._success = families.total.labels(name, "success")

    def max_concurrent(self, workers: int) -> None:
        """Record the configured worker count."""
        self._families.max_workers.labels(self._name).set(workers)

    def worker_started(self) -> None:
        """A worker began a reconcile."""
        self._active.inc()

    def worker_finished(self, seconds: float) -> None:
        """A worker finished a reconcile that took ``seconds``."""
        self._active.dec()
        self._time.observe(seconds)

    def result(self, result: str, *, terminal: bool = False, panic: bool = False) -> None:
        """Count one reconcile outcome (success, error, requeue, requeue_after)."""
        if result == "success":
            self._success.inc()
            return
        families = self._families
        families.total.labels(self._name, result).inc()
        if result == "error":
            families.errors.labels(self._name).inc()
        if terminal:
            families.terminal.labels(self._name).inc()
        if panic:
            families.panics.labels(self._name).inc()


MULTICLUSTER_RECONCILE: Final = "reconcile_multicluster_reconcile"
"""Counter family (``_total``, labels ``controller``, ``cluster``, ``result``): reconciles of a
multi-cluster controller per cluster of the request ("" is the manager's own); ``result`` as
``controller_runtime_reconcile_total``'s."""
MULTICLUSTER_RECONCILE_TIME: Final = "reconcile_multicluster_reconcile_time_seconds"
"""Histogram family (labels ``controller``, ``cluster``): reconcile durations per cluster,
``RECONCILE_TIME_BUCKETS``."""
MULTICLUSTER_DROPPED: Final = "reconcile_multicluster_dropped_requests"
"""Counter family (``_total``, labels ``controller``, ``cluster``): requests of a disengaged
cluster dropped from a controller's queue (queued, delayed, or requeued by a reconcile still in
flight when it went)."""


class ClusterMetrics:
    """The ``reconcile_multicluster_*`` families of one registry (see the names above)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.total = Counter(
            MULTICLUSTER_RECONCILE,
            "Reconciliations of a multi-cluster controller per cluster",
            ["controller", "cluster", "result"],
            registry=registry,
        )
        self.time = Histogram(
            MULTICLUSTER_RECONCILE_TIME,
            "Length of time per reconciliation of a multi-cluster controller per cluster",
            ["controller", "cluster"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.dropped = Counter(
            MULTICLUSTER_DROPPED,
            "Requests of a disengaged cluster dropped from a controller's work queue",
            ["controller", "cluster"],
            registry=registry,
        )

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> ClusterMetrics:
        """The families on ``registry``, registered on first use."""
        found = _CLUSTER_METRICS.get(registry)
        if found is None:
            found = _CLUSTER_METRICS[registry] = cls(registry)
        return found

    def reconciled(self, controller: str, cluster: str, result: str, seconds: float) -> None:
        """Count one reconcile of ``cluster``'s request and its duration."""
        self.total.labels(controller, cluster, result).inc()
        self.time.labels(controller, cluster).observe(seconds)

    def dropped_requests(self, controller: str, cluster: str, count: int) -> None:
        """Count ``count`` requests of ``cluster`` dropped by ``controller``."""
        self.dropped.labels(controller, cluster).inc(count)

    def forget(self, controller: str, cluster: str) -> None:
        """Drop the reconcile series of a cluster gone for good (the dropped count stays)."""
        for result in ("success", "error", "requeue", "requeue_after"):
            with contextlib.suppress(KeyError):
                self.total.remove(controller, cluster, result)
        with contextlib.suppress(KeyError):
            self.time.remove(controller, cluster)


_CLUSTER_METRICS: weakref.WeakKeyDictionary[CollectorRegistry, ClusterMetrics] = (
    weakref.WeakKeyDictionary()
)


CACHE_LIST_SCANS: Final = "reconcile_cache_list_scans"
"""Counter family (``_total``, labels ``cluster`` and ``kind``): cached lists with a selector
that no index could serve, each of which examined every object of its kind or namespace."""
CACHE_OBJECTS: Final = "reconcile_cache_objects"
"""Gauge family (labels ``cluster`` and ``kind``): the objects a cache's informers hold, summed
over the informers of a kind (a label-scoped cache counts only what its selectors let in)."""


class _CacheStats(Protocol):
    scans: dict[Any, int]

    def informers(self) -> Mapping[Any, Any]: ...


class _CacheCollector(Collector):
    def __init__(self, caches: Callable[[], Iterable[tuple[str, _CacheStats]]]) -> None:
        self._caches = caches

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def collect(self) -> Iterable[Metric]:
        scans, objects = self._families()
        for cluster, cache in list(self._caches()):
            for gvk, count in list(cache.scans.items()):
                scans.add_metric([cluster, str(gvk.kind)], count)
            held: dict[str, int] = {}
            for scope, informer in list(cache.informers().items()):
                kind = str(scope.gvk.kind)
                held[kind] = held.get(kind, 0) + len(informer.indexer)
            for kind, count in sorted(held.items()):
                objects.add_metric([cluster, kind], count)
        return [scans, objects]

    def _families(self) -> tuple[CounterMetricFamily, GaugeMetricFamily]:
        return (
            CounterMetricFamily(
                CACHE_LIST_SCANS,
                "Cached lists with a label or field selector no index could serve.",
                labels=["cluster", "kind"],
            ),
            GaugeMetricFamily(
                CACHE_OBJECTS, "Objects held by a cache's informers.", labels=["cluster", "kind"]
            ),
        )


def register_cache_metrics(
    registry: CollectorRegistry, caches: Callable[[], Iterable[tuple[str, _CacheStats]]]
) -> None:
    """Export ``CACHE_LIST_SCANS`` and ``CACHE_OBJECTS`` for the caches ``caches()`` names (read
    at every scrape)."""
    registry.register(_CacheCollector(caches))


EVENTS: Final = "reconcile_events"
"""Counter family (``_total``, label ``outcome``): the Events recorders were given, by what became
of each: ``created`` (a new Event), ``patched`` (a repeat counted on the Event written for it),
``filtered`` (held back by the spam filter), ``dropped`` (the broadcaster's buffer was full) and
``failed`` (the write failed). Events are best effort, as client-go's; this shows how much of
them an operator does not see."""

EVENT_OUTCOMES: Final = ("created", "patched", "filtered", "dropped", "failed")


class _EventCounts(Protocol):
    created: int
    patched: int
    filtered: int
    dropped: int
    failed: int


class _EventCollector(Collector):
    def __init__(self, broadcaster: _EventCounts) -> None:
        self._broadcaster = broadcaster

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for outcome in EVENT_OUTCOMES:
            family.add_metric([outcome], getattr(self._broadcaster, outcome))
        return [family]

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            EVENTS, "Events recorded, by what became of them.", labels=["outcome"]
        )


def register_event_metrics(registry: CollectorRegistry, broadcaster: _EventCounts) -> None:
    """Export ``EVENTS`` from the counters of ``broadcaster`` (an ``EventBroadcaster``, one
    attribute per ``EVENT_OUTCOMES``), read at every scrape."""
    registry.register(_EventCollector(broadcaster))
