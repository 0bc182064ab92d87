"""Dependentoverrides holds back templates whose policy names OverridePolicies that do not exist.

A (Cluster)PropagationPolicy's ``dependentOverrides`` lists OverridePolicies that must exist
before it takes effect (Karmada: "the resource template would not be propagated until all the
dependent OverridePolicies present"), so that no member ever runs the template without its
overrides. For a namespaced template they are OverridePolicies of its namespace; for a
cluster-scoped one, ClusterOverridePolicies. ``missing_overrides`` names those not there yet;
``Waiting`` remembers which templates wait for which override, so that the creation of that
override enqueues exactly them (``requests``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controllers.api import CLUSTER_OVERRIDE_POLICY_GVK, OVERRIDE_POLICY_GVK, propagation_spec
from controllers.detector.keys import ObjectRef
from reconcile import CachedClient, NotFound, Obj, Request, name_of, namespace_of

__all__ = ["Waiting", "dependent_overrides", "missing_overrides"]


def dependent_overrides(policy: Mapping[str, Any]) -> list[str]:
    """The override names ``policy`` waits for (its ``dependentOverrides``, de-duplicated)."""
    names = propagation_spec(policy).get("dependentOverrides") or []
    return sorted({str(name) for name in names if name})


async def missing_overrides(
    client: CachedClient, policy: Mapping[str, Any], template: Mapping[str, Any]
) -> list[str]:
    """The dependent overrides of ``policy`` that do not exist for ``template`` (read from the
    cache).

    Raises:
        ApiError: a read failed.
    """
    namespace = namespace_of(template)
    gvk = OVERRIDE_POLICY_GVK if namespace else CLUSTER_OVERRIDE_POLICY_GVK
    missing = []
    for name in dependent_overrides(policy):
        try:
            await client.get(gvk, name, namespace=namespace or None)
        except NotFound:
            missing.append(name)
    return missing


class Waiting:
    """Which templates wait for which (namespace, override name); "" is cluster-wide."""

    def __init__(self) -> None:
        self._by_override: dict[tuple[str, str], set[ObjectRef]] = {}

    def wait(self, ref: ObjectRef, names: Iterable[str]) -> None:
        """Remember that ``ref`` waits for the overrides ``names`` of its namespace."""
        for name in names:
            self._by_override.setdefault((ref.namespace, name), set()).add(ref)

    def done(self, ref: ObjectRef) -> None:
        """``ref`` waits for nothing any more."""
        for key in [k for k, refs in self._by_override.items() if ref in refs]:
            self._by_override[key].discard(ref)
            if not self._by_override[key]:
                del self._by_override[key]

    def requests(self, override: Obj) -> list[Request]:
        """The templates waiting for ``override`` (a created OverridePolicy or
        ClusterOverridePolicy), as detector Requests."""
        refs = self._by_override.get((namespace_of(override), name_of(override)), set())
        return [ref.request() for ref in sorted(refs, key=str)]
