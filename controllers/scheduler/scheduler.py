"""Scheduler turns a binding's placement and the member clusters into its target clusters.

``schedule`` is Karmada's scheduling pass as a pure function: filter the clusters, score and rank
the feasible ones, select by spread constraints, assign replicas. With ``clusterAffinities`` the
groups are tried in order, starting at the one the binding last used
(``status.schedulerObservingAffinityName``), falling through to the next when a group yields no
feasible cluster or cannot place the replicas. The result carries the target clusters or the
Scheduled condition's failure reason (NoClusterFit when no cluster passes the filters, with each
cluster's reason; Unschedulable when the survivors cannot satisfy spread or capacity, or the
binding's own fields do not have the CRD's types or request no quantity, ``binding_problems``).
The helpers
build the Scheduled condition and the ``policy.karmada.io/applied-placement`` annotation value.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, cast

from controllers.api import (
    APPLIED_PLACEMENT_ANNOTATION,
    DUPLICATED,
    NO_CLUSTER_FIT_REASON,
    SCHEDULE_SUCCESS_REASON,
    SCHEDULED_CONDITION,
    UNSCHEDULABLE_REASON,
    ClusterAffinityTerm,
    Placement,
    ResourceBindingSpec,
    ResourceBindingStatus,
    TargetCluster,
    binding_spec,
    binding_status,
    replica_scheduling_type_of,
    shape_problems,
    target_clusters,
)
from controllers.scheduler.assign import AssignError, assign_replicas
from controllers.scheduler.estimator import available_replicas
from controllers.scheduler.filter import filter_clusters
from controllers.scheduler.score import rank_clusters
from controllers.scheduler.spread import SpreadError, select_clusters
from reconcile import Condition, ConditionStatus, Quantity, annotations_of, name_of

__all__ = [
    "SCHEDULE_SUCCESS_MESSAGE",
    "ScheduleResult",
    "applied_placement",
    "binding_problems",
    "placement_changed",
    "replicas_changed",
    "schedule",
    "scheduled_condition",
]

SCHEDULE_SUCCESS_MESSAGE: Final = "Binding has been scheduled successfully."
# Problems named in an invalid binding's message; the rest are counted.
_LISTED_PROBLEMS: Final = 5


@dataclass(frozen=True)
class ScheduleResult:
    """The outcome of scheduling one binding.

    ``clusters`` is the new ``spec.clusters`` (sorted by name) when ``reason`` is Success, empty
    otherwise; ``rejected`` maps each cluster the filters refused to why; ``affinity_name`` is
    the ``clusterAffinities`` group that was used, for ``status.schedulerObservingAffinityName``.
    """

    clusters: list[TargetCluster] = field(default_factory=list)
    reason: str = SCHEDULE_SUCCESS_REASON
    message: str = SCHEDULE_SUCCESS_MESSAGE
    rejected: dict[str, str] = field(default_factory=dict)
    affinity_name: str | None = None

    @property
    def scheduled(self) -> bool:
        """Whether scheduling succeeded."""
        return self.reason == SCHEDULE_SUCCESS_REASON


def _no_cluster_fit(total: int, rejected: Mapping[str, str]) -> ScheduleResult:
    # Karmada's FitError text: "0/3 clusters are available: 1 <reason>, 2 <reason>."
    counts = Counter(rejected.values())
    histogram = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))
    message = f"0/{total} clusters are available" + (f": {histogram}." if histogram else ".")
    return ScheduleResult(reason=NO_CLUSTER_FIT_REASON, message=message, rejected=dict(rejected))


def _schedule_with(
    placement: Placement, binding: Mapping[str, Any], clusters: Sequence[Mapping[str, Any]]
) -> ScheduleResult:
    filtered = filter_clusters(placement, clusters, binding)
    if not filtered.feasible:
        return _no_cluster_fit(len(clusters), filtered.rejected)
    spec = binding_spec(binding)
    replicas = spec.get("replicas", 0)
    requirements = spec.get("replicaRequirements")
    # Objects without replicas (ConfigMaps, Services, ...) need no room, as in Karmada.
    available = {
        name_of(c): available_replicas(c, requirements) if replicas > 0 else 0
        for c in filtered.feasible
    }
    candidates = rank_clusters(filtered.feasible, binding, available)
    assigned = {t.get("name", ""): t.get("replicas", 0) for t in target_clusters(binding)}
    try:
        selected = select_clusters(candidates, placement, replicas, assigned)
        targets = assign_replicas(selected, binding)
    except (SpreadError, AssignError) as error:
        return ScheduleResult(
            reason=UNSCHEDULABLE_REASON, message=str(error), rejected=filtered.rejected
        )
    return ScheduleResult(clusters=targets, rejected=filtered.rejected)


def _narrowed(placement: Placement, term: ClusterAffinityTerm) -> Placement:
    narrowed: dict[str, Any] = {k: v for k, v in placement.items() if k != "clusterAffinities"}
    narrowed["clusterAffinity"] = {k: v for k, v in term.items() if k != "affinityName"}
    return cast(Placement, narrowed)


def _combined(failures: Sequence[tuple[str, ScheduleResult]]) -> ScheduleResult:
    # Any group without a feasible cluster makes the whole a NoClusterFit (as Karmada reports).
    reasons = [result.reason for _, result in failures]
    reason = NO_CLUSTER_FIT_REASON if NO_CLUSTER_FIT_REASON in reasons else reasons[-1]
    message = "; ".join(f"affinity group {name!r}: {result.message}" for name, result in failures)
    rejected: dict[str, list[str]] = {}
    for name, result in failures:
        for cluster, why in result.rejected.items():
            rejected.setdefault(cluster, []).append(f"[{name}] {why}")
    joined = {cluster: "; ".join(whys) for cluster, whys in rejected.items()}
    return ScheduleResult(reason=reason, message=message, rejected=joined)


def _schedule_groups(
    placement: Placement,
    terms: Sequence[ClusterAffinityTerm],
    binding: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
) -> ScheduleResult:
    observed = binding_status(binding).get("schedulerObservingAffinityName")
    names = [term.get("affinityName", "") for term in terms]
    start = names.index(observed) if observed in names else 0
    failures: list[tuple[str, ScheduleResult]] = []
    for name, term in zip(names[start:], terms[start:], strict=True):
        result = _schedule_with(_narrowed(placement, term), binding, clusters)
        if result.scheduled:
            return replace(result, affinity_name=name)
        failures.append((name, result))
    return _combined(failures)


def _request_problems(binding: Mapping[str, Any]) -> list[str]:
    requests = (binding_spec(binding).get("replicaRequirements") or {}).get("resourceRequest")
    problems = []
    for resource, quantity in (requests or {}).items():
        try:
            Quantity.parse(quantity)
        except ValueError as error:
            # QuantityError, or int()'s digit limit on a very long number.
            path = f"spec.replicaRequirements.resourceRequest[{resource}]"
            problems.append(f"{path}: Invalid value: {str(quantity)[:64]!r}: {str(error)[:200]}")
    return problems


def binding_problems(binding: Mapping[str, Any]) -> list[str]:
    """Where the binding's spec or status lacks the CRD's types, or a requested resource is no
    quantity (empty: nothing)."""
    problems = shape_problems(binding.get("spec"), ResourceBindingSpec, "spec", enums=False)
    problems += shape_problems(binding.get("status"), ResourceBindingStatus, "status", enums=False)
    return problems or _request_problems(binding)


def _invalid(problems: Sequence[str]) -> ScheduleResult:
    shown = "; ".join(problems[:_LISTED_PROBLEMS])
    more = len(problems) - _LISTED_PROBLEMS
    message = f"the binding is invalid: {shown}" + (f"; and {more} more" if more > 0 else "")
    return ScheduleResult(reason=UNSCHEDULABLE_REASON, message=message)


def schedule(binding: Mapping[str, Any], clusters: Iterable[Mapping[str, Any]]) -> ScheduleResult:
    """Schedule ``binding`` (ResourceBinding or ClusterResourceBinding) onto ``clusters``.

    ``clusters`` are Cluster objects; the binding's ``spec.placement``, ``spec.replicas``,
    ``spec.replicaRequirements``, ``spec.resource`` and current ``spec.clusters`` drive the
    result. A binding whose fields lack the CRD's types is Unschedulable, naming them. Nothing
    is modified.
    """
    problems = binding_problems(binding)
    if problems:
        return _invalid(problems)
    members = list(clusters)
    placement = binding_spec(binding).get("placement") or {}
    terms = placement.get("clusterAffinities") or []
    if terms:
        return _schedule_groups(placement, terms, binding, members)
    return _schedule_with(placement, binding, members)


def scheduled_condition(result: ScheduleResult) -> Condition:
    """The binding's Scheduled condition for ``result`` (without timestamps).

    Pass its fields to ``reconcile.set_condition`` so the transition time is kept when unchanged.
    """
    status: ConditionStatus = "True" if result.scheduled else "False"
    return Condition(
        type=SCHEDULED_CONDITION, status=status, reason=result.reason, message=result.message
    )


def applied_placement(placement: Placement | Mapping[str, Any]) -> str:
    """The ``policy.karmada.io/applied-placement`` value: the placement as compact JSON.

    Keys are sorted so that equal placements always give the same text.
    """
    return json.dumps(placement, separators=(",", ":"), sort_keys=True)


def placement_changed(binding: Mapping[str, Any]) -> bool:
    """Whether ``spec.placement`` differs from the placement last scheduled with (annotation).

    A binding never scheduled, or with an unreadable annotation, has changed.
    """
    recorded = annotations_of(binding).get(APPLIED_PLACEMENT_ANNOTATION)
    if recorded is None:
        return True
    try:
        previous = json.loads(recorded)
    except ValueError:
        return True
    return bool(previous != (binding_spec(binding).get("placement") or {}))


def replicas_changed(binding: Mapping[str, Any]) -> bool:
    """Whether ``spec.replicas`` no longer matches ``spec.clusters`` (a scale needs rescheduling).

    Duplicated: some cluster runs a different count; Divided: the counts no longer add up, also
    when no target is left (every one evicted), as Karmada's IsBindingReplicasChanged.
    """
    spec = binding_spec(binding)
    replicas, targets = spec.get("replicas", 0), target_clusters(binding)
    counts = [t.get("replicas", 0) for t in targets]
    if replica_scheduling_type_of(spec.get("placement")) == DUPLICATED:
        return any(count != replicas for count in counts)
    return sum(counts) != replicas
