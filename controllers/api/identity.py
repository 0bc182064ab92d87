"""Identity is what a manifest keeps from its resource template: apiVersion, kind, namespace, name.

Overrides, ReviseReplica and Retain may change anything else. Changing the identity would let a
tenant's namespaced OverridePolicy (or a Lua script, or an interpreter webhook) turn a ConfigMap
into a ClusterRoleBinding to cluster-admin, written with the join ServiceAccount's rights, or
write into another namespace. Karmada does not check this; we refuse such a result (issue #26).
The whole apiVersion is pinned, group and version: a version is a different schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

__all__ = ["IDENTITY_POINTERS", "Identity", "identity_change", "identity_of"]

IDENTITY_POINTERS: Final = ("/apiVersion", "/kind", "/metadata/namespace", "/metadata/name")
"""The JSON Pointers of the identity fields, for admission checks of patch paths."""


class Identity(NamedTuple):
    """A manifest's identity; a missing field is ``None`` (a cluster-scoped namespace)."""

    api_version: object
    kind: object
    namespace: object
    name: object


def identity_of(obj: Mapping[str, Any]) -> Identity:
    """The identity of ``obj`` (any field may be missing or of the wrong type)."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return Identity(
        obj.get("apiVersion"), obj.get("kind"), metadata.get("namespace"), metadata.get("name")
    )


def identity_change(before: Identity, after: Mapping[str, Any]) -> str | None:
    """What changed the identity ``before`` in ``after`` (e.g. ``kind 'ConfigMap' ->
    'ClusterRoleBinding'``), None when nothing did."""
    now = identity_of(after)
    changes = [
        f"{pointer[1:].replace('/', '.')} {old!r} -> {new!r}"
        for pointer, old, new in zip(IDENTITY_POINTERS, before, now, strict=True)
        if old != new
    ]
    return "; ".join(changes) or None
