"""Cluster is one kube-apiserver as controllers see it: a live client, a cache, a cached client.

``cluster.client`` is what reconcilers use, as in controller-runtime: reads (get, list) come from
the shared informer cache, writes go to the apiserver. ``cluster.api_reader`` is the uncached
client for the rare read that must see the latest write. A manager has one Cluster for its own
apiserver and may hold more, named, for multi-cluster controllers.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

import anyio
from anyio.abc import TaskStatus

from reconcile.cache.cache import DEFAULT_CACHE_SYNC_TIMEOUT, Cache
from reconcile.cache.informer import Transform, strip_managed_fields
from reconcile.cache.options import CacheOptions
from reconcile.client.client import Client, SelectorLike
from reconcile.client.config import ClusterConfig
from reconcile.gvk import GVK, Resource

__all__ = ["CachedClient", "Cluster"]


class CachedClient:
    """A client whose get and list read the informer cache; everything else goes to ``live``.

    Reading a kind for the first time starts its informers, in the scope the cache has for it
    (cluster-wide unless configured, see ``reconcile.cache.options``), and waits for their sync; a
    read outside that scope raises ``ScopeError``. Reads return copies, so changing a result and
    writing it back is safe. Writes, subresource reads, watches and discovery are the live
    client's (a real ``Client`` or testenv's fake).
    """

    def __init__(self, live: Client, cache: Cache) -> None:
        self.live = live
        self.cache = cache

    def __repr__(self) -> str:
        return f"CachedClient({self.live!r})"

    @property
    def field_manager(self) -> str:
        """The live client's field manager."""
        return self.live.field_manager

    async def get(
        self, gvk: GVK, name: str, *, namespace: str | None = None, metadata_only: bool = False
    ) -> dict[str, Any]:
        """The object from the cache (its PartialObjectMetadata with ``metadata_only``).

        Raises:
            NotFound: not in the cache.
            ScopeError: a namespace the cache does not hold ``gvk`` in.
            CacheNotStarted, CacheSyncError: see reconcile.cache.cache.
        """
        return await self.cache.get(gvk, name, namespace=namespace, metadata_only=metadata_only)

    async def list(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        metadata_only: bool = False,
        **_paging: Any,
    ) -> dict[str, Any]:
        """A List object from the cache (paging and version arguments are ignored); a
        PartialObjectMetadataList with ``metadata_only``.

        Raises:
            ScopeError: the list reaches outside the cache's scope for ``gvk``.
            ValueError: a selector the cache cannot evaluate (see Cache.list).
            CacheNotStarted, CacheSyncError: see reconcile.cache.cache.
        """
        return await self.cache.list(
            gvk,
            namespace=namespace,
            label_selector=_as_text(label_selector),
            field_selector=_as_text(field_selector),
            metadata_only=metadata_only,
        )

    async def list_all(self, gvk: GVK, **selectors: Any) -> builtins.list[dict[str, Any]]:
        """Every cached object matching ``selectors`` (as list())."""
        items: builtins.list[dict[str, Any]] = (await self.list(gvk, **selectors))["items"]
        return items

    # Everything below is the live client's; see reconcile.client.client.Client for each.

    async def create(self, obj: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        """Client.create."""
        return await self.live.create(obj, **options)

    async def update(self, obj: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        """Client.update."""
        return await self.live.update(obj, **options)

    async def update_status(self, obj: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        """Client.update_status."""
        return await self.live.update_status(obj, **options)

    async def apply(self, obj: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        """Client.apply (server-side apply)."""
        return await self.live.apply(obj, **options)

    async def patch(self, *target: Any, **options: Any) -> dict[str, Any]:
        """Client.patch."""
        return await self.live.patch(*target, **options)

    async def patch_status(self, *target: Any, **options: Any) -> dict[str, Any]:
        """Client.patch_status."""
        return await self.live.patch_status(*target, **options)

    async def delete(self, *target: Any, **options: Any) -> dict[str, Any]:
        """Client.delete."""
        return await self.live.delete(*target, **options)

    async def delete_all_of(self, gvk: GVK, **options: Any) -> dict[str, Any]:
        """Client.delete_all_of."""
        return await self.live.delete_all_of(gvk, **options)

    async def get_scale(self, *target: Any, **options: Any) -> dict[str, Any]:
        """Client.get_scale (live)."""
        return await self.live.get_scale(*target, **options)

    async def patch_scale(self, *target: Any, **options: Any) -> dict[str, Any]:
        """Client.patch_scale."""
        return await self.live.patch_scale(*target, **options)

    async def resource_for(self, gvk: GVK) -> Resource:
        """Client.resource_for (discovery)."""
        return await self.live.resource_for(gvk)


def _as_text(selector: SelectorLike) -> str | None:
    if selector is None or isinstance(selector, str):
        return selector or None
    return ",".join(f"{key}={value}" for key, value in selector.items())


class Cluster:
    """A client, a cache over it, and the cached client, for one apiserver.

    Args:
        name: how the manager and Requests name this cluster ("" for the manager's own).
        config: where the apiserver is and how to authenticate.
        client: use this client instead of one made from ``config`` (e.g. testenv's FakeClient).
        namespace: restrict the cache to one namespace (default: all).
        transform: applied to cached objects (default drops managedFields).
        cache_options: what the cache holds of each kind, instead of ``namespace`` and
            ``transform`` (see ``reconcile.cache.options``).
        sync_timeout: how long cache reads wait for an informer's first list. Defaults to 120 s.
        client_options: passed to both clients (field_manager, qps, burst, ...).
    """

    def __init__(
        self,
        name: str,
        config: ClusterConfig | None = None,
        *,
        client: Client | None = None,
        namespace: str | None = None,
        transform: Transform | None = strip_managed_fields,
        cache_options: CacheOptions | None = None,
        sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT,
        **client_options: Any,
    ) -> None:
        if client is None:
            if config is None:
                raise ValueError("a Cluster needs a config or a client")
            client = Client(config, **client_options)
        self.name = name
        self.api_reader = client
        self.cache = Cache(
            self.api_reader,
            namespace=namespace,
            transform=transform,
            options=cache_options,
            sync_timeout=sync_timeout,
        )
        self.client = CachedClient(self.api_reader, self.cache)

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, {self.api_reader!r})"

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the cache until cancelled, then close both clients."""
        try:
            await self.cache.run(task_status=task_status)
        finally:
            with anyio.CancelScope(shield=True):
                await self.api_reader.close()

    def has_synced(self) -> bool:
        """Whether every informer requested so far has synced."""
        return self.cache.has_synced()

    async def wait_for_cache_sync(self, timeout: float | None = None) -> None:
        """See Cache.wait_for_cache_sync."""
        await self.cache.wait_for_cache_sync(timeout)
