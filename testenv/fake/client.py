"""FakeClient is the in-memory apiserver of ``testenv.fake``, with the ``Client`` interface.

Its methods, signatures and docstrings are ``Client``'s (one implementation, in
``reconcile.client.interfaces``); the fake implements only the primitives beneath them. Each
checks what the apiserver checks (the kind is served, a namespace is given, the write guard allows
it) and leaves the rest to the package's modules: the ``Registry`` of kinds, the ``Store`` of
objects and its event log, the write ``strategy``, patches, the scale subresource and watches. See
``testenv.fake`` for what it models and what it simplifies.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.lowlevel

from reconcile.client.client import DEFAULT_FIELD_MANAGER, Client
from reconcile.client.config import ClusterConfig
from reconcile.client.options import (
    DeleteOptions,
    ListOptions,
    PatchOptions,
    PatchType,
    Target,
    WatchOptions,
    WriteOptions,
)
from reconcile.client.restmapper import RESTMapper
from reconcile.client.transport import Transport
from reconcile.flowcontrol import RetryAfter, Unlimited
from reconcile.gvk import GVK, Resource
from reconcile.objects import (
    METADATA_API_VERSION,
    PARTIAL_OBJECT_METADATA,
    Obj,
    as_partial_object_metadata,
)
from testenv.fake import strategy
from testenv.fake.discovery import discovery_document
from testenv.fake.errors import details_of, no_subresource, not_found
from testenv.fake.filter import parse_filter
from testenv.fake.objects import object_key, served
from testenv.fake.patches import patch_document
from testenv.fake.registry import (
    BUILTIN_KINDS,
    FakeKind,
    Registry,
    crd_kinds,
    crd_manifests,
)
from testenv.fake.scale import scalable, scale_of, write_scale
from testenv.fake.store import DEFAULT_WATCH_HISTORY, Store
from testenv.fake.watch import Watches

__all__ = ["FakeClient"]

FAKE_HOST: Final = "https://fake.invalid"


class FakeClient(Client):
    """An in-memory apiserver with the ``Client`` interface; see the ``testenv.fake`` docstring.

    Where the apiserver would, it also raises: BadRequest for a selector that does not parse or
    selects on an unsupported field, a create carrying a resourceVersion, or a resourceVersion
    that does not parse; Invalid for a missing or invalid name, a custom resource updated without
    a resourceVersion, a finalizer added to an object being deleted, or a failed JSON patch
    operation; 415 for a strategic merge patch of a custom resource.

    Args:
        objects: preloaded as by ``seed`` (after ``crds`` are installed).
        crds: CustomResourceDefinitions (dicts, or YAML/JSON files and directories of them).
        kinds: more kinds to serve besides ``BUILTIN_KINDS`` (e.g. an aggregated API).
        field_manager: kept for code that reads it; the fake records no managedFields.
        history: watch events kept for watches resuming from an older resourceVersion (older
            ones get a 410 ERROR event). Defaults to 10000.
    """

    def __init__(
        self,
        *,
        objects: Iterable[Mapping[str, Any]] = (),
        crds: Iterable[Mapping[str, Any] | Path | str] = (),
        kinds: Iterable[FakeKind] = (),
        field_manager: str = DEFAULT_FIELD_MANAGER,
        history: int = DEFAULT_WATCH_HISTORY,
    ) -> None:
        # Client.__init__ prepares an HTTP connection; the fake sets the attributes callers read
        # itself. The host can never resolve, so a request that slipped through goes nowhere.
        self.config = ClusterConfig(FAKE_HOST, source="testenv.fake")
        self.field_manager = field_manager
        self.limiter = Unlimited()
        self.retry = RetryAfter()
        self.request_timeout = None
        self.mapper = RESTMapper(self._discovery, min_refresh_interval=0)
        self.write_guard = None
        self._transport = Transport(self.config)  # never used: no request leaves the fake
        self._registry = Registry()
        self._store = Store(history)
        self._watches = Watches(self._store)
        for kind in (*BUILTIN_KINDS, *kinds):
            self.register(kind)
        self.install_crds(crds)
        self.seed(*objects)

    def __repr__(self) -> str:
        count = sum(len(objects) for objects in self._store.objects.values())
        return f"FakeClient(objects={count}, resourceVersion={self._store.rv})"

    # --- setting up ------------------------------------------------------------------------------

    def register(self, kind: FakeKind) -> None:
        """Serve ``kind`` (replacing what was registered for its GVK); its objects are kept."""
        self._registry.add(kind)
        self._store.add_kind(kind.group_kind)
        self.mapper.invalidate()

    def install_crds(
        self, crds: Iterable[Mapping[str, Any] | Path | str]
    ) -> builtins.list[Resource]:
        """Serve the kinds of CustomResourceDefinitions: dicts, or files and directories of them.

        Status and scale subresources, scope, short names and selectable fields come from the
        CRD. Returns the resources now served, one per served version.

        Raises:
            ValueError: a dict is not a CustomResourceDefinition, or a file does not parse.
            FileNotFoundError: a path does not exist.
        """
        installed = []
        for crd in crd_manifests(crds):
            for kind in crd_kinds(crd):
                self.register(kind)
                installed.append(kind.resource)
        return installed

    def seed(self, *objects: Mapping[str, Any]) -> builtins.list[Obj]:
        """Store objects as given, status and deletionTimestamp included; returns them as stored.

        Synchronous, so fixtures may call it before an event loop runs. The server still sets
        resourceVersion, and uid, creationTimestamp and generation unless given.

        Raises:
            AlreadyExists: the name is taken.
            NoKindMatch: the kind is not served.
            ValueError: a namespaced object without a namespace, or a deletionTimestamp without
                finalizers (the apiserver would have deleted that object).
        """
        seeded = []
        for obj in objects:
            gvk = GVK.of(obj)
            kind = self._registry.kind(gvk)
            namespace = (obj.get("metadata") or {}).get("namespace")
            if kind.namespaced and not namespace:
                raise ValueError(f"{gvk.kind} is namespaced: metadata.namespace is required")
            stored = strategy.insert(self._store, kind, gvk, obj, seeding=True, dry_run=False)
            seeded.append(served(stored, gvk))
        return seeded

    def compact(self) -> None:
        """Forget the event log, as etcd compaction does: a watch (or a list's continue token)
        from an older resourceVersion then gets 410 Expired and its reflector lists again."""
        self._store.compact()

    def end_watches(self) -> None:
        """End every open watch stream, as an apiserver restart would; reflectors re-watch."""
        self._watches.end_all()

    async def close(self) -> None:
        """End open watches. The fake keeps its objects and stays usable."""
        self.end_watches()

    # --- internals -------------------------------------------------------------------------------

    def _guard(
        self,
        method: str,
        kind: FakeKind,
        namespace: str | None,
        name: str | None,
        subresource: str = "",
    ) -> None:
        # The same hook as the real client's, with the path the request would have used.
        if self.write_guard is not None:
            path = kind.resource.path(namespace, name)
            self.write_guard(method, f"{path}/{subresource}" if subresource else path)

    async def _discovery(self, path: str) -> Any:
        """Discovery documents for the REST mapper, generated from the registry."""
        await anyio.lowlevel.checkpoint()
        return discovery_document(self._registry, path)

    # --- primitives under the Client interfaces: normalised arguments, the store ---------------

    async def resource_for(self, gvk: GVK) -> Resource:
        """How the fake serves ``gvk``.

        Raises:
            NoKindMatch: the kind is not registered.
        """
        await anyio.lowlevel.checkpoint()
        return self._registry.kind(gvk).resource

    def _kind_of(self, target: Target) -> FakeKind:
        """The kind a non-scale target names, if served with that subresource."""
        kind = self._registry.kind(target.gvk)
        if target.subresource and not kind.status:
            raise no_subresource()
        return kind

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace = target.gvk, target.name, target.namespace
        if target.subresource == "scale":
            kind, stored = scalable(self._registry, self._store, gvk, name, namespace)
            return scale_of(kind, stored)
        kind = self._kind_of(target)
        stored = strategy.stored_object(self._store, kind, object_key(kind, name, namespace))
        return served(stored, gvk)

    async def _list(self, gvk: GVK, namespace: str | None, options: ListOptions) -> dict[str, Any]:
        # Field selectors: metadata.name, metadata.namespace and the kind's field labels, with
        # =, == and !=. Pages are one consistent snapshot; "Exact" reads the event log.
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        matcher = parse_filter(kind, namespace, options.label_selector, options.field_selector)
        items, meta = self._store.page(
            kind.group_kind,
            matcher,
            resource_version=options.resource_version,
            match=options.resource_version_match,
            token=options.continue_,
            limit=options.limit,
        )
        if options.metadata_only:
            return {
                "apiVersion": METADATA_API_VERSION,
                "kind": f"{PARTIAL_OBJECT_METADATA}List",
                "metadata": meta,
                "items": [as_partial_object_metadata(served(obj, gvk)) for obj in items],
            }
        return {
            "apiVersion": gvk.api_version,
            "kind": f"{gvk.kind}List",
            "metadata": meta,
            "items": [served(obj, gvk) for obj in items],
        }

    async def _create(
        self, gvk: GVK, namespace: str | None, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        self._guard("POST", kind, namespace, None)
        dry_run = options.dry_run
        return served(
            strategy.insert(self._store, kind, gvk, body, seeding=False, dry_run=dry_run), gvk
        )

    async def _update(
        self, target: Target, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace, dry_run = target.gvk, target.name, target.namespace, options.dry_run
        if target.subresource == "scale":
            kind, stored = scalable(self._registry, self._store, gvk, name, namespace)
            self._guard("PUT", kind, namespace, name, "scale")
            return write_scale(self._store, kind, gvk, stored, body, dry_run)
        kind = self._kind_of(target)
        key = object_key(kind, name, namespace)
        self._guard("PUT", kind, namespace, name, target.subresource)
        stored = strategy.stored_object(self._store, kind, key)
        # A custom resource's update must name the version it replaces, as the apiserver says.
        strategy.check_version(kind, stored, body, required=kind.custom)
        if target.subresource:
            return served(strategy.write_status(self._store, kind, stored, body, dry_run), gvk)
        return served(strategy.replace(self._store, kind, gvk, stored, body, dry_run), gvk)

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace, dry_run = target.gvk, target.name, target.namespace, options.dry_run
        patch_type = options.patch_type
        if target.subresource == "scale":
            kind, stored = scalable(self._registry, self._store, gvk, name, namespace)
            self._guard("PATCH", kind, namespace, name, "scale")
            patched = patch_document(scale_of(kind, stored), body, patch_type)
            return write_scale(self._store, kind, gvk, stored, patched, dry_run)
        kind = self._kind_of(target)
        key = object_key(kind, name, namespace)
        self._guard("PATCH", kind, namespace, name, target.subresource)
        current = self._store.objects[kind.group_kind].get(key)
        if current is None:
            if patch_type is not PatchType.APPLY or target.subresource:
                raise not_found(kind, name)
            return served(
                strategy.apply_create(self._store, kind, gvk, name, namespace, body, dry_run), gvk
            )
        status = target.subresource == "status"
        new = strategy.patch(
            self._store, kind, gvk, current, body, patch_type, status=status, dry_run=dry_run
        )
        return served(new, gvk)

    async def _delete(self, target: Target, options: DeleteOptions) -> dict[str, Any]:
        # Propagation policies and grace periods are accepted and ignored: no garbage collector.
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace = target.gvk, target.name, target.namespace
        kind = self._registry.kind(gvk)
        key = object_key(kind, name, namespace)
        self._guard("DELETE", kind, namespace, name)
        stored = strategy.stored_object(self._store, kind, key)
        if options.preconditions is not None:
            strategy.check_preconditions(kind, stored, options.preconditions)
        obj, gone = strategy.delete(self._store, kind, stored, options.dry_run)
        if not gone:
            return served(obj, gvk)
        details = {**details_of(kind, name), "uid": obj["metadata"]["uid"]}
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    async def _delete_collection(
        self, gvk: GVK, namespace: str | None, selectors: ListOptions, options: DeleteOptions
    ) -> dict[str, Any]:
        # Answers a List of the objects deleted (or held by their finalizers).
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        matcher = parse_filter(kind, namespace, selectors.label_selector, selectors.field_selector)
        self._guard("DELETE", kind, namespace, None)
        chosen = self._store.select(kind.group_kind, matcher)
        dry_run = options.dry_run
        items = [served(strategy.delete(self._store, kind, obj, dry_run)[0], gvk) for obj in chosen]
        return {
            "apiVersion": gvk.api_version,
            "kind": f"{gvk.kind}List",
            "metadata": {"resourceVersion": str(self._store.rv)},
            "items": items,
        }

    @contextlib.asynccontextmanager
    async def _watch(
        self, gvk: GVK, namespace: str | None, options: WatchOptions
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        # Without a version (or "0") the current objects come first as ADDED events, as a real
        # watch from the watch cache does; send_initial_events adds the bookmark that ends them.
        # The stream ends after timeout_seconds, on end_watches(), or when the block is left.
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        matcher = parse_filter(kind, namespace, options.label_selector, options.field_selector)
        initial = options.send_initial_events or options.resource_version in (None, "", "0")
        opened = self._watches.open(
            kind,
            gvk,
            matcher,
            options.resource_version,
            options.timeout_seconds,
            initial=initial,
            bookmark=options.send_initial_events and options.allow_watch_bookmarks,
        )
        async with opened as stream:
            yield _metadata_events(stream) if options.metadata_only else stream


async def _metadata_events(
    stream: AsyncIterator[dict[str, Any]],
) -> AsyncIterator[dict[str, Any]]:
    """Watch events whose objects are reduced to PartialObjectMetadata, as the apiserver sends."""
    async for event in stream:
        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            event = {**event, "object": as_partial_object_metadata(event["object"])}
        yield event
