"""Attached is how Karmada's dependencies distributor names and builds attached bindings.

A binding with ``propagateDeps: true`` is an *independent* binding; each object its template
depends on (InterpretDependency) gets an *attached* ResourceBinding in the same namespace
(pkg/dependenciesdistributor):

- named like any binding of that object (``lower(<name>-<kind>)``), with a controller owner
  reference to the object and the binding controller's finalizer;
- labelled ``resourcebinding.karmada.io/depended-by-<key>`` = the independent binding's permanent
  id, one label per independent binding, where ``<key>`` is Karmada's binding reference key
  (``binding_reference_key``);
- ``spec.requiredBy`` lists each independent binding (namespace, name) with its ``clusters``: the
  attached binding goes wherever any of them goes (the binding controller takes the union);
- ``spec.conflictResolution`` and ``spec.preserveResourcesOnDeletion`` follow the independent
  binding, unless the attached binding has a placement of its own (a policy claimed the object).

The independent binding records what it depends on, de-duplicated and sorted, as JSON in its
annotation ``resourcebinding.karmada.io/dependencies``; an object event is matched against it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from controllers.api import (
    BINDING_CONTROLLER_FINALIZER,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    binding_spec,
)
from controllers.binding import binding_name, fnv32a, safe_encode_string
from controllers.interpreter import DependentObjectReference
from reconcile import (
    annotations_of,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
    resource_version_of,
    selector_from_label_selector,
)

__all__ = [
    "DEPENDED_BY_LABEL_PREFIX",
    "DEPENDENCIES_ANNOTATION",
    "DISTRIBUTOR_FINALIZER",
    "attached_binding",
    "binding_reference_key",
    "dependencies_json",
    "depended_by_label",
    "is_attached_only",
    "matches",
    "merged_attached",
    "recorded_dependencies",
    "released",
    "unique_dependencies",
]

DEPENDED_BY_LABEL_PREFIX: Final = "resourcebinding.karmada.io/depended-by-"
DEPENDENCIES_ANNOTATION: Final = "resourcebinding.karmada.io/dependencies"
DISTRIBUTOR_FINALIZER: Final = "karmada.io/binding-dependencies-distributor"
"""On independent bindings: their attached bindings are released before they go."""


def binding_reference_key(namespace: str, name: str) -> str:
    """Karmada's ``names.GenerateBindingReferenceKey``: FNV-32a of ``<ns>/<name>`` (``<name>``
    without a namespace) as hashutil.DeepHashObject writes a string (spew ``%#v``:
    ``(string)"<ns>/<name>"``), printed in decimal and mapped to the safe alphabet."""
    key = f"{namespace}/{name}" if namespace else name
    digest = fnv32a(f"(string){json.dumps(key)}".encode())
    return safe_encode_string(str(digest))


def depended_by_label(namespace: str, name: str) -> str:
    """The label an attached binding carries for the independent binding ``namespace/name``."""
    return DEPENDED_BY_LABEL_PREFIX + binding_reference_key(namespace, name)


def _sort_key(ref: DependentObjectReference) -> tuple[str, str, str, str, str]:
    selector = json.dumps(ref.label_selector, sort_keys=True) if ref.label_selector else ""
    return (ref.api_version, ref.kind, ref.namespace, ref.name, selector)


def unique_dependencies(
    dependencies: Iterable[DependentObjectReference],
) -> list[DependentObjectReference]:
    """``dependencies`` without repeats, sorted by apiVersion, kind, namespace, name (Karmada
    de-duplicates; two containers mounting one ConfigMap name it once)."""
    return sorted({_sort_key(ref): ref for ref in dependencies}.values(), key=_sort_key)


def dependencies_json(dependencies: Sequence[DependentObjectReference]) -> str:
    """The ``resourcebinding.karmada.io/dependencies`` annotation value (compact JSON)."""
    return json.dumps([ref.to_dict() for ref in dependencies], separators=(",", ":"))


def recorded_dependencies(binding: Mapping[str, Any]) -> list[DependentObjectReference]:
    """What an independent binding's annotation says it depends on; [] when absent or garbled
    (Karmada logs and ignores a value it cannot read: retrying would not fix it)."""
    raw = annotations_of(binding).get(DEPENDENCIES_ANNOTATION)
    if not raw:
        return []
    try:
        return [DependentObjectReference.from_dict(item) for item in json.loads(raw)]
    except (ValueError, TypeError):
        return []


def matches(ref: DependentObjectReference, obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` (with apiVersion and kind) is the object ``ref`` names or selects."""
    if (ref.api_version, ref.kind, ref.namespace) != (
        obj.get("apiVersion"),
        obj.get("kind"),
        namespace_of(obj),
    ):
        return False
    if ref.name:
        return ref.name == name_of(obj)
    try:
        selector = selector_from_label_selector(ref.label_selector or {})
    except ValueError:
        return False
    return selector.matches(labels_of(obj))


def _snapshot(independent: Mapping[str, Any]) -> dict[str, Any]:
    clusters = copy.deepcopy(list(binding_spec(independent).get("clusters") or []))
    return {
        "namespace": namespace_of(independent),
        "name": name_of(independent),
        "clusters": clusters,
    }


def attached_binding(independent: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    """The attached binding of the dependency ``obj`` as ``independent`` alone wants it."""
    spec = binding_spec(independent)
    permanent_id = labels_of(independent).get(RESOURCE_BINDING_PERMANENT_ID_LABEL, "")
    resource = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "namespace": namespace_of(obj),
        "name": name_of(obj),
        "resourceVersion": resource_version_of(obj),
    }
    attached_spec: dict[str, Any] = {
        "resource": {k: v for k, v in resource.items() if v},
        "requiredBy": [_snapshot(independent)],
    }
    for field in ("conflictResolution", "preserveResourcesOnDeletion"):
        if spec.get(field) is not None:
            attached_spec[field] = spec.get(field)
    return {
        "apiVersion": RESOURCE_BINDING_GVK.api_version,
        "kind": RESOURCE_BINDING_GVK.kind,
        "metadata": {
            "name": binding_name(str(obj.get("kind", "")), name_of(obj)),
            "namespace": namespace_of(independent),
            "labels": {
                depended_by_label(namespace_of(independent), name_of(independent)): (permanent_id)
            },
            "ownerReferences": [owner_reference(obj, controller=True)],
            "finalizers": [BINDING_CONTROLLER_FINALIZER],
        },
        "spec": attached_spec,
    }


def is_attached_only(binding: Mapping[str, Any]) -> bool:
    """Whether the binding exists only for its dependents: no placement of its own."""
    return binding_spec(binding).get("placement") is None


def merged_attached(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """``existing`` with ``desired``'s snapshot merged into ``requiredBy`` (replacing the same
    independent binding's), its label added and its resource reference; the policy fields
    follow only when the binding has no placement of its own (Karmada's
    createOrUpdateAttachedBinding)."""
    merged = copy.deepcopy(dict(existing))
    metadata, wanted = merged.setdefault("metadata", {}), desired["metadata"]
    metadata["labels"] = {**(metadata.get("labels") or {}), **wanted["labels"]}
    spec, new = merged.setdefault("spec", {}), desired["spec"]
    snapshot = new["requiredBy"][0]
    required = [
        s
        for s in spec.get("requiredBy") or []
        if (s.get("namespace"), s.get("name")) != (snapshot["namespace"], snapshot["name"])
    ]
    spec["requiredBy"] = sorted(
        [*required, snapshot], key=lambda s: (s.get("namespace", ""), s.get("name", ""))
    )
    spec["resource"] = new["resource"]
    if is_attached_only(existing):
        for field in ("conflictResolution", "preserveResourcesOnDeletion"):
            if field in new:
                spec[field] = new[field]
            else:
                spec.pop(field, None)
    return merged


def released(attached: Mapping[str, Any], namespace: str, name: str) -> dict[str, Any]:
    """``attached`` no longer required by the independent binding ``namespace/name``: its
    label and its ``requiredBy`` entry removed (Karmada's
    removeScheduleResultFromAttachedBindings)."""
    result = copy.deepcopy(dict(attached))
    labels = result.setdefault("metadata", {}).get("labels") or {}
    labels.pop(depended_by_label(namespace, name), None)
    spec = result.setdefault("spec", {})
    spec["requiredBy"] = [
        s
        for s in spec.get("requiredBy") or []
        if (s.get("namespace"), s.get("name")) != (namespace, name)
    ]
    if is_attached_only(attached):
        spec.pop("preserveResourcesOnDeletion", None)
    return result
