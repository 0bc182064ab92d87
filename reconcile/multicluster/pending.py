"""Pending is the loop of a provider that follows informers: handlers note keys, one task engages.

An informer's event handlers must not block, and engaging a cluster awaits; so the handlers only
note which key changed (``note``) and one loop (``Pending.run``) handles each noted key in turn, in
a stable order. A key noted again while it waits is handled once, with its latest state: what the
provider reads when it handles a key is the informer's store, never the event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import anyio
from anyio.abc import TaskStatus

from reconcile.cache.informer import SharedInformer

__all__ = ["Pending"]


class Pending:
    """Keys noted by informer handlers, handled one at a time by ``run``."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._wake: anyio.Event | None = None  # made by run: an Event needs the running loop

    def note(self, key: str) -> None:
        """Have ``key`` handled (once, however often it is noted before its turn)."""
        self._keys.add(key)
        if self._wake is not None:
            self._wake.set()

    async def run(
        self,
        informers: Sequence[SharedInformer],
        handle: Callable[[str], Awaitable[None]],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``informers``, handle what their first lists noted, report started, then handle
        every key noted until cancelled.

        An apiserver out of reach keeps it from reporting started, with the informers' backoff,
        as a cache's sync does.
        """
        self._wake = anyio.Event()
        async with anyio.create_task_group() as group:
            for informer in informers:
                group.start_soon(informer.run, name=f"informer {informer.name}")
            for informer in informers:
                await informer.wait_for_sync()
            await self._drain(handle)
            task_status.started()
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self._drain(handle)

    async def _drain(self, handle: Callable[[str], Awaitable[None]]) -> None:
        while self._keys:
            key = min(self._keys)  # a stable order, for logs and tests
            self._keys.discard(key)
            await handle(key)
