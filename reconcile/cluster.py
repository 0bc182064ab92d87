"""Cluster is one kube-apiserver as controllers see it: a live client, a cache, a cached client.

``cluster.client`` is what reconcilers use, as in controller-runtime: reads (get, list) come from
the shared informer cache, writes go to the apiserver. ``cluster.api_reader`` is the uncached
client for the rare read that must see the latest write. A manager has one Cluster for its own
apiserver and may hold more, named, for multi-cluster controllers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from anyio.abc import TaskStatus

from reconcile.cache.cache import DEFAULT_CACHE_SYNC_TIMEOUT, Cache
from reconcile.cache.informer import Transform, strip_managed_fields
from reconcile.cache.options import CacheOptions
from reconcile.client.client import Client
from reconcile.client.config import ClusterConfig
from reconcile.client.interfaces import ObjectClient
from reconcile.client.options import (
    DeleteOptions,
    ListOptions,
    PatchOptions,
    Target,
    WatchOptions,
    WriteOptions,
    selector_string,
)
from reconcile.gvk import GVK, Resource

__all__ = ["CachedClient", "Cluster"]


class CachedClient(ObjectClient):
    """A client whose get and list read the informer cache; everything else goes to ``live``.

    Its methods are ``Client``'s (``reconcile.client.interfaces``); only where they read differs.
    Reading a kind for the first time starts its informers, in the scope the cache has for it
    (cluster-wide unless configured, see ``reconcile.cache.options``), and waits for their sync.
    Reads return copies, so changing a result and writing it back is safe. Writes, subresource
    reads (``get_status``, ``get_scale``), watches and discovery are the live client's (a real
    ``Client`` or testenv's fake).

    ``get`` raises NotFound for an object not in the cache; ``get`` and ``list`` raise
    ``ScopeError`` outside the cache's scope for the kind, ``CacheNotStarted`` and
    ``CacheSyncError`` (see ``reconcile.cache.cache``), and ``list`` ``ValueError`` for a selector
    the cache cannot evaluate (see ``Cache.list``). ``list`` ignores paging and version
    arguments: the whole answer is in memory, so ``list_all`` is one list.
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

    # Reads of whole objects from the cache.

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        if target.subresource:  # the cache holds objects, not their subresources
            return await self.live._get(target, metadata_only=False)
        return await self.cache.get(
            target.gvk, target.name, namespace=target.namespace, metadata_only=metadata_only
        )

    async def _list(
        self, gvk: GVK[Any], namespace: str | None, options: ListOptions
    ) -> dict[str, Any]:
        return await self.cache.list(
            gvk,
            namespace=namespace,
            label_selector=selector_string(options.label_selector),
            field_selector=selector_string(options.field_selector),
            metadata_only=options.metadata_only,
        )

    # Everything else is the live client's primitives, arguments as normalised already.

    async def resource_for(self, gvk: GVK[Any]) -> Resource:
        """How the live client's apiserver serves ``gvk`` (discovery)."""
        return await self.live.resource_for(gvk)

    async def _create(
        self, gvk: GVK[Any], namespace: str | None, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        return await self.live._create(gvk, namespace, body, options)

    async def _update(
        self, target: Target, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        return await self.live._update(target, body, options)

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> dict[str, Any]:
        return await self.live._patch(target, body, options)

    async def _delete(self, target: Target, options: DeleteOptions) -> dict[str, Any]:
        return await self.live._delete(target, options)

    async def _delete_collection(
        self, gvk: GVK[Any], namespace: str | None, selectors: ListOptions, options: DeleteOptions
    ) -> dict[str, Any]:
        return await self.live._delete_collection(gvk, namespace, selectors, options)

    def _watch(
        self, gvk: GVK[Any], namespace: str | None, options: WatchOptions
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        return self.live._watch(gvk, namespace, options)


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
        compress_cache: keep the cached objects deflated (``Cache``'s ``compress``).
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
        compress_cache: bool = False,
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
            compress=compress_cache,
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
