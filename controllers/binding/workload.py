"""Workload builds what a binding sends to one member cluster: the manifest and the Work holding it.

``build_workload`` follows Karmada's binding controller (ensureWork, CreateOrUpdateWork):

1. copy the template, or the already revised copy the caller got from ReviseReplica;
2. apply the override policies for the cluster (``overrides``);
3. label it with the binding id and annotate it with the binding's namespace/name, and with the
   state a failover preserved for this cluster (``preserved_labels``, see
   controllers.eviction.preservation);
4. label it ``karmada.io/managed=true``; annotate the template uid, the Work name and namespace,
   and ``work.karmada.io/conflict-resolution`` (the template's own valid annotation wins over the
   binding's ``conflictResolution``: Overwrite → overwrite, otherwise abort);
5. prune it (``prune``);
6. record the annotation and label keys it carries in ``resourcetemplate.karmada.io/
   managed-annotations`` and ``managed-labels`` so that keys removed later can be removed from the
   member too.

``build_work`` wraps the manifest in a Work in ``karmada-es-<cluster>`` named ``work_name``, with
the binding id label, the binding namespace/name, conflict-resolution and applied-overrides
annotations, the ``karmada.io/execution-controller`` finalizer, and ``suspendDispatching`` /
``preserveResourcesOnDeletion`` when the binding asks for them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    CONFLICT_RESOLUTION_ABORT,
    CONFLICT_RESOLUTION_ANNOTATION,
    CONFLICT_RESOLUTION_OVERWRITE,
    EXECUTION_CONTROLLER_FINALIZER,
    MANAGED_ANNOTATIONS_ANNOTATION,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    MANAGED_LABELS_ANNOTATION,
    OVERWRITE,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_TEMPLATE_GENERATION_ANNOTATION,
    RESOURCE_TEMPLATE_UID_ANNOTATION,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    binding_spec,
)
from controllers.binding.names import (
    binding_id_label,
    binding_id_of,
    execution_namespace,
    is_cluster_binding,
    work_name,
)
from controllers.binding.overrides import (
    AppliedOverride,
    applied_overrides_annotations,
    apply_overrides,
)
from controllers.binding.prune import prune_manifest
from reconcile import annotations_of, generation_of, name_of, namespace_of, uid_of
from reconcile.sharding import shard_labels

__all__ = [
    "ClusterWorkload",
    "build_work",
    "build_workload",
    "conflict_resolution_for",
    "record_managed_keys",
]


@dataclass(frozen=True)
class ClusterWorkload:
    """The manifest for one member cluster and the override rules applied to it."""

    cluster: str
    manifest: dict[str, Any]
    cluster_overrides: tuple[AppliedOverride, ...] = ()
    overrides: tuple[AppliedOverride, ...] = ()

    @property
    def work_name(self) -> str:
        """The name of the Work carrying the manifest."""
        return str(self.manifest["metadata"]["annotations"][WORK_NAME_ANNOTATION])

    @property
    def work_namespace(self) -> str:
        """The execution namespace of the cluster: ``karmada-es-<cluster>``."""
        return execution_namespace(self.cluster)


def conflict_resolution_for(template: Mapping[str, Any], binding: Mapping[str, Any]) -> str:
    """``overwrite`` or ``abort``: the template's valid annotation, else the binding's policy."""
    own = annotations_of(template).get(CONFLICT_RESOLUTION_ANNOTATION)
    if own in (CONFLICT_RESOLUTION_OVERWRITE, CONFLICT_RESOLUTION_ABORT):
        return str(own)
    if binding_spec(binding).get("conflictResolution") == OVERWRITE:
        return CONFLICT_RESOLUTION_OVERWRITE
    return CONFLICT_RESOLUTION_ABORT


def _binding_labels(binding: Mapping[str, Any]) -> dict[str, str]:
    binding_id = binding_id_of(binding)
    return {binding_id_label(binding): binding_id} if binding_id else {}


def _binding_annotations(binding: Mapping[str, Any]) -> dict[str, str]:
    if is_cluster_binding(binding):
        return {CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION: name_of(binding)}
    return {
        RESOURCE_BINDING_NAMESPACE_ANNOTATION: namespace_of(binding),
        RESOURCE_BINDING_NAME_ANNOTATION: name_of(binding),
    }


def _merge(obj: dict[str, Any], field: str, values: Mapping[str, str]) -> None:
    metadata = obj.setdefault("metadata", {})
    metadata[field] = {**(metadata.get(field) or {}), **values}


def record_managed_keys(obj: dict[str, Any]) -> None:
    """Record the label and annotation keys ``obj`` carries in the managed-labels and
    managed-annotations annotations, so keys removed later are removed from the member too."""
    metadata = obj.setdefault("metadata", {})
    annotations = dict(metadata.get("annotations") or {})
    recorded = {MANAGED_ANNOTATIONS_ANNOTATION, MANAGED_LABELS_ANNOTATION}
    annotations[MANAGED_ANNOTATIONS_ANNOTATION] = ",".join(sorted(recorded | set(annotations)))
    annotations[MANAGED_LABELS_ANNOTATION] = ",".join(sorted(metadata.get("labels") or {}))
    metadata["annotations"] = annotations


def build_workload(
    template: Mapping[str, Any],
    binding: Mapping[str, Any],
    cluster: Mapping[str, Any],
    *,
    revised: Mapping[str, Any] | None = None,
    cluster_override_policies: Sequence[Mapping[str, Any]] = (),
    override_policies: Sequence[Mapping[str, Any]] = (),
    preserved_labels: Mapping[str, str] | None = None,
) -> ClusterWorkload:
    """The manifest of ``template`` for the member ``cluster`` (a Cluster object).

    ``revised`` is the template after ReviseReplica for this cluster, when the caller revised it.
    ``preserved_labels`` are the labels a failover's eviction task preserved for this cluster.
    Neither ``template`` nor ``revised`` is changed.

    Raises:
        OverrideError: a matching override rule cannot be applied.
    """
    source = copy.deepcopy(dict(revised if revised is not None else template))
    result = apply_overrides(
        source,
        cluster,
        cluster_override_policies=cluster_override_policies,
        override_policies=override_policies,
    )
    manifest = result.manifest
    _merge(manifest, "labels", _binding_labels(binding))
    _merge(manifest, "annotations", _binding_annotations(binding))
    _merge(manifest, "labels", preserved_labels or {})
    cluster_name = name_of(cluster)
    _merge(manifest, "labels", {MANAGED_LABEL: MANAGED_LABEL_VALUE})
    work_annotations = {
        RESOURCE_TEMPLATE_UID_ANNOTATION: uid_of(template),
        WORK_NAME_ANNOTATION: work_name(
            str(manifest.get("kind", "")), name_of(manifest), namespace_of(manifest)
        ),
        WORK_NAMESPACE_ANNOTATION: execution_namespace(cluster_name),
        CONFLICT_RESOLUTION_ANNOTATION: conflict_resolution_for(template, binding),
    }
    if generation_of(template):
        # Members report it back; the template's observedGeneration moves only once all caught up.
        work_annotations[RESOURCE_TEMPLATE_GENERATION_ANNOTATION] = str(generation_of(template))
    _merge(manifest, "annotations", work_annotations)
    manifest = prune_manifest(manifest)
    record_managed_keys(manifest)
    return ClusterWorkload(cluster_name, manifest, result.cluster_overrides, result.overrides)


def _suspended(binding: Mapping[str, Any], cluster: str) -> bool:
    suspension = binding_spec(binding).get("suspension") or {}
    if suspension.get("dispatching"):
        return True
    on_clusters = (suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or []
    return cluster in on_clusters


def build_work(binding: Mapping[str, Any], workload: ClusterWorkload) -> dict[str, Any]:
    """The Work that carries ``workload`` to its cluster on behalf of ``binding``."""
    manifest_annotations = workload.manifest["metadata"]["annotations"]
    annotations = {
        **_binding_annotations(binding),
        CONFLICT_RESOLUTION_ANNOTATION: manifest_annotations[CONFLICT_RESOLUTION_ANNOTATION],
        **applied_overrides_annotations(workload.cluster_overrides, workload.overrides),
    }
    spec: dict[str, Any] = {"workload": {"manifests": [copy.deepcopy(workload.manifest)]}}
    if _suspended(binding, workload.cluster):
        spec["suspendDispatching"] = True
    if binding_spec(binding).get("preserveResourcesOnDeletion"):
        spec["preserveResourcesOnDeletion"] = True
    return {
        "apiVersion": WORK_GVK.api_version,
        "kind": WORK_GVK.kind,
        "metadata": {
            "name": workload.work_name,
            "namespace": workload.work_namespace,
            # A new Work is on its binding's shard (same key) from its first event.
            "labels": {**_binding_labels(binding), **shard_labels(binding)},
            "annotations": annotations,
            "finalizers": [EXECUTION_CONTROLLER_FINALIZER],
        },
        "spec": spec,
    }
