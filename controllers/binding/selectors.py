"""Selectors decide which override policies select a resource and which rules target a cluster.

Both follow Karmada's pkg/util/selector.go. A resource selector matches on apiVersion and kind,
then on namespace when it names one, then by name (the label selector is then ignored), else by
label selector, else everything of that kind. How it matched is its implicit priority, which
orders policies from least to most specific: name (3) > label selector (2) > kind only (1);
0 is no match.

A ClusterAffinity matches a Cluster object: ``exclude`` first, then every criterion given must
hold — ``labelSelector`` on the Cluster's labels, ``fieldSelector`` on ``provider`` and ``region``
(node-selector operators In, NotIn, Exists, DoesNotExist, Gt, Lt) and ``zone`` against the
Cluster's zones, and ``clusterNames``. A selector that does not parse matches nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from reconcile import selector_from_label_selector

__all__ = [
    "PRIORITY_MATCH_ALL",
    "PRIORITY_MATCH_LABEL_SELECTOR",
    "PRIORITY_MATCH_NAME",
    "PRIORITY_MISMATCH",
    "cluster_matches",
    "selector_priority",
    "selectors_priority",
]

PRIORITY_MISMATCH: Final = 0
PRIORITY_MATCH_ALL: Final = 1
PRIORITY_MATCH_LABEL_SELECTOR: Final = 2
PRIORITY_MATCH_NAME: Final = 3


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _label_selector_matches(spec: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    try:
        return selector_from_label_selector(spec).matches(labels)
    except (ValueError, KeyError, TypeError):
        # Karmada: "should not happen because selectors are validated by the webhook" → no match.
        return False


def selector_priority(resource: Mapping[str, Any], selector: Mapping[str, Any]) -> int:
    """How specifically one resource selector matches ``resource`` (0 when it does not)."""
    meta = _metadata(resource)
    if (
        resource.get("apiVersion") != selector.get("apiVersion")
        or resource.get("kind") != selector.get("kind")
        or (selector.get("namespace") and meta.get("namespace") != selector.get("namespace"))
    ):
        return PRIORITY_MISMATCH
    if selector.get("name"):
        return PRIORITY_MATCH_NAME if selector["name"] == meta.get("name") else PRIORITY_MISMATCH
    label_selector = selector.get("labelSelector")
    if label_selector is None:
        return PRIORITY_MATCH_ALL
    if _label_selector_matches(label_selector, meta.get("labels")):
        return PRIORITY_MATCH_LABEL_SELECTOR
    return PRIORITY_MISMATCH


def selectors_priority(resource: Mapping[str, Any], selectors: Iterable[Mapping[str, Any]]) -> int:
    """The highest priority among ``selectors`` for ``resource`` (0 when none matches)."""
    return max((selector_priority(resource, s) for s in selectors), default=PRIORITY_MISMATCH)


def _zones_match(operator: str, values: Sequence[str], zones: Sequence[str]) -> bool:
    if operator == "In":
        return bool(zones) and all(zone in values for zone in zones)
    if operator == "NotIn":
        return not any(zone in values for zone in zones)
    if operator == "Exists":
        return bool(zones)
    if operator == "DoesNotExist":
        return not zones
    return False


def _field_matches(operator: str, values: Sequence[str], field: str | None) -> bool:
    if operator == "In":
        return field is not None and field in values
    if operator == "NotIn":
        return field is None or field not in values
    if operator == "Exists":
        return field is not None
    if operator == "DoesNotExist":
        return field is None
    if operator in ("Gt", "Lt") and len(values) == 1 and field is not None:
        try:
            left, right = int(field), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def _cluster_fields(spec: Mapping[str, Any]) -> dict[str, str]:
    return {key: str(spec[key]) for key in ("provider", "region") if spec.get(key)}


def _cluster_zones(spec: Mapping[str, Any]) -> list[str]:
    # spec.zone is the deprecated single-zone form of spec.zones.
    zones = spec.get("zones") or ([spec["zone"]] if spec.get("zone") else [])
    return [str(zone) for zone in zones]


def _fields_match(field_selector: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    fields = _cluster_fields(spec)
    for expression in field_selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), str(expression.get("operator", ""))
        values = [str(v) for v in expression.get("values") or []]
        if key == "zone":
            matched = _zones_match(operator, values, _cluster_zones(spec))
        else:
            matched = _field_matches(operator, values, fields.get(str(key)))
        if not matched:
            return False
    return True


def cluster_matches(cluster: Mapping[str, Any], affinity: Mapping[str, Any]) -> bool:
    """Whether the Cluster object satisfies the ClusterAffinity."""
    meta = _metadata(cluster)
    name = meta.get("name")
    if name in (affinity.get("exclude") or []):
        return False
    label_selector = affinity.get("labelSelector")
    if label_selector is not None and not _label_selector_matches(
        label_selector, meta.get("labels")
    ):
        return False
    field_selector = affinity.get("fieldSelector")
    if field_selector is not None and not _fields_match(field_selector, cluster.get("spec") or {}):
        return False
    names = affinity.get("clusterNames") or []
    return not names or name in names
