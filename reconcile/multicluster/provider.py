"""Provider is where a multi-cluster manager learns which clusters exist, as they come and go.

This is sigs.k8s.io/multicluster-runtime's split: a provider knows a source of clusters (kubeconfig
files, Secrets holding kubeconfigs, a test environment, Karmada ``Cluster`` objects) and nothing of
controllers; the manager it drives (an ``Engager``) gives each engaged cluster its own client and
cache, starts them before the controllers' sources in that cluster, and stops them when the cluster
is disengaged. One provider's bad entry (an unreadable kubeconfig, a cluster out of reach) is that
cluster's problem: a provider logs it, skips it and keeps the others engaged.
"""

from __future__ import annotations

from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from reconcile.client.client import Client
from reconcile.client.config import ClusterConfig

__all__ = ["Engager", "Provider"]


class Engager(Protocol):
    """What a provider drives: the manager, which runs one client and cache per cluster name."""

    async def engage(
        self, name: str, config: ClusterConfig | None = None, *, client: Client | None = None
    ) -> None:
        """Engage the cluster ``name``, reached through ``config`` (or an already made ``client``).

        Returns once the cluster's cache runs and every multi-cluster controller started its
        sources there; it does not wait for their sync, so an unreachable cluster never holds up
        its provider or the others. Engaging a name again with another config replaces it.

        Raises:
            ValueError: ``name`` is empty (the manager's own cluster) or engaged by another
                provider.
        """
        ...

    async def disengage(self, name: str) -> None:
        """Stop the cluster ``name``: its controllers' sources, queued requests, cache, clients.

        Unknown names are ignored, so a provider may disengage what it is unsure it engaged.
        """
        ...


class Provider(Protocol):
    """A source of clusters that engages and disengages them in an ``Engager`` at run time."""

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage every cluster known now, report started, then follow changes until cancelled.

        A cluster the provider cannot use is logged (never its credentials) and skipped; the
        provider keeps running. On cancellation it need not disengage: the manager stops every
        cluster it engaged.
        """
        ...
