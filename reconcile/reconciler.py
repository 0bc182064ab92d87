"""Reconciler defines the one method users write, and the Request and Result around it.

A Request names one object (namespace/name, and the cluster for multi-cluster controllers), never
an event: reconciliation is level-based, so the reconciler reads the current state and makes the
world match it. The contract: return a Result (or None) when done; raise to be retried with
per-key exponential backoff; raise ``TerminalError`` for failures retrying cannot fix (counted and
logged, not retried); ``Result(requeue_after=s)`` asks to look again after ``s`` seconds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

__all__ = [
    "ExpectedError",
    "Reconciler",
    "ReconcilerFunc",
    "Request",
    "Result",
    "TerminalError",
    "as_reconciler",
]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """The object to reconcile: its name, namespace ("" when cluster-scoped) and cluster."""

    name: str
    namespace: str = ""
    cluster: str = ""

    @classmethod
    def from_key(cls, key: str) -> Request:
        """The request for a store key (``namespace/name``, or ``name`` when cluster-scoped), as
        index lookups return them."""
        namespace, _, name = key.rpartition("/")
        return cls(name, namespace)

    def __str__(self) -> str:
        key = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.cluster}:{key}" if self.cluster else key


@dataclass(frozen=True, slots=True)
class Result:
    """What a successful reconcile asks for next: nothing, or another look after a delay."""

    requeue_after: float | None = None


class TerminalError(Exception):
    """A failure retrying will not fix; the controller records it and does not requeue."""


class ExpectedError(Exception):
    """A failure that is the world's state, not a bug: retried with backoff, logged in one line.

    Raise it (or a subclass naming its ``reason``) for what a reconciler foresaw and reported
    where users look (a condition, an Event): a member out of reach, an object someone else
    owns, input a webhook refused. The controller logs its reason and message without a
    traceback, and a key failing the same way again only at debug level for a while; any other
    exception is a bug and is logged with its traceback.
    """

    reason: ClassVar[str] = "ReconcileFailed"
    """A CamelCase word for the failure, as a condition's reason."""


@runtime_checkable
class Reconciler(Protocol):
    """Makes the world match the desired state of one object."""

    async def reconcile(self, request: Request) -> Result | None:
        """Reconcile ``request``; raise to retry with backoff."""
        ...


ReconcilerFunc = Callable[[Request], Awaitable[Result | None]]


@dataclass(frozen=True)
class _FuncReconciler:
    func: ReconcilerFunc

    async def reconcile(self, request: Request) -> Result | None:
        return await self.func(request)


def as_reconciler(reconciler: Reconciler | ReconcilerFunc) -> Reconciler:
    """Accept a Reconciler or a plain ``async def reconcile(request)`` function.

    Raises:
        TypeError: neither.
    """
    if isinstance(reconciler, Reconciler):
        return reconciler
    if callable(reconciler):
        return _FuncReconciler(reconciler)
    raise TypeError(f"not a reconciler: {reconciler!r}")
