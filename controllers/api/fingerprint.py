"""Fingerprint says whether a binding was built from what its template is now, whatever the
template's resourceVersion says.

Karmada's detector records the template's resourceVersion in the binding's
``spec.resource.resourceVersion`` and refreshes it on every change of the template; the change
bumps the binding's generation, which makes the scheduler and the binding-status controller write
the binding again, with their Events. A sharded controller-manager (``--shards``) changes
templates too: moving a key relabels its template, which then has a new resourceVersion and
nothing else new — its shard label is never sent to a member. Refreshing the binding for that
would double the writes of every move. So the binding also carries the template's fingerprint (a
hash of the template without status, resourceVersion, generation, managedFields and sharding
labels), and a template whose fingerprint is the binding's counts as the version it was built from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from reconcile import resource_version_of
from reconcile.sharding import without_sharding_labels

__all__ = [
    "TEMPLATE_FINGERPRINT_ANNOTATION",
    "built_from",
    "recorded_fingerprint",
    "template_fingerprint",
]

TEMPLATE_FINGERPRINT_ANNOTATION: Final = "resourcebinding.reconcile.io/template-fingerprint"
_VOLATILE: Final = ("resourceVersion", "generation", "managedFields")


def template_fingerprint(template: Mapping[str, Any]) -> str:
    """A hash of what of ``template`` reaches its Works (not status, resourceVersion,
    generation, managedFields, nor shard and drain labels)."""
    metadata = {k: v for k, v in (template.get("metadata") or {}).items() if k not in _VOLATILE}
    if "labels" in metadata:
        metadata["labels"] = without_sharding_labels(metadata["labels"] or {})
    content = {k: v for k, v in template.items() if k not in ("metadata", "status")}
    content["metadata"] = metadata
    encoded = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(encoded, digest_size=16).hexdigest()


def recorded_fingerprint(binding: Mapping[str, Any]) -> str | None:
    """The fingerprint of the template ``binding`` was built from, if it records one."""
    annotations = (binding.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(TEMPLATE_FINGERPRINT_ANNOTATION)
    return str(value) if value else None


def built_from(binding: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    """Whether ``binding`` was built from ``template`` as it is: its resourceVersion, or (changed
    since only in what never reaches a member) its fingerprint."""
    resource = ((binding.get("spec") or {}).get("resource") or {}) if binding else {}
    recorded = resource.get("resourceVersion")
    if recorded and recorded == resource_version_of(template):
        return True
    fingerprint = recorded_fingerprint(binding)
    return fingerprint is not None and fingerprint == template_fingerprint(template)
