"""Lease is each member's heartbeat: a coordination.k8s.io Lease the status controller renews.

Karmada keeps one Lease per Cluster, named after it, in ``karmada-cluster``; the status controller
renews it at every probe whatever the probe found, so a Cluster whose status stops changing is
still known to be watched, and the cluster controller's health monitor (``health``) marks Ready
Unknown only once neither the status nor the Lease has moved for the grace period.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any, Final

from reconcile import GVK, AlreadyExists, Client, Conflict, NotFound, Reader

__all__ = ["CLUSTER_LEASE_DURATION", "LEASE", "cluster_lease_renew_time", "renew_cluster_lease"]

LEASE: Final = GVK("coordination.k8s.io", "v1", "Lease")
CLUSTER_LEASE_DURATION: Final = 40
"""Seconds a Lease claims to last (Karmada's ``--cluster-lease-duration`` default)."""


def _micro_time(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": CLUSTER_LEASE_DURATION,
            "renewTime": _micro_time(),
        },
    }


async def renew_cluster_lease(client: Client, name: str, namespace: str) -> None:
    """Create or renew the Lease of Cluster ``name`` in ``namespace`` (a live read, then a write).

    A conflicting write (someone renewed it meanwhile) is left for the next probe.
    """
    try:
        lease = await client.get(LEASE, name, namespace=namespace)
    except NotFound:
        with contextlib.suppress(AlreadyExists):
            await client.create(_lease(name, namespace))
        return
    lease.setdefault("spec", {})["renewTime"] = _micro_time()
    with contextlib.suppress(Conflict, NotFound):
        await client.update(lease)


async def cluster_lease_renew_time(reader: Reader, name: str, namespace: str) -> str | None:
    """The Lease's ``spec.renewTime`` (None while there is no Lease)."""
    try:
        lease = await reader.get(LEASE, name, namespace=namespace)
    except NotFound:
        return None
    renewed = (lease.get("spec") or {}).get("renewTime")
    return str(renewed) if renewed else None
