"""Cluster is one kube-apiserver as controllers see it: a live client, a cache, a cached client.

``cluster.client`` is what reconcilers use, as in controller-runtime: reads (get, list) come from
the shared informer cache, writes go to the apiserver. ``cluster.api_reader`` is the uncached
client for the rare read that must see the latest write. A manager has one Cluster for its own
apiserver and may hold more, named, for multi-cluster controllers.
"""

from __future__ import annotations

from typing import Any

import anyio
from anyio.abc import TaskStatus

from reconcile.cache import DEFAULT_CACHE_SYNC_TIMEOUT, Cache
from reconcile.client import Client, SelectorLike
from reconcile.config import ClusterConfig
from reconcile.gvk import GVK
from reconcile.informer import Transform, strip_managed_fields

__all__ = ["CachedClient", "Cluster"]


class CachedClient(Client):
    """A Client whose get and list read the informer cache; every write goes to the apiserver.

    Reading a kind for the first time starts a cluster-wide informer for it and waits for its sync.
    Reads return copies, so changing a result and writing it back is safe.
    """

    def __init__(self, config: ClusterConfig, cache: Cache, **options: Any) -> None:
        super().__init__(config, **options)
        self.cache = cache

    async def get(self, gvk: GVK, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """The object from the cache.

        Raises:
            NotFound: not in the cache.
            CacheNotStarted, CacheSyncError: see reconcile.cache.
        """
        return await self.cache.get(gvk, name, namespace=namespace)

    async def list(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> dict[str, Any]:
        """A List object from the cache (paging and version arguments are ignored).

        Raises:
            ValueError: a selector the cache cannot evaluate (see Cache.list).
            CacheNotStarted, CacheSyncError: see reconcile.cache.
        """
        return await self.cache.list(
            gvk,
            namespace=namespace,
            label_selector=_as_text(label_selector),
            field_selector=_as_text(field_selector),
        )


def _as_text(selector: SelectorLike) -> str | None:
    if selector is None or isinstance(selector, str):
        return selector or None
    return ",".join(f"{key}={value}" for key, value in selector.items())


class Cluster:
    """A client, a cache over it, and the cached client, for one apiserver.

    Args:
        name: how the manager and Requests name this cluster ("" for the manager's own).
        config: where the apiserver is and how to authenticate.
        namespace: restrict the cache to one namespace (default: all).
        transform: applied to cached objects (default drops managedFields).
        sync_timeout: how long cache reads wait for an informer's first list. Defaults to 120 s.
        client_options: passed to both clients (field_manager, qps, burst, ...).
    """

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        *,
        namespace: str | None = None,
        transform: Transform | None = strip_managed_fields,
        sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT,
        **client_options: Any,
    ) -> None:
        self.name = name
        self.config = config
        self.api_reader = Client(config, **client_options)
        self.cache = Cache(
            self.api_reader, namespace=namespace, transform=transform, sync_timeout=sync_timeout
        )
        shared = {"limiter": self.api_reader.limiter, **client_options}
        self.client = CachedClient(config, self.cache, **shared)

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, host={self.config.host!r})"

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the cache until cancelled, then close both clients."""
        try:
            await self.cache.run(task_status=task_status)
        finally:
            with anyio.CancelScope(shield=True):
                await self.client.close()
                await self.api_reader.close()

    def has_synced(self) -> bool:
        """Whether every informer requested so far has synced."""
        return self.cache.has_synced()

    async def wait_for_cache_sync(self, timeout: float | None = None) -> None:
        """See Cache.wait_for_cache_sync."""
        await self.cache.wait_for_cache_sync(timeout)
