"""Namespacesync is Karmada's namespace sync controller: every host namespace goes to every member.

``setup(context)`` registers the ``namespace`` controller (Karmada's name for it in
``--controllers``; its Events come from ``namespace-sync-controller``). As in Karmada's
pkg/controllers/namespace, each host namespace except the reserved ones (``karmada-system``,
``karmada-cluster``, ``karmada-es-*``), ``default`` and those matching a skipped pattern
(``--skipped-propagating-namespaces``, default ``kube-.*``, each anchored) becomes one Work per
Cluster, in the member's execution namespace, named as a cluster-scoped template's Work
(``work_name("Namespace", name)``), with a controller owner reference to the namespace and the
execution controller's finalizer. ClusterOverridePolicies apply to it (OverridePolicies cannot:
a namespace is cluster-scoped), recorded in ``policy.karmada.io/applied-cluster-overrides``.

A namespace labelled ``namespace.karmada.io/skip-auto-propagation=true`` is not propagated; as in
Karmada, adding the label later leaves the members' copies (withdrawing them would delete the
member namespace with everything in it). Karmada leaves the deletion of the Works of a deleted
namespace to the garbage collector; not every control plane runs one (testenv does not, and a
deleted namespace stays Terminating until its content is gone), so a namespace being deleted or
gone has its Works deleted here, and the execution controller deletes the members' namespaces.

A new Cluster enqueues every namespace; a ClusterOverridePolicy change enqueues the namespaces
its Namespace selectors name (every namespace for a selector without a name). A member that
already has the namespace, not created by Karmada, keeps it: the Work carries no
conflict-resolution annotation, so the execution controller reports it instead of taking over
(as Karmada does).
"""

from __future__ import annotations

import contextlib
import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import structlog

from controllers.api import (
    APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
    CLUSTER_GVK,
    CLUSTER_OVERRIDE_POLICY_GVK,
    EXECUTION_CONTROLLER_FINALIZER,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    is_reserved_namespace,
    override_spec,
)
from controllers.binding import (
    OverrideError,
    applied_overrides_annotations,
    apply_overrides,
    execution_namespace,
    prune_manifest,
    work_name,
)
from controllers.binding.workload import record_managed_keys
from controllers.context import Context
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    AlreadyExists,
    CachedClient,
    EnqueueRequestsFromMapFunc,
    Event,
    EventRecorder,
    EventType,
    NotFound,
    Obj,
    Request,
    add_finalizer,
    controller_managed_by,
    is_being_deleted,
    labels_of,
    name_of,
    owner_reference,
)
from reconcile.sharding import shard_labels

__all__ = [
    "DEFAULT_SKIPPED_PROPAGATING_NAMESPACES",
    "EVENT_SOURCE",
    "NAME",
    "NAMESPACE_GVK",
    "PERMISSIONS",
    "NamespaceSyncController",
    "namespace_work",
    "setup",
    "should_sync",
    "skipped_patterns",
]

NAME: Final = "namespace"
EVENT_SOURCE: Final = "namespace-sync-controller"
NAMESPACE_GVK: Final = GVK("", "v1", "Namespace")
DEFAULT_SKIPPED_PROPAGATING_NAMESPACES: Final = ("kube-.*",)
"""Karmada's ``--skipped-propagating-namespaces`` default (regular expressions, anchored)."""
DEFAULT_NAMESPACE: Final = "default"
SYNC_FAILED_REASON: Final = "SyncNamespaceFailed"

PERMISSIONS: Final = Permissions(
    rules=(
        cache("", "namespaces"),
        cache("work.karmada.io", "works"),
        Rule(("work.karmada.io",), ("works",), ("get",), "a live read after AlreadyExists"),
        Rule(("work.karmada.io",), ("works",), ("create", "update", "delete"), "the Works"),
        cache("cluster.karmada.io", "clusters"),
        cache("policy.karmada.io", "clusteroverridepolicies"),
    )
)
"""What the namespace sync controller does on the host (see controllers.rbac)."""

log = structlog.get_logger("controllers.namespacesync")


def skipped_patterns(patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """Compile ``--skipped-propagating-namespaces`` values, anchored as Karmada does (``^p$``).

    Raises:
        ValueError: a pattern is not a valid regular expression.
    """
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(f"^(?:{pattern})$"))
        except re.error as error:
            raise ValueError(f"--skipped-propagating-namespaces: {pattern!r}: {error}") from error
    return tuple(compiled)


def should_sync(name: str, skipped: Sequence[re.Pattern[str]]) -> bool:
    """Whether the namespace ``name`` is propagated: not reserved, not ``default``, not skipped.

    ``is_reserved_namespace`` also covers ``kube-*``, which Karmada reserves for templates.
    """
    if name == DEFAULT_NAMESPACE or is_reserved_namespace(name):
        return False
    return not any(pattern.match(name) for pattern in skipped)


def _skips_auto_propagation(namespace: Mapping[str, Any]) -> bool:
    return str(labels_of(namespace).get(NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL, "")).lower() == (
        "true"
    )


def namespace_work(
    namespace: Mapping[str, Any],
    cluster: Mapping[str, Any],
    cluster_override_policies: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The Work that creates ``namespace`` in the member ``cluster`` (a Cluster object).

    Raises:
        OverrideError: a ClusterOverridePolicy selecting the namespace cannot be applied.
    """
    source = {**copy.deepcopy(dict(namespace)), "apiVersion": "v1", "kind": "Namespace"}
    result = apply_overrides(source, cluster, cluster_override_policies=cluster_override_policies)
    manifest = result.manifest
    name, work_namespace = (
        work_name("Namespace", name_of(namespace)),
        execution_namespace(name_of(cluster)),
    )
    metadata = manifest.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_LABEL: MANAGED_LABEL_VALUE}
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        WORK_NAME_ANNOTATION: name,
        WORK_NAMESPACE_ANNOTATION: work_namespace,
    }
    manifest = prune_manifest(manifest)
    record_managed_keys(manifest)
    return {
        "apiVersion": WORK_GVK.api_version,
        "kind": WORK_GVK.kind,
        "metadata": {
            "name": name,
            "namespace": work_namespace,
            # On its Namespace's shard (same key) from its first event.
            "labels": shard_labels(namespace),
            "annotations": applied_overrides_annotations(result.cluster_overrides, ()),
            "finalizers": [EXECUTION_CONTROLLER_FINALIZER],
            "ownerReferences": [owner_reference(source, controller=True)],
        },
        "spec": {"workload": {"manifests": [manifest]}},
    }


def _owned_by(work: Mapping[str, Any], namespace: str) -> bool:
    owners = (work.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("kind") == "Namespace" and o.get("name") == namespace for o in owners)


def _merged(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(existing))
    metadata, wanted = merged.setdefault("metadata", {}), desired["metadata"]
    annotations = {**(metadata.get("annotations") or {}), **wanted["annotations"]}
    if not wanted["annotations"]:
        annotations.pop(APPLIED_CLUSTER_OVERRIDES_ANNOTATION, None)
    # The apiserver stores no empty map: an empty one here would differ from what it returns,
    # and the Work would be updated, to no effect, on every reconcile (each takeover, re-list).
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    metadata["ownerReferences"] = wanted["ownerReferences"]
    add_finalizer(merged, EXECUTION_CONTROLLER_FINALIZER)
    merged["spec"] = copy.deepcopy(desired["spec"])
    return merged


class NamespaceSyncController:
    """Keeps one Work per member for every propagated host namespace (see the module docstring)."""

    def __init__(
        self,
        client: CachedClient,
        recorder: EventRecorder,
        *,
        skipped: Sequence[re.Pattern[str]] = (),
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.skipped = tuple(skipped)

    async def reconcile(self, request: Request) -> None:
        """Create, update or delete the Works of the namespace ``request`` names.

        Raises:
            ApiError: a read or write failed; retried with backoff.
        """
        if not should_sync(request.name, self.skipped):
            return
        try:
            namespace = await self.client.get(NAMESPACE_GVK, request.name)
        except NotFound:
            namespace = None
        clusters = await self.client.list_all(CLUSTER_GVK)
        if namespace is None or is_being_deleted(namespace):
            await self._withdraw(request.name, clusters)
            return
        if _skips_auto_propagation(namespace):
            log.debug("namespace skips auto propagation", namespace=request.name)
            return
        policies = await self.client.list_all(CLUSTER_OVERRIDE_POLICY_GVK)
        # A Cluster being deleted gets no new Work: the cluster controller is deleting its Works
        # to let it go, and writing them again would hold its finalizer forever.
        for cluster in (c for c in clusters if not is_being_deleted(c)):
            try:
                work = namespace_work(namespace, cluster, policies)
            except OverrideError as error:
                # Only a policy change fixes it, and that enqueues the namespace again.
                message = f"Failed to sync namespace to cluster {name_of(cluster)}: {error}"
                self.recorder.event(namespace, "Warning", SYNC_FAILED_REASON, message)
                continue
            await self._write(work)

    async def _write(self, work: Obj) -> None:
        name, namespace = name_of(work), work["metadata"]["namespace"]
        try:
            existing = await self.client.get(WORK_GVK, name, namespace=namespace)
        except NotFound:
            try:
                await self.client.create(work)
                return
            except AlreadyExists:
                existing = await self.client.live.get(WORK_GVK, name, namespace=namespace)
        if is_being_deleted(existing):
            return  # its deletion enqueues nothing here; the next namespace event writes it
        merged = _merged(existing, work)
        if merged != existing:
            await self.client.update(merged)

    async def _withdraw(self, namespace: str, clusters: Iterable[Obj]) -> None:
        name = work_name("Namespace", namespace)
        for cluster in clusters:
            work_namespace = execution_namespace(name_of(cluster))
            try:
                work = await self.client.get(WORK_GVK, name, namespace=work_namespace)
            except NotFound:
                continue
            if _owned_by(work, namespace) and not is_being_deleted(work):
                log.info("deleting the Work of a deleted namespace", namespace=namespace)
                with contextlib.suppress(NotFound):
                    await self.client.delete(WORK_GVK, name, namespace=work_namespace)


def _created(event: Event) -> bool:
    return event.type is EventType.CREATE


def _namespace_of_work(work: Obj) -> list[Request]:
    # A Work deleted by hand (or its owner gone) is written again, or its leftovers removed.
    owners = (work.get("metadata") or {}).get("ownerReferences") or []
    return [Request(str(o.get("name"))) for o in owners if o.get("kind") == "Namespace"]


class _Namespaces:
    """Maps Cluster and ClusterOverridePolicy events to the namespaces they concern."""

    def __init__(self, client: CachedClient) -> None:
        self.client = client

    def _all(self) -> list[Request]:
        informer = self.client.cache.get_informer(NAMESPACE_GVK)
        return [Request(name_of(ns)) for ns in informer.indexer.values()]

    def for_cluster(self, _cluster: Obj) -> list[Request]:
        return self._all()

    def for_policy(self, policy: Obj) -> list[Request]:
        names: set[str] = set()
        for selector in override_spec(policy).get("resourceSelectors") or []:
            if selector.get("apiVersion") != "v1" or selector.get("kind") != "Namespace":
                continue
            if not selector.get("name"):
                return self._all()
            names.add(str(selector["name"]))
        return [Request(name) for name in sorted(names)]


def setup(
    context: Context, *, skipped_namespaces: Iterable[str] = DEFAULT_SKIPPED_PROPAGATING_NAMESPACES
) -> None:
    """Register the namespace sync controller with ``context.manager`` (controller ``namespace``).

    Raises:
        ValueError: a skipped-namespace pattern is not a valid regular expression.
    """
    manager = context.manager
    reconciler = NamespaceSyncController(
        manager.client,
        manager.event_recorder(EVENT_SOURCE),
        skipped=skipped_patterns(skipped_namespaces),
    )
    namespaces = _Namespaces(manager.client)
    builder = (
        controller_managed_by(manager)
        .named(NAME)
        .for_(NAMESPACE_GVK)
        .watches(CLUSTER_GVK, EnqueueRequestsFromMapFunc(namespaces.for_cluster), _created)
        .watches(CLUSTER_OVERRIDE_POLICY_GVK, EnqueueRequestsFromMapFunc(namespaces.for_policy))
        .watches(WORK_GVK, EnqueueRequestsFromMapFunc(_namespace_of_work), _deleted_or_created)
    )
    context.complete(builder, reconciler, sharded_by=NAMESPACE_GVK)


def _deleted_or_created(event: Event) -> bool:
    return event.type in (EventType.DELETE, EventType.CREATE)
