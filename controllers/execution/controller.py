"""ExecutionController applies every Work's manifests to its member cluster and keeps them there.

A Work in ``karmada-es-<cluster>`` holds whole objects for the member ``<cluster>``. For each Work:

- finalizer ``karmada.io/execution-controller``; while the member is not engaged, its Cluster is
  missing or not Ready, the Work gets Applied=False saying why and the reconcile fails (retried
  with backoff, and at once when the Cluster turns Ready);
- each manifest is created when absent; an existing object is this Work's when it is labelled
  ``karmada.io/managed=true`` and its annotations name this Work (``work.karmada.io/namespace``,
  ``work.karmada.io/name``) and the manifest's resource template
  (``resourcetemplate.karmada.io/uid``); any other is a conflict (see ``_conflict``):
  ``work.karmada.io/conflict-resolution: overwrite`` takes over one that is unmanaged, names no Work
  or a Work that is gone, never one of another existing Work; otherwise it is left untouched and
  Applied=False (and a SyncFailed Event) says whose it is; an update keeps what the member owns
  (``retain``), then runs the interpreter's Retain hook, and is skipped when it would change nothing
  (``drift``); an update refused for a stale resourceVersion is tried once more from a live read.
  Failed manifests fail the reconcile (retried with backoff), except malformed ones (no kind, no
  name), which only a change of the Work can fix (TerminalError). A member that refuses or drops the
  connection while its Cluster is still Ready (a restart or flap shorter than the cluster-status
  failure threshold) has its Works retried every UNREACHABLE_RETRY seconds instead: the per-item
  exponential backoff (and the queue's shared token bucket) would, after a few seconds of refused
  connections, keep hundreds of Works waiting long after the member is back; a longer outage turns
  the Cluster NotReady, and its Ready again enqueues every Work at once. ``spec.suspendDispatching``
  pauses all of this;
- the Work's status gets Applied True/AppliedSuccessful or False/AppliedFailed with the errors, and
  ``manifestStatuses`` with each object's reflected status and health (``workstatus``), written
  only when changed. Reflecting status here, right after applying, rather than in a second
  controller on the same events, means one reconcile per event, one status write, and no two
  writers of one Work's status.

Only the Works of Clusters in ``context.scope`` are reconciled (the controller-manager's: every
Push Cluster): a Pull Cluster's Works get no finalizer, no status and no member write from here,
their agent applies them, as Karmada's execution and work-status controllers take only Works
within Push clusters (``helper.WorkWithinPushClusterPredicate``) and karmada-agent runs its own
for its cluster. Work events of other Clusters are dropped by a predicate reading the Cluster
from the host cache, and the reconcile checks the Cluster it reads anyway. A Cluster switched
into scope enqueues all its Works.

Members are the clusters ``context.members`` engaged; member objects are watched in each engaged
member (``source.MemberObjects``, an ``EngagedSource`` of ``reconcile.multicluster``) through
label-scoped informers, one per kind its Works apply, added as Works of a new kind appear: a
deleted or edited member object enqueues its Work, which re-creates or reverts it, and a status
change refreshes ``manifestStatuses``. Every engagement of a member (a new cache) enqueues all its
Works; a disengagement stops that member's watches, and its Works report it not connected.

A manifest dropped from a Work (its ``manifestStatuses`` still name the object, the manifests no
longer do) has its member object deleted if the Work owns it; until then the status keeps naming
it, and Applied=False says what is left. What the controller remembers of a Work's writes
(``AppliedRecords``) follows its manifests and goes with the Work.

A deleted Work deletes its member objects (only those it owns, as above), or with
``spec.preserveResourcesOnDeletion`` only strips Karmada's labels and annotations from them; an
unreachable member blocks the deletion until it is back, unless its Cluster is being deleted or
gone. Then the finalizer is removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import aiohttp

from controllers.api import (
    CLUSTER_GVK,
    CONFLICT_RESOLUTION_ANNOTATION,
    CONFLICT_RESOLUTION_OVERWRITE,
    EXECUTION_CONTROLLER_FINALIZER,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    READY_CONDITION,
    RESOURCE_TEMPLATE_UID_ANNOTATION,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    ManifestStatus,
    cluster_of_execution_namespace,
    execution_namespace,
    is_cluster_ready,
    manifests_of,
    sync_mode,
    work_spec,
    work_status,
)
from controllers.clusterscope import ClusterScope
from controllers.context import Context
from controllers.execution.drift import (
    AppliedRecords,
    ObjectRef,
    manifest_digest,
    needs_update,
    with_digest,
)
from controllers.execution.retain import release_patch, retain_member_fields
from controllers.execution.source import MemberObjects, managed_informer, managed_scope
from controllers.execution.workstatus import (
    StatusReflector,
    failure_message,
    removal_message,
    status_patch,
)
from controllers.interpreter import NotSupported
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    NAMESPACE_INDEX,
    AlreadyExists,
    ByObject,
    Cluster,
    Conflict,
    EnqueueRequestsFromMapFunc,
    Event,
    EventType,
    ExpectedError,
    Finalizers,
    Indexer,
    NoKindMatch,
    NotFound,
    Obj,
    Preconditions,
    Request,
    Result,
    ServiceUnavailable,
    SharedInformer,
    TerminalError,
    annotations_of,
    controller_managed_by,
    deep_copy,
    generation_of,
    get_condition,
    is_being_deleted,
    is_condition_true,
    labels_of,
    name_of,
    namespace_of,
    uid_of,
)
from reconcile.multicluster import ENGAGED, EngagedSource

__all__ = [
    "PERMISSIONS",
    "ApplyFailed",
    "ConflictAborted",
    "DEFAULT_WORKERS",
    "ExecutionController",
    "MEMBER_SYNC_TIMEOUT",
    "MemberUnavailable",
    "NAME",
    "UNREACHABLE_RETRY",
    "setup",
    "setup_execution_controller",
    "unreachable",
]

PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "works"),
        Rule(("work.karmada.io",), ("works",), ("update",), "its finalizer"),
        Rule(
            ("work.karmada.io",),
            ("works",),
            ("get",),
            "a live read of the Work a conflicting member object names (sharded, not cached)",
        ),
        Rule(("work.karmada.io",), ("works/status",), ("patch",), "Applied, manifestStatuses"),
        cache("cluster.karmada.io", "clusters"),
    )
)
"""What the execution controller does on the host; members are written with their own
credentials (see controllers.rbac)."""

NAME: Final = "execution"
DEFAULT_WORKERS: Final = 5
"""Works reconciled in parallel (Karmada's --concurrent-work-syncs defaults to 5)."""
MEMBER_SYNC_TIMEOUT: Final = 30.0
"""Seconds a reconcile waits for a member informer's first list before failing."""
UNREACHABLE_RETRY: Final = 1.0
"""Seconds before a Work whose member could not be reached (the Cluster still Ready) is retried."""
SYNC_FAILED: Final = "SyncFailed"
SYNC_SUCCEEDED: Final = "SyncSucceed"


class MemberUnavailable(ExpectedError):
    """The Work's member cannot be written to now (not connected, not Ready, no Cluster)."""

    reason = "MemberUnavailable"


class ApplyFailed(ExpectedError):
    """Some manifests of a Work were not applied; the Applied condition has the details."""

    reason = "AppliedFailed"  # the Applied condition's, as Karmada's execution controller sets it


class ConflictAborted(ExpectedError):
    """The member object exists, is not managed by Karmada, and the Work may not take it over."""

    reason = "ConflictAborted"


class _Malformed(ValueError):
    """A manifest that cannot be applied as it is (no kind, no name, not an object)."""


@dataclass(frozen=True)
class _Reach:
    """A member as this reconcile finds it: its Cluster object, its connection, or why not."""

    cluster: Obj | None
    member: Cluster | None
    reason: str


@dataclass(frozen=True)
class _Outcome:
    """One manifest after syncing: the member object now, or why it was not applied."""

    ordinal: int
    observed: Obj | None = None
    error: str | None = None
    written: bool = False
    """Changed by this sync (a new owner's shard label alone is no change: see ``_update``)."""
    malformed: bool = False
    unreachable: bool = False


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the member's apiserver could not be reached (refused, reset, timed
    out, not serving yet), not that it refused the object."""
    kinds = (aiohttp.ClientConnectionError, OSError, TimeoutError, ServiceUnavailable)
    return isinstance(error, kinds)


def _identity(manifest: Mapping[str, Any]) -> tuple[GVK, str, str]:
    """Kind, namespace and name of a manifest.

    Raises:
        ValueError: no apiVersion, kind or name.
    """
    gvk = GVK.of(manifest)
    if not name_of(manifest):
        raise ValueError(f"a {gvk.kind} manifest without metadata.name cannot be applied")
    return gvk, namespace_of(manifest), name_of(manifest)


def _describe(manifest: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` of a manifest, however malformed, for messages."""
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or "<no name>"
    return f"{manifest.get('kind') or '<no kind>'} {f'{namespace}/{name}' if namespace else name}"


def _desired(work: Obj, manifest: Mapping[str, Any]) -> Obj:
    """The manifest as written to the member: marked as managed by this Work (sharded, the
    caller adds the label of this replica's shard, which its member informers select).

    The binding controller already adds these marks; setting them here too keeps a hand-written
    Work's objects visible to the label-scoped watch and recognisable as ours on the next update.
    """
    desired: Obj = deep_copy(dict(manifest))
    metadata = desired.get("metadata")
    if not isinstance(metadata, dict):
        raise ValueError("the manifest has no metadata object")
    labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
    if not isinstance(labels, dict) or not isinstance(annotations, dict):
        raise ValueError("metadata.labels and metadata.annotations must be objects")
    labels[MANAGED_LABEL] = MANAGED_LABEL_VALUE
    annotations[WORK_NAME_ANNOTATION] = name_of(work)
    annotations[WORK_NAMESPACE_ANNOTATION] = namespace_of(work)
    metadata["labels"], metadata["annotations"] = labels, annotations
    return desired


def _may_overwrite(desired: Mapping[str, Any], work: Mapping[str, Any]) -> bool:
    # The manifest's annotation decides, as in Karmada; the Work's own is the fallback.
    value = annotations_of(desired).get(CONFLICT_RESOLUTION_ANNOTATION) or annotations_of(work).get(
        CONFLICT_RESOLUTION_ANNOTATION
    )
    return value == CONFLICT_RESOLUTION_OVERWRITE


def _is_managed(obj: Mapping[str, Any]) -> bool:
    return labels_of(obj).get(MANAGED_LABEL) == MANAGED_LABEL_VALUE


@dataclass(frozen=True)
class _Owner:
    """Whom a member object belongs to: a Work, and the resource template it carries ("" for a
    hand-written Work's manifest, which names none)."""

    namespace: str
    name: str
    template: str

    def __str__(self) -> str:
        return f"Work {self.namespace}/{self.name}"


def _owner_of(obj: Mapping[str, Any]) -> _Owner | None:
    """The owner a member object (or a desired one) names: None when it is not labelled managed
    or lacks a Work annotation. A missing annotation is nobody's, never "this Work"."""
    annotations = annotations_of(obj)
    namespace = annotations.get(WORK_NAMESPACE_ANNOTATION)
    name = annotations.get(WORK_NAME_ANNOTATION)
    if not _is_managed(obj) or not namespace or not name:
        return None
    return _Owner(
        str(namespace), str(name), str(annotations.get(RESOURCE_TEMPLATE_UID_ANNOTATION, ""))
    )


def _owned_by(obj: Mapping[str, Any], work: Mapping[str, Any], template: str | None) -> bool:
    """Whether this Work (and, unless ``template`` is None, that resource template) owns
    ``obj``: only then may the Work delete it. An object another Work took over, or that names
    no Work, is left alone."""
    owner = _owner_of(obj)
    if owner is None or (owner.namespace, owner.name) != (namespace_of(work), name_of(work)):
        return False
    return template is None or owner.template == template


def _template_of(manifest: Mapping[str, Any]) -> str:
    return str(annotations_of(manifest).get(RESOURCE_TEMPLATE_UID_ANNOTATION, ""))


def _work_key(work: Mapping[str, Any]) -> tuple[str, str]:
    return namespace_of(work), name_of(work)


def _applied_before(work: Mapping[str, Any]) -> list[Obj]:
    """The objects the Work's status says it applied, as bare manifests (kind and name only):
    ``manifestStatuses`` is what Karmada records of a Work's applied objects."""
    found: list[Obj] = []
    for entry in work_status(work).get("manifestStatuses") or []:
        identifier = entry.get("identifier") if isinstance(entry, Mapping) else None
        if not isinstance(identifier, Mapping) or not identifier.get("name"):
            continue
        group, version = identifier.get("group") or "", identifier.get("version") or ""
        metadata: Obj = {"name": identifier["name"]}
        if identifier.get("namespace"):
            metadata["namespace"] = identifier["namespace"]
        api_version = f"{group}/{version}" if group else version
        found.append(
            {"apiVersion": api_version, "kind": identifier.get("kind"), "metadata": metadata}
        )
    return found


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two manifests name one member object (a version change keeps the object)."""
    try:
        gvk_a, namespace_a, name_a = _identity(a)
        gvk_b, namespace_b, name_b = _identity(b)
    except (ValueError, AttributeError, TypeError):
        return False
    return (gvk_a.group, gvk_a.kind, namespace_a, name_a) == (
        gvk_b.group,
        gvk_b.kind,
        namespace_b,
        name_b,
    )


def _dropped(work: Mapping[str, Any]) -> list[Obj]:
    """What the Work applied before (its status says) and its manifests no longer hold."""
    manifests = manifests_of(work)
    return [
        before
        for before in _applied_before(work)
        if not any(_same_object(before, manifest) for manifest in manifests)
    ]


def _work_changed(event: Event) -> bool:
    """Work events worth a reconcile: not our own status writes (they leave generation alone)."""
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return generation_of(event.old) != generation_of(event.obj) or (
        is_being_deleted(event.old) != is_being_deleted(event.obj)
    )


def _readiness_changed(event: Event) -> bool:
    """Cluster events that change whether its Works can be applied or deleted (or by whom)."""
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return (
        is_cluster_ready(event.old) != is_cluster_ready(event.obj)
        or is_being_deleted(event.old) != is_being_deleted(event.obj)
        or sync_mode(event.old) != sync_mode(event.obj)
    )


class _MemberWatches:
    """The execution controller's watch of member objects: a ``MemberObjects`` source in each
    engaged member, started as members are engaged and stopped as they are disengaged."""

    def __init__(
        self,
        scope: ByObject,
        works_of: Callable[[str], list[Request]],
        kinds_of_member: Callable[[str], Iterable[GVK]],
    ) -> None:
        self.scope = scope
        self._works_of = works_of
        self._kinds = kinds_of_member
        self._members: dict[str, MemberObjects] = {}

    def source(self, clusters: Callable[[], Mapping[str, Cluster]]) -> EngagedSource:
        """The source to watch: managed objects in every engaged member."""
        return EngagedSource(ENGAGED, self._make, clusters, description="managed objects")

    def _make(self, name: str, member: Cluster) -> MemberObjects:
        objects = MemberObjects(
            member.cache, name, self.scope, lambda: self._works_of(name), self._forget
        )
        for gvk in self._kinds(name):
            objects.add(gvk)
        self._members[name] = objects
        return objects

    def _forget(self, objects: MemberObjects) -> None:
        if self._members.get(objects.cluster) is objects:
            del self._members[objects.cluster]

    def ensure(self, name: str, member: Cluster, gvk: GVK) -> SharedInformer:
        """The managed informer of ``gvk`` in ``member``, watched from now on while engaged."""
        objects = self._members.get(name)
        if objects is not None and objects.cache is member.cache:
            objects.add(gvk)
        return managed_informer(member.cache, gvk, self.scope)

    def warm(self, name: str, member: Cluster, works: Iterable[Obj]) -> None:
        """Watch the kinds ``works`` apply in ``member`` now, before any of them is reconciled.

        Every replica does this, so a standby's member informers are synced when it takes over,
        instead of each kind's first Work waiting for a member list after the takeover.
        """
        for gvk in kinds_of(works):
            self.ensure(name, member, gvk)


def kinds_of(works: Iterable[Obj]) -> set[GVK]:
    """The kinds the manifests of ``works`` are of (malformed ones skipped: the reconcile says)."""
    kinds = set()
    for work in works:
        for manifest in manifests_of(work):
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                kinds.add(GVK.of(manifest))
    return kinds


@dataclass
class _WarmOnWork:
    """Host Work informer handler: a Work's kinds are watched in its member as it appears, and
    what was remembered of its writes goes when it leaves the cache."""

    execution: ExecutionController

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.execution.warm(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if manifests_of(old) != manifests_of(new):
            self.execution.warm(new)

    def on_delete(self, obj: Obj) -> None:
        # Deleted, or (sharded) moved to another replica's keys: this one writes none of its
        # objects any more, and would never reconcile it again to drop what it remembers.
        self.execution.records.forget_work(_work_key(obj))


class ExecutionController:
    """Reconciles Works: applies their manifests to the member and reports in their status."""

    def __init__(self, context: Context, *, sync_timeout: float = MEMBER_SYNC_TIMEOUT) -> None:
        self.host = context.manager.client
        self.host_cache = context.manager.cache
        self.members = context.members
        self.scope: ClusterScope = context.scope
        self._clusters: Indexer | None = None
        self.interpreter = context.interpreter
        self.recorder = context.recorder(NAME)
        self.reflector = StatusReflector(context.interpreter, self.recorder)
        # Sharded, each replica labels the member objects of its Works with its shard and holds
        # only those: a moved key's objects are relabelled by the next owner's first apply
        # (its create finds them, AlreadyExists, and the update writes its label).
        self.shard_labels = context.sharding.member_labels if context.sharding else {}
        scope = managed_scope(self.shard_labels)
        self.watches = _MemberWatches(scope, self._works_of, self._kinds_of_member)
        self.records = AppliedRecords()
        self.sync_timeout = sync_timeout
        self.finalizers = Finalizers()
        self.finalizers.register(EXECUTION_CONTROLLER_FINALIZER, self._release)

    # --- mapping events to Works --------------------------------------------------------------

    def serves(self, cluster: str) -> bool:
        """Whether this process serves the Cluster ``cluster``, as the host cache has it (no
        copy: only its name and syncMode are read)."""
        if self._clusters is None:  # on first use: every Work event asks, the lookup is once
            self._clusters = self.host_cache.get_informer(CLUSTER_GVK).indexer
        return self.scope.serves_name(cluster, self._clusters.get)

    def work_served(self, event: Event) -> bool:
        """The Work watch's predicate: Works of Clusters this process serves (a Work outside
        any execution namespace passes: the reconcile ignores it)."""
        cluster = cluster_of_execution_namespace(namespace_of(event.obj))
        return cluster is None or self.serves(cluster)

    def cluster_served(self, event: Event) -> bool:
        """The Cluster watch's predicate: a change of readiness, deletion or sync mode of a
        Cluster this process serves (one that left the scope has nothing more to do here)."""
        return self.scope.serves(event.obj) and _readiness_changed(event)

    def works_of_cluster(self, cluster: Obj) -> list[Request]:
        """The Works of a Cluster's execution namespace, from the host's Work informer."""
        return self._works_of(name_of(cluster))

    def _kinds_of_member(self, name: str) -> set[GVK]:
        """The kinds the Works of member ``name`` apply, from the host's Work informer."""
        indexer = self.host_cache.get_informer(WORK_GVK).indexer
        keys = indexer.index_keys(NAMESPACE_INDEX, execution_namespace(name))
        works = (indexer.get(key) for key in keys)
        return kinds_of(work for work in works if work is not None)

    def warm(self, work: Obj) -> None:
        """Watch the kinds of ``work`` in its member, if that member is connected."""
        cluster = cluster_of_execution_namespace(namespace_of(work))
        member = self.members.get(cluster) if cluster is not None else None
        if cluster is not None and member is not None:
            self.watches.warm(cluster, member, [work])

    def _works_of(self, cluster: str) -> list[Request]:
        namespace = execution_namespace(cluster)
        indexer = self.host_cache.get_informer(WORK_GVK).indexer
        keys = indexer.index_keys(NAMESPACE_INDEX, namespace)
        return [Request.from_key(key) for key in keys]

    # --- reconcile ----------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        """Apply one Work to its member (or clean up after it), then report in its status.

        Raises:
            MemberUnavailable: the member cannot be written to now (retried with backoff).
            ApplyFailed: some manifests were not applied (retried with backoff).
            TerminalError: only malformed manifests failed (not retried: the Work must change).
            FinalizeError: a deleted Work's member objects could not be removed yet (its
                finalizer stays; retried with backoff).
        """
        try:
            work = await self.host.get(WORK_GVK, request.name, namespace=request.namespace)
        except NotFound:
            # Gone (its finalizer ran, or was removed by hand): nothing of it is remembered.
            self.records.forget_work((request.namespace or "", request.name))
            return None
        cluster = cluster_of_execution_namespace(request.namespace)
        if cluster is None:
            return None  # like Karmada: only Works in execution namespaces are dispatched
        if is_being_deleted(work):
            if not self.serves(cluster):
                return None  # its finalizer is the agent's to remove, after its cleanup
            if (await self.finalizers.finalize(work)).updated:
                with contextlib.suppress(NotFound):  # its last finalizer gone: deleted at once
                    await self.host.update(work)
            return None
        # Read before the finalizer is added: an unserved Cluster's Work gets none from here.
        reach = await self._reach(cluster)
        if not self.scope.serves_name(cluster, lambda _: reach.cluster):
            return None  # another process's (a Pull Cluster's agent): left as it is
        if (await self.finalizers.finalize(work)).updated:  # adds the finalizer
            work = await self.host.update(work)
        if work_spec(work).get("suspendDispatching"):
            return None
        if reach.member is None:
            await self._report(work, reach.reason, [])
            raise MemberUnavailable(reach.reason)
        return await self._sync_all(work, cluster, reach.member)

    async def _reach(self, name: str) -> _Reach:
        try:
            cluster = await self.host.get(CLUSTER_GVK, name)
        except NotFound:
            return _Reach(None, None, f"cluster {name} does not exist")
        member = self.members.get(name)
        if member is None:
            return _Reach(cluster, None, f"cluster {name} is not connected")
        if not is_cluster_ready(cluster):
            condition = get_condition(cluster, READY_CONDITION) or {}
            why = condition.get("message") or "it has no Ready condition yet"
            return _Reach(cluster, None, f"cluster {name} is not ready: {why}")
        return _Reach(cluster, member, "")

    async def _sync_all(self, work: Obj, cluster: str, member: Cluster) -> Result | None:
        manifests = manifests_of(work)
        outcomes = [
            await self._sync(work, cluster, member, ordinal, manifest)
            for ordinal, manifest in enumerate(manifests)
        ]
        removals = [await self._prune(work, cluster, member, gone) for gone in _dropped(work)]
        self.records.keep_only(_work_key(work), self._refs(cluster, manifests))
        failures = [outcome.error for outcome in outcomes if outcome.error]
        fresh = [
            await self.reflector.reflect(work, outcome.ordinal, outcome.observed)
            for outcome in outcomes
            if outcome.observed is not None
        ]
        failure = failure_message(failures, len(manifests)) if failures else None
        left = [removal.error for removal in removals if removal.error]
        if left:
            failure = "; ".join([*([failure] if failure else []), removal_message(left)])
            outcomes += removals
        # Until the dropped objects are gone, the status keeps naming them (the only record).
        await self._report(work, failure, fresh, keep_entries=bool(left))
        if failure is not None:
            self.recorder.event(work, "Warning", SYNC_FAILED, f"{cluster}: {failure}")
            if all(o.malformed for o in outcomes if o.error):
                # Retrying cannot fix the Work; a change to it (a new generation) is seen anyway.
                raise TerminalError(failure)
            if all(o.unreachable for o in outcomes if o.error):
                return Result(requeue_after=UNREACHABLE_RETRY)
            raise ApplyFailed(failure)
        if any(outcome.written for outcome in outcomes):
            self.recorder.event(work, "Normal", SYNC_SUCCEEDED, f"applied to cluster {cluster}")
        return None

    async def _report(
        self,
        work: Obj,
        failure: str | None,
        fresh: list[ManifestStatus],
        *,
        keep_entries: bool = False,
    ) -> None:
        total = len(manifests_of(work))
        patch = status_patch(work, failure, fresh, total, keep_entries=keep_entries)
        if patch is None:
            return
        with contextlib.suppress(NotFound):  # deleted meanwhile: nothing to report on
            await self.host.patch_status(
                WORK_GVK, name_of(work), {"status": patch}, namespace=namespace_of(work)
            )

    async def _prune(self, work: Obj, cluster: str, member: Cluster, gone: Obj) -> _Outcome:
        """Delete the member object of a manifest the Work dropped, if the Work still owns it."""
        try:
            await self._remove(work, cluster, member, gone, preserve=False, template=None)
        except Exception as error:  # reported in the Applied condition, then retried
            return _Outcome(-1, error=f"{_describe(gone)}: {error}", unreachable=unreachable(error))
        return _Outcome(-1)

    @staticmethod
    def _refs(cluster: str, manifests: Iterable[Mapping[str, Any]]) -> set[ObjectRef]:
        refs = set()
        for manifest in manifests:
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                refs.add(ObjectRef(cluster, *_identity(manifest)))
        return refs

    # --- applying one manifest ----------------------------------------------------------------

    async def _sync(
        self, work: Obj, cluster: str, member: Cluster, ordinal: int, manifest: Obj
    ) -> _Outcome:
        try:
            observed, written = await self._apply(work, cluster, member, manifest)
        except _Malformed as error:
            return _Outcome(ordinal, error=f"{_describe(manifest)}: {error}", malformed=True)
        except Exception as error:  # reported in the Applied condition, then retried
            described = f"{_describe(manifest)}: {error}"
            return _Outcome(ordinal, error=described, unreachable=unreachable(error))
        return _Outcome(ordinal, observed=observed, written=written)

    async def _apply(
        self, work: Obj, cluster: str, member: Cluster, manifest: Obj
    ) -> tuple[Obj, bool]:
        """Create or update one member object; returns it and whether it changed (its shard
        label alone, written when a moved key's Work is synced by its new owner, is no change:
        the manifest's objects are as they were)."""
        try:
            desired = _desired(work, manifest)
            gvk, namespace, name = _identity(desired)
        except (ValueError, AttributeError, TypeError) as error:
            raise _Malformed(str(error)) from error
        ref = ObjectRef(cluster, gvk, namespace, name)
        # Of the manifest, not of which replica writes it: a moved key's new owner relabels
        # the object without changing its annotations (a Deployment's generation would grow).
        digest = manifest_digest(desired)
        desired["metadata"]["labels"].update(self.shard_labels)
        desired = with_digest(desired, digest)
        observed = await self._cached(member, ref)
        if observed is None and is_condition_true(work, WORK_APPLIED_CONDITION):
            # Applied already, so most likely there, out of this replica's cache: sharded, as
            # another replica's, whose key this one took over. A create would meet it (one
            # more request, and an error, per moved object).
            observed = await self._live_if_any(member, ref)
        if observed is None:
            try:
                created = await member.api_reader.create(desired)
            except AlreadyExists:  # not managed (our informer does not see it), or just created
                observed = await self._live(member, ref)
            else:
                self.records.put(ref, digest, created, _work_key(work))
                return created, True
        try:
            return await self._update(work, member, ref, digest, desired, observed)
        except Conflict:
            # The cache lagged behind the member (a status update, say): once more, from the
            # member's current object, rather than failing the Work for a stale read.
            live = await self._live(member, ref)
            return await self._update(work, member, ref, digest, desired, live)

    async def _update(
        self, work: Obj, member: Cluster, ref: ObjectRef, digest: str, desired: Obj, observed: Obj
    ) -> tuple[Obj, bool]:
        conflict = await self._conflict(work, ref, desired, observed)
        if conflict is not None:
            raise ConflictAborted(conflict)
        merged = await self._retain(retain_member_fields(desired, observed), observed)
        applied = self.records.get(ref)
        if not needs_update(merged, observed, applied, digest):
            return observed, False
        updated = await member.api_reader.update(merged)
        self.records.put(ref, digest, updated, _work_key(work))
        # More than relabelled: what it needed besides this replica's shard label (unsharded,
        # there is none, and the answer is the one above).
        relabel = self.shard_labels and not needs_update(
            merged, self._with_shard_label(observed), applied, digest
        )
        return updated, not relabel

    async def _conflict(self, work: Obj, ref: ObjectRef, desired: Obj, observed: Obj) -> str | None:
        """Why this Work may not write ``observed``, the member object ``desired`` names; None
        when it may.

        By the Work and resource template the object's annotations name, as Karmada's object
        watcher compared the Work of the object with the desired one (``allowUpdate``, before it
        was reduced to the managed label): the label alone would let any Work write, and on
        deletion remove, an object another Work applied. An object of this Work and template is
        written. Conflict resolution ``overwrite`` takes an object that is not managed, names no
        Work, or whose Work is gone, never one of another existing Work: two such Works would
        take it from each other on every reconcile. With ``abort`` (the default) only this
        Work's own objects are written.
        """
        owner, wanted = _owner_of(observed), _owner_of(desired)
        if owner == wanted:
            return None
        where = f"already exists in cluster {ref.cluster}"
        take_over = (
            f"it is left untouched. Set the annotation {CONFLICT_RESOLUTION_ANNOTATION}="
            f"{CONFLICT_RESOLUTION_OVERWRITE} to take it over"
        )
        if owner is not None and (owner.namespace, owner.name) != _work_key(work):
            if await self._work_exists(owner):
                return (
                    f"{where} and belongs to {owner}; it is left untouched (no conflict "
                    "resolution takes an object from another Work)"
                )
            if _may_overwrite(desired, work):
                return None
            return f"{where} and belongs to {owner}, which no longer exists; {take_over}"
        if _may_overwrite(desired, work):
            return None
        if not _is_managed(observed):
            return (
                f"{where} and is not managed by Karmada (no label {MANAGED_LABEL}="
                f"{MANAGED_LABEL_VALUE}); {take_over}"
            )
        if owner is None:
            return (
                f"{where}; it is labelled {MANAGED_LABEL}={MANAGED_LABEL_VALUE} but names no Work "
                f"(annotations {WORK_NAMESPACE_ANNOTATION}, {WORK_NAME_ANNOTATION}); {take_over}"
            )
        return (
            f"{where} and was applied from another resource template (uid {owner.template!r}, "
            f"this Work's manifest has {_template_of(desired)!r}); {take_over}"
        )

    async def _work_exists(self, owner: _Owner) -> bool:
        """Whether the Work ``owner`` names exists (being deleted counts: its finalizer may
        still delete the object). Read live when the host cache lacks it: sharded, this
        replica's cache holds only its own keys' Works."""
        indexer = self.host_cache.get_informer(WORK_GVK).indexer
        if indexer.get(f"{owner.namespace}/{owner.name}") is not None:
            return True
        try:
            await self.host.live.get(WORK_GVK, owner.name, namespace=owner.namespace)
        except NotFound:
            return False
        return True

    def _with_shard_label(self, observed: Obj) -> Obj:
        """``observed`` as it would be with this replica's shard label (and nothing else)."""
        metadata = observed.get("metadata") or {}
        labels = {**(metadata.get("labels") or {}), **self.shard_labels}
        return {**observed, "metadata": {**metadata, "labels": labels}}

    async def _live(self, member: Cluster, ref: ObjectRef) -> Obj:
        return await member.api_reader.get(ref.gvk, ref.name, namespace=ref.namespace or None)

    async def _live_if_any(self, member: Cluster, ref: ObjectRef) -> Obj | None:
        try:
            return await self._live(member, ref)
        except NotFound:
            return None

    async def _cached(self, member: Cluster, ref: ObjectRef) -> Obj | None:
        """The managed object from the member's label-scoped informer (watched from now on)."""
        informer = self.watches.ensure(ref.cluster, member, ref.gvk)
        await member.cache.wait_for_informer(informer, self.sync_timeout)
        found = informer.indexer.get(f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name)
        return deep_copy(found) if found is not None else None

    async def _retain(self, merged: Obj, observed: Obj) -> Obj:
        try:
            return await self.interpreter.retain(merged, observed)
        except NotSupported:
            return merged

    # --- deletion -----------------------------------------------------------------------------

    async def _release(self, work: Obj) -> None:
        """Remove (or, with preserveResourcesOnDeletion, release) the Work's member objects:
        those of its manifests and those its status says it applied and has not removed yet.

        A member that cannot be reached keeps the finalizer, unless its Cluster is being deleted
        or gone: nothing would bring the member back, and the Cluster's own deletion waits for
        its Works (Karmada's execution controller likewise skips the cleanup of a Work whose
        Cluster is not ready and terminating). A Cluster already gone whose connection this
        process still holds (its finalizer was removed by hand) is cleaned up through that
        connection, as far as it answers.
        """
        cluster = cluster_of_execution_namespace(namespace_of(work)) or ""
        reach = await self._reach(cluster)
        member = reach.member
        if member is None and reach.cluster is None:
            member = self.members.get(cluster)
        if member is not None:
            try:
                await self._remove_all(work, cluster, member)
            except Exception as error:
                if reach.cluster is not None or not unreachable(error):
                    raise
        elif reach.cluster is not None and not is_being_deleted(reach.cluster):
            raise MemberUnavailable(
                f"Work {namespace_of(work)}/{name_of(work)} keeps its finalizer until its "
                f"objects are removed: {reach.reason}"
            )
        self.records.forget_work(_work_key(work))

    async def _remove_all(self, work: Obj, cluster: str, member: Cluster) -> None:
        preserve = bool(work_spec(work).get("preserveResourcesOnDeletion"))
        for manifest in manifests_of(work):
            template = _template_of(manifest)
            await self._remove(
                work, cluster, member, manifest, preserve=preserve, template=template
            )
        for gone in _dropped(work):
            await self._remove(work, cluster, member, gone, preserve=preserve, template=None)

    async def _remove(
        self,
        work: Obj,
        cluster: str,
        member: Cluster,
        manifest: Obj,
        *,
        preserve: bool,
        template: str | None,
    ) -> None:
        """Delete (or release) the member object ``manifest`` names if this Work owns it, with
        ``template`` unless None (a dropped manifest's template is not known any more)."""
        try:
            gvk, namespace, name = _identity(manifest)
        except (ValueError, AttributeError, TypeError):
            return  # never applied: nothing to remove
        self.records.forget(ObjectRef(cluster, gvk, namespace, name))
        client, scope = member.api_reader, namespace or None
        try:
            observed = await client.get(gvk, name, namespace=scope)
        except (NotFound, NoKindMatch):
            return
        if not _owned_by(observed, work, template):
            return  # not ours: an object we never took over, or another Work's now
        if preserve:
            patch = release_patch(observed)
            if patch is not None:
                await client.patch(gvk, name, patch, namespace=scope)
            return
        with contextlib.suppress(NotFound):
            # Background, as Karmada: a Job's default (orphan) would leave its pods behind.
            await client.delete(
                gvk,
                name,
                namespace=scope,
                propagation_policy="Background",
                preconditions=Preconditions(uid=uid_of(observed)),
            )


def setup_execution_controller(context: Context) -> ExecutionController:
    """Register the execution controller with the context's manager and return its reconciler."""
    reconciler = ExecutionController(context)
    builder = (
        controller_managed_by(context.manager)
        .for_(WORK_GVK, _work_changed, reconciler.work_served)
        .watches(
            CLUSTER_GVK,
            EnqueueRequestsFromMapFunc(reconciler.works_of_cluster),
            reconciler.cluster_served,
        )
        .named(NAME)
    )
    context.members.serve()
    builder.watches(reconciler.watches.source(context.manager.engaged))
    context.complete(builder, reconciler, sharded_by=WORK_GVK, workers=DEFAULT_WORKERS)
    context.manager.cache.get_informer(WORK_GVK).add_event_handler(_WarmOnWork(reconciler))
    return reconciler


def setup(context: Context) -> None:
    """Set up the execution controller (the controller-manager's entry point)."""
    setup_execution_controller(context)
