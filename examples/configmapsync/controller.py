"""ConfigMapSync keeps each labelled ConfigMap of the host in every engaged member cluster.

A host ConfigMap labelled ``configmapsync.example.com/sync: "true"`` is copied, data and labels,
into the same namespace of every member a provider engaged; the copy carries
``configmapsync.example.com/copy: "true"``. On the host object, one annotation per member says
how its copy stands: ``configmapsync.example.com/member.<member>: Synced`` or ``Failed: <why>``.

A request is one pair, host ConfigMap and member: ``Request(name, namespace, cluster=member)``.
Three watches feed them, each in the cluster where things change:

- the host's labelled ConfigMaps: one request per engaged member (a map function);
- the copies in every engaged member (``cluster=ENGAGED``): a copy changed or deleted there is
  put right;
- the Namespaces of every engaged member: a member engaged at run time lists its namespaces, so
  each of its namespaces asks for the host ConfigMaps that belong there (``in_cluster`` tags them
  with the member, as the Builder does for every ``ENGAGED`` watch).

Deleting the host ConfigMap deletes the copies: each member's request finds the host object
gone and deletes its copy, if it is one. No finalizer is needed, because the copies in the
members' caches say where copies are, even after a restart. A member out of reach fails only its
own requests: the host annotation says so, the controller retries with backoff, and the other
members go on.

Run it with kubeconfigs of members in a folder:
``python -m examples.configmapsync --kubeconfig host.yaml --members ./members/``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any, Final

import aiohttp

from reconcile import (
    ENGAGED,
    ApiError,
    CachedClient,
    EnqueueRequestForObject,
    EnqueueRequestsFromAsyncMapFunc,
    EnqueueRequestsFromMapFunc,
    ExpectedError,
    Manager,
    NotFound,
    Obj,
    Request,
    Result,
    annotations_of,
    controller_managed_by,
    label_selector,
    labels_of,
    parse_selector,
    truncate_message,
)
from reconcile.api.core.v1 import CONFIG_MAP, NAMESPACE

__all__ = ["COPY_LABEL", "STATE_ANNOTATION_PREFIX", "SYNC_LABEL", "ConfigMapSync", "setup"]

SYNC_LABEL: Final = "configmapsync.example.com/sync"
"""On a host ConfigMap: "true" to have it in every member."""
COPY_LABEL: Final = "configmapsync.example.com/copy"
"""On a member's ConfigMap: this controller made it, and deletes it with its host object."""
STATE_ANNOTATION_PREFIX: Final = "configmapsync.example.com/member."
"""On a host ConfigMap, followed by a member's name: how that member's copy stands."""
STATE_LIMIT: Final = 1024
"""Bytes of a failure's message kept in an annotation (the whole object has a 256 KiB budget)."""


class MemberFailed(ExpectedError):
    """A member refused or could not be reached: retried with backoff, logged in one line."""

    reason = "MemberFailed"


class ConfigMapSync:
    """Makes one member's copy of one host ConfigMap match it, and reports on the host."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.host: CachedClient = manager.client

    async def reconcile(self, request: Request) -> Result | None:
        """Copy, update or delete ``request.cluster``'s copy; write its state on the host."""
        try:
            member = self.manager.get_cluster(request.cluster).client
        except KeyError:
            return None  # disengaged meanwhile: its requests are dropped
        try:
            source = await self.host.get(CONFIG_MAP, request.name, namespace=request.namespace)
        except NotFound:
            source = None
        if source is None or labels_of(source).get(SYNC_LABEL) != "true":
            await _delete_copy(member, request)
            return None
        try:
            await _apply_copy(member, source)
        except (MemberFailed, ApiError, aiohttp.ClientError, OSError, TimeoutError) as error:
            await self._report(source, request.cluster, f"Failed: {error}")
            raise MemberFailed(f"{request.cluster}: {error}") from error
        await self._report(source, request.cluster, "Synced")
        return None

    async def _report(self, source: Obj, member: str, state: str) -> None:
        key = STATE_ANNOTATION_PREFIX + member
        state = truncate_message(state, STATE_LIMIT, in_bytes=True)
        if annotations_of(source).get(key) == state:
            return  # written already: a status write that changes nothing is not sent
        patch = {"metadata": {"annotations": {key: state}}}
        meta = source["metadata"]
        await self.host.patch(CONFIG_MAP, meta["name"], patch, namespace=meta["namespace"])


def _copy_of(source: Obj) -> dict[str, Any]:
    labels = {k: v for k, v in labels_of(source).items() if k != SYNC_LABEL}
    copy: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": source["metadata"]["name"],
            "namespace": source["metadata"]["namespace"],
            "labels": {**labels, COPY_LABEL: "true"},
        },
    }
    for field in ("data", "binaryData"):
        if field in source:
            copy[field] = source[field]
    return copy


async def _apply_copy(member: CachedClient, source: Obj) -> None:
    wanted = _copy_of(source)
    meta = wanted["metadata"]
    try:
        current = await member.get(CONFIG_MAP, meta["name"], namespace=meta["namespace"])
    except NotFound:
        await member.create(wanted)
        return
    if labels_of(current).get(COPY_LABEL) != "true":
        raise MemberFailed(f"{meta['namespace']}/{meta['name']} exists and is not a copy")
    fields = ("data", "binaryData")
    if labels_of(current) == meta["labels"] and all(
        current.get(f) == wanted.get(f) for f in fields
    ):
        return
    current["metadata"]["labels"] = meta["labels"]
    for field in fields:
        current.pop(field, None)
        if field in wanted:
            current[field] = wanted[field]
    await member.update(current)


async def _delete_copy(member: CachedClient, request: Request) -> None:
    try:
        copy = await member.get(CONFIG_MAP, request.name, namespace=request.namespace)
    except NotFound:
        return
    if labels_of(copy).get(COPY_LABEL) == "true":  # never someone else's ConfigMap
        with contextlib.suppress(NotFound):
            await member.delete(CONFIG_MAP, request.name, namespace=request.namespace)


def setup(manager: Manager) -> ConfigMapSync:
    """Register the controller with ``manager`` (whose providers engage the members)."""
    reconciler = ConfigMapSync(manager)
    copies = label_selector(parse_selector(f"{COPY_LABEL}=true"))

    def to_every_member(source: Obj) -> Iterable[Request]:
        # Called with the old object and the new: one that loses the label still has its
        # copies deleted.
        if labels_of(source).get(SYNC_LABEL) != "true":
            return []
        meta = source["metadata"]
        return [Request(meta["name"], meta["namespace"], m) for m in manager.engaged()]

    async def host_objects_of(namespace: Obj) -> Iterable[Request]:
        name = namespace["metadata"]["name"]
        wanted = await manager.client.list(
            CONFIG_MAP, namespace=name, label_selector=f"{SYNC_LABEL}=true"
        )
        return [Request(o["metadata"]["name"], name) for o in wanted["items"]]

    (
        controller_managed_by(manager)
        .named("configmapsync")
        .watches(CONFIG_MAP, EnqueueRequestsFromMapFunc(to_every_member))
        .watches(CONFIG_MAP, EnqueueRequestForObject(), copies, cluster=ENGAGED)
        .watches(NAMESPACE, EnqueueRequestsFromAsyncMapFunc(host_objects_of), cluster=ENGAGED)
        .complete(reconciler)
    )
    return reconciler
