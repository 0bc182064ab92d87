"""Aware is what the manager tells about clusters as they are engaged and disengaged.

sigs.k8s.io/multicluster-runtime's ``multicluster.Aware``: every runnable of the manager that has
these two methods (a ``Controller`` has them; so does an ``EngagedSource``) hears of each engaged
cluster after its cache started, and of its disengagement before its cache stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from reconcile.cluster import Cluster

__all__ = ["Aware"]


@runtime_checkable
class Aware(Protocol):
    """Something that starts work in a cluster when it is engaged and stops it when it goes."""

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Start what runs in ``cluster`` (called ``name``); must not wait for its sync."""
        ...

    async def disengage(self, name: str) -> None:
        """Stop what runs in the cluster ``name``; unknown names are ignored."""
        ...
