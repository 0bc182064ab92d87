"""A cache's list scans and held objects are exported where a scrape sees them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from reconcile import GVK, InformerScope
from reconcile.metrics import register_cache_metrics

WORK = GVK("work.karmada.io", "v1alpha1", "Work")
DEPLOYMENT = GVK("apps", "v1", "Deployment")


@dataclass
class _Informer:
    indexer: list[Any]


@dataclass
class _Cache:
    scans: dict[GVK, int] = field(default_factory=dict)
    held: dict[InformerScope, _Informer] = field(default_factory=dict)

    def informers(self) -> dict[InformerScope, _Informer]:
        return self.held


def test_scans_are_exported_per_cluster_and_kind_at_each_scrape() -> None:
    registry = CollectorRegistry()
    host, member = _Cache(), _Cache()
    register_cache_metrics(registry, lambda: [("", host), ("member1", member)])
    assert b"reconcile_cache_list_scans_total{" not in generate_latest(registry)
    member.scans[WORK] = 3
    page = generate_latest(registry).decode()
    assert 'reconcile_cache_list_scans_total{cluster="member1",kind="Work"} 3.0' in page


def test_held_objects_are_summed_over_the_informers_of_a_kind() -> None:
    registry = CollectorRegistry()
    member = _Cache()
    register_cache_metrics(registry, lambda: [("member1", member)])
    member.held[InformerScope(DEPLOYMENT, label_selector="a=b")] = _Informer([1, 2])
    member.held[InformerScope(DEPLOYMENT, namespace="x")] = _Informer([3])
    member.held[InformerScope(WORK)] = _Informer([])
    page = generate_latest(registry).decode()
    assert 'reconcile_cache_objects{cluster="member1",kind="Deployment"} 3.0' in page
    assert 'reconcile_cache_objects{cluster="member1",kind="Work"} 0.0' in page
    member.held.clear()
    assert b"reconcile_cache_objects{" not in generate_latest(registry)
