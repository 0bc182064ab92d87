"""Interfaces are what a client offers its callers: Reader, Writer, StatusWriter, SubResourceClient
and WithWatch, as in controller-runtime's pkg/client, and ObjectClient, all of them together.

Each Protocol carries the one implementation of its methods: the overloads and docstrings, the
``(obj, ...)`` and ``(gvk, name, ..., namespace=)`` forms read by ``split_target``, the checks
every client makes before a request (a namespace for a namespaced kind, ``force`` only with
APPLY) and the metadata-only answers. Beneath them a client implements a few primitives that
take the call already normalised (a ``Target`` or a kind and namespace, a body, the options as
values of ``client.options``): ``_get``, ``_list``, ``_create``, ``_update``, ``_patch``,
``_delete``, ``_delete_collection``, ``_watch`` and ``resource_for``. The HTTP ``Client``
implements them as requests, testenv's ``FakeClient`` over its in-memory store, and the
``CachedClient`` reads from its cache and hands everything else to its live client.

A class gets the methods by subclassing the Protocols (PEP 544: an explicit subclass inherits
them) and implementing the primitives; the primitives are members of the Protocols too, so a
type checker takes for a ``Reader`` only what has ``_get`` and ``_list`` besides ``get`` and
``list``. That keeps the one implementation typed; a test double that is not a subclass is cast.

Typed kinds: with a typed handle (``reconcile.api.apps.v1.DEPLOYMENT``, a ``GVK[Deployment]``)
``get`` is typed as returning a ``Deployment``, ``list`` an ``ObjectList[Deployment]`` and
``list_all`` a ``list[Deployment]``; the writes return the TypedDict they are given. An untyped
GVK, a ``dict[str, Any]`` or a dict literal keeps ``dict[str, Any]``, and a metadata-only answer
is always a dict. Only type checkers see this: at run time every object is the same dict. A
subclass overriding an overloaded method declares ``-> Any`` (or the same overloads).
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar, cast, overload

from reconcile.client.options import (
    DeleteOptions,
    ListOptions,
    PatchOptions,
    PatchType,
    Preconditions,
    PropagationPolicy,
    SelectorLike,
    Target,
    WatchOptions,
    WriteOptions,
    object_identity,
    split_target,
)
from reconcile.errors import Gone
from reconcile.gvk import GVK, Resource
from reconcile.objects import as_partial_object_metadata

if TYPE_CHECKING:
    from reconcile.api.meta.v1 import ObjectList

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "ListerWatcher",
    "ObjectClient",
    "Reader",
    "StatusWriter",
    "SubResourceClient",
    "WithWatch",
    "Writer",
]

DEFAULT_PAGE_SIZE: Final = 500
"""Objects per page in ``list_all`` (client-go's pager default)."""

T = TypeVar("T", bound=Mapping[str, Any])
"""A kind's objects: its TypedDict for a typed GVK or object, else ``dict[str, Any]``."""

Events = contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]
"""An open watch: ``async with`` it for the iterator of raw events."""


class _Reads(Protocol):
    """The read primitives of a client."""

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        """One object, or its ``status`` or ``scale`` subresource; as PartialObjectMetadata (or
        the whole object, which the caller reduces) with ``metadata_only``."""
        ...

    async def _list(
        self, gvk: GVK[Any], namespace: str | None, options: ListOptions
    ) -> dict[str, Any]:
        """One List object, items naming their apiVersion and kind."""
        ...


class _Writes(Protocol):
    """The write primitives of a client, and discovery."""

    async def resource_for(self, gvk: GVK[Any]) -> Resource:
        """How ``gvk`` is served (plural, scope, subresources, verbs).

        Raises:
            NoKindMatch: the kind is not served.
        """
        ...

    async def _create(
        self, gvk: GVK[Any], namespace: str | None, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        """POST ``body`` to the collection; the namespace is already checked."""
        ...

    async def _update(
        self, target: Target, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        """PUT ``body`` to the object or its subresource."""
        ...

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> dict[str, Any]:
        """PATCH the object or its subresource; ``force`` is already checked against the type.
        With ``metadata_only`` the answer may be the whole object, which the caller reduces."""
        ...

    async def _delete(self, target: Target, options: DeleteOptions) -> dict[str, Any]:
        """DELETE one object."""
        ...

    async def _delete_collection(
        self, gvk: GVK[Any], namespace: str | None, selectors: ListOptions, options: DeleteOptions
    ) -> dict[str, Any]:
        """DELETE the selected objects of a collection; the namespace is already checked."""
        ...


class _Watches(Protocol):
    """The watch primitive of a client."""

    def _watch(self, gvk: GVK[Any], namespace: str | None, options: WatchOptions) -> Events:
        """Open a watch of the collection."""
        ...


async def _require_namespace(
    client: _Writes, gvk: GVK[Any], namespace: str | None, what: str
) -> None:
    # Checked before any request: a namespaced collection without a namespace would address
    # every namespace, which no create means and no delete_all_of may do by omission.
    resource = await client.resource_for(gvk)
    if resource.namespaced and not namespace:
        raise ValueError(f"{gvk.kind} is namespaced: {what}")


def _checked(options: PatchOptions) -> PatchOptions:
    if options.force and options.patch_type is not PatchType.APPLY:
        raise ValueError("force is only valid for server-side apply (PatchType.APPLY)")
    return options


class Reader(_Reads, Protocol):
    """Reads objects: the live client, testenv's fake and the cache-backed client."""

    @overload
    async def get(
        self,
        gvk: GVK[T],
        name: str,
        *,
        namespace: str | None = ...,
        metadata_only: Literal[False] = ...,
    ) -> T: ...

    @overload
    async def get(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = ..., metadata_only: bool
    ) -> dict[str, Any]: ...

    async def get(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = None, metadata_only: bool = False
    ) -> Any:
        """The object ``name`` of kind ``gvk``, as a new dict; with ``metadata_only`` its
        PartialObjectMetadata (``meta.k8s.io/v1``).

        Raises:
            NotFound: no such object.
            NoKindMatch: the kind is not served.
            ValueError: a namespaced kind without a namespace.
            ApiError: any other refusal (e.g. Forbidden).
        """
        obj = await self._get(Target(gvk, name, namespace), metadata_only=metadata_only)
        return as_partial_object_metadata(obj) if metadata_only else obj

    # An untyped kind lists as the plain dict it always did, not as ObjectList[dict[str, Any]]:
    # the overlap with the next overload is that one case, decided by order on purpose.
    @overload
    async def list(  # type: ignore[overload-overlap]
        self,
        gvk: GVK[dict[str, Any]],
        *,
        namespace: str | None = ...,
        label_selector: SelectorLike = ...,
        field_selector: SelectorLike = ...,
        limit: int | None = ...,
        continue_: str | None = ...,
        resource_version: str | None = ...,
        resource_version_match: str | None = ...,
        metadata_only: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def list(
        self,
        gvk: GVK[T],
        *,
        namespace: str | None = ...,
        label_selector: SelectorLike = ...,
        field_selector: SelectorLike = ...,
        limit: int | None = ...,
        continue_: str | None = ...,
        resource_version: str | None = ...,
        resource_version_match: str | None = ...,
        metadata_only: Literal[False] = ...,
    ) -> ObjectList[T]: ...

    @overload
    async def list(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = ...,
        label_selector: SelectorLike = ...,
        field_selector: SelectorLike = ...,
        limit: int | None = ...,
        continue_: str | None = ...,
        resource_version: str | None = ...,
        resource_version_match: str | None = ...,
        metadata_only: bool,
    ) -> dict[str, Any]: ...

    async def list(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
    ) -> Any:
        """One List object of kind ``gvk`` (all namespaces when ``namespace`` is None); with
        ``metadata_only`` a PartialObjectMetadataList (items: metadata only, ``meta.k8s.io/v1``).
        For a typed kind (``apps.v1.DEPLOYMENT``) it is typed as an ``ObjectList`` of its objects.

        With ``limit``, a page: pass ``metadata.continue`` back as ``continue_`` for the next one.
        ``resource_version``/``resource_version_match`` choose consistency as in the API ("0"
        serves from the watch cache; "" or None is a quorum read). Items carry apiVersion/kind.

        Raises:
            Gone: the continue token (or resourceVersion) expired.
            NoKindMatch: the kind is not served.
            ApiError: any other refusal (e.g. Forbidden).
        """
        options = ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            metadata_only=metadata_only,
        )
        return await self._list(gvk, namespace, options)

    async def list_all(
        self,
        gvk: GVK[T],
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> builtins.list[T]:
        """Every matching object, fetched ``page_size`` at a time.

        If a continue token expires mid-way (410), the whole list is read again in one request,
        as client-go's pager does, so the result is always one consistent snapshot.

        Raises:
            NoKindMatch: the kind is not served.
            ApiError: the apiserver refused the list.
        """
        selectors: dict[str, Any] = {
            "namespace": namespace,
            "label_selector": label_selector,
            "field_selector": field_selector,
        }
        items: builtins.list[T] = []
        token: str | None = None
        kind: GVK[Any] = gvk  # the pages are read as plain Lists
        while True:
            try:  # through list(), which a subclass may wrap
                page = await self.list(kind, limit=page_size, continue_=token, **selectors)
            except Gone:
                if token is None:
                    raise
                return (await self.list(kind, **selectors))["items"] or []
            items.extend(page.get("items") or ())
            token = (page.get("metadata") or {}).get("continue") or None
            if token is None:
                return items


class Writer(_Writes, Protocol):
    """Creates, updates, patches and deletes objects."""

    @overload
    async def create(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def create(
        self,
        obj: T,
        *,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> T: ...

    async def create(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> Any:
        """Create ``obj`` (``metadata.generateName`` works); returns the object as stored.

        Raises:
            AlreadyExists: the name is taken.
            Invalid: validation failed.
            NoKindMatch: the kind is not served.
            ValueError: ``obj`` lacks apiVersion/kind, or a namespace for a namespaced kind.
            ApiError: any other refusal (e.g. Forbidden).
        """
        gvk = GVK.of(obj)
        namespace = (obj.get("metadata") or {}).get("namespace") or None
        await _require_namespace(self, gvk, namespace, "metadata.namespace is required")
        options = WriteOptions(field_manager=field_manager, dry_run=dry_run)
        return await self._create(gvk, namespace, obj, options)

    @overload
    async def update(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def update(
        self,
        obj: T,
        *,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> T: ...

    async def update(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> Any:
        """Replace ``obj``; its ``metadata.resourceVersion`` makes this an optimistic update.

        Raises:
            Conflict: the resourceVersion is stale; re-read and retry.
            NotFound: no such object.
            Invalid: validation failed.
            ApiError: any other refusal.
        """
        options = WriteOptions(field_manager=field_manager, dry_run=dry_run)
        return await self._update(Target(*object_identity(obj)), obj, options)

    @overload
    async def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> T: ...

    async def apply(
        self,
        obj: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> Any:
        """Server-side apply ``obj``: own exactly the fields it sets, creating it if needed.

        ``force`` takes fields over from other managers instead of failing. ``managedFields``
        in ``obj`` is ignored (the apiserver refuses it in an apply body); a resourceVersion in
        ``obj`` makes the apply conditional on it (Conflict when stale).

        Raises:
            Conflict: another manager owns a field with a different value (and not ``force``).
            Invalid: validation failed.
            ApiError: any other refusal.
        """
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
        body = {**obj, "metadata": meta}
        return await self.patch(
            obj,
            body,
            patch_type=PatchType.APPLY,
            field_manager=field_manager,
            force=force,
            dry_run=dry_run,
        )

    @overload
    async def patch(
        self,
        obj: dict[str, Any],
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
        obj: T,
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
        metadata_only: Literal[False] = ...,
    ) -> T: ...

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
        metadata_only: bool,
    ) -> dict[str, Any]: ...

    @overload
    async def patch(
        self,
        gvk: GVK[T],
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
        metadata_only: Literal[False] = ...,
    ) -> T: ...

    @overload
    async def patch(
        self,
        gvk: GVK[Any],
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
        metadata_only: bool,
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        target: GVK[Any] | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
        metadata_only: bool = False,
    ) -> Any:
        """Patch an object (default: JSON merge patch); returns the patched object, or with
        ``metadata_only`` its PartialObjectMetadata (the apiserver sends only the metadata: a
        label patch of a large object need not carry it back).

        ``patch`` is a dict (merge, strategic, apply) or a list of operations (JSON patch).
        ``force`` is only meaningful for ``PatchType.APPLY``. A resourceVersion the patch sets
        is a precondition (Conflict when stale).

        Raises:
            NotFound: no such object (apply creates instead).
            Conflict: a failed ``test`` operation, a stale resourceVersion, or an apply conflict
                without ``force``.
            Invalid: the result fails validation, or a patch type the kind does not support.
            ValueError: ``force`` with a patch type other than APPLY.
            ApiError: any other refusal.
        """
        gvk, name, ns, body = split_target(target, args, namespace)
        options = PatchOptions(
            patch_type=patch_type,
            field_manager=field_manager,
            force=force,
            dry_run=dry_run,
            metadata_only=metadata_only,
        )
        patched = await self._patch(Target(gvk, name, ns), body, _checked(options))
        return as_partial_object_metadata(patched) if metadata_only else patched

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
        gvk: GVK[Any],
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
        target: GVK[Any] | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Preconditions | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object; returns what the apiserver answered: the object (still present
        while finalizers or graceful deletion hold it, else as it was) or a Status.

        Raises:
            NotFound: no such object.
            Conflict: a precondition (uid, resourceVersion) no longer holds.
            ApiError: any other refusal.
        """
        gvk, name, ns, _ = split_target(target, args, namespace)
        options = DeleteOptions(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )
        return await self._delete(Target(gvk, name, ns), options)

    async def delete_all_of(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete every object of ``gvk`` matching the selectors in one request (deletecollection).

        A namespaced kind needs a namespace: a cluster-wide wipe is never implied by omission.

        Raises:
            ValueError: a namespaced kind without a namespace.
            ApiError: the apiserver refused (e.g. Forbidden, MethodNotAllowed, BadRequest for a
                selector that does not parse).
        """
        await _require_namespace(self, gvk, namespace, "delete_all_of needs a namespace")
        selectors = ListOptions(label_selector=label_selector, field_selector=field_selector)
        options = DeleteOptions(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            dry_run=dry_run,
        )
        return await self._delete_collection(gvk, namespace, selectors, options)


class StatusWriter(_Writes, Protocol):
    """Writes the status subresource."""

    @overload
    async def update_status(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def update_status(
        self,
        obj: T,
        *,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> T: ...

    async def update_status(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> Any:
        """Replace ``obj``'s status through the status subresource (its spec is ignored).

        Raises:
            Conflict: the resourceVersion is stale.
            NotFound: no such object, or the kind has no status subresource.
            ApiError: any other refusal.
        """
        options = WriteOptions(field_manager=field_manager, dry_run=dry_run)
        return await self._update(Target(*object_identity(obj), "status"), obj, options)

    @overload
    async def patch_status(
        self,
        obj: dict[str, Any],
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
        obj: T,
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> T: ...

    @overload
    async def patch_status(
        self,
        gvk: GVK[T],
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> T: ...

    async def patch_status(
        self,
        target: GVK[Any] | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> Any:
        """Patch the status subresource, like ``patch``; only the status changes.

        Raises:
            NotFound: no such object, or the kind has no status subresource.
            ValueError: ``force`` with a patch type other than APPLY.
            ApiError: any other refusal.
        """
        gvk, name, ns, body = split_target(target, args, namespace)
        options = PatchOptions(
            patch_type=patch_type, field_manager=field_manager, force=force, dry_run=dry_run
        )
        return await self._patch(Target(gvk, name, ns, "status"), body, _checked(options))


class SubResourceClient(_Reads, _Writes, Protocol):
    """Reads the status subresource; reads and writes the scale subresource."""

    async def get_status(self, gvk: GVK[T], name: str, *, namespace: str | None = None) -> T:
        """The object read through its status subresource.

        Raises:
            NotFound: no such object, or the kind has no status subresource.
        """
        # A typed kind's object is the same dict: only the type checker sees T.
        return cast(T, await self._get(Target(gvk, name, namespace, "status"), metadata_only=False))

    async def get_scale(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The object's autoscaling/v1 Scale (``spec.replicas``, ``status.replicas``/selector).

        Raises:
            NotFound: no such object, or the kind has no scale subresource.
        """
        return await self._get(Target(gvk, name, namespace, "scale"), metadata_only=False)

    async def update_scale(
        self,
        gvk: GVK[Any],
        scale: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Replace the Scale of the ``gvk`` object named in ``scale``'s metadata.

        Raises:
            Conflict: ``scale`` carries a stale resourceVersion.
            NotFound: no such object, or the kind has no scale subresource.
        """
        meta = scale.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), meta.get("namespace") or None
        options = WriteOptions(field_manager=field_manager, dry_run=dry_run)
        return await self._update(Target(gvk, name, namespace, "scale"), scale, options)

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
        gvk: GVK[Any],
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
        target: GVK[Any] | Mapping[str, Any],
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
        gvk, name, ns, body = split_target(target, args, namespace)
        options = PatchOptions(patch_type=patch_type, field_manager=field_manager, dry_run=dry_run)
        return await self._patch(Target(gvk, name, ns, "scale"), body, options)


class ListerWatcher(Protocol):
    """One collection (kind, namespace, selectors) a reflector lists and watches."""

    async def list(
        self,
        *,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> dict[str, Any]:
        """One page of the collection as the raw List object (items, metadata.resourceVersion,
        metadata.continue).

        Raises:
            ApiError: e.g. Gone for 410, Forbidden for 403, NotFound for an unknown resource path.
            NoKindMatch: the kind is not served.
        """
        ...

    def watch(
        self,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> Events:
        """Open a watch; the iterator yields raw events {"type": "ADDED"|"MODIFIED"|"DELETED"|
        "BOOKMARK"|"ERROR", "object": {...}} decoded from the newline-delimited JSON stream, and
        ends when the server closes the stream. Exiting the context closes the HTTP response.

        Raises:
            ApiError: the watch request itself was refused.
            NoKindMatch: the kind is not served.
        """
        ...


class WithWatch(Reader, _Watches, Protocol):
    """Reads and watches objects: what informers and reflectors need of a client."""

    def watch(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        resource_version: str | None = None,
        timeout_seconds: int = 300,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool = False,
        metadata_only: bool = False,
    ) -> Events:
        """Watch changes of kind ``gvk`` from ``resource_version``: ``async with`` it to get an
        iterator of raw events that ends when the server closes the stream after
        ``timeout_seconds``. Leaving the block (or cancellation) closes the response.
        ``metadata_only`` asks for events of PartialObjectMetadata (a server that cannot sends
        whole objects: reduce them with ``as_partial_object_metadata``).

        ``send_initial_events`` asks for the current state as ADDED events first, ending with a
        BOOKMARK annotated ``k8s.io/initial-events-end`` (WatchList; implies NotOlderThan).

        Raises:
            ApiError: the apiserver refused the watch (e.g. Gone for a compacted version).
            NoKindMatch: the kind is not served.
            TimeoutError: while iterating, the stream went silent well past ``timeout_seconds``.
            ResponseTooLarge: while iterating, an event was longer than the client's cap.
        """
        options = WatchOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=allow_watch_bookmarks,
            send_initial_events=send_initial_events,
            metadata_only=metadata_only,
        )
        return self._watch(gvk, namespace, options)

    def lister_watcher(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        metadata_only: bool = False,
    ) -> ListerWatcher:
        """The collection of ``gvk`` (optionally one namespace, selectors) for a reflector;
        with ``metadata_only`` listed and watched as PartialObjectMetadata.

        The kind is mapped lazily, on the first list or watch, so building it never fails.
        """
        return _ClientListerWatcher(
            self, gvk, namespace, label_selector, field_selector, metadata_only
        )


class ObjectClient(WithWatch, Writer, StatusWriter, SubResourceClient, Protocol):
    """Everything a client does with objects: what ``Client``, ``FakeClient`` and
    ``CachedClient`` are, by subclassing it and implementing its primitives."""


class _ClientListerWatcher:
    """A ListerWatcher over a client for one kind, namespace and selectors."""

    def __init__(
        self,
        client: WithWatch,
        gvk: GVK[Any],
        namespace: str | None,
        label_selector: SelectorLike,
        field_selector: SelectorLike,
        metadata_only: bool = False,
    ) -> None:
        self._client = client
        self.gvk = gvk
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        # Passed only when set: a client double without metadata support still lists whole.
        self._view: dict[str, bool] = {"metadata_only": True} if metadata_only else {}

    def __repr__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"ListerWatcher({self.gvk}{where})"

    async def list(
        self,
        *,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> dict[str, Any]:
        return await self._client.list(
            self.gvk,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            **self._view,
        )

    def watch(
        self,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> Events:
        return self._client.watch(
            self.gvk,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=allow_watch_bookmarks,
            send_initial_events=send_initial_events,
            **self._view,
        )
