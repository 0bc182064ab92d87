"""Aggregate collects the state of a binding's resource in each member, from the binding's Works.

One item per Work that is not being deleted, in the binding's ``status.aggregatedStatus``, sorted by
cluster name, as Karmada's AggregateResourceBindingWorkStatus assembles them:

- not applied (Applied condition False, Unknown or absent): ``{clusterName, applied: false,
  appliedMessage, health: Unknown}``;
- applied: ``{clusterName, applied: true, status, health}``, status and health from the Work's
  ``manifestStatuses`` entry for the resource (health Unknown while none was reflected yet).

The condition FullyApplied is True when every cluster in ``spec.clusters`` has an applied item
(and the binding is scheduled to at least one cluster).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from controllers.api import (
    WORK_APPLIED_CONDITION,
    AggregatedStatusItem,
    ManifestStatus,
    ObjectReference,
    cluster_of_execution_namespace,
    manifests_of,
    target_clusters,
    work_status,
)
from reconcile import GVK, get_condition, is_being_deleted, name_of, namespace_of

__all__ = [
    "FULLY_APPLIED_FAILED_MESSAGE",
    "FULLY_APPLIED_SUCCESS_MESSAGE",
    "aggregated_items",
    "fully_applied",
    "manifest_index",
]

FULLY_APPLIED_SUCCESS_MESSAGE: Final = "All works have been successfully applied"
FULLY_APPLIED_FAILED_MESSAGE: Final = (
    "Failed to apply all works, see status.aggregatedStatus for details"
)


def manifest_index(work: Mapping[str, Any], resource: ObjectReference) -> int | None:
    """The ordinal of the binding's resource among a Work's manifests, None when absent."""
    wanted = (
        resource.get("apiVersion"),
        resource.get("kind"),
        resource.get("namespace") or "",
        resource.get("name"),
    )
    for ordinal, manifest in enumerate(manifests_of(work)):
        found = (manifest.get("apiVersion"), manifest.get("kind"))
        if (*found, namespace_of(manifest), name_of(manifest)) == wanted:
            return ordinal
    return None


def _entry_for(
    work: Mapping[str, Any], resource: ObjectReference, ordinal: int | None
) -> ManifestStatus | None:
    try:
        gvk = GVK.of(resource)
    except ValueError:
        return None
    wanted = {
        "ordinal": ordinal,
        "group": gvk.group,
        "version": gvk.version,
        "kind": gvk.kind,
        "namespace": resource.get("namespace") or "",
        "name": resource.get("name"),
    }
    for entry in work_status(work).get("manifestStatuses") or []:
        identifier: Mapping[str, Any] = entry.get("identifier") or {}
        found = {key: identifier.get(key, "") for key in wanted}
        if found == wanted:
            return entry
    return None


def _item(work: Mapping[str, Any], cluster: str, resource: ObjectReference) -> AggregatedStatusItem:
    condition = get_condition(work, WORK_APPLIED_CONDITION)
    if condition is None or condition.get("status") != "True":
        item = AggregatedStatusItem(clusterName=cluster, applied=False, health="Unknown")
        message = (condition or {}).get("message")
        if message:
            item["appliedMessage"] = message
        return item
    item = AggregatedStatusItem(clusterName=cluster, applied=True, health="Unknown")
    entry = _entry_for(work, resource, manifest_index(work, resource))
    if entry is not None:
        if entry.get("status") is not None:
            item["status"] = entry["status"]
        item["health"] = entry.get("health") or "Unknown"
    return item


def aggregated_items(
    works: Iterable[Mapping[str, Any]], resource: ObjectReference
) -> list[AggregatedStatusItem]:
    """The aggregatedStatus of a binding whose resource is ``resource``, from its Works."""
    items = []
    for work in works:
        cluster = cluster_of_execution_namespace(namespace_of(work))
        if cluster is None or is_being_deleted(work):
            continue
        items.append(_item(work, cluster, resource))
    return sorted(items, key=lambda item: item.get("clusterName", ""))


def fully_applied(binding: Mapping[str, Any], items: Sequence[AggregatedStatusItem]) -> bool:
    """Whether every cluster the binding is scheduled to has an applied item."""
    targets = {target.get("name") for target in target_clusters(binding)}
    applied = {item.get("clusterName") for item in items if item.get("applied")}
    return bool(targets) and targets <= applied
