"""grace bounds how long stopping work may take: a stop's grace period, which can be cut short.

A manager stops its runnables gracefully: a controller stops handing out keys and lets the
reconciles in flight finish within ``graceful_shutdown_timeout``. Some stops cannot wait that
long: a lost Lease (another replica may already be reconciling, so this one must stop acting at
once, as controller-runtime exits the process) and a second SIGTERM/SIGINT (the operator asks
for it). The manager makes one ``GracePeriod`` and sets it as ``current_grace`` for everything it
runs; whatever waits for work to wind down does so in ``grace.bounded(seconds)``, which ``cut()``
ends at once, including for waits that began earlier.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

import anyio

__all__ = ["GracePeriod", "bounded_grace", "current_grace"]


class GracePeriod:
    """The grace period of one stop, shared by the runnables of a manager."""

    def __init__(self) -> None:
        self._cut = False
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def is_cut(self) -> bool:
        """Whether ``cut()`` was called: waits end at once."""
        return self._cut

    @contextmanager
    def bounded(self, seconds: float) -> Iterator[anyio.CancelScope]:
        """A shielded scope that ends after ``seconds``, or as soon as the period is cut."""
        with anyio.move_on_after(0 if self._cut else seconds, shield=True) as scope:
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    def cut(self) -> None:
        """End every wait in ``bounded`` now, and every later one at once (idempotent)."""
        self._cut = True
        for scope in list(self._scopes):
            scope.cancel()


current_grace: ContextVar[GracePeriod | None] = ContextVar("current_grace", default=None)
"""The grace period of the manager running the current task; None outside a manager."""


def bounded_grace(seconds: float) -> AbstractContextManager[anyio.CancelScope]:
    """``current_grace``'s bounded scope; outside a manager, one of a period nobody cuts."""
    return (current_grace.get() or GracePeriod()).bounded(seconds)
