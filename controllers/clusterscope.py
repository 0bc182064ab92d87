"""ClusterScope is which member Clusters a process serves: Push ones, or its own only.

Karmada splits the work on members between two processes by ``spec.syncMode``: the
karmada-controller-manager applies Works to, and reports the status of, Push clusters only
(its execution and work-status controllers filter Works with
``helper.WorkWithinPushClusterPredicate``, its cluster-status controller Clusters with a
predicate on ``Spec.SyncMode == Push``), and each karmada-agent does that for its own cluster
(``helper.NewClusterPredicateOnAgent(clusterName)``). The cluster controller (finalizer,
execution namespace, taints) and its health monitor run in the controller-manager for every
Cluster, whatever its mode.

``ClusterScope.push()`` is the controller-manager's scope, ``ClusterScope.only(name)`` an
agent's. The member provider engages only served Clusters (an unserved one needs no host
credentials and breaks no rule of ours), the cluster-status controller writes the status and
renews the Lease of served Clusters only, and the execution controller leaves the Works of
unserved ones to whoever serves them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controllers.api import SYNC_MODE_PULL, sync_mode
from reconcile import name_of

__all__ = ["ClusterScope"]


@dataclass(frozen=True)
class ClusterScope:
    """The Clusters one process serves (build with ``push()`` or ``only(name)``).

    Attributes:
        cluster: the one Cluster served, or None for every Cluster not in Pull mode.
    """

    cluster: str | None = None

    @classmethod
    def push(cls) -> ClusterScope:
        """Every Cluster whose ``spec.syncMode`` is not Pull (missing counts as Push): the
        controller-manager's."""
        return cls()

    @classmethod
    def only(cls, name: str) -> ClusterScope:
        """Just the Cluster ``name``, whatever its mode: an agent's, in its own member.

        Raises:
            ValueError: ``name`` is empty.
        """
        if not name:
            raise ValueError("a cluster scope needs a cluster name")
        return cls(name)

    def serves(self, cluster: Mapping[str, Any]) -> bool:
        """Whether this process serves the Cluster object ``cluster``."""
        if self.cluster is not None:
            return name_of(cluster) == self.cluster
        return sync_mode(cluster) != SYNC_MODE_PULL

    def serves_name(self, name: str, lookup: Callable[[str], Mapping[str, Any] | None]) -> bool:
        """Whether this process serves the Cluster ``name``; ``lookup`` finds the Cluster (a
        cached read), asked only when the name alone does not tell. A Cluster that is not found
        is served under ``push()``: nothing says it is Pull, and what is left of it (its Works'
        finalizers) is cleaned up as before."""
        if self.cluster is not None:
            return name == self.cluster
        cluster = lookup(name)
        return cluster is None or self.serves(cluster)

    def __str__(self) -> str:
        return "push clusters" if self.cluster is None else f"cluster {self.cluster}"
