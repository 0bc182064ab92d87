"""Labels parses label selectors and matches them against objects' labels, as the apiserver does.

Two spellings reach us: the string form of ``?labelSelector=`` (``app=web,tier!=db,env in (a,b),
!legacy``) and the LabelSelector object of specs (``matchLabels`` plus ``matchExpressions`` with
In/NotIn/Exists/DoesNotExist). Both become a ``Selector``; an empty selector matches everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Requirement", "Selector", "parse_selector", "selector_from_label_selector"]

_OPERATORS: Final = ("in", "notin", "exists", "doesnotexist", "=", "!=")
_SET = re.compile(
    r"^\s*(!?)([^\s!=,()]+)\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*([^\s,]*))?\s*$"
)


@dataclass(frozen=True)
class Requirement:
    """One clause: ``key`` with an operator (in, notin, exists, doesnotexist, =, !=) and values."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this clause."""
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "doesnotexist":
            return not present
        if self.operator in ("in", "="):
            return present and labels[self.key] in self.values
        # notin and != also match objects without the key, as in Kubernetes.
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; the empty selector matches every object."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether every requirement holds for ``labels``."""
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Whether the object's metadata.labels satisfy the selector."""
        return self.matches(obj.get("metadata", {}).get("labels"))

    def __bool__(self) -> bool:
        return bool(self.requirements)


def _split_clauses(text: str) -> list[str]:
    # Commas separate clauses except inside the parentheses of a set.
    clauses, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            clauses.append(current)
            current = ""
        else:
            current += char
    clauses.append(current)
    return [c for c in clauses if c.strip()]


def parse_selector(text: str | None) -> Selector:
    """Parse the string form of a label selector.

    Raises:
        ValueError: a clause is not valid selector syntax.
    """
    requirements = []
    for clause in _split_clauses(text or ""):
        match = _SET.match(clause)
        if match is None:
            raise ValueError(f"invalid label selector clause {clause.strip()!r}")
        negated, key, set_op, set_values, eq_op, eq_value = match.groups()
        if negated and (set_op or eq_op):
            raise ValueError(f"invalid label selector clause {clause.strip()!r}")
        if set_op:
            values = frozenset(v.strip() for v in set_values.split(",") if v.strip())
            requirements.append(Requirement(key, set_op, values))
        elif eq_op:
            operator = "!=" if eq_op == "!=" else "="
            requirements.append(Requirement(key, operator, frozenset([eq_value])))
        else:
            requirements.append(Requirement(key, "doesnotexist" if negated else "exists"))
    return Selector(tuple(requirements))


def selector_from_label_selector(spec: Mapping[str, Any] | None) -> Selector:
    """A Selector from a LabelSelector object (matchLabels + matchExpressions).

    Raises:
        ValueError: an unknown operator, or In/NotIn without values.
    """
    if not spec:
        return Selector()
    requirements = [
        Requirement(k, "=", frozenset([v])) for k, v in (spec.get("matchLabels") or {}).items()
    ]
    for expression in spec.get("matchExpressions") or []:
        operator = str(expression.get("operator", "")).lower()
        values = frozenset(expression.get("values") or ())
        if operator not in _OPERATORS:
            raise ValueError(f"unknown label selector operator {expression.get('operator')!r}")
        if operator in ("in", "notin") and not values:
            raise ValueError(f"operator {expression['operator']} needs values")
        requirements.append(Requirement(expression["key"], operator, values))
    return Selector(tuple(requirements))
