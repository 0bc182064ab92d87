"""Index is the fake's lookup of one kind's current objects by label value and by field value.

A ``Term`` is one label key or one field path. Its index is built the first time a list or watch
selects on it with ``=``, ``==`` or ``in`` (``Selection.terms``), and follows every commit from
then on, so a selection looks only at the objects its equality terms allow instead of at every
object of the kind. An index must never miss an object its term selects: fields are filed under
``field_text``, the very text a field selector compares, and labels under their value when it is a
string (no other value equals a selector's). Objects ``!=``, ``notin`` or exists requirements
select are found by checking the candidates, or every object when no term narrows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from reconcile.objects import Obj
from testenv.fake.objects import Key, path_get

__all__ = ["KindIndex", "Selection", "Term", "field_text"]

Term = tuple[Literal["label", "field"], str]
"""("label", key) or ("field", path)."""


class Selection(Protocol):
    """What a list or watch selects, as the store and its indexes need it."""

    def terms(self) -> Iterable[tuple[Term, frozenset[str]]]:
        """Each term a selected object must have one of the values of (``=`` and ``in``)."""
        ...

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` is selected; exact, whatever the terms narrowed."""
        ...


def field_text(obj: Mapping[str, Any], path: str) -> str:
    """The text a field selector compares for ``path``: booleans as true/false, missing as ""."""
    found = path_get(obj, path)
    if isinstance(found, bool):
        return "true" if found else "false"
    return "" if found is None else str(found)


def _value(term: Term, obj: Obj) -> str | None:
    kind, name = term
    if kind == "field":
        return field_text(obj, name)
    labels = obj["metadata"].get("labels")
    value = labels.get(name) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else None


class KindIndex:
    """The term indexes of one kind's current objects: value -> keys, per term."""

    def __init__(self) -> None:
        self._terms: dict[Term, dict[str, set[Key]]] = {}

    def candidates(self, selection: Selection, objects: Mapping[Key, Obj]) -> set[Key] | None:
        """The keys the narrowest term of ``selection`` allows (``objects`` are the kind's current
        objects, filed when a term is first used), or None when it has no term."""
        # Only the narrowest is read: the other terms are checked on its keys by ``matches``, as
        # a union of a common value's keys would cost every object of that value on each list.
        looked_up = [(self._buckets(term, objects), values) for term, values in selection.terms()]
        if not looked_up:
            return None
        buckets, values = min(
            looked_up, key=lambda entry: sum(len(entry[0].get(v, ())) for v in entry[1])
        )
        found: set[Key] = set()
        for value in values:
            found.update(buckets.get(value, ()))
        return found

    def update(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        """Move ``key`` from where ``old`` was filed to where ``new`` is (None: absent)."""
        for term, buckets in self._terms.items():
            before = None if old is None else _value(term, old)
            after = None if new is None else _value(term, new)
            if before == after:
                continue
            if before is not None and (keys := buckets.get(before)) is not None:
                keys.discard(key)
                if not keys:
                    del buckets[before]  # values come and go: no empty bucket stays behind
            if after is not None:
                buckets.setdefault(after, set()).add(key)

    def values(self, term: Term) -> list[str]:
        """The values ``term`` files objects under (empty before its first use)."""
        return list(self._terms.get(term, {}))

    def _buckets(self, term: Term, objects: Mapping[Key, Obj]) -> dict[str, set[Key]]:
        buckets = self._terms.get(term)
        if buckets is None:
            buckets = self._terms[term] = {}
            for key, obj in objects.items():
                value = _value(term, obj)
                if value is not None:
                    buckets.setdefault(value, set()).add(key)
        return buckets
