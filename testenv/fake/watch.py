"""Watch is one open watch on a FakeClient: the event log replayed after a version, then live.

Like the apiserver's watch cache, a watch sends an object that stops matching its selectors as
DELETED and one that starts matching as ADDED; it can start with the current objects (and the
WatchList bookmark), and a watch from a version older than the log gets a 410 ERROR event and
ends. ``Watches`` are the open watches of one fake, which ``end_all`` ends as a restart would.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Final

import anyio
import anyio.lowlevel

from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv.fake.errors import expired_status
from testenv.fake.filter import Filter
from testenv.fake.objects import served
from testenv.fake.registry import FakeKind
from testenv.fake.store import Change, Store, parse_version

__all__ = ["INITIAL_EVENTS_END", "Watch", "Watches"]

INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"


class Watch:
    """One open watch: replays the event log after its cursor, then waits for more writes."""

    def __init__(
        self, store: Store, kind: FakeKind, gvk: GVK, matcher: Filter, deadline: float
    ) -> None:
        self._store = store
        self._group_kind = kind.group_kind
        self._gvk = gvk
        self._matcher = matcher
        self._deadline = deadline
        self._pending: deque[Obj] = deque()
        self._ended = False
        self.cursor = 0
        self.closed = False

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> Obj:
        await anyio.lowlevel.checkpoint()
        while not self.closed:
            if self._pending:
                return self._pending.popleft()
            if self._ended:
                break
            # Taken before the scan: a write committed after the scan still wakes this wait.
            changed = self._store.next_change()
            self._catch_up()
            if self._pending or self._ended:
                continue
            remaining = self._deadline - anyio.current_time()
            if remaining <= 0:
                break  # timeout_seconds passed: the server ends the watch
            with anyio.move_on_after(remaining):
                await changed.wait()
        raise StopAsyncIteration

    def close(self) -> None:
        """End the stream; a task waiting for the next event wakes and stops."""
        self.closed = True
        self._store.notify()

    def start_from_state(self, *, bookmark: bool) -> None:
        """Send the current objects as ADDED (resourceVersion "0", or WatchList), then go live."""
        store = self._store
        for obj in store.select(self._group_kind, self._matcher):
            self._pending.append({"type": "ADDED", "object": served(obj, self._gvk)})
        self.cursor = store.rv
        if bookmark:
            meta = {"resourceVersion": str(store.rv), "annotations": {INITIAL_EVENTS_END: "true"}}
            bookmark_object = {"apiVersion": self._gvk.api_version, "kind": self._gvk.kind}
            self._pending.append(
                {"type": "BOOKMARK", "object": {**bookmark_object, "metadata": meta}}
            )

    def _catch_up(self) -> None:
        store = self._store
        if self.cursor < store.compacted:
            # Events this watch needs are gone: ask the client to list again, as etcd would.
            status = expired_status(self.cursor, store.compacted + 1)
            self._pending.append({"type": "ERROR", "object": status})
            self._ended = True
            return
        for change in store.changes_after(self.cursor):
            self.cursor = change.resource_version
            if change.group_kind == self._group_kind:
                event = self._event(change)
                if event is not None:
                    self._pending.append(event)

    def _event(self, change: Change) -> Obj | None:
        # As the apiserver's watch cache: an object that stops matching is DELETED for this watch,
        # one that starts matching is ADDED.
        before = change.prev is not None and self._matcher.matches(change.prev)
        now = change.type != "DELETED" and self._matcher.matches(change.obj)
        if now:
            kind = "MODIFIED" if before else "ADDED"
            return {"type": kind, "object": served(change.obj, self._gvk)}
        if not before:
            return None
        if change.type == "DELETED":
            return {"type": "DELETED", "object": served(change.obj, self._gvk)}
        assert change.prev is not None
        gone = served(change.prev, self._gvk)
        gone["metadata"]["resourceVersion"] = str(change.resource_version)
        return {"type": "DELETED", "object": gone}


class Watches:
    """The open watches of one fake's store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._open: set[Watch] = set()

    @contextlib.asynccontextmanager
    async def open(
        self,
        kind: FakeKind,
        gvk: GVK,
        matcher: Filter,
        resource_version: str | None,
        timeout_seconds: int,
        *,
        initial: bool,
        bookmark: bool,
    ) -> AsyncIterator[Watch]:
        """A watch of ``kind`` after ``resource_version`` (or from the current objects, with
        ``initial``) that ends after ``timeout_seconds``, on ``end_all``, or when left.

        Raises:
            BadRequest: a resourceVersion that does not parse.
        """
        deadline = anyio.current_time() + timeout_seconds
        stream = Watch(self._store, kind, gvk, matcher, deadline)
        if initial or not resource_version:
            stream.start_from_state(bookmark=bookmark)
        else:
            stream.cursor = parse_version(resource_version)
        self._open.add(stream)
        try:
            yield stream
        finally:
            self._open.discard(stream)
            stream.close()

    def end_all(self) -> None:
        """End every open watch stream."""
        for stream in list(self._open):
            stream.close()
