"""Backend is the contract every interpreter source implements: native, Lua, bundled, webhook.

The ``Interpreter`` facade asks its sources in precedence order whether they ``handle`` a kind and
operation, and calls the first that does. A source answers one method per operation:

=====================  ==============================  ===========================================
operation              method                          returns
=====================  ==============================  ===========================================
InterpretReplica       ``get_replicas(obj)``           replicas and what each needs (or None)
ReviseReplica          ``revise_replica(obj, n)``      a copy of obj set to n replicas
Retain                 ``retain(desired, observed)``   desired, keeping the member's own values
AggregateStatus        ``aggregate_status(obj, items)``  a copy of obj with the status aggregated
InterpretStatus        ``reflect_status(obj)``         the status to collect, None when none
InterpretHealth        ``interpret_health(obj)``       whether the member object is healthy
InterpretDependency    ``get_dependencies(obj)``       objects to propagate along with obj
InterpretComponent     ``get_components(obj)``         the parts of a multi-template workload
=====================  ==============================  ===========================================

Rules for implementers (a webhook client included):

- Objects are plain dicts (decoded JSON). Never change an argument; return new objects the caller
  owns (they may share nothing with the arguments).
- A method is only called after ``handles(GVK.of(obj), operation)`` returned True; called anyway,
  it raises ``NotSupported``.
- Failures raise an ``InterpreterError`` subclass carrying a message that names the source (for a
  webhook: its configuration name, URL and the response's status message).
- ``handles`` is synchronous and cheap: it runs for every object on every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    Operation,
    ReplicaRequirements,
)
from reconcile import GVK

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """A source of interpretations for some kinds and operations (see the module docstring)."""

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        """Whether this source interprets ``operation`` for objects of kind ``gvk``."""
        ...

    async def get_replicas(self, obj: dict[str, Any]) -> tuple[int, ReplicaRequirements | None]:
        """InterpretReplica: the desired replicas of a template and each replica's requirements."""
        ...

    async def revise_replica(self, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
        """ReviseReplica: a copy of ``obj`` with its replicas set to ``replicas``."""
        ...

    async def retain(self, desired: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
        """Retain: ``desired`` keeping the fields member-cluster controllers own in ``observed``."""
        ...

    async def aggregate_status(
        self, obj: dict[str, Any], items: Sequence[AggregatedStatusItem]
    ) -> dict[str, Any]:
        """AggregateStatus: a copy of the template ``obj`` with the members' statuses combined."""
        ...

    async def reflect_status(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """InterpretStatus: the status of a member object worth collecting, None when none."""
        ...

    async def interpret_health(self, obj: dict[str, Any]) -> bool:
        """InterpretHealth: whether a member object is healthy."""
        ...

    async def get_dependencies(self, obj: dict[str, Any]) -> list[DependentObjectReference]:
        """InterpretDependency: the objects ``obj`` needs propagated along with it."""
        ...

    async def get_components(self, obj: dict[str, Any]) -> list[Component]:
        """InterpretComponent: the components (pod templates) of a multi-template workload."""
        ...
