"""Withheld is why the dependencies distributor leaves a dependency out, and the Event saying so.

Two kinds of dependency are never requested nor attached, while the binding's other dependencies
propagate as usual:

- one of a kind this process may not read (``DEPENDENCY_FORBIDDEN_REASON``): RBAC refuses a read
  verb on it (as the detector's access reviews found, ``controllers.permittedkinds``, or as the
  apiserver answered). Karmada's distributor reads dependencies through informers, so it needs
  list and watch on their kinds; the least-privilege role of deploy/ does not grant Secrets
  (deploy/overlays/propagate-secrets does). An attached binding made
  earlier for it is kept as it is: a permission taken away does not delete member copies;
- one in a reserved namespace (``DEPENDENCY_RESERVED_REASON``): karmada-system, the cluster
  namespace (karmada-cluster, or the one ``--cluster-namespace`` names: the member credentials),
  the execution namespaces and kube-*; the detector never propagates templates there either.

Each is reported by a Warning Event on the independent binding, once per generation of the
binding (``WithheldEvents``): the distributor reconciles the binding again on every placement
change and on events of its other dependencies, and the same warning each time would only be noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controllers.api import is_reserved_namespace
from controllers.interpreter import DependentObjectReference
from controllers.permittedkinds import Denial
from reconcile import EventRecorder, Obj, name_of, namespace_of, uid_of

__all__ = [
    "DEPENDENCY_FORBIDDEN_REASON",
    "DEPENDENCY_RESERVED_REASON",
    "Withheld",
    "WithheldEvents",
    "describe",
    "forbidden",
    "reserved",
]

DEPENDENCY_FORBIDDEN_REASON: Final = "DependencyForbidden"
DEPENDENCY_RESERVED_REASON: Final = "DependencyInReservedNamespace"
_GUIDE: Final = 'docs/operations.md, "Propagating Secrets"'


@dataclass(frozen=True)
class Withheld:
    """A dependency left out: the Event reason and what the message says about it."""

    ref: DependentObjectReference
    reason: str
    why: str


def describe(ref: DependentObjectReference) -> str:
    """``Secret ns/web-secret``, or ``ConfigMap selected by {...} in ns`` for a selector."""
    if ref.name:
        where = f"{ref.namespace}/" if ref.namespace else ""
        return f"{ref.kind} {where}{ref.name}"
    return f"{ref.kind} selected by {ref.label_selector} in {ref.namespace or 'the cluster scope'}"


def forbidden(ref: DependentObjectReference, denial: Denial) -> Withheld:
    """``ref``, of a kind RBAC does not let this process read."""
    why = (
        f"{describe(ref)} ({ref.api_version}) is not propagated: RBAC does not allow "
        f"{denial.permission()} to this controller-manager (list and watch are needed on the "
        f"kind in every namespace; see {_GUIDE}); it is picked up within a discovery round "
        "of the permission being granted"
    )
    return Withheld(ref, DEPENDENCY_FORBIDDEN_REASON, why)


def reserved(ref: DependentObjectReference, cluster_namespace: str) -> Withheld | None:
    """``ref`` when its namespace is reserved (or the cluster namespace), else None."""
    namespace = ref.namespace
    if not namespace or not (is_reserved_namespace(namespace) or namespace == cluster_namespace):
        return None
    why = f"{describe(ref)} is not propagated: {namespace} is a reserved namespace"
    return Withheld(ref, DEPENDENCY_RESERVED_REASON, why)


def _generation(binding: Mapping[str, Any]) -> Any:
    return (binding.get("metadata") or {}).get("generation")


@dataclass
class WithheldEvents:
    """Emits each binding's withheld dependencies as Warning Events, once per generation."""

    recorder: EventRecorder
    _reported: dict[tuple[str, str], tuple[str, Any, frozenset[Withheld]]] = field(
        default_factory=dict
    )

    def report(self, binding: Obj, withheld: Iterable[Withheld]) -> None:
        """Warn about what ``binding`` withholds, unless this generation was warned already."""
        key = (namespace_of(binding), name_of(binding))
        found = frozenset(withheld)
        if not found:
            self._reported.pop(key, None)
            return
        stamp = (uid_of(binding), _generation(binding))
        before = self._reported.get(key)
        already = before[2] if before is not None and before[:2] == stamp else frozenset()
        self._reported[key] = (*stamp, already | found)
        fresh = sorted(found - already, key=lambda w: (w.reason, w.why))
        for reason in sorted({w.reason for w in fresh}):
            message = "; ".join(w.why for w in fresh if w.reason == reason)
            self.recorder.event(binding, "Warning", reason, message)

    def forget(self, namespace: str, name: str) -> None:
        """Drop what was reported for a binding that is gone or no longer propagates deps."""
        self._reported.pop((namespace, name), None)
