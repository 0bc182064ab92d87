"""Bindings builds the ResourceBinding the detector keeps for a claimed resource template.

A namespaced template gets a ResourceBinding in its namespace, a cluster-scoped one a
ClusterResourceBinding, named ``lower(<name>-<kind>)``. As Karmada's detector (ApplyPolicy) does,
the binding carries the policy's claim metadata, its own permanent id (a uuid, kept once set), the
binding controller's finalizer and a controller owner reference to the template; its spec gets the
template reference (with the resourceVersion it was built from), the replicas and replica
requirements the interpreter reported, and the policy's placement, propagateDeps, schedulerName,
failover, conflictResolution, preserveResourcesOnDeletion and suspension (the binding's own
``suspension.scheduling`` is kept). Everything else, above all ``spec.clusters`` (the scheduler's),
is left as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from controllers.api import (
    BINDING_CONTROLLER_FINALIZER,
    CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER,
    CLUSTER_RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_GVK,
    TEMPLATE_FINGERPRINT_ANNOTATION,
    binding_spec,
    conflict_resolution_of,
    propagation_spec,
    recorded_fingerprint,
    template_fingerprint,
)
from controllers.binding import binding_id_label, binding_name, is_cluster_binding
from controllers.detector.matching import apply_changes, claim_changes
from reconcile import (
    GVK,
    add_finalizer,
    name_of,
    namespace_of,
    owner_reference,
    resource_version_of,
    uid_of,
)
from reconcile.sharding import shard_labels

__all__ = ["binding_coordinates", "desired_binding", "resource_reference"]

# Spec fields copied from the policy as they are; absent in the policy means absent here.
_COPIED: Final = ("propagateDeps", "schedulerName", "failover", "preserveResourcesOnDeletion")


def binding_coordinates(template: Mapping[str, Any]) -> tuple[GVK, str, str]:
    """The kind, namespace ("" for a ClusterResourceBinding) and name of a template's binding."""
    name = binding_name(str(template.get("kind", "")), name_of(template))
    namespace = namespace_of(template)
    gvk = RESOURCE_BINDING_GVK if namespace else CLUSTER_RESOURCE_BINDING_GVK
    return gvk, namespace, name


def resource_reference(template: Mapping[str, Any]) -> dict[str, str]:
    """The binding's ``spec.resource`` for ``template``."""
    reference = {
        "apiVersion": str(template.get("apiVersion", "")),
        "kind": str(template.get("kind", "")),
        "namespace": namespace_of(template),
        "name": name_of(template),
        "uid": uid_of(template),
        "resourceVersion": resource_version_of(template),
    }
    return {key: value for key, value in reference.items() if value}


def _reference(
    template: Mapping[str, Any], existing: Mapping[str, Any] | None, binding: dict[str, Any]
) -> dict[str, str]:
    """``resource_reference``, fingerprinted in ``binding``; a template that changed since
    ``existing`` was built only in what never reaches a member (a shard label) keeps the
    resourceVersion recorded (``fingerprint``): no new generation, no writes that follow one."""
    reference = resource_reference(template)
    fingerprint = template_fingerprint(template)
    if existing is not None and recorded_fingerprint(existing) == fingerprint:
        recorded = (binding_spec(existing).get("resource") or {}).get("resourceVersion")
        if recorded:
            reference["resourceVersion"] = recorded
    binding["metadata"].setdefault("annotations", {})[TEMPLATE_FINGERPRINT_ANNOTATION] = fingerprint
    return reference


def _empty_binding(gvk: GVK, namespace: str, name: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": metadata, "spec": {}}


def _put(spec: dict[str, Any], field: str, value: Any) -> None:
    if value is None:
        spec.pop(field, None)
    else:
        spec[field] = copy.deepcopy(value)


def _suspension(current: Mapping[str, Any] | None, policy: Mapping[str, Any] | None) -> Any:
    # Karmada's MergePolicySuspension: dispatching comes from the policy, scheduling stays.
    merged = {k: v for k, v in (current or {}).items() if k == "scheduling"}
    merged.update(policy or {})
    return merged or None


def _identity(binding: dict[str, Any], new_id: str) -> None:
    labels = binding["metadata"].setdefault("labels", {})
    label = binding_id_label(binding)
    if not labels.get(label):
        labels[label] = new_id
    cluster = is_cluster_binding(binding)
    add_finalizer(
        binding,
        CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER if cluster else BINDING_CONTROLLER_FINALIZER,
    )


def desired_binding(
    template: Mapping[str, Any],
    policy: Mapping[str, Any],
    policy_id: str,
    *,
    replicas: int,
    requirements: Mapping[str, Any] | None,
    existing: Mapping[str, Any] | None,
    new_id: str,
) -> dict[str, Any]:
    """The binding ``template`` should have under ``policy``: ``existing`` (not changed) with the
    detector's fields brought up to date, or a new one whose permanent id is ``new_id``.

    Raises:
        ValueError: the template has no uid (it was never created).
    """
    gvk, namespace, name = binding_coordinates(template)
    binding = copy.deepcopy(dict(existing)) if existing else _empty_binding(gvk, namespace, name)
    if existing is None:
        # A new binding is on its template's shard (same key) from its first event.
        binding["metadata"].setdefault("labels", {}).update(shard_labels(template))
    apply_changes(binding, claim_changes(policy, policy_id))
    _identity(binding, new_id)
    binding["metadata"]["ownerReferences"] = [owner_reference(template, controller=True)]
    source = propagation_spec(policy)
    spec = binding.setdefault("spec", {})
    spec["resource"] = _reference(template, existing, binding)
    _put(spec, "replicas", replicas if replicas > 0 else None)
    _put(spec, "replicaRequirements", requirements or None)
    _put(spec, "placement", source.get("placement") or {})
    for field in _COPIED:
        _put(spec, field, source.get(field))
    spec["conflictResolution"] = conflict_resolution_of(source)
    _put(spec, "suspension", _suspension(spec.get("suspension"), source.get("suspension")))
    return binding
