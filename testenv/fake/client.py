"""FakeClient is the in-memory apiserver of ``testenv.fake``, with the ``Client`` interface.

Each verb checks what the apiserver checks (the kind is served, a namespace is given, the write
guard allows it) and leaves the rest to the package's modules: the ``Registry`` of kinds, the
``Store`` of objects and its event log, the write ``strategy``, patches, the scale subresource
and watches. See ``testenv.fake`` for what it models and what it simplifies.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, overload

import anyio
import anyio.lowlevel

from reconcile.client.client import (
    DEFAULT_FIELD_MANAGER,
    Client,
    PatchType,
    Preconditions,
    PropagationPolicy,
    SelectorLike,
)
from reconcile.client.config import ClusterConfig
from reconcile.client.options import object_identity, split_target
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

    # --- reads -----------------------------------------------------------------------------------

    async def resource_for(self, gvk: GVK) -> Resource:
        """How the fake serves ``gvk``.

        Raises:
            NoKindMatch: the kind is not registered.
        """
        await anyio.lowlevel.checkpoint()
        return self._registry.kind(gvk).resource

    async def get(self, gvk: GVK, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """The object ``name`` of kind ``gvk``, as a copy.

        Raises:
            NotFound: no such object.
            NoKindMatch: the kind is not served.
            ValueError: a namespaced kind without a namespace.
        """
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        return served(
            strategy.stored_object(self._store, kind, object_key(kind, name, namespace)), gvk
        )

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
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """One List object, ordered by namespace and name; items carry apiVersion and kind.
        With ``metadata_only``, a PartialObjectMetadataList, as the apiserver answers.

        Field selectors: metadata.name, metadata.namespace and the kind's field labels, with
        ``=``, ``==`` and ``!=``. Pages (``limit``/``continue_``) are one consistent snapshot;
        ``resource_version_match="Exact"`` reads the past from the event log.

        Raises:
            BadRequest: a selector that does not parse or selects on an unsupported field.
            Gone: the continue token or exact version is older than the event log.
            NoKindMatch: the kind is not served.
        """
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        matcher = parse_filter(kind, namespace, label_selector, field_selector)
        items, meta = self._store.page(
            kind.group_kind,
            matcher,
            resource_version=resource_version,
            match=resource_version_match,
            token=continue_,
            limit=limit,
        )
        if metadata_only:
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

    async def get_status(
        self, gvk: GVK, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The object read through its status subresource.

        Raises:
            NotFound: no such object, or the kind has no status subresource.
        """
        if not self._registry.kind(gvk).status:
            raise no_subresource()
        return await self.get(gvk, name, namespace=namespace)

    # --- writes of whole objects -----------------------------------------------------------------

    async def create(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Create ``obj``; returns it as stored (uid, creationTimestamp, resourceVersion,
        generation set; status dropped where it is a subresource).

        Raises:
            AlreadyExists: the name is taken.
            BadRequest: ``obj`` carries a resourceVersion.
            Invalid: no name or generateName, or an invalid name.
            NoKindMatch: the kind is not served.
            ValueError: ``obj`` lacks apiVersion/kind, or a namespace for a namespaced kind.
        """
        await anyio.lowlevel.checkpoint()
        gvk = GVK.of(obj)
        kind = self._registry.kind(gvk)
        namespace = (obj.get("metadata") or {}).get("namespace") or None
        if kind.namespaced and not namespace:
            raise ValueError(f"{gvk.kind} is namespaced: metadata.namespace is required")
        self._guard("POST", kind, namespace, None)
        return served(
            strategy.insert(self._store, kind, gvk, obj, seeding=False, dry_run=dry_run), gvk
        )

    async def update(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Replace ``obj``; its ``metadata.resourceVersion`` makes this an optimistic update.

        Raises:
            Conflict: the resourceVersion is stale.
            NotFound: no such object.
            Invalid: a custom resource without a resourceVersion; a finalizer added to an object
                being deleted.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace = object_identity(obj)
        kind = self._registry.kind(gvk)
        key = object_key(kind, name, namespace)
        self._guard("PUT", kind, namespace, name)
        stored = strategy.stored_object(self._store, kind, key)
        strategy.check_version(kind, stored, obj, required=kind.custom)
        return served(strategy.replace(self._store, kind, gvk, stored, obj, dry_run), gvk)

    async def update_status(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Replace ``obj``'s status through the status subresource; everything else is ignored.

        Raises:
            Conflict: the resourceVersion is stale.
            NotFound: no such object, or the kind has no status subresource.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace = object_identity(obj)
        kind = self._registry.kind(gvk)
        if not kind.status:
            raise no_subresource()
        key = object_key(kind, name, namespace)
        self._guard("PUT", kind, namespace, name, "status")
        stored = strategy.stored_object(self._store, kind, key)
        strategy.check_version(kind, stored, obj, required=kind.custom)
        return served(strategy.write_status(self._store, kind, stored, obj, dry_run), gvk)

    # --- patches ---------------------------------------------------------------------------------

    @overload
    async def patch(
        self,
        obj: Mapping[str, Any],
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
        metadata_only: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def patch(
        self,
        gvk: GVK,
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
        metadata_only: bool = ...,
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """Patch an object (default: JSON merge patch); returns the patched object (with
        ``metadata_only``, its PartialObjectMetadata, as the apiserver answers).

        A resourceVersion the patch sets is a precondition (Conflict when stale). APPLY creates
        a missing object.

        Raises:
            NotFound: no such object (apply creates instead).
            Conflict: the patch sets a stale resourceVersion.
            Invalid: a JSON patch operation failed (a ``test`` included), as the apiserver says.
            ApiError: 415 for a strategic merge patch of a custom resource.
            ValueError: ``force`` with a patch type other than APPLY.
        """
        gvk, name, ns, body = split_target(target, args, namespace)
        patched = await self._patch_stored(gvk, name, ns, "", body, patch_type, force, dry_run)
        return as_partial_object_metadata(patched) if metadata_only else patched

    async def _patch_stored(
        self,
        gvk: GVK,
        name: str,
        namespace: str | None,
        subresource: Literal["", "status"],
        body: Any,
        patch_type: PatchType,
        force: bool,
        dry_run: bool,
    ) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        if force and patch_type is not PatchType.APPLY:
            raise ValueError("force is only valid for server-side apply (PatchType.APPLY)")
        kind = self._registry.kind(gvk)
        if subresource and not kind.status:
            raise no_subresource()
        key = object_key(kind, name, namespace)
        self._guard("PATCH", kind, namespace, name, subresource)
        stored = self._store.objects[kind.group_kind].get(key)
        if stored is None:
            if patch_type is not PatchType.APPLY or subresource:
                raise not_found(kind, name)
            return served(
                strategy.apply_create(self._store, kind, gvk, name, namespace, body, dry_run), gvk
            )
        status = subresource == "status"
        new = strategy.patch(
            self._store, kind, gvk, stored, body, patch_type, status=status, dry_run=dry_run
        )
        return served(new, gvk)

    @overload
    async def patch_status(
        self,
        obj: Mapping[str, Any],
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def patch_status(
        self,
        gvk: GVK,
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def patch_status(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch the status subresource, like ``patch``; only the status changes.

        Raises:
            NotFound: no such object, or the kind has no status subresource.
        """
        gvk, name, ns, body = split_target(target, args, namespace)
        return await self._patch_stored(gvk, name, ns, "status", body, patch_type, force, dry_run)

    # --- deletes ---------------------------------------------------------------------------------

    @overload
    async def delete(
        self,
        obj: Mapping[str, Any],
        /,
        *,
        propagation_policy: PropagationPolicy | None = ...,
        grace_period_seconds: int | None = ...,
        preconditions: Preconditions | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def delete(
        self,
        gvk: GVK,
        name: str,
        /,
        *,
        namespace: str | None = ...,
        propagation_policy: PropagationPolicy | None = ...,
        grace_period_seconds: int | None = ...,
        preconditions: Preconditions | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def delete(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Preconditions | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object: answers a Success Status, or the object when finalizers hold it
        (marked with deletionTimestamp until an update removes the last one).

        ``propagation_policy`` and ``grace_period_seconds`` are accepted and ignored.

        Raises:
            NotFound: no such object.
            Conflict: a precondition (uid, resourceVersion) does not hold.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, ns, _ = split_target(target, args, namespace)
        kind = self._registry.kind(gvk)
        key = object_key(kind, name, ns)
        self._guard("DELETE", kind, ns, name)
        stored = strategy.stored_object(self._store, kind, key)
        if preconditions is not None:
            strategy.check_preconditions(kind, stored, preconditions)
        obj, gone = strategy.delete(self._store, kind, stored, dry_run)
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

    async def delete_all_of(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete every matching object (finalizers hold theirs); answers a List of them.

        Raises:
            ValueError: a namespaced kind without a namespace.
            BadRequest: a selector that does not parse.
            NoKindMatch: the kind is not served.
        """
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        if kind.namespaced and not namespace:
            raise ValueError(f"{gvk.kind} is namespaced: delete_all_of needs a namespace")
        matcher = parse_filter(kind, namespace, label_selector, field_selector)
        self._guard("DELETE", kind, namespace, None)
        chosen = self._store.select(kind.group_kind, matcher)
        items = [served(strategy.delete(self._store, kind, obj, dry_run)[0], gvk) for obj in chosen]
        return {
            "apiVersion": gvk.api_version,
            "kind": f"{gvk.kind}List",
            "metadata": {"resourceVersion": str(self._store.rv)},
            "items": items,
        }

    # --- the scale subresource -------------------------------------------------------------------

    async def get_scale(
        self, gvk: GVK, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The object's autoscaling/v1 Scale, read through the kind's scale paths.

        Raises:
            NotFound: no such object, or the kind has no scale subresource.
        """
        await anyio.lowlevel.checkpoint()
        kind, stored = scalable(self._registry, self._store, gvk, name, namespace)
        return scale_of(kind, stored)

    async def update_scale(
        self,
        gvk: GVK,
        scale: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Set the replicas of the ``gvk`` object named in ``scale``'s metadata.

        Raises:
            Conflict: ``scale`` carries a stale resourceVersion.
            NotFound: no such object, or the kind has no scale subresource.
        """
        await anyio.lowlevel.checkpoint()
        meta = scale.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), meta.get("namespace") or None
        kind, stored = scalable(self._registry, self._store, gvk, name, namespace)
        self._guard("PUT", kind, namespace, name, "scale")
        return write_scale(self._store, kind, gvk, stored, scale, dry_run)

    @overload
    async def patch_scale(
        self,
        obj: Mapping[str, Any],
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def patch_scale(
        self,
        gvk: GVK,
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def patch_scale(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch the Scale, e.g. ``{"spec": {"replicas": 3}}``; returns the new Scale.

        Raises:
            NotFound: no such object, or the kind has no scale subresource.
            Invalid: a JSON patch operation failed.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, ns, body = split_target(target, args, namespace)
        kind, stored = scalable(self._registry, self._store, gvk, name, ns)
        self._guard("PATCH", kind, ns, name, "scale")
        patched = patch_document(scale_of(kind, stored), body, patch_type)
        return write_scale(self._store, kind, gvk, stored, patched, dry_run)

    # --- watches ---------------------------------------------------------------------------------

    def watch(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        resource_version: str | None = None,
        timeout_seconds: int = 300,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool = False,
        metadata_only: bool = False,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """Watch changes of kind ``gvk`` after ``resource_version``: ``async with`` it for an
        iterator of raw events that ends after ``timeout_seconds``, on ``end_watches()``, or when
        the block is left; with ``metadata_only`` their objects are PartialObjectMetadata.

        Without a version (or "0") the current objects come first as ADDED events;
        ``send_initial_events`` adds the BOOKMARK annotated ``k8s.io/initial-events-end``. A
        version older than the event log yields one ERROR event (410 Expired) and the end.

        Raises:
            BadRequest: a selector or resourceVersion that does not parse.
            NoKindMatch: the kind is not served.
        """
        return self._watch(
            gvk,
            namespace,
            label_selector,
            field_selector,
            resource_version,
            timeout_seconds,
            initial=send_initial_events or resource_version in (None, "", "0"),
            bookmark=send_initial_events and allow_watch_bookmarks,
            metadata_only=metadata_only,
        )

    @contextlib.asynccontextmanager
    async def _watch(
        self,
        gvk: GVK,
        namespace: str | None,
        label_selector: SelectorLike,
        field_selector: SelectorLike,
        resource_version: str | None,
        timeout_seconds: int,
        *,
        initial: bool,
        bookmark: bool,
        metadata_only: bool = False,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        await anyio.lowlevel.checkpoint()
        kind = self._registry.kind(gvk)
        matcher = parse_filter(kind, namespace, label_selector, field_selector)
        opened = self._watches.open(
            kind,
            gvk,
            matcher,
            resource_version,
            timeout_seconds,
            initial=initial,
            bookmark=bookmark,
        )
        async with opened as stream:
            yield _metadata_events(stream) if metadata_only else stream


async def _metadata_events(
    stream: AsyncIterator[dict[str, Any]],
) -> AsyncIterator[dict[str, Any]]:
    """Watch events whose objects are reduced to PartialObjectMetadata, as the apiserver sends."""
    async for event in stream:
        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            event = {**event, "object": as_partial_object_metadata(event["object"])}
        yield event
