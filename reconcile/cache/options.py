"""Cacheoptions say which objects a cache holds of each kind, as controller-runtime's cache.Options.

``CacheOptions`` has defaults for every kind (namespaces, label selector, field selector,
transform) and ``by_object``: a ``ByObject`` per kind whose set fields override the defaults. The
cache opens one informer per kind and namespace in that scope, and nothing wider: reads through the
cache use those informers and are refused (``ScopeError``) when they ask for objects outside the
scope, another namespace or a list whose label selector does not imply the scope's, instead of
opening a second, wider informer (memory, and RBAC the controller may not have).

Metadata-only informers hold each object as a ``PartialObjectMetadata`` (apiVersion
``meta.k8s.io/v1``: the object's metadata only, no spec, data or status); the client asks the
apiserver for that form (``Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;
v=v1``), so neither the wire nor the cache carries the rest. ``as_partial_object_metadata``
converts a whole object, for servers (aggregated APIs, the fake) that answer with whole objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from reconcile.cache.informer import Transform, strip_managed_fields
from reconcile.gvk import GVK
from reconcile.labels import Requirement, parse_selector
from reconcile.objects import (
    METADATA_API_VERSION,
    PARTIAL_OBJECT_METADATA,
    as_partial_object_metadata,
)

__all__ = [
    "ALL_NAMESPACES",
    "METADATA_API_VERSION",
    "PARTIAL_OBJECT_METADATA",
    "ByObject",
    "CacheOptions",
    "KindScope",
    "ScopeError",
    "as_partial_object_metadata",
]

ALL_NAMESPACES: Final = ""
"""In ``namespaces``: every namespace (controller-runtime's ``cache.AllNamespaces``)."""


class ScopeError(ValueError):
    """A cache read asked for objects the cache was configured not to hold."""


def _metadata_then(transform: Transform | None) -> Transform:
    def transformed(obj: dict[str, Any]) -> dict[str, Any]:
        # Cheap for the apiserver's answers, which are metadata already.
        partial = obj if obj.get("kind") == PARTIAL_OBJECT_METADATA else None
        result = partial if partial is not None else as_partial_object_metadata(obj)
        return transform(result) if transform else result

    return transformed


@dataclass(frozen=True)
class ByObject:
    """One kind's scope; a field left None takes the cache's default.

    Attributes:
        namespaces: only these namespaces (``ALL_NAMESPACES`` for all); one informer each.
        label_selector: only objects with these labels (the string form, ``a=b,c in (d)``).
        field_selector: only objects with these fields (``metadata.name=x``).
        transform: applied to each object before it is stored.
        shard_selector: also only objects with these labels, but reads need not say so: a
            sharded replica's cache holds its shard (``reconcile.sharding``), and a list of
            it is a list of that shard by design, not a read outside the scope.
    """

    namespaces: tuple[str, ...] | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    transform: Transform | None = None
    shard_selector: str | None = None


@dataclass(frozen=True)
class CacheOptions:
    """What a cache holds: defaults for every kind, and ``by_object`` per kind.

    The default transform strips ``metadata.managedFields`` (controller-runtime leaves it to
    ``DefaultTransform: TransformStripManagedFields()``; here it is on unless replaced).
    """

    by_object: Mapping[GVK[Any], ByObject] = field(default_factory=dict)
    default_namespaces: tuple[str, ...] | None = None
    default_label_selector: str | None = None
    default_field_selector: str | None = None
    default_transform: Transform | None = strip_managed_fields

    def scope_of(self, gvk: GVK[Any]) -> KindScope:
        """The resolved scope of ``gvk``."""
        own = self.by_object.get(gvk, ByObject())
        namespaces = own.namespaces if own.namespaces is not None else self.default_namespaces
        if namespaces is not None and (not namespaces or ALL_NAMESPACES in namespaces):
            namespaces = None
        return KindScope(
            gvk,
            tuple(dict.fromkeys(namespaces)) if namespaces else None,
            own.label_selector or self.default_label_selector or None,
            own.field_selector or self.default_field_selector or None,
            own.transform if own.transform is not None else self.default_transform,
            own.shard_selector or None,
        )


@dataclass(frozen=True)
class KindScope:
    """One kind's resolved scope: which namespaces (None: all), selectors and transform."""

    gvk: GVK[Any]
    namespaces: tuple[str, ...] | None
    label_selector: str | None
    field_selector: str | None
    transform: Transform | None
    shard_selector: str | None = None

    @property
    def informer_label_selector(self) -> str | None:
        """The label selector the informers list and watch with: the scope's and the shard's."""
        both = [s for s in (self.label_selector, self.shard_selector) if s]
        return ",".join(both) or None

    def informer_namespaces(self, namespace: str | None) -> tuple[str | None, ...]:
        """The namespaces of the informers a read of ``namespace`` (None: all) uses."""
        if self.namespaces is None:
            return (None,)
        return (namespace,) if namespace else self.namespaces

    def transform_for(self, metadata_only: bool) -> Transform | None:
        """The transform of an informer of this scope (full objects or metadata)."""
        return _metadata_then(self.transform) if metadata_only else self.transform

    def check_namespace(self, verb: str, namespace: str | None, name: str = "") -> None:
        """Refuse a read in a namespace the cache does not hold.

        Raises:
            ScopeError: as controller-runtime's multi-namespace cache words it.
        """
        if namespace and self.namespaces is not None and namespace not in self.namespaces:
            what = f"{namespace}/{name}" if name else namespace
            raise ScopeError(
                f"unable to {verb}: {what} because of unknown namespace for the cache "
                f"({self.gvk.kind} is cached in {', '.join(self.namespaces)} only)"
            )

    def check_list(self, label_selector: str | None, field_selector: str | None) -> None:
        """Refuse a list whose selectors could match objects outside the scope.

        Raises:
            ScopeError: the label selector does not imply the scope's, or the field selector
                lacks one of the scope's clauses; the message says what to add.
        """
        if self.label_selector and not _implies(label_selector, self.label_selector):
            raise ScopeError(
                f"unable to list {self.gvk.kind} with labels {label_selector or '<all>'!r}: the "
                f"cache holds only those matching {self.label_selector!r}; include it in the "
                "selector, or read through the uncached client"
            )
        if self.field_selector:
            wanted = _field_clauses(self.field_selector)
            if not wanted <= _field_clauses(field_selector):
                raise ScopeError(
                    f"unable to list {self.gvk.kind} with fields {field_selector or '<all>'!r}: "
                    f"the cache holds only those matching {self.field_selector!r}; include it in "
                    "the selector, or read through the uncached client"
                )


def _implies(read: str | None, scope: str) -> bool:
    """Whether every object matching ``read`` matches ``scope`` (checked clause by clause)."""
    having = parse_selector(read).requirements
    return all(
        any(_clause_implies(r, s) for r in having) for s in parse_selector(scope).requirements
    )


def _clause_implies(read: Requirement, scope: Requirement) -> bool:
    if read.key != scope.key:
        return False
    positive = read.operator in ("=", "in")
    if scope.operator in ("=", "in"):
        return positive and read.values <= scope.values
    if scope.operator == "exists":
        return positive or read.operator == "exists"
    if scope.operator in ("!=", "notin"):
        if positive:
            return not read.values & scope.values
        return read.operator in ("!=", "notin") and scope.values <= read.values
    return read.operator == "doesnotexist"  # scope: doesnotexist


def _field_clauses(selector: str | None) -> set[str]:
    return {"".join(c.replace("==", "=").split()) for c in (selector or "").split(",") if c}
