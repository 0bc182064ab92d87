"""Controllerutil writes an object to the state a mutate function wants, creating it if needed.

``create_or_update`` and ``create_or_patch`` are controller-runtime's controllerutil functions of
the same names: read the object by its name and namespace, let ``mutate`` change it, then create it
(not found), write it (changed) or leave it alone (unchanged: no request, so the resourceVersion
stays), and say which with an ``OperationResult``. ``obj`` is changed in place, as
controller-runtime's is: on return it holds what the apiserver last sent.

``mutate`` may not change the object's name or namespace (a ValueError, before any write); it may
be a plain or an async function. With the manager's CachedClient the read comes from the cache, so
a stale read surfaces as Conflict from the update: return it and let the controller retry.

Two helpers for the write at the end of a reconcile: ``merge_from(before, obj)`` is
controller-runtime's ``client.MergeFrom`` (the merge patch from a copy taken before the changes,
optionally with an optimistic lock), and ``patch_status_if_changed(client, before, obj)`` writes
the status only when it differs from the object as read, as a patch, so a cached object's stale
resourceVersion does not make it a Conflict as ``update_status`` would.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Any, Protocol

from reconcile.errors import NotFound
from reconcile.gvk import GVK
from reconcile.objects import ObjectKey, resource_version_of

__all__ = [
    "MutateFn",
    "ObjectWriter",
    "OperationResult",
    "create_or_patch",
    "create_or_update",
    "merge_from",
    "merge_patch_between",
    "patch_status_if_changed",
]

MutateFn = Callable[[dict[str, Any]], Awaitable[None] | None]
"""Brings the object it is given to the wanted state, in place (plain or async)."""


class OperationResult(StrEnum):
    """What ``create_or_update``/``create_or_patch`` did; each completes "the object was ...".

    The values are controller-runtime's, so logs and metrics read the same.
    """

    UNCHANGED = "unchanged"
    """Nothing was written: ``mutate`` left the object as it was."""
    CREATED = "created"
    UPDATED = "updated"
    """The object (not its status) was written."""
    UPDATED_STATUS = "updatedStatus"
    """The object and its status subresource were written (create_or_patch only)."""
    UPDATED_STATUS_ONLY = "updatedStatusOnly"
    """Only the status subresource was written (create_or_patch only)."""


class ObjectWriter(Protocol):
    """The client calls these functions make: a ``Client``, a ``CachedClient`` or testenv's fake."""

    async def get(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Read one object."""
        ...

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an object."""
        ...

    async def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace an object (optimistic, by resourceVersion)."""
        ...

    async def patch(self, obj: dict[str, Any], patch: Any, /) -> dict[str, Any]:
        """Merge-patch an object."""
        ...

    async def patch_status(self, obj: dict[str, Any], patch: Any, /) -> dict[str, Any]:
        """Merge-patch an object's status subresource."""
        ...


async def _read(client: ObjectWriter, obj: dict[str, Any], key: ObjectKey) -> bool:
    """Replace ``obj``'s contents with the stored object; False when there is none."""
    gvk = GVK.of(obj)
    try:
        stored = await client.get(gvk, key.name, namespace=key.namespace or None)
    except NotFound:
        return False
    _replace(obj, stored, gvk)
    return True


def _replace(obj: dict[str, Any], new: Mapping[str, Any], gvk: GVK[Any]) -> None:
    obj.clear()
    obj.update(new)
    # Lists' items and some fakes omit them; the caller's kind is the one it asked for.
    obj.setdefault("apiVersion", gvk.api_version)
    obj.setdefault("kind", gvk.kind)


async def _mutate(mutate: MutateFn, obj: dict[str, Any], key: ObjectKey) -> None:
    outcome = mutate(obj)
    if inspect.isawaitable(outcome):
        await outcome
    if ObjectKey.of(obj) != key:
        # As controller-runtime: the read and the write would be about different objects.
        raise ValueError(
            f"mutate cannot change the name or namespace of {GVK.of(obj).kind} {key} "
            f"(it changed them to {ObjectKey.of(obj)})"
        )


async def _create(
    client: ObjectWriter, obj: dict[str, Any], mutate: MutateFn, key: ObjectKey
) -> OperationResult:
    await _mutate(mutate, obj, key)
    _replace(obj, await client.create(obj), GVK.of(obj))
    return OperationResult.CREATED


async def create_or_update(
    client: ObjectWriter, obj: dict[str, Any], mutate: MutateFn
) -> OperationResult:
    """Create ``obj`` or update it to what ``mutate`` makes of the stored object.

    ``obj`` needs apiVersion, kind, name and (for namespaced kinds) namespace. It is read, then
    ``mutate(obj)`` runs: on the stored object, or on ``obj`` as given when there is none. A
    mutated object equal to the stored one is not written (``UNCHANGED``); otherwise it is
    updated (a full PUT, so a stale read fails with Conflict instead of undoing another write).
    The status is sent along but the apiserver ignores it for kinds with a status subresource.

    Raises:
        ValueError: ``mutate`` changed the name or namespace.
        Conflict: the object changed since it was read.
        ApiError: the read or write was refused.
    """
    key = ObjectKey.of(obj)
    if not await _read(client, obj, key):
        return await _create(client, obj, mutate, key)
    existing = copy.deepcopy(obj)
    await _mutate(mutate, obj, key)
    if obj == existing:
        return OperationResult.UNCHANGED
    _replace(obj, await client.update(obj), GVK.of(existing))
    return OperationResult.UPDATED


def merge_patch_between(before: Any, after: Any) -> Any:
    """The RFC 7386 merge patch that turns ``before`` into ``after`` (``{}`` when equal)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return copy.deepcopy(after)
    patch: dict[str, Any] = {key: None for key in before if key not in after}
    for key, value in after.items():
        if key not in before:
            patch[key] = copy.deepcopy(value)
        elif before[key] != value:
            nested = isinstance(before[key], Mapping) and isinstance(value, Mapping)
            patch[key] = merge_patch_between(before[key], value) if nested else copy.deepcopy(value)
    return patch


def merge_from(
    before: Mapping[str, Any], after: Mapping[str, Any], *, optimistic_lock: bool = False
) -> dict[str, Any]:
    """The JSON merge patch from ``before`` to ``after`` (controller-runtime's ``MergeFrom``)::

        before = deep_copy(obj)
        obj["spec"]["replicas"] = 3
        await client.patch(obj, merge_from(before, obj))

    Only what changed is sent, so fields other writers own are kept. With ``optimistic_lock``
    (``MergeFromWithOptimisticLock``) the patch also carries ``before``'s resourceVersion: the
    apiserver refuses it with a Conflict if the object changed since it was read.

    Raises:
        ValueError: ``optimistic_lock`` and ``before`` has no resourceVersion.
    """
    patch: dict[str, Any] = merge_patch_between(before, after)
    if optimistic_lock:
        version = resource_version_of(before)
        if not version:
            raise ValueError("merge_from with optimistic_lock needs before's resourceVersion")
        patch.setdefault("metadata", {})["resourceVersion"] = version
    return patch


async def patch_status_if_changed(
    client: ObjectWriter, before: Mapping[str, Any], obj: Mapping[str, Any]
) -> bool:
    """Write ``obj``'s status if it differs from ``before``'s; returns whether it wrote.

    ``before`` is the object as read (from the cache, say), ``obj`` a copy whose status the
    reconcile set. The write is a merge patch of the status subresource with only the changed
    fields and no resourceVersion, so a stale cached copy is not a Conflict and other writers'
    status fields stay; ``obj`` then holds what the apiserver sent. A typed object (a
    TypedDict, which a type checker does not take for a ``dict``) is accepted as it is.

    Raises:
        TypeError: ``obj`` is a read-only mapping, which cannot take the answer.
        NotFound: the object is gone, or its kind has no status subresource.
        ApiError: the patch was refused.
    """
    if obj.get("status") == before.get("status"):
        return False
    if not isinstance(obj, dict):
        raise TypeError(f"cannot write the answer into a {type(obj).__name__}: pass the dict")
    patch = {"status": merge_patch_between(before.get("status") or {}, obj.get("status") or {})}
    _replace(obj, await client.patch_status(obj, patch), GVK.of(obj))
    return True


def _without_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key != "status"}


async def create_or_patch(
    client: ObjectWriter, obj: dict[str, Any], mutate: MutateFn
) -> OperationResult:
    """Create ``obj`` or merge-patch the stored object with what ``mutate`` changed.

    Like ``create_or_update``, but only the fields ``mutate`` changed are sent (a JSON merge
    patch, no resourceVersion, so it does not conflict with other writers of other fields), and
    a changed ``status`` goes to the status subresource in a second patch. The result says which
    of the two were written: ``UPDATED``, ``UPDATED_STATUS`` (both), ``UPDATED_STATUS_ONLY``.
    On create the status is sent along; kinds with a status subresource drop it.

    Raises:
        ValueError: ``mutate`` changed the name or namespace.
        NotFound: a status change for a kind without a status subresource.
        ApiError: the read or a write was refused.
    """
    key = ObjectKey.of(obj)
    if not await _read(client, obj, key):
        return await _create(client, obj, mutate, key)
    gvk = GVK.of(obj)
    before = copy.deepcopy(obj)
    await _mutate(mutate, obj, key)
    wanted_status = copy.deepcopy(obj.get("status"))
    result = OperationResult.UNCHANGED
    patch = merge_patch_between(_without_status(before), _without_status(obj))
    if patch:
        _replace(obj, await client.patch(obj, patch), gvk)
        result = OperationResult.UPDATED
    if wanted_status != before.get("status"):
        status_patch = {"status": merge_patch_between(before.get("status"), wanted_status)}
        _replace(obj, await client.patch_status(obj, status_patch), gvk)
        updated = result is OperationResult.UPDATED
        result = OperationResult.UPDATED_STATUS if updated else OperationResult.UPDATED_STATUS_ONLY
    return result
