"""Store is the fake's etcd: its objects, one resourceVersion counter and the event log of writes.

Every committed write takes the next resourceVersion and is logged with the object before and
after it. The log lets lists read exact past versions and consistent pages (``read_version``,
``page``) and lets watches replay what they missed. It keeps at least ``history`` events; older
ones are compacted away, and a read or watch from before the log answers 410 Expired.

Selections look at candidates only: each kind's ``KindIndex`` follows the current objects, and a
read of an older version adds to the candidates the keys written since (from the log), resolved to
their objects of then. Every object of that version a selection matches is either unchanged since
(so the current index holds it) or written since, so the answer stays exact.
"""

from __future__ import annotations

import base64
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
import orjson

from reconcile.objects import Obj
from testenv.fake.errors import bad_request, expired, failure
from testenv.fake.index import KindIndex, Selection
from testenv.fake.objects import Key
from testenv.fake.registry import GroupKind

__all__ = [
    "Change",
    "DEFAULT_WATCH_HISTORY",
    "Store",
    "continue_token",
    "parse_continue",
    "parse_version",
]

DEFAULT_WATCH_HISTORY: Final = 10_000
"""Watch events the fake keeps (at least) for watches resuming from an older resourceVersion."""


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write, as the event log keeps it; ``obj`` and ``prev`` are never mutated."""

    resource_version: int
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    group_kind: GroupKind
    key: Key
    obj: Obj
    prev: Obj | None


def continue_token(resource_version: int, after: Key) -> str:
    raw = orjson.dumps({"rv": resource_version, "after": list(after)})
    return base64.urlsafe_b64encode(raw).decode()


def parse_continue(token: str) -> tuple[int, Key]:
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = decoded["after"]
        return int(decoded["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError):
        raise bad_request(f"continue key is not valid: {token!r}") from None


def parse_version(value: str) -> int:
    if not value.isdigit():
        raise bad_request(f"resourceVersion: Invalid value: {value!r}: must be an integer")
    return int(value)


class Store:
    """The objects of every kind, versioned by one counter, with the log of recent writes.

    Args:
        history: events kept for watches resuming from an older resourceVersion (at least one).
    """

    def __init__(self, history: int = DEFAULT_WATCH_HISTORY) -> None:
        self.objects: dict[GroupKind, dict[Key, Obj]] = {}
        """The current objects, by group and kind, then by namespace (or "") and name."""
        self.compacted = 0
        """The newest resourceVersion the log no longer holds the events up to."""
        # The empty store is version 1: a list of it must not answer "0", which a watch reads
        # as "send the current state first" instead of "everything after this version".
        self.rv = 1
        self._indexes: dict[GroupKind, KindIndex] = {}
        self._log: list[Change] = []
        self._history = max(history, 1)
        self._changed: anyio.Event | None = None

    def add_kind(self, group_kind: GroupKind) -> None:
        """Make room for the objects of a kind; those already stored are kept."""
        self.objects.setdefault(group_kind, {})
        self._indexes.setdefault(group_kind, KindIndex())

    def compact(self) -> None:
        """Forget the event log, as etcd compaction does."""
        self.compacted = self.rv
        self._log.clear()

    def next_change(self) -> anyio.Event:
        """An event set by the next commit (or ``notify``)."""
        # Created lazily: seeding may happen before an event loop runs.
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    def notify(self) -> None:
        """Wake every task waiting for the next change."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def changes_after(self, resource_version: int) -> list[Change]:
        """The logged changes newer than ``resource_version``, oldest first."""
        start = bisect_right(self._log, resource_version, key=lambda c: c.resource_version)
        return self._log[start:]

    def commit(
        self,
        group_kind: GroupKind,
        key: Key,
        new: Obj,
        *,
        prev: Obj | None,
        deleted: bool,
        dry_run: bool,
    ) -> Obj:
        """Store ``new`` (or delete it) at the next resourceVersion, log it and wake watches."""
        if dry_run:
            return new
        self.rv += 1
        new["metadata"]["resourceVersion"] = str(self.rv)
        objects = self.objects[group_kind]
        change_type: Literal["ADDED", "MODIFIED", "DELETED"]
        if deleted:
            self._indexes[group_kind].update(key, objects.pop(key), None)
            change_type = "DELETED"
        else:
            self._indexes[group_kind].update(key, objects.get(key), new)
            objects[key] = new
            change_type = "ADDED" if prev is None else "MODIFIED"
        self._log.append(Change(self.rv, change_type, group_kind, key, new, prev))
        if len(self._log) > 2 * self._history:  # trimmed in batches: appends stay O(1)
            drop = len(self._log) - self._history
            self.compacted = self._log[drop - 1].resource_version
            del self._log[:drop]
        self.notify()
        return new

    def select(self, group_kind: GroupKind, selection: Selection) -> list[Obj]:
        """The current objects of a kind that ``selection`` selects, by namespace and name."""
        return [obj for _, obj in self._selected(group_kind, selection, self.rv, None)]

    def _selected(
        self, group_kind: GroupKind, selection: Selection, at: int, after: Key | None
    ) -> list[tuple[Key, Obj]]:
        """The keys and objects of a kind as of version ``at`` (the log goes back to it) that
        ``selection`` selects, after the key ``after``, by namespace and name."""
        current = self.objects[group_kind]
        narrowed = self._indexes[group_kind].candidates(selection, current)
        pool = current.items() if narrowed is None else ((k, current[k]) for k in narrowed)
        past = self._written_since(group_kind, at)
        if past:  # an older version: the keys written since are candidates, as they were then
            kept = {key: obj for key, obj in pool if key not in past}
            pool = {**kept, **{key: obj for key, obj in past.items() if obj is not None}}.items()
        # Keys are unique: sorting the pairs never compares two objects.
        return sorted(
            (key, obj)
            for key, obj in pool
            if (after is None or key > after) and selection.matches(obj)
        )

    def _written_since(self, group_kind: GroupKind, at: int) -> dict[Key, Obj | None]:
        """Each key of a kind written after version ``at``, with its object then (None: none)."""
        then: dict[Key, Obj | None] = {}
        for change in reversed(self.changes_after(at)):
            if change.group_kind == group_kind:
                then[change.key] = change.prev  # the oldest change after ``at`` is written last
        return then

    def read_version(
        self, resource_version: str | None, match: str | None, token: str | None
    ) -> tuple[int, Key | None]:
        """The version a list reads at, and the key a continued list resumes after."""
        if token:
            at, after = parse_continue(token)
            if at < self.compacted:
                raise expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
            return at, after
        if resource_version in (None, "", "0"):
            return self.rv, None
        wanted = parse_version(resource_version)
        if wanted > self.rv:
            message = f"Too large resource version: {wanted}, current: {self.rv}"
            raise failure(504, "Timeout", message, {"retryAfterSeconds": 1})
        if match != "Exact":
            return self.rv, None  # NotOlderThan: the newest state is not older
        if wanted < self.compacted:
            raise expired(f"too old resource version: {wanted} ({self.compacted + 1})")
        return wanted, None

    def page(
        self,
        group_kind: GroupKind,
        selection: Selection,
        *,
        resource_version: str | None,
        match: str | None,
        token: str | None,
        limit: int | None,
    ) -> tuple[list[Obj], dict[str, Any]]:
        """One page of the objects of a kind that ``selection`` selects, ordered by namespace
        and name, and the List's metadata (its resourceVersion, and where the next page continues).

        Raises:
            BadRequest: a continue token or resourceVersion that does not parse.
            Gone: the continue token or exact version is older than the event log.
        """
        at, after = self.read_version(resource_version, match, token)
        selected = self._selected(group_kind, selection, at, after)
        page = selected[:limit] if limit else selected
        meta: dict[str, Any] = {"resourceVersion": str(at)}
        if len(page) < len(selected):
            meta["continue"] = continue_token(at, page[-1][0])
            meta["remainingItemCount"] = len(selected) - len(page)
        return [obj for _, obj in page], meta
