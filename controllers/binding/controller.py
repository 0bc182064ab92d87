"""BindingController turns each scheduled binding into one Work per target cluster.

It is Karmada's binding controller over ResourceBindings and ClusterResourceBindings (one queue: a
Request with a namespace is a ResourceBinding, without one a ClusterResourceBinding). Per binding:
the finalizer ``karmada.io/binding-controller`` (ClusterResourceBinding:
``karmada.io/cluster-resource-binding-controller``) and a permanent id label; once the binding is
scheduled (condition Scheduled True), for every cluster in ``spec.clusters``: the template (from
the cache, or live when the cache has not seen the version the binding names), ReviseReplica to
the cluster's share when the binding is Divided with replicas, the override policies
(``build_workload``) and the Work (``build_work``), created or updated when it differs. Works of
clusters no longer targeted are deleted (found by the binding id label). A deleted binding has its
Works deleted, then its finalizer removed.

A cluster whose overrides or ReviseReplica fail keeps its current Work; the failure is an Event
and the binding's ``WorksSynced`` condition, and the other clusters are unaffected. A template of a
kind RBAC does not let this process read (as the detector's access reviews found:
``context.permitted_kinds``; e.g. a Secret a dependency's attached binding names, under a role
without Secrets) is not requested: its Works are kept as they are and ``WorksSynced`` says which
permission is missing; the binding is reconciled again once a discovery round permits the kind.

Works (in the ``karmada-es-*`` namespaces, so no owner references) map back to their binding
through their annotations; override policy and Cluster changes re-enqueue the bindings they may
affect, and so does an interpreter change for the binding's kind.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from controllers.api import (
    APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
    APPLIED_OVERRIDES_ANNOTATION,
    BINDING_CONTROLLER_FINALIZER,
    BINDING_RESOURCE_INDEX,
    CLUSTER_GVK,
    CLUSTER_OVERRIDE_POLICY_GVK,
    CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER,
    CLUSTER_RESOURCE_BINDING_GVK,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    DIVIDED,
    OVERRIDE_POLICY_GVK,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    SCHEDULED_CONDITION,
    TARGET_CLUSTER_INDEX,
    WORK_GVK,
    TargetCluster,
    binding_resource_kind,
    binding_spec,
    built_from,
    cluster_of_execution_namespace,
    override_spec,
    replica_scheduling_type_of,
    target_cluster_names,
    work_target_clusters,
)
from controllers.binding.names import binding_id_label, binding_id_of
from controllers.binding.overrides import OverrideError
from controllers.binding.workload import build_work, build_workload
from controllers.context import BINDINGS, Context
from controllers.eviction.preservation import injected_labels
from controllers.eviction.task import purges_at_once
from controllers.interpreter import Interpreter, InterpreterError, KindFilter, NotSupported
from controllers.permittedkinds import Denial, PermittedKinds
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    NAMESPACE_INDEX,
    AlreadyExists,
    CachedClient,
    Conflict,
    EnqueueRequestForObject,
    EnqueueRequestsFromMapFunc,
    Event,
    EventRecorder,
    EventType,
    NoKindMatch,
    NotFound,
    Obj,
    Request,
    Result,
    SharedInformer,
    add_finalizer,
    annotations_of,
    controller_managed_by,
    get_condition,
    is_being_deleted,
    is_condition_true,
    labels_of,
    name_of,
    namespace_of,
    remove_finalizer,
    set_condition,
)
from reconcile.sharding import without_sharding_labels

__all__ = [
    "PERMISSIONS",
    "BINDING_CONTROLLER_NAME",
    "BindingController",
    "CONFLICT_RETRY",
    "SYNC_WORK_FAILED_REASON",
    "SYNC_WORK_SUCCEED_REASON",
    "WORKS_SYNCED_CONDITION",
    "binding_changed",
    "merged_work",
    "setup",
    "work_changed",
]

PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "resourcebindings", "clusterresourcebindings"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings", "clusterresourcebindings"),
            ("update",),
            "finalizer and binding id label",
        ),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings/status", "clusterresourcebindings/status"),
            ("update",),
            "WorksSynced",
        ),
        cache("work.karmada.io", "works"),
        Rule(("work.karmada.io",), ("works",), ("get",), "a live read after AlreadyExists"),
        Rule(("work.karmada.io",), ("works",), ("create", "update", "delete"), "the Works"),
        cache("policy.karmada.io", "overridepolicies", "clusteroverridepolicies"),
        cache("cluster.karmada.io", "clusters"),
    ),
    templates=("get",),
)
"""What the binding controller does on the host; templates are read live when the cache is
behind the binding (see controllers.rbac)."""

BINDING_CONTROLLER_NAME: Final = "binding"
WORKS_SYNCED_CONDITION: Final = "WorksSynced"
SYNC_WORK_SUCCEED_REASON: Final = "SyncWorkSucceed"
SYNC_WORK_FAILED_REASON: Final = "SyncWorkFailed"
KINDS_PENDING_RETRY: Final = 1.0
"""Seconds before a binding of an unwatched kind looks again while the detector has not told
which kinds this process may read."""
WORK_DELETING_RETRY: Final = 2.0
"""Seconds before a Work that is still being deleted is written again."""
CONFLICT_RETRY: Final = 0.2
"""Seconds before a binding whose writes hit a conflict is reconciled again."""

_OVERRIDE_ANNOTATIONS: Final = (APPLIED_OVERRIDES_ANNOTATION, APPLIED_CLUSTER_OVERRIDES_ANNOTATION)

log = structlog.get_logger("controllers.binding")


def _gvk(request: Request) -> GVK:
    return RESOURCE_BINDING_GVK if request.namespace else CLUSTER_RESOURCE_BINDING_GVK


def _finalizer(binding: Mapping[str, Any]) -> str:
    if namespace_of(binding):
        return BINDING_CONTROLLER_FINALIZER
    return CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER


def _kept_clusters(binding: Mapping[str, Any]) -> set[str]:
    """Clusters whose Works stay: targets and clusters still being gracefully evicted (an
    eviction with purge mode Directly or Immediately deletes the old Work at once, as in
    Karmada)."""
    spec = binding_spec(binding)
    kept = {t.get("name", "") for t in work_target_clusters(binding)}
    kept |= {
        str(t.get("fromCluster", ""))
        for t in spec.get("gracefulEvictionTasks") or []
        if not purges_at_once(t.get("purgeMode"))
    }
    return kept - {""}


def _dispatchable(binding: Mapping[str, Any]) -> bool:
    """Scheduled, or attached to bindings that require it (those have no schedule of their own:
    they follow ``requiredBy``, see controllers.dependencies)."""
    return is_condition_true(binding, SCHEDULED_CONDITION) or bool(
        binding_spec(binding).get("requiredBy")
    )


def merged_work(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """``existing`` with ``desired``'s labels, annotations, finalizers and spec; annotations of
    overrides no longer applied are dropped, everything else others set is kept.

    Neither argument is changed; the result shares their unchanged parts (status, the manifests
    of ``desired``'s spec) instead of deep-copying a whole Work on every reconcile of its
    binding, most of which find it up to date (py-spy: 7 % of a replica's CPU taking keys over).
    """
    merged = dict(existing)
    metadata = dict(existing.get("metadata") or {})
    wanted = desired["metadata"]
    # The sharder owns the Work's shard labels once it exists (moves relabel it).
    own = without_sharding_labels(wanted.get("labels", {}))
    metadata["labels"] = {**(metadata.get("labels") or {}), **own}
    annotations = {**(metadata.get("annotations") or {}), **wanted.get("annotations", {})}
    for key in _OVERRIDE_ANNOTATIONS:
        if key not in wanted.get("annotations", {}):
            annotations.pop(key, None)
    metadata["annotations"] = annotations
    if "finalizers" in metadata:
        metadata["finalizers"] = list(metadata["finalizers"])
    merged["metadata"] = metadata
    for finalizer in wanted.get("finalizers", []):
        add_finalizer(merged, finalizer)
    merged["spec"] = desired["spec"]
    return merged


@dataclass
class _Sync:
    """One pass over a binding's target clusters: what failed and why."""

    failures: dict[str, str] = field(default_factory=dict)
    deleting: bool = False


class _KindsPending(Exception):
    """The template's kind is not watched and the detector has not told yet if it may be read."""


class _Unreadable(Exception):
    """RBAC does not let this process read the template's kind."""

    def __init__(self, denial: Denial) -> None:
        super().__init__(denial.permission())
        self.denial = denial


class BindingController:
    """Keeps the Works of bindings in line with their templates, placement and overrides."""

    def __init__(
        self,
        client: CachedClient,
        interpreter: Interpreter,
        recorder: EventRecorder,
        kinds: PermittedKinds | None = None,
    ) -> None:
        self.client = client
        self.interpreter = interpreter
        self.recorder = recorder
        self.kinds = kinds or PermittedKinds()

    async def reconcile(self, request: Request) -> Result | None:
        """Create, update and delete one binding's Works.

        Raises:
            ApiError: a read or write failed; retried with backoff.
        """
        try:
            binding = await self.client.get(
                _gvk(request), request.name, namespace=request.namespace or None
            )
        except NotFound:
            return None
        try:
            return await self._reconcile(binding)
        except Conflict:
            # Written meanwhile (often: our own write the cache has not seen yet): read again.
            log.debug("conflict, reading again")
            return Result(requeue_after=CONFLICT_RETRY)

    async def _reconcile(self, binding: Obj) -> Result | None:
        if is_being_deleted(binding):
            await self._finalize(binding)
            return None
        binding = await self._ensure_identity(binding)
        if not _dispatchable(binding):
            return None
        await self._remove_orphans(binding, _kept_clusters(binding))
        try:
            template = await self._template(binding)
        except _KindsPending:
            return Result(requeue_after=KINDS_PENDING_RETRY)
        except _Unreadable as unreadable:
            await self._report(binding, _unreadable_failures(binding, unreadable.denial))
            return None  # the Works stay as they are: a revoked permission deletes nothing
        if template is None:
            return None
        sync = await self._sync(binding, template)
        await self._report(binding, sync.failures)
        return Result(requeue_after=WORK_DELETING_RETRY) if sync.deleting else None

    async def _ensure_identity(self, binding: Obj) -> Obj:
        changed = add_finalizer(binding, _finalizer(binding))
        labels = binding.setdefault("metadata", {}).setdefault("labels", {})
        if not labels.get(binding_id_label(binding)):
            labels[binding_id_label(binding)] = str(uuid.uuid4())
            changed = True
        return await self.client.update(binding) if changed else binding

    async def _works(self, binding: Obj, *, live: bool = False) -> list[Obj]:
        identifier = binding_id_of(binding)
        if identifier is None:
            return []
        selector = f"{binding_id_label(binding)}={identifier}"
        reader = self.client.live if live else self.client
        return await reader.list_all(WORK_GVK, label_selector=selector)

    async def _delete_work(self, work: Obj) -> None:
        with contextlib.suppress(NotFound):
            await self.client.delete(WORK_GVK, name_of(work), namespace=namespace_of(work))

    async def _finalize(self, binding: Obj) -> None:
        # Live, not cached: a Work the cache has not seen (just created, or not yet on this
        # shard) would be left behind for good once the finalizer is gone.
        for work in await self._works(binding, live=True):
            await self._delete_work(work)
        if remove_finalizer(binding, _finalizer(binding)):
            with contextlib.suppress(NotFound):
                await self.client.update(binding)

    async def _remove_orphans(self, binding: Obj, kept: set[str]) -> None:
        for work in await self._works(binding):
            cluster = cluster_of_execution_namespace(namespace_of(work))
            if cluster not in kept and not is_being_deleted(work):
                log.info("deleting the Work of a cluster no longer targeted", cluster=cluster)
                await self._delete_work(work)

    async def _template(self, binding: Obj) -> Obj | None:
        resource = binding_spec(binding).get("resource") or {}
        gvk = GVK.from_api_version(resource.get("apiVersion", ""), resource.get("kind", ""))
        name, namespace = resource.get("name", ""), resource.get("namespace") or None
        # A full informer only: reading a metadata-only kind would open a cluster-wide full one.
        # ... and one holding the template's namespace (a kind may be scoped to some namespaces).
        watched = any(
            s.gvk == gvk and not s.metadata_only and s.namespace in (None, namespace)
            for s in self.client.cache.informers()
        )
        if not watched:
            self._check_readable(gvk)
        try:
            if watched:
                with contextlib.suppress(NotFound):  # not cached yet: read live below
                    template = await self.client.get(gvk, name, namespace=namespace)
                    if built_from(binding, template):
                        return template
            # Not cached, or the cache is behind the version the binding was built from (its
            # resourceVersion, or a later one differing only in sharding labels).
            return await self.client.live.get(gvk, name, namespace=namespace)
        except (NotFound, NoKindMatch):
            # Deleted: the binding goes with it (owner reference); nothing to send meanwhile.
            return None

    def _check_readable(self, gvk: GVK) -> None:
        """Raise unless an unwatched kind may be read live (or the detector did not review it).

        Raises:
            _KindsPending: the detector's first access reviews are not done.
            _Unreadable: RBAC refuses a read verb on the kind.
        """
        if self.kinds.pending():
            raise _KindsPending(str(gvk))
        denial = self.kinds.denial(gvk)
        if denial is not None:
            raise _Unreadable(denial)

    async def _sync(self, binding: Obj, template: Obj) -> _Sync:
        sync = _Sync()
        namespace = namespace_of(binding)
        overrides = []
        if namespace:
            overrides = await self.client.list_all(OVERRIDE_POLICY_GVK, namespace=namespace)
        cluster_overrides = await self.client.list_all(CLUSTER_OVERRIDE_POLICY_GVK)
        for target in work_target_clusters(binding):
            name = target.get("name", "")
            try:
                sync.deleting |= await self._sync_cluster(
                    binding, template, target, cluster_overrides, overrides
                )
            except (OverrideError, InterpreterError) as error:
                sync.failures[name] = str(error)
                message = f"Failed to build the Work for cluster {name}: {error}"
                self.recorder.event(binding, "Warning", SYNC_WORK_FAILED_REASON, message)
        return sync

    async def _revised(self, binding: Obj, template: Obj, target: TargetCluster) -> Obj | None:
        spec = binding_spec(binding)
        divided = replica_scheduling_type_of(spec.get("placement")) == DIVIDED
        if not spec.get("replicas") or not divided:
            return None
        try:
            return await self.interpreter.revise_replica(template, target.get("replicas", 0))
        except NotSupported:
            return None

    async def _sync_cluster(
        self,
        binding: Obj,
        template: Obj,
        target: TargetCluster,
        cluster_overrides: list[Obj],
        overrides: list[Obj],
    ) -> bool:
        """Write one cluster's Work; returns whether it has to wait for a Work being deleted.

        Raises:
            OverrideError, InterpreterError: this cluster's manifest cannot be built.
        """
        cluster = await self._cluster(target.get("name", ""))
        if cluster is None:
            return False
        # Karmada's injectReservedLabelState: a failover's preserved state on the new cluster.
        preserved = injected_labels(
            binding_spec(binding), target.get("name", ""), len(work_target_clusters(binding))
        )
        workload = build_workload(
            template,
            binding,
            cluster,
            revised=await self._revised(binding, template, target),
            cluster_override_policies=cluster_overrides,
            override_policies=overrides,
            preserved_labels=preserved,
        )
        return await self._write(build_work(binding, workload))

    async def _cluster(self, name: str) -> Obj | None:
        try:
            cluster = await self.client.get(CLUSTER_GVK, name)
        except NotFound:
            # The scheduler moves the binding off a deleted cluster; nothing to build meanwhile.
            log.info("target cluster not found", cluster=name)
            return None
        if is_being_deleted(cluster):
            # The cluster controller is deleting its Works (Karmada deletes its execution
            # namespace, which then refuses new ones): each written again would be deleted
            # again, and the Cluster's finalizer would wait for ever.
            log.info("target cluster is being deleted", cluster=name)
            return None
        return cluster

    async def _write(self, work: Obj) -> bool:
        namespace, name = namespace_of(work), name_of(work)
        try:
            existing = await self.client.get(WORK_GVK, name, namespace=namespace)
        except NotFound:
            try:
                await self.client.create(work)
                return False
            except AlreadyExists:
                existing = await self.client.live.get(WORK_GVK, name, namespace=namespace)
        if is_being_deleted(existing):
            return True
        merged = merged_work(existing, work)
        if merged != existing:
            await self.client.update(merged)
        return False

    async def _report(self, binding: Obj, failures: Mapping[str, str]) -> None:
        """Set the WorksSynced condition when a cluster failed, or when it recovered."""
        if not failures and get_condition(binding, WORKS_SYNCED_CONDITION) is None:
            return
        updated = copy.deepcopy(binding)
        if failures:
            message = "; ".join(f"{cluster}: {why}" for cluster, why in sorted(failures.items()))
            changed = set_condition(
                updated, WORKS_SYNCED_CONDITION, False, SYNC_WORK_FAILED_REASON, message
            )
        else:
            message = "Works of every target cluster are up to date."
            changed = set_condition(
                updated, WORKS_SYNCED_CONDITION, True, SYNC_WORK_SUCCEED_REASON, message
            )
        if changed:
            await self.client.update_status(updated)


def _unreadable_failures(binding: Obj, denial: Denial) -> dict[str, str]:
    resource = binding_spec(binding).get("resource") or {}
    why = (
        f"the template {resource.get('kind')} {resource.get('name')} is not read: RBAC does not "
        f"allow {denial.permission()} to this controller-manager; its Work is kept as it is"
    )
    return {t.get("name", ""): why for t in work_target_clusters(binding)} or {"*": why}


def _binding_of_work(work: Obj) -> list[Request]:
    annotations = annotations_of(work)
    cluster_binding = annotations.get(CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION)
    if cluster_binding:
        return [Request(cluster_binding)]
    name = annotations.get(RESOURCE_BINDING_NAME_ANNOTATION)
    namespace = annotations.get(RESOURCE_BINDING_NAMESPACE_ANNOTATION)
    return [Request(name, namespace)] if name and namespace else []


def _may_select(selectors: Iterable[Mapping[str, Any]], resource: Mapping[str, Any]) -> bool:
    """Whether an override policy's selectors may select the binding's template.

    Label selectors are not evaluated (the binding does not carry the template's labels): a kind
    match is enough to look again.
    """
    for selector in selectors:
        if (selector.get("apiVersion"), selector.get("kind")) != (
            resource.get("apiVersion"),
            resource.get("kind"),
        ):
            continue
        if selector.get("namespace") and selector["namespace"] != resource.get("namespace"):
            continue
        if selector.get("name") and selector["name"] != resource.get("name"):
            continue
        return True
    return False


@dataclass
class _BindingIndex:
    """Maps override policies, Clusters and interpreter changes to the bindings they may
    affect, from the binding informers' indexes (a lookup, not a walk over every binding)."""

    informers: list[SharedInformer]

    def _keys(self, index: str, value: str) -> list[Request]:
        return [
            Request.from_key(key)
            for informer in self.informers
            for key in informer.indexer.index_keys(index, value)
        ]

    def for_policy(self, policy: Obj) -> list[Request]:
        namespace = namespace_of(policy)
        selectors = override_spec(policy).get("resourceSelectors") or []
        if not selectors:  # every binding of its namespace, or every binding
            return self._keys(NAMESPACE_INDEX, namespace) if namespace else self._all()
        kinds = {f"{s.get('apiVersion', '')}/{s.get('kind', '')}" for s in selectors}
        return [
            Request(name_of(binding), namespace_of(binding))
            for informer in self.informers
            for kind in sorted(kinds)
            for binding in informer.indexer.by_index(BINDING_RESOURCE_INDEX, kind)
            if (not namespace or namespace_of(binding) == namespace)
            and _may_select(selectors, binding_spec(binding).get("resource") or {})
        ]

    def _all(self) -> list[Request]:
        indexers = [informer.indexer for informer in self.informers]
        return [Request.from_key(key) for indexer in indexers for key in indexer.keys()]  # noqa: SIM118

    def for_kinds(self, kinds: KindFilter) -> list[Request]:
        found = []
        for informer in self.informers:
            for value in informer.indexer.index_values(BINDING_RESOURCE_INDEX):
                api_version, _, kind = value.rpartition("/")
                if kinds(GVK.from_api_version(api_version, kind)):
                    found += [
                        Request.from_key(key)
                        for key in informer.indexer.index_keys(BINDING_RESOURCE_INDEX, value)
                    ]
        return found

    def for_cluster(self, cluster: Obj) -> list[Request]:
        return self._keys(TARGET_CLUSTER_INDEX, name_of(cluster))


def setup(context: Context) -> None:
    """Register the binding controller with ``context.manager`` (controller name ``binding``)."""
    manager = context.manager
    recorder = context.recorder(BINDING_CONTROLLER_NAME)
    reconciler = BindingController(
        manager.client, context.interpreter, recorder, context.permitted_kinds
    )
    kinds = (RESOURCE_BINDING_GVK, CLUSTER_RESOURCE_BINDING_GVK)
    for gvk in kinds:
        manager.cache.index_field(gvk, TARGET_CLUSTER_INDEX, target_cluster_names)
        manager.cache.index_field(gvk, BINDING_RESOURCE_INDEX, binding_resource_kind)
    index = _BindingIndex([manager.cache.get_informer(gvk) for gvk in kinds])
    policies = EnqueueRequestsFromMapFunc(index.for_policy)
    builder = (
        controller_managed_by(manager)
        .named(BINDING_CONTROLLER_NAME)
        .for_(RESOURCE_BINDING_GVK, binding_changed)
        .watches(CLUSTER_RESOURCE_BINDING_GVK, EnqueueRequestForObject(), binding_changed)
        .watches(WORK_GVK, EnqueueRequestsFromMapFunc(_binding_of_work), work_changed)
        .watches(OVERRIDE_POLICY_GVK, policies)
        .watches(CLUSTER_OVERRIDE_POLICY_GVK, policies)
        .watches(CLUSTER_GVK, EnqueueRequestsFromMapFunc(index.for_cluster), _cluster_spec_changed)
    )
    # Karmada's --concurrent-resourcebinding-syncs: one worker capped a bulk at ~7 bindings/s.
    controller = context.complete(builder, reconciler, sharded_by=BINDINGS, workers=5)

    def reinterpret(kinds: KindFilter) -> None:
        # ReviseReplica or Retain may answer differently now: build those Works again.
        for request in index.for_kinds(kinds):
            controller.queue.add(request)

    context.interpreter.subscribe(reinterpret)

    def permitted(kinds: frozenset[GVK]) -> None:
        # Bindings held back for a template of a kind RBAC did not let us read.
        for request in index.for_kinds(kinds.__contains__):
            controller.queue.add(request)

    context.permitted_kinds.subscribe(permitted)


def _cluster_spec_changed(event: Event) -> bool:
    # Overrides target clusters by name, labels and spec fields, and a cluster being deleted gets
    # no Works; status changes do not matter.
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return bool(
        labels_of(event.old) != labels_of(event.obj)
        or event.old.get("spec") != event.obj.get("spec")
        or is_being_deleted(event.old) != is_being_deleted(event.obj)
    )


def _binding_state(binding: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = binding.get("metadata") or {}
    scheduled = (get_condition(binding, SCHEDULED_CONDITION) or {}).get("status")
    return (
        meta.get("generation"),
        meta.get("labels"),
        meta.get("deletionTimestamp"),
        meta.get("finalizers"),
        scheduled,
    )


def _work_state(work: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = work.get("metadata") or {}
    return (
        meta.get("generation"),
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("deletionTimestamp"),
        meta.get("finalizers"),
    )


def work_changed(event: Event) -> bool:
    """Pass Work events except creations and status updates (the execution and status
    controllers' writes).

    A Work created is this controller's own write, or one listed when the informer starts, when
    every binding is reconciled from its own list anyway. Woken by its own creations, the
    controller reconciled each binding once per Work and, its cache not yet holding the other
    Work, created it again: a 409 and a live read (0.13 of each per template at 1,000 templates on
    2 members, docs/benchmarks.md). Deletions and changes of what the controller writes still pass:
    a Work deleted or edited is written again.
    """
    if event.type is EventType.CREATE:
        return False
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return _work_state(event.old) != _work_state(event.obj)


def binding_changed(event: Event) -> bool:
    """Pass binding events except updates that changed nothing the controller uses (e.g. the
    aggregated status): spec (generation), labels, deletion, finalizers, the Scheduled status."""
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return _binding_state(event.old) != _binding_state(event.obj)
