"""Preservation extracts the state a failover carries to the new cluster, and injects it there.

Karmada's StatePreservation (policy ``spec.failover.application.statePreservation`` and
``spec.failover.cluster.statePreservation``): each rule's ``jsonPath`` is evaluated against the
failed cluster's collected status (``status.aggregatedStatus[].status``) and the value is kept
under its ``aliasLabelName`` in the eviction task's ``preservedLabelState``
(``preserved_label_state``). The binding controller then labels the workload it sends to the
cluster the application moved to (``injected_labels``), with Karmada's restrictions: only when
the binding targets a single cluster, only from the last eviction task, only when that task's
purge mode is Immediately or Directly (with Gracefully the old copy still runs), and never on a
cluster listed in the task's ``clustersBeforeFailover``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from controllers.api import AggregatedStatusItem
from controllers.eviction.jsonpath import EvaluationBudget, JsonPathError, evaluate
from controllers.eviction.task import purges_at_once

__all__ = ["StatePreservationError", "injected_labels", "preserved_label_state"]

_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class StatePreservationError(ValueError):
    """The state to preserve cannot be extracted (not collected yet, a bad rule, a bad value)."""


def _rules(preservation: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    rules = (preservation or {}).get("rules") or []
    return [r for r in rules if isinstance(r, Mapping)]


def preserved_label_state(
    preservation: Mapping[str, Any] | None,
    aggregated: Sequence[AggregatedStatusItem],
    cluster: str,
) -> dict[str, str]:
    """The ``preservedLabelState`` of an eviction from ``cluster`` (empty without rules).

    Raises:
        StatePreservationError: ``cluster``'s status is not collected yet, a jsonPath does not
            parse or names a missing field, the rules together cost more than one
            ``EvaluationBudget``, or a value is not a valid label value.
    """
    rules = _rules(preservation)
    if not rules:
        return {}
    item = next((i for i in aggregated if i.get("clusterName") == cluster), None)
    status = (item or {}).get("status")
    if not isinstance(status, Mapping):
        raise StatePreservationError(
            f"the application status has not yet been collected from Cluster({cluster})"
        )
    state = {}
    # One budget for all the rules: their number (the CRD bounds none) must not multiply it.
    budget = EvaluationBudget()
    for rule in rules:
        name, path = str(rule.get("aliasLabelName", "")), str(rule.get("jsonPath", ""))
        try:
            value = evaluate(path, status, budget)
        except JsonPathError as error:
            raise StatePreservationError(f"jsonPath {path!r} of {name}: {error}") from error
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise StatePreservationError(
                f"jsonPath {path!r} of {name} gives {value!r}, which is not a valid label value"
            )
        state[name] = value
    return state


def injected_labels(spec: Mapping[str, Any], cluster: str, targets: int) -> dict[str, str]:
    """The preserved labels the workload sent to ``cluster`` carries (see the module docstring);
    ``targets`` is how many clusters the binding's Works go to."""
    tasks = spec.get("gracefulEvictionTasks") or []
    if targets > 1 or not tasks:
        return {}
    last = tasks[-1]
    if not purges_at_once(last.get("purgeMode")):
        return {}
    if cluster in (last.get("clustersBeforeFailover") or []):
        return {}
    return {str(k): str(v) for k, v in (last.get("preservedLabelState") or {}).items()}
