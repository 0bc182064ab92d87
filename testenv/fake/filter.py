"""Filter is which objects of a kind a list or watch selects: namespace, labels and fields.

Label selectors are parsed as ``reconcile.labels`` parses them; field selectors accept
metadata.name, metadata.namespace and the kind's field labels, with ``=``, ``==`` and ``!=``. A
filter's equality terms (the namespace, ``=``/``in`` label requirements, ``=`` field clauses) let
the store's indexes narrow the objects it checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reconcile.client.client import SelectorLike
from reconcile.labels import Selector, parse_selector
from testenv.fake.errors import bad_request
from testenv.fake.index import Term, field_text
from testenv.fake.registry import FakeKind

__all__ = ["Filter", "parse_filter"]

_FIELD_CLAUSE = re.compile(r"\s*([^!=\s]+)\s*(!=|==|=)(.*)")


def _selector_text(value: SelectorLike) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    return ",".join(f"{key}={item}" for key, item in value.items())


@dataclass(frozen=True, slots=True)
class _FieldClause:
    path: str
    value: str
    equal: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_text(obj, self.path) == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class Filter:
    """Which objects of a kind a list or watch selects: namespace, labels, fields."""

    namespace: str | None
    labels: Selector
    fields: tuple[_FieldClause, ...]

    def terms(self) -> Iterator[tuple[Term, frozenset[str]]]:
        """The terms a selected object must have one of the values of, for the indexes."""
        if self.namespace:
            yield ("field", "metadata.namespace"), frozenset([self.namespace])
        for requirement in self.labels.requirements:
            if requirement.operator in ("=", "in"):
                yield ("label", requirement.key), requirement.values
        for clause in self.fields:
            if clause.equal:
                yield ("field", clause.path), frozenset([clause.value])

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` is selected (checked in full, whatever the terms narrowed)."""
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and all(
            clause.matches(obj) for clause in self.fields
        )


def parse_filter(
    kind: FakeKind,
    namespace: str | None,
    label_selector: SelectorLike,
    field_selector: SelectorLike,
) -> Filter:
    """Parse selectors as the apiserver does.

    Raises:
        BadRequest: a selector that does not parse, or a field the kind cannot select on.
    """
    try:
        labels = parse_selector(_selector_text(label_selector))
    except ValueError as error:
        raise bad_request(f"unable to parse requirement: {error}") from None
    allowed = {"metadata.name", "metadata.namespace", *kind.field_labels}
    clauses = []
    for clause in filter(None, _selector_text(field_selector).split(",")):
        match = _FIELD_CLAUSE.fullmatch(clause)
        if match is None:
            raise bad_request(f"invalid selector: '{clause}'; can't understand '{clause}'")
        field, operator, value = match.groups()
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        clauses.append(_FieldClause(field, value.strip(), operator != "!="))
    return Filter(namespace if kind.namespaced else None, labels, tuple(clauses))
