"""ClusterSecrets is a Source of the cluster namespace's Secrets, mapped to Clusters naming them.

The cluster and cluster-status controllers watch it, so a Cluster refused for its Secret (missing,
no token, not UTF-8, ...) is looked at again as soon as the Secret is created or fixed, and a
rotated token reconnects at once, with no retry timer. The Secrets are held in a cache of their
own (``cluster_secret_cache``): one informer, metadata-only and of the one cluster namespace, so
the controller-manager needs ``list`` and ``watch`` on Secrets only there (a Role, not a
ClusterRole), and no Secret data is ever held for it (the member registry reads the token live).
It is a second view of the host beside the manager's cache, as controller-runtime answers "one
kind, two scopes" (a second cache added to the manager): the manager's cache leaves the Secret kind
unscoped, so the detector watches Secrets of every namespace as resource templates when RBAC lets
it (deploy/overlays/propagate-secrets) and opens no Secret informer when
it does not. A Secret event enqueues every Cluster whose
``secretRef`` or ``impersonatorSecretRef`` names it, found through an index of the host's Cluster
informer. Like ``reconcile.Kind``, ``start`` never blocks and initial-list events get low priority.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from anyio.abc import TaskGroup

from controllers.api import CLUSTER_GVK, cluster_spec
from reconcile import (
    DEFAULT_PRIORITY,
    GVK,
    LOW_PRIORITY,
    ByObject,
    Cache,
    CacheOptions,
    Check,
    HandlerRegistration,
    Indexer,
    Manager,
    Obj,
    Request,
    SharedInformer,
    WorkQueue,
)

__all__ = ["SECRET_REFERENCE_INDEX", "ClusterSecrets", "cluster_secret_cache", "secret_references"]

SECRET: Final = GVK("", "v1", "Secret")
SECRET_REFERENCE_INDEX: Final = "cluster.karmada.io/secret-references"
"""Index of Clusters by the ``<namespace>/<name>`` of each Secret they reference."""

# One cache per manager and cluster namespace, shared by every controller watching the Secrets
# (cluster, cluster-status, member-connections): one informer, not one each. Weak: a manager
# that is gone takes its caches with it (tests build many).
_CACHES: weakref.WeakKeyDictionary[Manager, dict[str, Cache]] = weakref.WeakKeyDictionary()


def cluster_secret_cache(manager: Manager, namespace: str) -> Cache:
    """The cache of ``namespace``'s Secrets beside ``manager``'s own, made and added to the
    manager (running on every replica, with a /readyz check) on first use.

    It holds the Secret kind in ``namespace`` only; its metadata-only informer is the one
    ``ClusterSecrets`` opens. The manager's cache is left alone, so the Secret kind keeps its
    default scope there.
    """
    caches = _CACHES.setdefault(manager, {})
    cache = caches.get(namespace)
    if cache is None:
        options = CacheOptions(by_object={SECRET: ByObject(namespaces=(namespace,))})
        cache = Cache(manager.api_reader, options=options, sync_timeout=manager.cache.sync_timeout)
        caches[namespace] = cache
        # Not leader-only: the member-connections controller watches it on standbys too.
        manager.add(cache, leader_only=False)
        manager.add_readyz_check(f"secrets-{namespace}", _synced(cache, namespace))
    return cache


def _synced(cache: Cache, namespace: str) -> Check:
    async def check() -> str | None:
        return None if cache.has_synced() else f"Secrets of {namespace} not synced"

    return check


def secret_references(cluster: Obj) -> list[str]:
    """``<namespace>/<name>`` of every Secret a Cluster references (allowed or not)."""
    spec: Mapping[str, Any] = cluster_spec(cluster)
    keys = []
    for name in ("secretRef", "impersonatorSecretRef"):
        reference = spec.get(name)
        if isinstance(reference, Mapping) and reference.get("name"):
            keys.append(f"{reference.get('namespace') or ''}/{reference['name']}")
    return keys


@dataclass
class _Enqueue:
    """The informer-side handler: a Secret's notification enqueues the Clusters naming it."""

    queue: WorkQueue[Request]
    clusters: Indexer

    def _add(self, secret: Obj, *, low_priority: bool = False) -> None:
        meta = secret["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        priority = LOW_PRIORITY if low_priority else DEFAULT_PRIORITY
        for cluster in self.clusters.by_index(SECRET_REFERENCE_INDEX, key):
            self.queue.add(Request(cluster["metadata"]["name"]), priority=priority)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self._add(obj, low_priority=is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        resync = old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion")
        self._add(new, low_priority=resync)

    def on_delete(self, obj: Obj) -> None:
        self._add(obj)


@dataclass
class ClusterSecrets:
    """Secrets of one namespace of the host; events enqueue the Clusters that reference them.

    Args:
        cache: the host cluster's cache (it holds the Cluster informer).
        secrets: the cache of the namespace's Secrets (``cluster_secret_cache``).
        namespace: the cluster namespace, the only one watched.
    """

    cache: Cache
    secrets: Cache
    namespace: str
    _informer: SharedInformer | None = field(default=None, init=False, repr=False)
    _registration: HandlerRegistration | None = field(default=None, init=False, repr=False)

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Register on the namespace's Secret informer (creating and starting it if needed)."""
        clusters = self.cache.get_informer(CLUSTER_GVK).indexer
        # Both cluster controllers register it: the same function twice is one index.
        self.cache.index_field(CLUSTER_GVK, SECRET_REFERENCE_INDEX, secret_references)
        self._informer = self.secrets.get_informer(
            SECRET, namespace=self.namespace, metadata_only=True
        )
        self._registration = self._informer.add_event_handler(_Enqueue(queue, clusters))

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait for the Secret informer's initial list.

        Raises:
            CacheSyncError: the informer cannot sync (403: no Role in the namespace) in time.
            RuntimeError: start() was not called.
        """
        if self._informer is None:
            raise RuntimeError(f"source for Secrets of {self.namespace} was not started")
        await self.secrets.wait_for_informer(self._informer, timeout)

    @classmethod
    def of(cls, manager: Manager, namespace: str) -> ClusterSecrets:
        """The source of ``namespace``'s Secrets for a controller of ``manager``."""
        return cls(manager.cache, cluster_secret_cache(manager, namespace), namespace)

    def __str__(self) -> str:
        return f"cluster secrets source: Secrets in {self.namespace}"
