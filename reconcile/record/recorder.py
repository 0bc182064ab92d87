"""Events records core/v1 Events about objects, so ``kubectl describe`` shows what controllers did.

``recorder.event(obj, "Warning", "ApplyFailed", "...")`` never blocks and never raises: events go
into a bounded buffer that the broadcaster (a manager runnable) writes out; when the buffer is full
the event is dropped and counted, as client-go does, because a controller must not stall on them.
Before writing, the broadcaster's ``EventCorrelator`` (``record.correlator``, client-go's) decides
what to write: a repeat of an event (same object, type, reason, message and component) patches
the Event written for it (``count``, ``lastTimestamp``) instead of creating another; similar
events (differing only in message) are aggregated into one "(combined from similar events): ..."
Event once ten distinct messages came within ten minutes; and a component that writes more than
25 events about one object is limited to one every five minutes (the rest are counted in
``filtered``). Its caches keep the last 4,096 entries, so memory does not grow with every object
an event was ever about. A failed write is logged, dropped and counted (``failed``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.errors import NotFound
from reconcile.flowcontrol import Clock
from reconcile.gvk import GVK
from reconcile.objects import Obj, truncate_message
from reconcile.record.correlator import MAX_REMEMBERED, Correlation, EventCorrelator, EventLog

__all__ = ["EVENT_GVK", "EVENT_MESSAGE_LIMIT", "EventBroadcaster", "EventRecorder", "EventSeverity"]

log = structlog.get_logger("reconcile.record.recorder")

EVENT_GVK: Final = GVK("", "v1", "Event")
DEFAULT_BUFFER: Final = 1000
EVENT_MESSAGE_LIMIT: Final = 1024
"""UTF-8 bytes an Event message is cut to (events.k8s.io's note limit; core/v1 shows it too)."""

EventSeverity = Literal["Normal", "Warning"]
"""The ``type`` of a core/v1 Event."""


class _Writer(Protocol):
    async def create(self, obj: Obj) -> dict[str, Any]: ...

    async def patch(
        self, target: GVK[Any], name: str, patch: Any, /, *, namespace: str | None = None
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class _Occurrence:
    involved: dict[str, Any]
    type: str
    reason: str
    message: str
    component: str
    at: datetime


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _involved(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata", {})
    reference = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in reference.items() if v}


@dataclass
class EventBroadcaster:
    """Writes recorded events to the apiserver; run it (``run()``) for as long as events flow."""

    client: _Writer
    buffer: int = DEFAULT_BUFFER
    created: int = 0
    """Events written as new Events."""
    patched: int = 0
    """Events written as a repeat of one written before (its count and last timestamp)."""
    dropped: int = 0
    """Events dropped because the buffer was full."""
    failed: int = 0
    """Events whose write failed."""
    filtered: int = 0
    """Events the spam filter kept from being written."""
    remembered: int = MAX_REMEMBERED
    """Entries each of the correlator's caches keeps."""
    clock: Clock | None = None
    """The correlator's clock (monotonic); tests inject one to step through its intervals."""
    correlator: EventCorrelator = field(init=False, repr=False)
    _send: Any = field(init=False, repr=False)
    _receive: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[_Occurrence](self.buffer)
        self.correlator = EventCorrelator(clock=self.clock, remembered=self.remembered)

    def recorder(self, component: str) -> EventRecorder:
        """A recorder whose events name ``component`` as their source."""
        return EventRecorder(self, component)

    def _offer(self, occurrence: _Occurrence) -> None:
        try:
            self._send.send_nowait(occurrence)
        except anyio.WouldBlock:
            self.dropped += 1

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Write events until cancelled; a failed write is logged, dropped and counted
        (``failed``), whatever it failed with: events are best effort, and one that cannot be
        written (a lost connection, a refused write, an unknown kind) must not stop the manager."""
        task_status.started()
        async for occurrence in self._receive:
            try:
                await self._write(occurrence)
            except Exception as error:  # best effort; cancellation still ends the loop
                self.failed += 1
                log.warning(
                    "could not record event",
                    reason=occurrence.reason,
                    error=f"{type(error).__name__}: {error}",
                )

    async def _write(self, occurrence: _Occurrence) -> None:
        decision = self.correlator.correlate(
            occurrence.involved,
            occurrence.type,
            occurrence.reason,
            occurrence.message,
            occurrence.component,
        )
        if decision.skip:
            self.filtered += 1
            return
        if decision.existing is not None:
            try:
                await self._bump(decision.existing, decision, occurrence)
                self.patched += 1
                return
            except NotFound:
                self.correlator.forget(decision.key)  # deleted or expired (events have a TTL)
        self.correlator.written(decision.key, await self._create(decision, occurrence))
        self.created += 1

    async def _bump(self, known: EventLog, decision: Correlation, occurrence: _Occurrence) -> None:
        # client-go patches exactly these three: the message moves for aggregated events.
        patch = {
            "count": decision.count,
            "lastTimestamp": _stamp(occurrence.at),
            "message": decision.message,
        }
        await self.client.patch(EVENT_GVK, known.name, patch, namespace=known.namespace)

    async def _create(self, decision: Correlation, occurrence: _Occurrence) -> EventLog:
        involved = occurrence.involved
        namespace = involved.get("namespace") or "default"
        # client-go's naming: the object's name and a nanosecond timestamp in hex.
        name = f"{involved.get('name', 'object')}.{time.time_ns():x}"
        stamp = _stamp(occurrence.at)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "type": occurrence.type,
            "reason": occurrence.reason,
            "message": decision.message,
            "source": {"component": occurrence.component},
            "reportingComponent": occurrence.component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        await self.client.create(event)
        return EventLog(name, namespace, 1)


@dataclass(frozen=True)
class EventRecorder:
    """Records events about objects on behalf of one component (usually a controller)."""

    broadcaster: EventBroadcaster
    component: str

    def event(self, obj: Mapping[str, Any], type: EventSeverity, reason: str, message: str) -> None:
        """Record that ``reason`` happened to ``obj``; returns at once.

        A message past ``EVENT_MESSAGE_LIMIT`` bytes is truncated with a marker.
        """
        message = truncate_message(message, EVENT_MESSAGE_LIMIT, in_bytes=True)
        occurrence = _Occurrence(_involved(obj), type, reason, message, self.component, _now())
        self.broadcaster._offer(occurrence)
