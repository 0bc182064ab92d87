"""Binding holds the pure functions the binding controller turns a binding into Works with.

For each target cluster of a ResourceBinding or ClusterResourceBinding, ``build_workload`` copies
the resource template (or its ReviseReplica result), applies the override policies for that
cluster (``apply_overrides``), adds the labels and annotations that tie the copy to its binding
and Work, and prunes what the host apiserver filled in (``prune_manifest``); ``build_work`` wraps
it in the Work for ``karmada-es-<cluster>``. Names follow Karmada exactly (``binding_name``,
``work_name``), so Karmada and these controllers find each other's objects. Nothing here does
I/O; the controller lists policies and clusters and writes the Works.
"""

from __future__ import annotations

from controllers.binding.images import ImageReference, override_image, parse_image
from controllers.binding.names import (
    binding_id_label,
    binding_id_of,
    binding_name,
    cluster_of_execution_namespace,
    execution_namespace,
    fnv32a,
    is_cluster_binding,
    safe_encode_string,
    work_name,
)
from controllers.binding.overriders import OVERRIDER_ORDER, OverriderError, apply_overriders
from controllers.binding.overrides import (
    AppliedOverride,
    OverrideError,
    OverrideResult,
    applied_overrides_annotations,
    applied_overrides_json,
    apply_overrides,
    matching_rules,
)
from controllers.binding.prune import prune_manifest
from controllers.binding.selectors import (
    PRIORITY_MATCH_ALL,
    PRIORITY_MATCH_LABEL_SELECTOR,
    PRIORITY_MATCH_NAME,
    PRIORITY_MISMATCH,
    cluster_matches,
    selector_priority,
    selectors_priority,
)
from controllers.binding.workload import (
    ClusterWorkload,
    build_work,
    build_workload,
    conflict_resolution_for,
)

__all__ = [
    "AppliedOverride",
    "ClusterWorkload",
    "ImageReference",
    "OVERRIDER_ORDER",
    "OverrideError",
    "OverrideResult",
    "OverriderError",
    "PRIORITY_MATCH_ALL",
    "PRIORITY_MATCH_LABEL_SELECTOR",
    "PRIORITY_MATCH_NAME",
    "PRIORITY_MISMATCH",
    "applied_overrides_annotations",
    "applied_overrides_json",
    "apply_overriders",
    "apply_overrides",
    "binding_id_label",
    "binding_id_of",
    "binding_name",
    "build_work",
    "build_workload",
    "cluster_matches",
    "cluster_of_execution_namespace",
    "conflict_resolution_for",
    "execution_namespace",
    "fnv32a",
    "is_cluster_binding",
    "matching_rules",
    "override_image",
    "parse_image",
    "prune_manifest",
    "safe_encode_string",
    "selector_priority",
    "selectors_priority",
    "work_name",
]
