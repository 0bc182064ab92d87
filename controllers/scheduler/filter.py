"""Filter decides which member clusters may receive a binding, each refusal with its reason.

A filter takes the placement being tried, one Cluster and the binding, and returns None when the
cluster fits or a short reason when it does not; ``filter_clusters`` runs them in Karmada's order
and keeps the first refusal per cluster so the scheduler can explain NoClusterFit (a Cluster whose
fields lack the CRD's types is refused before the others read it). Clusters already
in the binding's result skip the API and taint checks: an existing placement is not torn down
because a taint appeared or the API discovery is briefly incomplete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controllers.api import (
    ClusterAffinity,
    ClusterSpec,
    ClusterStatus,
    FieldSelectorRequirement,
    Placement,
    Taint,
    Toleration,
    binding_spec,
    cluster_spec,
    cluster_status,
    shape_problems,
    target_clusters,
)
from reconcile import is_being_deleted, labels_of, name_of, selector_from_label_selector

__all__ = [
    "ClusterFilter",
    "DEFAULT_FILTERS",
    "FilterResult",
    "api_enabled",
    "api_enablement_filter",
    "cluster_affinity_filter",
    "cluster_eviction_filter",
    "cluster_matches",
    "deleting_filter",
    "filter_clusters",
    "shape_filter",
    "spread_field_filter",
    "spread_value",
    "taint_toleration_filter",
    "taint_text",
    "tolerates",
    "untolerated_taint",
]

ClusterFilter = Callable[[Placement, Mapping[str, Any], Mapping[str, Any]], str | None]
"""A check of one cluster for a placement and binding: None if it fits, else why not."""

# Only these effects keep new workloads away; PreferNoSchedule is a preference, not a filter.
_FILTERED_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class FilterResult:
    """The clusters that fit, in input order, and the reason each other cluster was refused."""

    feasible: list[Mapping[str, Any]] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)


def _in_result(cluster: Mapping[str, Any], binding: Mapping[str, Any]) -> bool:
    name = name_of(cluster)
    return any(target.get("name") == name for target in target_clusters(binding))


def _zones(cluster: Mapping[str, Any]) -> list[str]:
    spec = cluster_spec(cluster)
    zones = spec.get("zones") or []
    zone = spec.get("zone")
    return list(zones) if zones else ([zone] if zone else [])


def _zones_match(requirement: FieldSelectorRequirement, zones: Sequence[str]) -> bool:
    # A cluster may span zones: In needs every zone listed, NotIn needs none of them (Karmada).
    values = set(requirement.get("values") or ())
    operator = requirement.get("operator")
    if operator == "In":
        return bool(zones) and all(zone in values for zone in zones)
    if operator == "NotIn":
        return not any(zone in values for zone in zones)
    return False


def _field_matches(requirement: FieldSelectorRequirement, cluster: Mapping[str, Any]) -> bool:
    key = requirement.get("key")
    if key == "zone":
        return _zones_match(requirement, _zones(cluster))
    value = cluster_spec(cluster).get("provider" if key == "provider" else "region")
    values = set(requirement.get("values") or ())
    operator = requirement.get("operator")
    if operator == "In":
        return bool(value) and value in values
    if operator == "NotIn":
        # As for labels, a cluster without the field is "not in" any set.
        return not value or value not in values
    return False


def cluster_matches(cluster: Mapping[str, Any], affinity: ClusterAffinity) -> bool:
    """Whether ``cluster`` satisfies ``affinity``: not excluded, then every non-empty criterion.

    An invalid label selector matches nothing, as in Karmada.
    """
    name = name_of(cluster)
    if name in (affinity.get("exclude") or ()):
        return False
    if "labelSelector" in affinity:
        try:
            selector = selector_from_label_selector(affinity.get("labelSelector"))
        except ValueError:
            return False
        if not selector.matches(labels_of(cluster)):
            return False
    expressions = (affinity.get("fieldSelector") or {}).get("matchExpressions") or []
    if not all(_field_matches(requirement, cluster) for requirement in expressions):
        return False
    names = affinity.get("clusterNames") or []
    return not names or name in names


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether ``toleration`` tolerates ``taint`` (core/v1 semantics; empty key + Exists: all)."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates, if any."""
    for taint in taints:
        if taint.get("effect") not in _FILTERED_EFFECTS:
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            return taint
    return None


def taint_text(taint: Taint) -> str:
    """A taint as ``key=value:Effect`` (``key:Effect`` without a value), like corev1.Taint."""
    value = taint.get("value")
    key = f"{taint.get('key', '')}={value}" if value else taint.get("key", "")
    return f"{key}:{taint.get('effect', '')}"


def api_enabled(cluster: Mapping[str, Any], api_version: str, kind: str) -> bool:
    """Whether the cluster's ``status.apiEnablements`` lists ``kind`` in ``api_version``."""
    for enablement in cluster_status(cluster).get("apiEnablements") or []:
        if enablement.get("groupVersion") != api_version:
            continue
        if any(r.get("kind") == kind for r in enablement.get("resources") or []):
            return True
    return False


def spread_value(cluster: Mapping[str, Any], *, by_field: str = "", by_label: str = "") -> str:
    """The group a cluster falls in for a spread constraint ("" when it lacks the field/label).

    Zone uses ``spec.zone``, else the first of ``spec.zones``.
    """
    if by_label:
        return labels_of(cluster).get(by_label, "")
    if by_field == "cluster":
        return name_of(cluster)
    if by_field == "zone":
        zones = _zones(cluster)
        return zones[0] if zones else ""
    if by_field in ("region", "provider"):
        return str(cluster_spec(cluster).get(by_field) or "")
    return ""


def shape_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters whose spec or status lacks the CRD's types (the other filters read them)."""
    return None if _well_shaped(cluster) else "cluster(s) had a spec or status of the wrong shape"


_SHAPES_REMEMBERED: Final = 256
_shapes: dict[tuple[str, str], bool] = {}
"""Whether a (uid, resourceVersion) of a Cluster was well shaped: one version's content never
changes, and checking a Cluster's status (its API enablements) costs more than the rest of the
filters for every binding scheduled."""


def _well_shaped(cluster: Mapping[str, Any]) -> bool:
    meta = cluster.get("metadata") or {}
    version = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
    known = _shapes.get(version) if all(version) else None
    if known is not None:
        return known
    spec = shape_problems(cluster.get("spec"), ClusterSpec, "spec", enums=False)
    status = shape_problems(cluster.get("status"), ClusterStatus, "status", enums=False)
    well_shaped = not (spec or status)
    if all(version):
        if len(_shapes) >= _SHAPES_REMEMBERED:
            _shapes.pop(next(iter(_shapes)))  # the oldest: a Cluster's status moves on
        _shapes[version] = well_shaped
    return well_shaped


def deleting_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters that are being deleted."""
    return "cluster(s) is being deleted" if is_being_deleted(cluster) else None


def api_enablement_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters that do not serve the binding's resource kind."""
    if _in_result(cluster, binding):
        return None
    resource = binding_spec(binding).get("resource") or {}
    if api_enabled(cluster, resource.get("apiVersion", ""), resource.get("kind", "")):
        return None
    return "cluster(s) did not have the API resource"


def taint_toleration_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters with a NoSchedule/NoExecute taint the placement does not tolerate."""
    if _in_result(cluster, binding):
        return None
    taints = cluster_spec(cluster).get("taints") or []
    taint = untolerated_taint(taints, placement.get("clusterTolerations") or [])
    return None if taint is None else f"cluster(s) had untolerated taint {{{taint_text(taint)}}}"


def cluster_affinity_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters outside ``placement.clusterAffinity`` (no affinity: every cluster fits)."""
    affinity = placement.get("clusterAffinity")
    if affinity is None or cluster_matches(cluster, affinity):
        return None
    return "cluster(s) did not match the placement cluster affinity constraint"


def spread_field_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters lacking the field or label a spread constraint groups clusters by."""
    for constraint in placement.get("spreadConstraints") or []:
        by_field, by_label = (
            constraint.get("spreadByField", ""),
            constraint.get("spreadByLabel", ""),
        )
        if by_field in ("", "cluster") and not by_label:
            continue
        if not spread_value(cluster, by_field=by_field, by_label=by_label):
            what = f"label {by_label}" if by_label else f"{by_field} property"
            return f"cluster(s) did not have {what}"
    return None


def cluster_eviction_filter(
    placement: Placement, cluster: Mapping[str, Any], binding: Mapping[str, Any]
) -> str | None:
    """Refuses clusters the binding is being gracefully evicted from."""
    tasks = binding_spec(binding).get("gracefulEvictionTasks") or []
    if any(task.get("fromCluster") == name_of(cluster) for task in tasks):
        return "cluster(s) is in the process of eviction"
    return None


DEFAULT_FILTERS: Final[tuple[ClusterFilter, ...]] = (
    shape_filter,
    deleting_filter,
    api_enablement_filter,
    taint_toleration_filter,
    cluster_affinity_filter,
    spread_field_filter,
    cluster_eviction_filter,
)
"""The filters ``filter_clusters`` runs: shape and deletion checks, then Karmada's plugin order."""


def filter_clusters(
    placement: Placement,
    clusters: Iterable[Mapping[str, Any]],
    binding: Mapping[str, Any],
    *,
    filters: Sequence[ClusterFilter] = DEFAULT_FILTERS,
) -> FilterResult:
    """Split ``clusters`` into those every filter accepts and the first refusal of the others."""
    result = FilterResult()
    for cluster in clusters:
        reason = next((r for f in filters if (r := f(placement, cluster, binding))), None)
        if reason is None:
            result.feasible.append(cluster)
        else:
            result.rejected[name_of(cluster)] = reason
    return result
