"""Membership tells which shards of a ring are live, from their Leases, as a leader elector would.

A shard is live while its Lease has a holder and has changed within its ``leaseDurationSeconds``,
judged by the local monotonic time at which this process saw the Lease's spec change — never by the
``renewTime`` written in it, as client-go's leader election judges expiry: the clocks of the
sharder and of the shard need not agree. A sharder that has just started has seen every Lease
change "now", so it waits a whole lease duration before it declares a silent shard dead; a
released Lease (empty holder, as a shard leaves on shutdown) is not live at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["Membership"]


class Membership:
    """The live shards among the Leases it is shown; ``observe`` them at every change."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: dict[str, tuple[dict[str, Any], float]] = {}

    def observe(self, leases: Iterable[Mapping[str, Any]]) -> None:
        """Record the ring's Leases as they are now (Leases no longer there are forgotten)."""
        now = self._clock()
        seen: dict[str, tuple[dict[str, Any], float]] = {}
        for lease in leases:
            name = str((lease.get("metadata") or {}).get("name") or "")
            spec = dict(lease.get("spec") or {})
            before = self._seen.get(name)
            seen[name] = before if before is not None and before[0] == spec else (spec, now)
        self._seen = seen

    def live(self) -> tuple[str, ...]:
        """The shards whose Leases are held and unexpired now, sorted by name."""
        now = self._clock()
        return tuple(sorted(name for name in self._seen if self._expiry(name) > now))

    def next_expiry(self) -> float | None:
        """Seconds until the first live shard expires unless it renews (None: none is live)."""
        now = self._clock()
        ahead = [self._expiry(name) - now for name in self._seen if self._expiry(name) > now]
        return min(ahead) if ahead else None

    def _expiry(self, name: str) -> float:
        spec, seen_at = self._seen[name]
        if not spec.get("holderIdentity"):
            return float("-inf")
        return seen_at + float(spec.get("leaseDurationSeconds") or 0)
