"""Builders are the objects, clients, clocks and waiters the tests share, written once.

Objects are plain dicts with the API's keys (the framework's own representation). Waiters poll
with a deadline (testenv's ``eventually``); cleanups fail loudly when what they remove does not
go, since a leftover on the shared session's host changes later tests.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any, Final

import anyio
import anyio.lowlevel

from controllers.api import CLUSTER_GVK, CLUSTER_PROPAGATION_POLICY_GVK, PROPAGATION_POLICY_GVK
from reconcile import GVK, Client, ClusterConfig, NotFound
from testenv import ControlPlane, eventually

__all__ = [
    "CONFIGMAP",
    "DEPLOYMENT",
    "SERVICE_ACCOUNT",
    "TIMING_SCALE",
    "FakeClock",
    "Obj",
    "RecordingEngager",
    "admin_client",
    "cluster",
    "configmap",
    "delete_and_wait",
    "deployment",
    "deployment_selector",
    "get_or_none",
    "gone",
    "propagation_policy",
    "ready_cluster_status",
    "scaled",
    "service_account_token",
    "weighted",
]

Obj = dict[str, Any]

DEPLOYMENT: Final = GVK("apps", "v1", "Deployment")
CONFIGMAP: Final = GVK("", "v1", "ConfigMap")
SERVICE_ACCOUNT: Final = GVK("", "v1", "ServiceAccount")

TIMING_SCALE: Final = float(os.environ.get("RECONCILE_TEST_TIMING_SCALE", "2"))
"""The one factor by which real-time test durations (leases, their slack) are stretched.

Lease and renew timings decide what a test can tell apart (expiry from release, a lost lease
from a slow renewal); on a loaded 2-core CI runner a 2 s lease with 1 s of slack flakes. Every
such duration is written at its unloaded value and passed through ``scaled``; set
``RECONCILE_TEST_TIMING_SCALE`` (default 2) higher on slower machines, 1 for quick local runs.
"""


def scaled(seconds: float) -> float:
    """``seconds`` stretched by ``TIMING_SCALE``."""
    return seconds * TIMING_SCALE


# Objects.


def configmap(name: str, namespace: str, **data: str) -> Obj:
    """A ConfigMap holding ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def deployment(
    name: str,
    namespace: str,
    replicas: int = 1,
    *,
    image: str = "nginx:1.25",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    kind: str = "Deployment",
) -> Obj:
    """An nginx Deployment labelled and selected by ``app: name`` (plus ``labels``); ``kind``
    makes it another workload of the same shape (a StatefulSet, a ReplicaSet)."""
    selector = {"app": name}
    metadata: Obj = {"name": name, "namespace": namespace, "labels": {**selector, **(labels or {})}}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {"containers": [{"name": "nginx", "image": image}]},
            },
        },
    }


def deployment_selector(name: str) -> list[Obj]:
    """Resource selectors picking the Deployment ``name``."""
    return [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}]


def weighted(clusters: Sequence[str], weights: Sequence[int]) -> Obj:
    """A placement dividing replicas over ``clusters`` by static ``weights``."""
    return {
        "clusterAffinity": {"clusterNames": list(clusters)},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [name]}, "weight": weight}
                    for name, weight in zip(clusters, weights, strict=True)
                ]
            },
        },
    }


def propagation_policy(
    name: str, namespace: str, selectors: list[Obj], placement: Obj, **spec: Any
) -> Obj:
    """A PropagationPolicy; with an empty ``namespace``, a ClusterPropagationPolicy."""
    gvk = PROPAGATION_POLICY_GVK if namespace else CLUSTER_PROPAGATION_POLICY_GVK
    metadata: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": metadata,
        "spec": {"resourceSelectors": selectors, "placement": placement, **spec},
    }


def cluster(
    name: str,
    endpoint: str = "https://127.0.0.1:1",
    *,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A Karmada Cluster in Push mode at ``endpoint`` (default: nothing listens there)."""
    return {
        "apiVersion": CLUSTER_GVK.api_version,
        "kind": CLUSTER_GVK.kind,
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"apiEndpoint": endpoint, "syncMode": "Push", **spec},
    }


def ready_cluster_status() -> Obj:
    """A Cluster status as the cluster status controller writes it for a healthy member that
    serves Deployments, ConfigMaps and ClusterRoles and has room for them."""
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "ClusterReady",
                "message": "written by the test",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
        "apiEnablements": [
            {
                "groupVersion": "apps/v1",
                "resources": [{"name": "deployments", "kind": "Deployment"}],
            },
            {"groupVersion": "v1", "resources": [{"name": "configmaps", "kind": "ConfigMap"}]},
            {
                "groupVersion": "rbac.authorization.k8s.io/v1",
                "resources": [{"name": "clusterroles", "kind": "ClusterRole"}],
            },
        ],
        "resourceSummary": {
            "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "allocated": {"cpu": "0", "memory": "0", "pods": "0"},
        },
    }


# Clients and managers.


async def admin_client(plane: ControlPlane, **options: Any) -> Client:
    """A client of ``plane`` as its admin (its key written under the plane's directory)."""
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config, **options)


async def service_account_token(client: Client, namespace: str, name: str) -> str:
    """A fresh token (TokenRequest) of a new ServiceAccount ``name`` that nothing authorizes."""
    meta = {"name": name, "namespace": namespace}
    await client.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = await client.create_subresource(
        SERVICE_ACCOUNT, name, "token", request, namespace=namespace
    )
    return str(answer["status"]["token"])


# Reads and waits.


async def get_or_none(
    client: Client, gvk: GVK, name: str, namespace: str | None = None
) -> Obj | None:
    """The object, or None when the apiserver says NotFound."""
    try:
        return await client.get(gvk, name, namespace=namespace)
    except NotFound:
        return None


async def gone(client: Client, gvk: GVK, name: str, namespace: str | None = None) -> bool:
    """Whether the object no longer exists (not merely being deleted)."""
    return await get_or_none(client, gvk, name, namespace) is None


async def delete_and_wait(
    client: Client, gvk: GVK, name: str, namespace: str | None = None, *, timeout: float = 30.0
) -> None:
    """Delete the object and wait until it is gone.

    Raises:
        AssertionError: still there after ``timeout`` (a finalizer nobody removes): a cleanup that
            gave up silently would leave it to confuse later tests of the session.
    """
    with contextlib.suppress(NotFound):
        await client.delete(gvk, name, namespace=namespace)
    try:
        await eventually(lambda: gone(client, gvk, name, namespace), timeout=timeout, interval=0.1)
    except AssertionError:
        left = await get_or_none(client, gvk, name, namespace)
        finalizers = (left or {}).get("metadata", {}).get("finalizers")
        where = f"{namespace}/{name}" if namespace else name
        raise AssertionError(
            f"cleanup: {gvk.kind} {where} still exists {timeout}s after its deletion"
            f" (finalizers {finalizers})"
        ) from None


# Clocks.


class FakeClock:
    """Seconds that move only when the test says so, usable as every clock the framework takes.

    Call it (or ``now()``) for the time. ``sleep`` records its argument; by default a sleeper
    waits until ``advance`` moves time past its deadline, with ``sleeps_advance=True`` a sleep
    moves time on by itself and returns at once (a retry loop run to its end).
    """

    def __init__(self, start: float = 0.0, *, sleeps_advance: bool = False) -> None:
        self.time = start
        self.sleeps: list[float] = []
        self._sleeps_advance = sleeps_advance
        self._sleepers: list[tuple[float, anyio.Event]] = []

    def __call__(self) -> float:
        return self.time

    def now(self) -> float:
        """The current fake time."""
        return self.time

    async def sleep(self, seconds: float) -> None:
        """Record the sleep; wait for ``advance`` (or advance by itself, see the class)."""
        self.sleeps.append(seconds)
        if self._sleeps_advance:
            self.time += seconds
            await anyio.lowlevel.checkpoint()
            return
        sleeper = (self.time + seconds, anyio.Event())
        if sleeper[0] <= self.time:
            await anyio.lowlevel.checkpoint()
            return
        self._sleepers.append(sleeper)
        try:
            await sleeper[1].wait()
        finally:
            self._sleepers.remove(sleeper)

    async def advance(self, seconds: float) -> None:
        """Move time on and let every woken sleeper run until all tasks are blocked again."""
        self.time += seconds
        for deadline, event in self._sleepers:
            if deadline <= self.time:
                event.set()
        await anyio.wait_all_tasks_blocked()


class RecordingEngager:
    """An Engager that records each call and what it was given; refuses the names in ``refuse``."""

    def __init__(self, refuse: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple[str, str]] = []
        self.configs: dict[str, ClusterConfig] = {}
        self.clients: dict[str, Client] = {}
        self.refuse = refuse

    async def engage(
        self, name: str, config: ClusterConfig | None = None, *, client: Client | None = None
    ) -> None:
        if name in self.refuse:
            raise ValueError(f"cluster {name!r} is engaged by another provider")
        self.calls.append(("engage", name))
        self.configs.pop(name, None)
        self.clients.pop(name, None)
        if config is not None:
            self.configs[name] = config
        if client is not None:
            self.clients[name] = client

    async def disengage(self, name: str) -> None:
        self.calls.append(("disengage", name))
        self.configs.pop(name, None)
        self.clients.pop(name, None)

    @property
    def engaged(self) -> set[str]:
        return set(self.configs) | set(self.clients)

    def hosts(self) -> dict[str, str]:
        return {name: config.host for name, config in self.configs.items()}

    def take(self) -> list[tuple[str, str]]:
        calls, self.calls = self.calls, []
        return calls
