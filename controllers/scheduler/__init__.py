"""Scheduler is the Karmada scheduling algorithm, as pure functions the scheduler controller calls.

Given a ResourceBinding and the Cluster objects, ``schedule`` filters the clusters (``filter``),
ranks the feasible ones (``score``), applies spread constraints (``spread``) and divides the
replicas (``assign``, with the Webster method of ``webster`` and the room of ``estimator``),
returning the target clusters or why scheduling failed. ``preference`` offers KubeFed's
ReplicaSchedulingPreference split as a separate mode. Nothing here performs I/O.
"""

from __future__ import annotations

from controllers.scheduler.assign import (
    AssignError,
    assign_dynamic,
    assign_replicas,
    assign_static_weighted,
    reschedule_requested,
    static_weights,
)
from controllers.scheduler.estimator import available_replicas
from controllers.scheduler.filter import (
    DEFAULT_FILTERS,
    ClusterFilter,
    FilterResult,
    api_enabled,
    api_enablement_filter,
    cluster_affinity_filter,
    cluster_eviction_filter,
    cluster_matches,
    deleting_filter,
    filter_clusters,
    shape_filter,
    spread_field_filter,
    spread_value,
    taint_text,
    taint_toleration_filter,
    tolerates,
    untolerated_taint,
)
from controllers.scheduler.preference import (
    ANY_CLUSTER,
    ClusterPreference,
    PreferencePlan,
    plan_by_preferences,
    preferences_from_spec,
)
from controllers.scheduler.scheduler import (
    SCHEDULE_SUCCESS_MESSAGE,
    ScheduleResult,
    applied_placement,
    binding_problems,
    placement_changed,
    replicas_changed,
    schedule,
    scheduled_condition,
)
from controllers.scheduler.score import (
    LOCALITY_SCORE,
    ClusterCandidate,
    locality_score,
    rank_clusters,
)
from controllers.scheduler.spread import (
    SpreadError,
    select_clusters,
    spread_ignored,
    validate_spread_constraints,
)
from controllers.scheduler.webster import fnv32a, names_descending, webster

__all__ = [
    "ANY_CLUSTER",
    "AssignError",
    "ClusterCandidate",
    "ClusterFilter",
    "ClusterPreference",
    "DEFAULT_FILTERS",
    "FilterResult",
    "LOCALITY_SCORE",
    "PreferencePlan",
    "SCHEDULE_SUCCESS_MESSAGE",
    "ScheduleResult",
    "SpreadError",
    "api_enabled",
    "api_enablement_filter",
    "applied_placement",
    "assign_dynamic",
    "assign_replicas",
    "assign_static_weighted",
    "available_replicas",
    "binding_problems",
    "cluster_affinity_filter",
    "cluster_eviction_filter",
    "cluster_matches",
    "deleting_filter",
    "filter_clusters",
    "fnv32a",
    "locality_score",
    "names_descending",
    "placement_changed",
    "plan_by_preferences",
    "preferences_from_spec",
    "rank_clusters",
    "replicas_changed",
    "reschedule_requested",
    "schedule",
    "scheduled_condition",
    "select_clusters",
    "shape_filter",
    "spread_field_filter",
    "spread_ignored",
    "spread_value",
    "static_weights",
    "taint_text",
    "taint_toleration_filter",
    "tolerates",
    "untolerated_taint",
    "validate_spread_constraints",
    "webster",
]
