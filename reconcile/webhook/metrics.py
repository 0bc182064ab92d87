"""Metrics defines the webhook server's Prometheus metrics, with controller-runtime's names.

One series per registered path (label ``webhook``), as controller-runtime's
``pkg/webhook/internal/metrics``: ``controller_runtime_webhook_requests_total{webhook,code}``
counts answers by HTTP status code, ``controller_runtime_webhook_latency_seconds{webhook}`` is
the time to answer, ``controller_runtime_webhook_requests_in_flight{webhook}`` the requests
being served. They are registered on the registry the caller passes (the manager's).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.registry import CollectorRegistry

__all__ = ["WebhookMetrics"]


class WebhookMetrics:
    """The three webhook families on one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ["webhook", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            registry=registry,
        )
        self.in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
            registry=registry,
        )

    @contextmanager
    def serving(self, webhook: str) -> Iterator[None]:
        """Count one request to ``webhook`` in flight and time it while the block runs."""
        gauge = self.in_flight.labels(webhook)
        gauge.inc()
        start = perf_counter()
        try:
            yield
        finally:
            self.latency.labels(webhook).observe(perf_counter() - start)
            gauge.dec()

    def answered(self, webhook: str, code: int) -> None:
        """Count an answer to ``webhook`` with HTTP status ``code``."""
        self.requests.labels(webhook, str(code)).inc()
