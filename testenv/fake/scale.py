"""Scale is the autoscaling/v1 view of an object that a kind's scale subresource serves.

Its replicas, status replicas and label selector are read and written through the kind's
``ScalePaths``, as the apiserver does for built-in workloads and CRDs with ``subresources.scale``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconcile.gvk import GVK
from reconcile.objects import Obj, deep_copy
from testenv.fake.errors import no_subresource
from testenv.fake.objects import object_key, path_get, path_set
from testenv.fake.registry import FakeKind, Registry
from testenv.fake.store import Store
from testenv.fake.strategy import check_version, replace, stored_object

__all__ = ["scalable", "scale_of", "write_scale"]


def _label_selector_string(spec: Mapping[str, Any]) -> str:
    """A LabelSelector object in its string form, sorted by key as Kubernetes prints it."""
    clauses = [(key, f"{key}={value}") for key, value in (spec.get("matchLabels") or {}).items()]
    for expression in spec.get("matchExpressions") or ():
        key, operator = expression["key"], expression["operator"]
        values = ",".join(sorted(expression.get("values") or ()))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }[operator]
        clauses.append((key, text))
    return ",".join(text for _, text in sorted(clauses))


def scale_of(kind: FakeKind, obj: Mapping[str, Any]) -> Obj:
    """The autoscaling/v1 Scale of an object, read through the kind's scale paths."""
    paths = kind.scale
    assert paths is not None  # callers check the kind has a scale subresource
    meta = obj["metadata"]
    kept = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    replicas = path_get(obj, paths.spec_replicas)
    status: dict[str, Any] = {"replicas": path_get(obj, paths.status_replicas) or 0}
    if paths.label_selector:
        selector = path_get(obj, paths.label_selector)
        if isinstance(selector, Mapping):
            selector = _label_selector_string(selector)
        if selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {field: meta[field] for field in kept if field in meta},
        # Go's Scale omits zero replicas from the spec (omitempty), never from the status.
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


def scalable(
    registry: Registry, store: Store, gvk: GVK, name: str, namespace: str | None
) -> tuple[FakeKind, Obj]:
    """The kind and the stored object of a scale request.

    Raises:
        NoKindMatch: the kind is not served.
        NotFound: no such object, or the kind has no scale subresource.
    """
    kind = registry.kind(gvk)
    if kind.scale is None:
        raise no_subresource()
    return kind, stored_object(store, kind, object_key(kind, name, namespace))


def write_scale(
    store: Store, kind: FakeKind, gvk: GVK, stored: Obj, scale: Mapping[str, Any], dry_run: bool
) -> Obj:
    """Set the replicas a Scale asks for on the stored object; returns the new Scale."""
    assert kind.scale is not None
    check_version(kind, stored, scale, required=False)
    new = deep_copy(stored)
    path_set(new, kind.scale.spec_replicas, (scale.get("spec") or {}).get("replicas", 0))
    return scale_of(kind, replace(store, kind, gvk, stored, new, dry_run))
