"""Correlator decides what becomes of a recorded event before it is written (client-go's).

Three steps, in the order of client-go's EventCorrelator (tools/record/events_cache.go), each
with its own LRU of ``MAX_REMEMBERED`` entries so memory stays bounded however many objects
events are about:

1. Aggregation: events that differ only in their message (same component, object, type and
   reason) are similar. Once ``AGGREGATE_MAX_EVENTS`` distinct messages were seen within
   ``AGGREGATE_INTERVAL`` of each other, further similar events go into one Event whose message
   is ``AGGREGATE_PREFIX`` + the latest message, instead of one Event per message.
2. Counting: an event seen before (same key; for aggregated ones, the aggregate's key) patches
   the Event written for it (``count``, ``lastTimestamp``, ``message``) instead of creating one.
3. Spam filter: each component and object has a token bucket of ``SPAM_BURST`` events, refilled
   at ``SPAM_QPS`` (one every five minutes); an event finding it empty is not written at all.
   Filtered events still count (step 2 ran), so the next written count includes them, as in
   client-go.

All times come from an injectable ``Clock`` (monotonic seconds), so tests step time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from reconcile.flowcontrol import Clock, MonotonicClock, TokenBucket

__all__ = [
    "AGGREGATE_INTERVAL",
    "AGGREGATE_MAX_EVENTS",
    "AGGREGATE_PREFIX",
    "MAX_REMEMBERED",
    "SPAM_BURST",
    "SPAM_QPS",
    "Correlation",
    "EventCorrelator",
    "EventLog",
]

MAX_REMEMBERED: Final = 4096
"""Entries each of the three caches keeps, least recently used forgotten first (client-go's
maxLruCacheEntries)."""
AGGREGATE_MAX_EVENTS: Final = 10
"""Distinct messages of similar events from which on they are aggregated
(defaultAggregateMaxEvents)."""
AGGREGATE_INTERVAL: Final = 600.0
"""Seconds without a similar event after which counting distinct messages starts afresh
(defaultAggregateIntervalInSeconds)."""
AGGREGATE_PREFIX: Final = "(combined from similar events): "
"""What starts the message of an aggregated Event (EventAggregatorByReasonMessageFunc)."""
SPAM_BURST: Final = 25
"""Events a component may write about one object at once (defaultSpamBurst)."""
SPAM_QPS: Final = 1.0 / 300.0
"""Events per second the spam filter's bucket refills with: one every 5 minutes (defaultSpamQPS)."""

K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A dict bounded to ``size`` entries; reading or writing an entry makes it the newest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def pop(self, key: K) -> None:
        self._entries.pop(key, None)


@dataclass
class EventLog:
    """An Event already written: where it is and the count it has (client-go's eventLog)."""

    name: str
    namespace: str
    count: int


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(frozen=True, slots=True)
class Correlation:
    """What to write for one event: patch ``existing`` or create one, with this message."""

    key: tuple[str, ...]
    """Where the written Event is remembered (``EventCorrelator.written``)."""
    message: str
    existing: EventLog | None
    """The Event to patch, or None to create one."""
    count: int
    """The count to write."""
    skip: bool
    """The spam filter refused it: write nothing."""


def _object_key(involved: Mapping[str, Any], component: str) -> tuple[str, ...]:
    fields = ("kind", "namespace", "name", "uid", "apiVersion")
    return (component, *(str(involved.get(name, "")) for name in fields))


class EventCorrelator:
    """Aggregates, counts and spam-filters events; see the module docstring for the rules."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        remembered: int = MAX_REMEMBERED,
        max_events: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
    ) -> None:
        self.clock: Clock = clock or MonotonicClock()
        self.max_events = max_events
        self.interval = interval
        self.burst = burst
        self.qps = qps
        self._similar: _LRU[tuple[str, ...], _Similar] = _LRU(remembered)
        self._written: _LRU[tuple[str, ...], EventLog] = _LRU(remembered)
        self._buckets: _LRU[tuple[str, ...], TokenBucket] = _LRU(remembered)

    def __len__(self) -> int:
        """Events remembered for counting."""
        return len(self._written)

    def correlate(
        self,
        involved: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        component: str,
    ) -> Correlation:
        """Decide what to write for one event, and remember it."""
        key, message = self._aggregate(_object_key(involved, component), type_, reason, message)
        existing = self._written.get(key)
        count = existing.count + 1 if existing is not None else 1
        if existing is not None:
            # Counted now, written or not (client-go's eventObserve runs before the filter).
            self._written.put(key, EventLog(existing.name, existing.namespace, count))
        skip = self._is_spam(_object_key(involved, component))
        return Correlation(key, message, existing, count, skip)

    def _aggregate(
        self, subject: tuple[str, ...], type_: str, reason: str, message: str
    ) -> tuple[tuple[str, ...], str]:
        similar_key = (*subject, type_, reason)
        now = self.clock.now()
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.last > self.interval:
            similar = _Similar()
        similar.messages.add(message)
        similar.last = now
        self._similar.put(similar_key, similar)
        if len(similar.messages) < self.max_events:
            return (*similar_key, message), message
        similar.messages.pop()  # keep the set from growing past the threshold (PopAny)
        return similar_key, AGGREGATE_PREFIX + message

    def _is_spam(self, subject: tuple[str, ...]) -> bool:
        bucket = self._buckets.get(subject)
        if bucket is None:
            bucket = TokenBucket(qps=self.qps, burst=self.burst, clock=self.clock)
        self._buckets.put(subject, bucket)
        return not bucket.try_acquire()

    def written(self, key: tuple[str, ...], log: EventLog) -> None:
        """Remember the Event written for ``key`` (after a create or patch succeeded)."""
        self._written.put(key, log)

    def forget(self, key: tuple[str, ...]) -> None:
        """Forget the Event of ``key`` (it was deleted, or expired: the next one is created)."""
        self._written.pop(key)
