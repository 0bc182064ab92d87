"""ReplicaSetReconciler labels every ReplicaSet with the number of Pods matching its template.

The controller-runtime example from the seed, in reconcile: it is *for* ReplicaSets and *owns*
Pods, so a Pod created, changed or deleted under a ReplicaSet enqueues that ReplicaSet. Each
reconcile reads the ReplicaSet and its Pods from the cache and writes the count as the label
``pod-count`` — only when it changed, so its own update does not loop.

Run it against any cluster: ``python -m examples.replicaset --kubeconfig ~/.kube/config``.
"""

from __future__ import annotations

from reconcile import (
    CachedClient,
    Manager,
    NotFound,
    Request,
    Result,
    controller_managed_by,
    labels_of,
)
from reconcile.api.apps.v1 import REPLICA_SET
from reconcile.api.core.v1 import POD

__all__ = ["POD_COUNT_LABEL", "REPLICASET", "ReplicaSetReconciler", "setup"]

REPLICASET = REPLICA_SET  # typed: the client's reads return ReplicaSet TypedDicts
POD_COUNT_LABEL = "pod-count"


class ReplicaSetReconciler:
    """Counts a ReplicaSet's Pods and records the count as a label on it."""

    def __init__(self, client: CachedClient) -> None:
        self.client = client

    async def reconcile(self, request: Request) -> Result | None:
        """Read the ReplicaSet and its Pods, then update the label if the count changed."""
        name, namespace = request.name, request.namespace
        try:
            replicaset = await self.client.get(REPLICASET, name, namespace=namespace)
        except NotFound:
            return None  # deleted: nothing to label
        selector = replicaset["spec"]["template"]["metadata"].get("labels", {})
        pods = await self.client.list(POD, namespace=namespace, label_selector=selector)
        count = str(len(pods["items"]))
        if labels_of(replicaset).get(POD_COUNT_LABEL) == count:
            return None
        replicaset["metadata"].setdefault("labels", {})[POD_COUNT_LABEL] = count
        await self.client.update(replicaset)
        return None


def setup(manager: Manager) -> ReplicaSetReconciler:
    """Register the controller with ``manager``: for ReplicaSets, owning Pods."""
    reconciler = ReplicaSetReconciler(manager.client)
    controller_managed_by(manager).for_(REPLICASET).owns(POD).complete(reconciler)
    return reconciler
