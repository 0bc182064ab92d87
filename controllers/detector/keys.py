"""Keys are the detector's work-queue Requests: an object of any kind, named with its kind.

A ``reconcile.Request`` carries only a namespace and a name, but the detector reconciles objects of
every kind through one queue (templates, PropagationPolicies, ClusterPropagationPolicies), so the
kind travels in the name: ``<Kind>.<version>.<group>/<name>``, the ``resource.version.group``
form kubectl uses, with the kind instead of the plural. Object names never contain "/", kinds and
versions never contain ".", so the encoding is unambiguous.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconcile import GVK, Request, name_of, namespace_of

__all__ = ["ObjectRef"]


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One object: its kind, namespace ("" when cluster-scoped) and name."""

    gvk: GVK
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        """The reference of an object that carries apiVersion and kind.

        Raises:
            ValueError: the object has no apiVersion or kind.
        """
        return cls(GVK.of(obj), namespace_of(obj), name_of(obj))

    @classmethod
    def from_request(cls, request: Request) -> ObjectRef:
        """Decode a Request made by ``request()``.

        Raises:
            ValueError: the Request's name does not carry a kind.
        """
        qualifier, separator, name = request.name.partition("/")
        kind, _, rest = qualifier.partition(".")
        version, dot, group = rest.partition(".")
        if not separator or not name or not kind or not version or not dot:
            raise ValueError(f"request {request} does not name a kind (<Kind>.<version>.<group>/)")
        return cls(GVK(group, version, kind), request.namespace, name)

    def request(self) -> Request:
        """The Request that names this object and its kind."""
        gvk = self.gvk
        return Request(f"{gvk.kind}.{gvk.version}.{gvk.group}/{self.name}", self.namespace)

    def __str__(self) -> str:
        key = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.gvk.kind} {key}"
