"""Kube is the Python side of the Lua ``kube`` library that customization scripts ``require``.

Karmada's scripts call four helpers; they take and return plain values here (the Lua runtime
converts tables), with Karmada's argument rules:

- ``accuratePodRequirements(podTemplate)`` → ReplicaRequirements of one replica, or nil
- ``getPodDependencies(podTemplate, namespace)`` → the ConfigMaps, Secrets, ServiceAccount and PVCs
  the template names (namespace nil means ``default``)
- ``getResourceQuantity(quantity)`` → the quantity as a number (``"250m"`` → 0.25; nil → 0)
- ``resourceAdd(q1, q2, ...)`` → the sum as a canonical quantity string (nil counts as zero)

Bad arguments raise ``KubeError`` with the message the script's caller sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controllers.interpreter.pods import pod_dependencies, replica_requirements
from controllers.interpreter.types import InterpreterError
from reconcile import Quantity, QuantityError

__all__ = [
    "KUBE_FUNCTIONS",
    "KubeError",
    "accurate_pod_requirements",
    "get_pod_dependencies",
    "get_resource_quantity",
    "resource_add",
    "type_name",
]

KUBE_FUNCTIONS: Final = (
    "accuratePodRequirements",
    "getPodDependencies",
    "getResourceQuantity",
    "resourceAdd",
)
"""The names the ``kube`` module offers to scripts."""


class KubeError(Exception):
    """A ``kube`` helper was called with bad arguments; the message is for the script author."""


def type_name(value: Any) -> str:
    """The Lua type name of a value as scripts see it (Python containers are tables)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "table" if isinstance(value, Mapping | list) else type(value).__name__


def _bad_argument(position: int, function: str, expected: str, value: Any) -> KubeError:
    return KubeError(
        f"bad argument #{position} to '{function}' ({expected} expected, got {type_name(value)})"
    )


def _template(args: tuple[Any, ...], function: str, arity: int) -> Mapping[str, Any]:
    if len(args) != arity:
        raise KubeError(f"{function} takes {arity} argument(s), got {len(args)}")
    template = args[0]
    if not isinstance(template, Mapping):
        raise _bad_argument(1, function, "table", template)
    return template


def _quantity(value: Any, position: int, function: str) -> Quantity:
    if value is None:
        return Quantity()
    if not isinstance(value, str):
        raise _bad_argument(position, function, "string", value)
    try:
        return Quantity.parse(value)
    except QuantityError as err:
        raise KubeError(f"bad argument #{position} to '{function}' ({err})") from err


def accurate_pod_requirements(*args: Any) -> dict[str, Any] | None:
    """What one replica of a pod template needs, in ReplicaRequirements JSON; None if nothing.

    Raises:
        KubeError: not exactly one table argument, or a quantity in it does not parse.
    """
    template = _template(args, "accuratePodRequirements", 1)
    metadata = template.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    try:
        requirements = replica_requirements(
            template, namespace if isinstance(namespace, str) else ""
        )
    except InterpreterError as err:
        raise KubeError(f"accuratePodRequirements: {err}") from err
    return requirements.to_dict() if requirements else None


def get_pod_dependencies(*args: Any) -> list[dict[str, Any]]:
    """The objects a pod template refers to, as DependentObjectReference JSON (maybe empty).

    Raises:
        KubeError: not a table and a namespace (string, number or nil).
    """
    template = _template(args, "getPodDependencies", 2)
    namespace = args[1]
    if namespace is None:
        namespace = "default"
    elif isinstance(namespace, int | float) and not isinstance(namespace, bool):
        namespace = str(namespace)
    elif not isinstance(namespace, str):
        raise _bad_argument(2, "getPodDependencies", "string", namespace)
    spec = template.get("spec")
    return [
        ref.to_dict()
        for ref in pod_dependencies(spec if isinstance(spec, Mapping) else None, namespace)
    ]


def get_resource_quantity(*args: Any) -> float:
    """A quantity as an (approximate) number.

    Raises:
        KubeError: not exactly one argument, or it is not a quantity string or nil.
    """
    if len(args) != 1:
        raise KubeError(f"getResourceQuantity takes 1 argument, got {len(args)}")
    value = _quantity(args[0], 1, "getResourceQuantity").as_float()
    if value < 0:
        raise KubeError(f"getResourceQuantity: negative quantity {args[0]!r}")
    return value


def resource_add(*args: Any) -> str:
    """The sum of quantity strings (nil counts as zero), in canonical form.

    Raises:
        KubeError: an argument is not a quantity string or nil.
    """
    total = Quantity()
    for position, value in enumerate(args, start=1):
        total = total + _quantity(value, position, "resourceAdd")
    return str(total)
