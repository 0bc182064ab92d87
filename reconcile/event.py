"""Event is what a source observed about one object, before predicates and handlers see it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from reconcile.objects import Obj

__all__ = ["Event", "EventType"]


class EventType(Enum):
    """Create, update, delete (from informers) or generic (from anything else)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    GENERIC = "generic"


@dataclass(frozen=True, slots=True)
class Event:
    """One observation: ``obj`` is the new (or deleted) state, ``old`` the previous one on updates.

    ``initial`` marks creates that come from an informer's initial list (and resyncs), which get a
    low queue priority so that live changes are handled first after a restart. ``cluster`` names the
    cluster the object lives in, for multi-cluster controllers.
    """

    type: EventType
    obj: Obj
    old: Obj | None = None
    initial: bool = False
    cluster: str = ""
