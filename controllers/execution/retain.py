"""Retain merges a Work's manifest onto the member object it updates, keeping what the member owns.

Controllers and users in a member cluster add finalizers, ownerReferences, labels and annotations
to the objects Karmada propagates; an update must not wipe them. Like Karmada's object watcher
(retainClusterFields), ``retain_member_fields`` returns the manifest with the member object's
resourceVersion (the update is optimistic), finalizers and ownerReferences, plus every member label
and annotation the manifest does not set, except the keys Karmada itself put there earlier and has
since dropped (recorded in ``resourcetemplate.karmada.io/managed-labels`` and
``managed-annotations`` on the member object). The interpreter's Retain hook runs after this, in
the controller.

``release_patch`` is the other direction: the merge patch that strips every Karmada label and
annotation (and the shard label a sharded controller-manager adds) from a member object, for Works
deleted with ``preserveResourcesOnDeletion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controllers.api import (
    CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION,
    CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    CONFLICT_RESOLUTION_ANNOTATION,
    MANAGED_ANNOTATIONS_ANNOTATION,
    MANAGED_LABEL,
    MANAGED_LABELS_ANNOTATION,
    PROPAGATION_POLICY_NAME_ANNOTATION,
    PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
    PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    RESOURCE_TEMPLATE_UID_ANNOTATION,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
)
from controllers.execution.drift import APPLIED_DIGEST_ANNOTATION
from controllers.interpreter.native_status import GENERATION_ANNOTATION
from reconcile import Obj, annotations_of, deep_copy, labels_of
from reconcile.sharding import without_sharding_labels

__all__ = ["KARMADA_ANNOTATIONS", "KARMADA_LABELS", "release_patch", "retain_member_fields"]

WORK_PERMANENT_ID_LABEL: Final = "work.karmada.io/permanent-id"

KARMADA_LABELS: Final = (
    MANAGED_LABEL,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    WORK_PERMANENT_ID_LABEL,
    PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
)
"""Labels Karmada puts on member objects (stripped when a preserved object is released)."""

KARMADA_ANNOTATIONS: Final = (
    APPLIED_DIGEST_ANNOTATION,
    MANAGED_ANNOTATIONS_ANNOTATION,
    MANAGED_LABELS_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDING_NAME_ANNOTATION,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_TEMPLATE_UID_ANNOTATION,
    GENERATION_ANNOTATION,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    CONFLICT_RESOLUTION_ANNOTATION,
    PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
    PROPAGATION_POLICY_NAME_ANNOTATION,
    CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION,
)
"""Annotations Karmada puts on member objects (stripped when a preserved object is released)."""


def _recorded(observed: Mapping[str, Any], record: str) -> set[str]:
    return {key for key in annotations_of(observed).get(record, "").split(",") if key}


def _merge_keys(
    wanted: Mapping[str, str], found: Mapping[str, str], dropped: set[str]
) -> dict[str, str]:
    """``wanted`` plus the member's own keys; keys Karmada set before and dropped since go."""
    merged = dict(wanted)
    for key, value in found.items():
        if key not in merged and key not in dropped:
            merged[key] = value
    return merged


def _set_or_drop(meta: dict[str, Any], field: str, value: Any) -> None:
    if value:
        meta[field] = value
    else:
        meta.pop(field, None)


def retain_member_fields(desired: Mapping[str, Any], observed: Mapping[str, Any]) -> Obj:
    """A copy of ``desired`` to update ``observed`` with, keeping what the member owns."""
    merged: Obj = deep_copy(dict(desired))
    meta: dict[str, Any] = merged.setdefault("metadata", {})
    seen: Mapping[str, Any] = observed.get("metadata") or {}
    meta["resourceVersion"] = seen.get("resourceVersion")
    _set_or_drop(meta, "finalizers", deep_copy(seen.get("finalizers")))
    _set_or_drop(meta, "ownerReferences", deep_copy(seen.get("ownerReferences")))
    labels, annotations = labels_of(desired), annotations_of(desired)
    dropped_labels = _recorded(observed, MANAGED_LABELS_ANNOTATION) - set(labels)
    dropped_annotations = _recorded(observed, MANAGED_ANNOTATIONS_ANNOTATION) - set(annotations)
    _set_or_drop(meta, "labels", _merge_keys(labels, labels_of(observed), dropped_labels))
    _set_or_drop(
        meta,
        "annotations",
        _merge_keys(annotations, annotations_of(observed), dropped_annotations),
    )
    return merged


def release_patch(observed: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch removing Karmada's labels and annotations, and a sharded replica's shard
    label; None when there are none."""
    found = labels_of(observed)
    labels: dict[str, None] = {key: None for key in KARMADA_LABELS if key in found}
    labels.update((key, None) for key in found.keys() - without_sharding_labels(found).keys())
    annotations = {key: None for key in KARMADA_ANNOTATIONS if key in annotations_of(observed)}
    metadata: dict[str, Any] = {}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata} if metadata else None
