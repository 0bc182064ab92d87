"""Cached lists no index could serve are counted where a scrape sees them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from reconcile import GVK
from reconcile.metrics import register_cache_scans


class _Cache:
    def __init__(self) -> None:
        self.scans: dict[GVK, int] = {}


def test_scans_are_exported_per_cluster_and_kind_at_each_scrape() -> None:
    registry = CollectorRegistry()
    host, member = _Cache(), _Cache()
    register_cache_scans(registry, lambda: [("", host), ("member1", member)])
    assert b"reconcile_cache_list_scans_total{" not in generate_latest(registry)
    member.scans[GVK("work.karmada.io", "v1alpha1", "Work")] = 3
    page = generate_latest(registry).decode()
    assert 'reconcile_cache_list_scans_total{cluster="member1",kind="Work"} 3.0' in page
