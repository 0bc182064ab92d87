"""Metrics of sharding: objects each shard holds, assignments and moves, and how long drains take.

On every replica, ``sharding_shard_objects{ring,kind}`` counts the objects of each sharded kind its
cache holds (read at every scrape from the informers' stores: what this replica owns). On the
leader, the sharder counts ``sharding_assignments_total{ring,shard}``, ``sharding_moves_total{ring,
reason}`` (``drained``: the old shard let go; ``dead``: its Lease had expired) and observes
``sharding_drain_duration_seconds{ring}`` from the drain label to the old shard's release,
``sharding_live_shards{ring}``, ``sharding_label_conflicts_total{ring}`` and, for the objects its
admission webhook labels as they are created, ``sharding_admission_assignments_total{ring,shard}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reconcile.cache.cache import Cache
from reconcile.sharding.ring import Ring

__all__ = ["SHARD_OBJECTS", "SharderMetrics", "register_shard_objects"]

SHARD_OBJECTS: Final = "sharding_shard_objects"
_DRAIN_BUCKETS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _ShardObjects(Collector):
    def __init__(self, cache: Cache, rings: tuple[Ring, ...]) -> None:
        self._cache, self._rings = cache, rings

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        counts: dict[tuple[str, str], int] = {}
        kinds = {kind.gvk: ring.name for ring in self._rings for kind in ring.kinds}
        for scope, informer in list(self._cache.informers().items()):
            ring = kinds.get(scope.gvk)
            if ring is not None:
                key = (ring, scope.gvk.kind)
                counts[key] = max(counts.get(key, 0), len(informer.indexer))
        for ring_name, kind in sorted({(r, g.kind) for g, r in kinds.items()}):
            family.add_metric([ring_name, kind], counts.get((ring_name, kind), 0))
        return [family]

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            SHARD_OBJECTS,
            "Objects of each sharded kind this replica's cache holds (its shard).",
            labels=["ring", "kind"],
        )


def register_shard_objects(
    registry: CollectorRegistry, cache: Cache, rings: tuple[Ring, ...]
) -> None:
    """Export ``sharding_shard_objects`` for ``rings`` from ``cache``."""
    registry.register(_ShardObjects(cache, rings))


@dataclass(frozen=True)
class SharderMetrics:
    """The collectors of the sharder (and ``released``, of each shard), once per registry."""

    assignments: Counter
    moves: Counter
    drain_seconds: Histogram
    live_shards: Gauge
    released: Counter
    conflicts: Counter
    admitted: Counter

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> SharderMetrics:
        """The collectors of ``registry``, made on first use (one sharder per ring shares them)."""
        known = _REGISTERED.get(registry)
        if known is not None:
            return known
        metrics = cls(
            Counter(
                "sharding_assignments",
                "Objects the sharder assigned to a shard.",
                ["ring", "shard"],
                registry=registry,
            ),
            Counter(
                "sharding_moves",
                "Assigned objects the sharder moved to another shard.",
                ["ring", "reason"],
                registry=registry,
            ),
            Histogram(
                "sharding_drain_duration_seconds",
                "Seconds from asking a shard to drain an object to its release.",
                ["ring"],
                buckets=_DRAIN_BUCKETS,
                registry=registry,
            ),
            Gauge("sharding_live_shards", "Shards with a live Lease.", ["ring"], registry=registry),
            Counter(
                "sharding_drains_released",
                "Drained objects this replica let go.",
                ["ring"],
                registry=registry,
            ),
            Counter(
                "sharding_label_conflicts",
                "Label patches of the sharder that met a newer version of their object.",
                ["ring"],
                registry=registry,
            ),
            Counter(
                "sharding_admission_assignments",
                "New objects labelled with their shard as they were created (the webhook).",
                ["ring", "shard"],
                registry=registry,
            ),
        )
        _REGISTERED[registry] = metrics
        return metrics


_REGISTERED: WeakKeyDictionary[CollectorRegistry, SharderMetrics] = WeakKeyDictionary()
