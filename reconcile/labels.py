"""Labels parses label selectors and matches them against objects' labels, as the apiserver does.

Two spellings reach us: the string form of ``?labelSelector=`` (``app=web,tier!=db,env in (a,b),
!legacy``) and the LabelSelector object of specs (``matchLabels`` plus ``matchExpressions`` with
In/NotIn/Exists/DoesNotExist). Both become a ``Selector``; an empty selector matches everything.
``validate_label_selector`` checks a LabelSelector as the apiserver does those of built-in kinds
(a CRD's schema may let through what it would refuse); ``validate_labels`` and
``qualified_name_problem`` check a label map and a qualified name the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "Requirement",
    "Selector",
    "parse_selector",
    "qualified_name_problem",
    "selector_from_label_selector",
    "validate_label_selector",
    "validate_labels",
]

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
            # As apimachinery's parser: "()" is the set of "", and "(a,)" holds "" too.
            values = frozenset(v.strip() for v in set_values.split(","))
            requirements.append(Requirement(key, set_op, values))
        elif eq_op:
            operator = "!=" if eq_op == "!=" else "="
            requirements.append(Requirement(key, operator, frozenset([eq_value])))
        else:
            requirements.append(Requirement(key, "doesnotexist" if negated else "exists"))
    return Selector(tuple(requirements))


def _strings(values: object, what: str) -> frozenset[str]:
    if values is None:
        return frozenset()
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{what} must be a list of strings")
    return frozenset(values)


def _requirement(expression: object) -> Requirement:
    if not isinstance(expression, Mapping):
        raise ValueError("a matchExpressions entry must be an object")
    operator = str(expression.get("operator", "")).lower()
    key = expression.get("key")
    if operator not in _OPERATORS:
        raise ValueError(f"unknown label selector operator {expression.get('operator')!r}")
    if not isinstance(key, str):
        raise ValueError(f"a matchExpressions key must be a string, not {key!r}")
    values = _strings(expression.get("values"), f"the values of {key!r}")
    if operator in ("in", "notin") and not values:
        raise ValueError(f"operator {expression['operator']} needs values")
    return Requirement(key, operator, values)


def selector_from_label_selector(spec: Mapping[str, Any] | None) -> Selector:
    """A Selector from a LabelSelector object (matchLabels + matchExpressions).

    Raises:
        ValueError: an unknown operator, In/NotIn without values, or a field of the wrong type.
    """
    if not spec:
        return Selector()
    if not isinstance(spec, Mapping):
        raise ValueError("a label selector must be an object")
    labels = spec.get("matchLabels") or {}
    if not isinstance(labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ValueError("matchLabels must map strings to strings")
    expressions = spec.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError("matchExpressions must be a list")
    requirements = [Requirement(k, "=", frozenset([v])) for k, v in labels.items()]
    requirements += [_requirement(expression) for expression in expressions]
    return Selector(tuple(requirements))


_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_MAX: Final = 63
_PREFIX_MAX: Final = 253
_VALUES_REQUIRED: Final = ("In", "NotIn")
_VALUES_FORBIDDEN: Final = ("Exists", "DoesNotExist")

_NAME_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_VALUE_RULE: Final = (
    "a valid label value must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)


def _key_problem(key: object) -> str | None:
    """Why ``key`` is no qualified name (``[prefix/]name``), None when it is one."""
    if not isinstance(key, str):
        return "must be a string"
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > _PREFIX_MAX or not _DNS_SUBDOMAIN.match(prefix)):
        return "the prefix must be a lowercase DNS subdomain (at most 253 characters)"
    if not name or len(name) > _NAME_MAX or not _NAME.match(name):
        return f"the name part {_NAME_RULE} (at most 63 characters)"
    return None


def _value_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if value and (len(value) > _NAME_MAX or not _NAME.match(value)):
        return f"{_VALUE_RULE} (at most 63 characters)"
    return None


def _labels_problems(labels: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    for key, value in labels.items():
        if (why := _key_problem(key)) is not None:
            problems.append(f"{path}: Invalid value: {key!r}: {why}")
        if (why := _value_problem(value)) is not None:
            problems.append(f"{path}[{key}]: Invalid value: {value!r}: {why}")
    return problems


def _not_a(kind: str, value: object, path: str) -> list[str]:
    return [f"{path}: Invalid value: {type(value).__name__}: must be of type {kind}"]


def _requirement_problems(requirement: object, path: str) -> list[str]:
    if not isinstance(requirement, Mapping):
        return _not_a("object", requirement, path)
    problems = []
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if not isinstance(values, list):
        return _not_a("array", values, f"{path}.values")
    if operator in _VALUES_REQUIRED and not values:
        problems.append(
            f"{path}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        )
    elif operator in _VALUES_FORBIDDEN and values:
        problems.append(
            f"{path}.values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'"
        )
    elif operator not in (*_VALUES_REQUIRED, *_VALUES_FORBIDDEN):
        problems.append(f"{path}.operator: Invalid value: {operator!r}: not a valid operator")
    if (why := _key_problem(requirement.get("key"))) is not None:
        problems.append(f"{path}.key: Invalid value: {requirement.get('key')!r}: {why}")
    for index, value in enumerate(values):
        if (why := _value_problem(value)) is not None:
            problems.append(f"{path}.values[{index}]: Invalid value: {value!r}: {why}")
    return problems


def validate_label_selector(selector: Mapping[str, Any] | None, path: str) -> list[str]:
    """What apimachinery's ValidateLabelSelector finds wrong with the LabelSelector ``selector``
    at ``path``, one message per problem in its words (empty: nothing).

    matchLabels keys must be qualified names and values label values; a matchExpressions entry
    needs a known operator, values exactly when it is In or NotIn, a qualified-name key and
    label-value values. A part of the wrong JSON type is one problem naming its path.
    """
    if not selector:
        return []
    if not isinstance(selector, Mapping):
        return _not_a("object", selector, path)
    labels, expressions = selector.get("matchLabels") or {}, selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping):
        return _not_a("object", labels, f"{path}.matchLabels")
    if not isinstance(expressions, list):
        return _not_a("array", expressions, f"{path}.matchExpressions")
    problems = _labels_problems(labels, f"{path}.matchLabels")
    for index, requirement in enumerate(expressions):
        problems += _requirement_problems(requirement, f"{path}.matchExpressions[{index}]")
    return problems


def qualified_name_problem(name: object) -> str | None:
    """Why ``name`` is no qualified name (``[prefix/]name``, apimachinery's IsQualifiedName),
    None when it is one."""
    return _key_problem(name)


def validate_labels(labels: Mapping[str, Any] | None, path: str) -> list[str]:
    """What apimachinery's ValidateLabels finds wrong with the label map at ``path``: keys must be
    qualified names, values label values (one message per problem; empty: nothing)."""
    if not labels:
        return []
    if not isinstance(labels, Mapping):
        return _not_a("object", labels, path)
    return _labels_problems(labels, path)
