"""Drift decides whether a member object must be updated to match its Work or an update is a no-op.

An update is needed when any of these holds:

- this process has not written the object since it started, or the Work's manifest changed since
  it last did (so fields removed from the manifest are removed from the member too);
- the member's ``metadata.generation`` moved since that write: someone changed its spec, maybe
  adding fields the manifest does not have (Karmada's object watcher compares the same version);
- the manifest, after retention, is not contained in the member object: a value we manage differs,
  or a label or annotation differs.

"Contained" is semantic: every field the manifest sets has the same value in the member object,
which may have more (the apiserver fills defaults such as ``strategy`` or ``imagePullPolicy``); an
empty value in the manifest matches an absent one; lists match element by element. Status is
ignored, so status updates from the member's controllers never cause writes. What is written is
recorded in ``AppliedRecords``, in memory, and on the object itself: the annotation
``APPLIED_DIGEST_ANNOTATION`` carries the digest of the manifest it was written from. A process
without a record (restarted, or a standby that just took over) trusts that annotation instead of
writing every object once as Karmada does: after a takeover of 2,000 member objects those no-op
writes held the new leader's workers for tens of seconds. Without the record it cannot see a
generation moved by someone else, so only a change to a value the manifest sets is reverted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from reconcile import GVK, annotations_of, generation_of, labels_of

__all__ = [
    "APPLIED_DIGEST_ANNOTATION",
    "Applied",
    "AppliedRecords",
    "ObjectRef",
    "contains",
    "manifest_digest",
    "needs_update",
    "with_digest",
]

APPLIED_DIGEST_ANNOTATION: Final = "reconcile.io/applied-manifest-digest"
"""On a member object: the digest of the manifest it was last written from."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One object in one member cluster."""

    cluster: str
    gvk: GVK
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Applied:
    """What was last written to a member object: the manifest's digest and the generation it got."""

    digest: str
    generation: int


class AppliedRecords:
    """The last write to each member object, by this process, and which Work it was for.

    An entry lives as long as its Work wants the object: ``keep_only`` drops those of the
    manifests a Work no longer has, ``forget_work`` those of a Work that is gone, so the records
    follow the Works instead of growing with every object ever written.
    """

    def __init__(self) -> None:
        self._records: dict[ObjectRef, Applied] = {}
        self._work_of: dict[ObjectRef, tuple[str, str]] = {}
        self._by_work: dict[tuple[str, str], set[ObjectRef]] = {}

    def get(self, ref: ObjectRef) -> Applied | None:
        """The last write to ``ref``, if any."""
        return self._records.get(ref)

    def refs(self) -> set[ObjectRef]:
        """Every object with a record."""
        return set(self._records)

    def put(
        self, ref: ObjectRef, digest: str, written: Mapping[str, Any], work: tuple[str, str]
    ) -> None:
        """Record that ``written`` (the apiserver's answer) was written from a manifest of
        ``work`` (its namespace and name)."""
        previous = self._work_of.get(ref)
        if previous is not None and previous != work:
            self.forget(ref)  # another Work's before (taken over): one owner per record
        self._records[ref] = Applied(digest, generation_of(written))
        self._work_of[ref] = work
        self._by_work.setdefault(work, set()).add(ref)

    def forget(self, ref: ObjectRef) -> None:
        """Drop the record of ``ref`` (deleted, or no longer ours)."""
        self._records.pop(ref, None)
        work = self._work_of.pop(ref, None)
        if work is None:
            return
        held = self._by_work[work]
        held.discard(ref)
        if not held:
            del self._by_work[work]

    def keep_only(self, work: tuple[str, str], wanted: set[ObjectRef]) -> None:
        """Drop the records ``work`` holds of objects other than ``wanted``."""
        for ref in self._by_work.get(work, set()) - wanted:
            self.forget(ref)

    def forget_work(self, work: tuple[str, str]) -> None:
        """Drop every record of ``work`` (deleted)."""
        self.keep_only(work, set())


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """A digest of a manifest that does not depend on key order."""
    return hashlib.sha256(orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS)).hexdigest()


def with_digest(desired: dict[str, Any], digest: str) -> dict[str, Any]:
    """``desired`` (a manifest with metadata) marked as written from ``digest``."""
    desired["metadata"].setdefault("annotations", {})[APPLIED_DIGEST_ANNOTATION] = digest
    return desired


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def contains(observed: Any, desired: Any) -> bool:
    """Whether every field ``desired`` sets has the same value in ``observed``."""
    if isinstance(desired, dict):
        if not isinstance(observed, dict):
            return False
        return all(
            contains(observed.get(key), value) if key in observed else _empty(value)
            for key, value in desired.items()
        )
    if isinstance(desired, list):
        if not isinstance(observed, list) or len(observed) != len(desired):
            return False
        return all(contains(o, d) for o, d in zip(observed, desired, strict=True))
    if _empty(desired):
        return _empty(observed)
    if isinstance(desired, bool) or isinstance(observed, bool):
        return observed is desired  # True == 1 in Python, not in JSON
    return bool(observed == desired)


def _matches(merged: Mapping[str, Any], observed: Mapping[str, Any]) -> bool:
    if dict(labels_of(merged)) != dict(labels_of(observed)):
        return False
    if dict(annotations_of(merged)) != dict(annotations_of(observed)):
        return False
    body = {k: v for k, v in merged.items() if k not in ("metadata", "status")}
    return contains(observed, body)


def needs_update(
    merged: Mapping[str, Any],
    observed: Mapping[str, Any],
    applied: Applied | None,
    digest: str,
) -> bool:
    """Whether ``observed`` must be updated to ``merged`` (the manifest after retention)."""
    if applied is None and annotations_of(observed).get(APPLIED_DIGEST_ANNOTATION) == digest:
        # Written from this manifest by a process whose record is gone: the object says so.
        applied = Applied(digest, generation_of(observed))
    if applied is None or applied.digest != digest:
        return True
    generation = generation_of(observed)
    if generation and generation != applied.generation:
        return True
    return not _matches(merged, observed)
