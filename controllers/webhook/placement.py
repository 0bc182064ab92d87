"""Placement holds Karmada's placement rules that a CRD schema does not express, for the webhook.

Karmada's pkg/util/validation, in its words: ``clusterAffinity`` and ``clusterAffinities`` do not
co-exist; each affinity term has a unique, qualified ``affinityName``; a field selector's keys are
provider, region or zone and its operators In or NotIn; a spread constraint has ``spreadByField``
or ``spreadByLabel`` (not both), group counts of at least 0, ``maxGroups`` (when set) at least
``minGroups``, at most one constraint per field, and one by ``cluster`` as soon as any spreads by
a field. Callers check the field types first (``controllers.api.shape_problems``); everything
here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from controllers.webhook.fields import invalid
from reconcile import qualified_name_problem

__all__ = ["cluster_affinity_problems", "placement_problems", "spread_constraint_problems"]

_FIELD_KEYS: Final = ("provider", "region", "zone")
_FIELD_OPERATORS: Final = ("In", "NotIn")


def _field_selector_problem(selector: Mapping[str, Any]) -> str | None:
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        if key not in _FIELD_KEYS:
            return f"unsupported key {key!r}, must be provider, region, or zone"
        if operator not in _FIELD_OPERATORS:
            return f"unsupported operator {operator!r}, must be In or NotIn"
    return None


def cluster_affinity_problems(affinity: Mapping[str, Any] | None, path: str) -> list[str]:
    """What is wrong with a cluster affinity's field selector (ValidateClusterAffinity)."""
    selector = (affinity or {}).get("fieldSelector")
    if not selector:
        return []
    why = _field_selector_problem(selector)
    return [invalid(f"{path}.fieldSelector", selector, why)] if why else []


def _affinities_problems(terms: Sequence[Mapping[str, Any]], path: str) -> list[str]:
    problems, seen = [], set()
    for index, term in enumerate(terms):
        name = term.get("affinityName", "")
        if (why := qualified_name_problem(name)) is not None:
            problems.append(invalid(f"{path}[{index}]", name, why))
        if name in seen:
            detail = "each affinity term in a policy must have a unique name"
            problems.append(invalid(path, [t.get("affinityName") for t in terms], detail))
        seen.add(name)
        problems += cluster_affinity_problems(term, f"{path}[{index}]")
    return problems


def _constraint_problems(constraint: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    low, high = constraint.get("minGroups") or 0, constraint.get("maxGroups") or 0
    if constraint.get("spreadByField") and constraint.get("spreadByLabel"):
        problems.append(
            invalid(path, constraint, "spreadByLabel should not co-exist with spreadByField")
        )
    if low < 0:
        problems.append(invalid(path, constraint, "minGroups lower than 0 is not allowed"))
    if high < 0:
        problems.append(invalid(path, constraint, "maxGroups lower than 0 is not allowed"))
    if 0 < high < low:
        problems.append(invalid(path, constraint, "maxGroups lower than minGroups is not allowed"))
    return problems


def spread_constraint_problems(constraints: Sequence[Mapping[str, Any]], path: str) -> list[str]:
    """What is wrong with ``placement.spreadConstraints`` (ValidateSpreadConstraint)."""
    problems: list[str] = []
    fields: list[str] = []
    for index, constraint in enumerate(constraints):
        problems += _constraint_problems(constraint, f"{path}[{index}]")
        field = constraint.get("spreadByField")
        if field:
            if fields.count(field) == 1:
                # Reported once per field, however many repeat it.
                detail = f"multiple {field} spread constraints are not allowed"
                problems.append(invalid(path, constraints, detail))
            fields.append(field)
    if fields and "cluster" not in fields:
        detail = (
            "the cluster spread constraint must be enabled in one of the constraints in case of "
            "SpreadByField is enabled"
        )
        problems.append(invalid(path, constraints, detail))
    return problems


def placement_problems(placement: Mapping[str, Any], path: str) -> list[str]:
    """What Karmada's ValidatePlacement finds wrong with ``placement`` (empty: nothing)."""
    problems = []
    if (
        placement.get("clusterAffinity") is not None
        and placement.get("clusterAffinities") is not None
    ):
        problems.append(
            invalid(path, dict(placement), "clusterAffinities cannot co-exist with clusterAffinity")
        )
    problems += cluster_affinity_problems(
        placement.get("clusterAffinity"), f"{path}.clusterAffinity"
    )
    problems += _affinities_problems(
        placement.get("clusterAffinities") or [], f"{path}.clusterAffinities"
    )
    problems += spread_constraint_problems(
        placement.get("spreadConstraints") or [], f"{path}.spreadConstraints"
    )
    return problems
