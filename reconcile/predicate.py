"""Predicate filters events before they reach a controller's event handlers.

A predicate is any callable ``(Event) -> bool``. The built-ins mirror controller-runtime's:
generation, resourceVersion, labels and annotations changed (updates only; other events pass),
plus ``and_``, ``or_`` and ``not_`` to combine them. Generation changes on spec changes only, so
``generation_changed`` is the usual filter for controllers that write status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reconcile.event import Event, EventType
from reconcile.labels import Selector

__all__ = [
    "Predicate",
    "and_",
    "annotations_changed",
    "generation_changed",
    "label_selector",
    "labels_changed",
    "not_",
    "or_",
    "resource_version_changed",
]

Predicate = Callable[[Event], bool]


def _meta(obj: dict[str, Any] | None, field: str) -> Any:
    return (obj or {}).get("metadata", {}).get(field)


def _update_changed(field: str) -> Predicate:
    def changed(event: Event) -> bool:
        if event.type is not EventType.UPDATE:
            return True
        return bool(_meta(event.old, field) != _meta(event.obj, field))

    changed.__name__ = f"{field}_changed"
    return changed


generation_changed: Predicate = _update_changed("generation")
"""Pass updates that changed metadata.generation (spec changes); pass all other events."""

resource_version_changed: Predicate = _update_changed("resourceVersion")
"""Pass updates that changed metadata.resourceVersion (drops resyncs); pass all other events."""

labels_changed: Predicate = _update_changed("labels")
"""Pass updates that changed metadata.labels; pass all other events."""

annotations_changed: Predicate = _update_changed("annotations")
"""Pass updates that changed metadata.annotations; pass all other events."""


def label_selector(selector: Selector) -> Predicate:
    """Pass events whose object's labels match ``selector``."""

    def matches(event: Event) -> bool:
        return selector.matches_object(event.obj)

    return matches


def and_(*predicates: Predicate) -> Predicate:
    """Pass events every predicate passes."""
    return lambda event: all(p(event) for p in predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Pass events any predicate passes."""
    return lambda event: any(p(event) for p in predicates)


def not_(predicate: Predicate) -> Predicate:
    """Pass events the predicate rejects."""
    return lambda event: not predicate(event)
