"""Types are the operations of the resource interpreter, the values they return and their errors.

An *operation* is one question Karmada asks about an object of some kind (how many replicas? is it
healthy? what does it depend on?); the names are Karmada's (``InterpretReplica``, ...). Results are
small frozen values with ``to_dict``/``from_dict`` in the camelCase JSON of Karmada's API, so
backends that speak JSON (Lua, webhooks, the CLI) convert at one place. Errors::

    InterpreterError              any failure to interpret an object
    ├── NotSupported              no source handles this kind and operation
    ├── InvalidCustomization      a ResourceInterpreterCustomization that cannot be used
    └── LuaError                  a Lua customization failed; .script names it
        ├── LuaSyntaxError        the script does not load (bad syntax, missing function)
        ├── LuaRuntimeError       the script raised, or used something the sandbox forbids
        ├── LuaReturnTypeError    the script returned the wrong type or shape
        ├── LuaLimitExceeded      a call hit a limit: memory, result size; the message names it
        │   └── LuaTimeout        one call ran past the time limit
        └── LuaWorkerDied         the worker process running the call died (the signal named)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from reconcile import GVK, ExpectedError, Quantity, QuantityError

__all__ = [
    "AggregatedStatusItem",
    "Component",
    "DependentObjectReference",
    "InterpreterError",
    "InvalidCustomization",
    "LuaBusy",
    "LuaError",
    "LuaLimitExceeded",
    "LuaQuarantined",
    "LuaReturnTypeError",
    "LuaRuntimeError",
    "LuaSyntaxError",
    "LuaTimeout",
    "LuaWorkerDied",
    "NodeClaim",
    "NotSupported",
    "Operation",
    "ReplicaRequirements",
    "ResourceHealth",
    "QUANTITY_CACHE_SIZE",
    "parse_quantity",
    "unique_dependencies",
]


class Operation(StrEnum):
    """One interpreter operation; the value is Karmada's name for it."""

    INTERPRET_REPLICA = "InterpretReplica"
    REVISE_REPLICA = "ReviseReplica"
    RETAIN = "Retain"
    AGGREGATE_STATUS = "AggregateStatus"
    INTERPRET_STATUS = "InterpretStatus"
    INTERPRET_HEALTH = "InterpretHealth"
    INTERPRET_DEPENDENCY = "InterpretDependency"
    INTERPRET_COMPONENT = "InterpretComponent"


class ResourceHealth(StrEnum):
    """The health of a resource in one member cluster, as Karmada reports it."""

    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"
    UNKNOWN = "Unknown"


class InterpreterError(ExpectedError):
    """An object could not be interpreted (a customization or webhook failed or refused)."""

    reason = "InterpretationFailed"


class NotSupported(InterpreterError):
    """No interpreter source handles this kind and operation."""

    def __init__(self, gvk: GVK, operation: Operation) -> None:
        self.gvk = gvk
        self.operation = operation
        super().__init__(f"no interpreter handles {operation} for {gvk.api_version} {gvk.kind}")


class InvalidCustomization(InterpreterError):
    """A ResourceInterpreterCustomization is malformed; the message says which field."""


class IdentityChanged(InterpreterError):
    """A ReviseReplica or Retain result changed the object's apiVersion, kind, namespace or name
    (refused: a customization or webhook must not turn one object into another)."""

    def __init__(self, operation: Operation, change: str) -> None:
        self.operation = operation
        self.change = change
        super().__init__(f"{operation} changed the object's identity ({change}); refused")


class LuaError(InterpreterError):
    """A Lua customization failed; ``script`` names it (customization/operation)."""

    def __init__(self, script: str, message: str) -> None:
        self.script = script
        self.detail = message
        super().__init__(f"{script}: {message}")


class LuaSyntaxError(LuaError):
    """The script does not compile, or does not define the function its operation calls."""


class LuaRuntimeError(LuaError):
    """The script raised an error or called a forbidden function."""


class LuaReturnTypeError(LuaError):
    """The script returned a value of the wrong type or shape for its operation."""


class LuaLimitExceeded(LuaError):
    """A call was stopped by a limit (memory, result size); the message names the limit."""


class LuaTimeout(LuaLimitExceeded):
    """One call of the script ran longer than the time limit and was stopped."""


class LuaWorkerDied(LuaError):
    """The worker process running the call died or did not start; the message says how."""


class LuaBusy(LuaError):
    """No interpreter worker was free within the call's queue deadline (retry later)."""


class LuaQuarantined(LuaError):
    """The script was not run: its calls kept running out of time, so it is held back a while."""


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be an object, got {type(value).__name__}")
    return value


def _optional_mapping(value: Any, what: str) -> dict[str, Any] | None:
    return None if value is None else dict(_mapping(value, what))


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _integer(value: Any, what: str) -> int:
    # Lua and JSON numbers may arrive as floats; Karmada truncates them to int32.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, got {type(value).__name__}")
    if not -(2**31) <= value < 2**31:  # an int32 in Karmada's API (NaN fails this too)
        raise ValueError(f"{what} must be a 32-bit integer, got {value}")
    return int(value)


def _string_map(value: Any, what: str) -> dict[str, str] | None:
    if value is None:
        return None
    result = dict(_mapping(value, what))
    for key, item in result.items():
        if not isinstance(item, str):
            raise ValueError(f"{what}.{key} must be a string, got {type(item).__name__}")
    return result


QUANTITY_CACHE_SIZE: Final = 1024
"""Quantity strings ``parse_quantity`` remembers (all forgotten at once when it is full)."""

_parsed: dict[str, tuple[Quantity, str]] = {}


def parse_quantity(raw: Any) -> tuple[Quantity, str]:
    """``Quantity.parse(raw)`` and its canonical text; a string seen before is not parsed again.

    Objects repeat the same few quantities ("500m", "512Mi") in every call, and parsing is a
    regular expression plus big-integer arithmetic. Only short strings are remembered (a number
    is not: ``True == 1``), and failures never are.

    Raises:
        QuantityError: ``raw`` is not a quantity.
    """
    if raw.__class__ is str:
        known = _parsed.get(raw)
        if known is not None:
            return known
    quantity = Quantity.parse(raw)
    parsed = (quantity, str(quantity))
    if raw.__class__ is str and len(raw) <= 64:
        if len(_parsed) >= QUANTITY_CACHE_SIZE:
            _parsed.clear()
        _parsed[raw] = parsed
    return parsed


def _quantities(value: Any, what: str) -> dict[str, str] | None:
    if value is None:
        return None
    result: dict[str, str] = {}
    for name, raw in _mapping(value, what).items():
        try:
            result[name] = parse_quantity(raw)[1]
        except QuantityError as err:
            raise ValueError(f"{what}.{name}: {err}") from err
    return result


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """Where a replica may run: node selector, tolerations, required node affinity."""

    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    hard_node_affinity: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, empty fields left out."""
        out: dict[str, Any] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        if self.hard_node_affinity:
            out["hardNodeAffinity"] = dict(self.hard_node_affinity)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> NodeClaim:
        """Parse the JSON form. Raises: ValueError: a field has the wrong type."""
        data = _mapping(data, "nodeClaim")
        tolerations = data.get("tolerations")
        if tolerations is not None and not isinstance(tolerations, list):
            raise ValueError("nodeClaim.tolerations must be a list")
        return cls(
            node_selector=_string_map(data.get("nodeSelector"), "nodeClaim.nodeSelector"),
            tolerations=[dict(_mapping(t, "toleration")) for t in tolerations or []] or None,
            hard_node_affinity=_optional_mapping(
                data.get("hardNodeAffinity"), "nodeClaim.hardNodeAffinity"
            ),
        )


@dataclass(frozen=True, slots=True)
class ReplicaRequirements:
    """What one replica needs: node placement and resources (canonical quantity strings)."""

    node_claim: NodeClaim | None = None
    resource_request: dict[str, str] | None = None
    namespace: str = ""
    priority_class_name: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form of Karmada's ReplicaRequirements, empty fields left out."""
        out: dict[str, Any] = {}
        claim = self.node_claim.to_dict() if self.node_claim else {}
        if claim:
            out["nodeClaim"] = claim
        if self.resource_request:
            out["resourceRequest"] = dict(self.resource_request)
        if self.namespace:
            out["namespace"] = self.namespace
        if self.priority_class_name:
            out["priorityClassName"] = self.priority_class_name
        return out

    @classmethod
    def from_dict(cls, data: Any) -> ReplicaRequirements:
        """Parse the JSON form; quantities may be strings or numbers.

        Raises:
            ValueError: a field has the wrong type or a quantity does not parse.
        """
        data = _mapping(data, "replicaRequirements")
        claim = data.get("nodeClaim")
        return cls(
            node_claim=None if claim is None else NodeClaim.from_dict(claim),
            resource_request=_quantities(data.get("resourceRequest"), "resourceRequest"),
            namespace=_string(data.get("namespace"), "namespace"),
            priority_class_name=_string(data.get("priorityClassName"), "priorityClassName"),
        )


@dataclass(frozen=True, slots=True)
class AggregatedStatusItem:
    """The status of a resource in one member cluster, as collected into its binding."""

    cluster_name: str
    status: dict[str, Any] | None = None
    applied: bool = False
    applied_message: str = ""
    health: ResourceHealth | None = None

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form (Karmada's AggregatedStatusItem), empty fields left out."""
        out: dict[str, Any] = {"clusterName": self.cluster_name}
        if self.status is not None:
            out["status"] = self.status
        if self.applied:
            out["applied"] = True
        if self.applied_message:
            out["appliedMessage"] = self.applied_message
        if self.health:
            out["health"] = str(self.health)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> AggregatedStatusItem:
        """Parse the JSON form. Raises: ValueError: a field has the wrong type or value."""
        data = _mapping(data, "status item")
        applied = data.get("applied", False)
        if not isinstance(applied, bool):
            raise ValueError("status item applied must be a boolean")
        health = data.get("health")
        return cls(
            # Karmada's own testdata leaves it out at times; its Go type then holds "".
            cluster_name=_string(data.get("clusterName"), "clusterName"),
            status=_optional_mapping(data.get("status"), "status"),
            applied=applied,
            applied_message=_string(data.get("appliedMessage"), "appliedMessage"),
            health=ResourceHealth(health) if health else None,
        )


@dataclass(frozen=True, slots=True)
class DependentObjectReference:
    """An object another object depends on: by name, or by label selector within a namespace."""

    api_version: str
    kind: str
    namespace: str = ""
    name: str = ""
    label_selector: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, empty fields left out."""
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.name:
            out["name"] = self.name
        if self.label_selector is not None:
            out["labelSelector"] = self.label_selector
        return out

    @classmethod
    def from_dict(cls, data: Any) -> DependentObjectReference:
        """Parse and validate like Karmada: apiVersion and kind set, and a name or a selector.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        data = _mapping(data, "dependency")
        ref = cls(
            api_version=_string(data.get("apiVersion"), "apiVersion"),
            kind=_string(data.get("kind"), "kind"),
            namespace=_string(data.get("namespace"), "namespace"),
            name=_string(data.get("name"), "name"),
            label_selector=_optional_mapping(data.get("labelSelector"), "labelSelector"),
        )
        if not ref.api_version or not ref.kind:
            raise ValueError("dependency needs apiVersion and kind")
        if not ref.name and ref.label_selector is None:
            raise ValueError(f"dependency {ref.kind} needs a name or a labelSelector")
        return ref


def unique_dependencies(
    dependencies: Iterable[DependentObjectReference],
) -> list[DependentObjectReference]:
    """``dependencies`` without repeats, first occurrences in order (Karmada keeps a set)."""
    seen: set[str] = set()
    unique = []
    for dependency in dependencies:
        key = json.dumps(dependency.to_dict(), sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(dependency)
    return unique


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a multi-template workload (e.g. a Flink job manager): replicas and needs."""

    name: str
    replicas: int
    replica_requirements: ReplicaRequirements | None = None

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, empty fields left out."""
        out: dict[str, Any] = {"name": self.name, "replicas": self.replicas}
        requirements = self.replica_requirements.to_dict() if self.replica_requirements else {}
        if requirements:
            out["replicaRequirements"] = requirements
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Component:
        """Parse the JSON form. Raises: ValueError: a field is missing or has the wrong type."""
        data = _mapping(data, "component")
        name = _string(data.get("name"), "component name")
        if not name:
            raise ValueError("component needs a name")
        requirements = data.get("replicaRequirements")
        return cls(
            name=name,
            replicas=_integer(data.get("replicas", 0), f"component {name} replicas"),
            replica_requirements=(
                None if requirements is None else ReplicaRequirements.from_dict(requirements)
            ),
        )
