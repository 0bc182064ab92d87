"""Distributor is Karmada's dependencies distributor: what a workload needs follows it to members.

``setup(context)`` registers the ``dependencies-distributor`` controller (Karmada's name; its
feature gate PropagateDeps is on by default since v1.4). It reconciles ResourceBindings with
``spec.propagateDeps: true`` once they are scheduled (pkg/dependenciesdistributor):

1. the template's dependencies (interpreter InterpretDependency: the ConfigMaps, Secrets,
   ServiceAccount and PVCs its pod template names, or what a customization or webhook returns),
   de-duplicated, are recorded in the annotation ``resourcebinding.karmada.io/dependencies``, and
   the binding gets the finalizer ``karmada.io/binding-dependencies-distributor``;
2. each dependency that exists gets its attached ResourceBinding (``attached``), created or
   updated with this binding's snapshot in ``spec.requiredBy``; the binding controller sends it
   to the union of the clusters of everything that requires it;
3. attached bindings labelled for this binding but no longer among its dependencies are
   released: label and ``requiredBy`` entry removed; one nobody requires any more and that has
   no placement of its own is deleted, and its Works (so the member copies) go with it;
4. ``propagateDeps`` turned off, or the binding being deleted: every attached binding is
   released, then the finalizer removed.

A dependency created later is picked up: the distributor listens on the host cache's informer
of the dependency's kind (the detector's, so nothing more is held in memory) and maps each event
to the bindings whose annotation names or selects the object. Which kinds it may read is what the
detector's access reviews found (``context.permitted_kinds``, asked once per kind, not per
object): a dependency of a kind RBAC does not let this process read (e.g. Secrets under
deploy/'s role) is not requested; it gets a Warning Event ``DependencyForbidden`` on the binding,
once per generation, naming the kind and the permission missing, while the other dependencies
propagate; once a discovery round finds the kind permitted, the bindings that depend on it are
reconciled again (``withheld``). Dependencies in reserved namespaces (the cluster namespace holds
the member credentials) are never read nor attached (Warning ``DependencyInReservedNamespace``).
Until the detector's first round, a binding with a dependency of an unwatched kind waits
(``DISCOVERY_WAIT``). A kind the detector does not review (it skips it, or does not run here) is
read live, and a binding waiting for such an object is looked at again every
``UNWATCHED_RESYNC`` seconds. An interpreter failure is a Warning Event ``GetDependenciesFailed``
on the template; a failed attached binding a Warning ``SyncScheduleResultToDependenciesFailed``
on the binding.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from controllers.api import (
    KARMADA_CLUSTER_NAMESPACE,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    binding_spec,
)
from controllers.context import Context
from controllers.dependencies.attached import (
    DEPENDENCIES_ANNOTATION,
    DISTRIBUTOR_FINALIZER,
    attached_binding,
    depended_by_label,
    dependencies_json,
    is_attached_only,
    matches,
    merged_attached,
    recorded_dependencies,
    released,
    unique_dependencies,
)
from controllers.dependencies.withheld import (
    DEPENDENCY_FORBIDDEN_REASON,
    Withheld,
    WithheldEvents,
    forbidden,
    reserved,
)
from controllers.interpreter import (
    DependentObjectReference,
    Interpreter,
    InterpreterError,
    KindFilter,
    NotSupported,
)
from controllers.permittedkinds import Denial, PermittedKinds
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    NAMESPACE_INDEX,
    AlreadyExists,
    CachedClient,
    Conflict,
    Event,
    EventRecorder,
    EventType,
    Forbidden,
    InformerScope,
    NoKindMatch,
    NotFound,
    Obj,
    Preconditions,
    Request,
    Result,
    WorkQueue,
    add_finalizer,
    controller_managed_by,
    is_being_deleted,
    labels_of,
    name_of,
    namespace_of,
    remove_finalizer,
    uid_of,
)

__all__ = [
    "CONFLICT_RETRY",
    "DISCOVERY_WAIT",
    "DependenciesDistributor",
    "GET_DEPENDENCIES_FAILED_REASON",
    "NAME",
    "PERMISSIONS",
    "SYNC_FAILED_REASON",
    "UNWATCHED_RESYNC",
    "binding_event_filter",
    "setup",
]

NAME: Final = "dependencies-distributor"
GET_DEPENDENCIES_FAILED_REASON: Final = "GetDependenciesFailed"
SYNC_FAILED_REASON: Final = "SyncScheduleResultToDependenciesFailed"
UNWATCHED_RESYNC: Final = 30.0
"""Seconds before a binding waiting for a dependency of a kind nobody watches looks again."""
CONFLICT_RETRY: Final = 0.2
BAD_INPUT_RETRY: Final = 30.0
DISCOVERY_WAIT: Final = 1.0
"""Seconds before a binding looks again while the detector has not told which kinds are readable."""

PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "resourcebindings"),
        Rule(("work.karmada.io",), ("resourcebindings",), ("get",), "after AlreadyExists"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings",),
            ("create", "update", "delete"),
            "attached bindings; dependencies annotation and finalizer",
        ),
    ),
    templates=("get", "list"),
)
"""What the distributor does on the host: templates and dependencies are read from the cache,
or live (get, list for a selector) when no informer holds their kind (see controllers.rbac)."""

log = structlog.get_logger("controllers.dependencies")


class _Unwatched(Exception):
    """A dependency of a kind no informer holds was not found: look again later."""


class _Refused(Exception):
    """The apiserver refused reading a dependency of a kind the detector did not review."""

    def __init__(self, denial: Denial) -> None:
        super().__init__(denial.permission())
        self.denial = denial


@dataclass
class _Found:
    """What a binding's dependencies resolve to: objects to attach, and what is withheld."""

    objects: list[Obj] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)
    waiting: bool = False


def _state(binding: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = binding.get("metadata") or {}
    return (meta.get("generation"), meta.get("deletionTimestamp"), meta.get("finalizers"))


def binding_event_filter(event: Event) -> bool:
    """Karmada's predicate: creates of scheduled propagateDeps bindings, their deletes, and
    updates that changed the spec (or started the deletion) of one that has or had the flag."""
    spec = binding_spec(event.obj)
    if event.type is EventType.CREATE:
        return bool(spec.get("propagateDeps") and spec.get("clusters"))
    if event.type is EventType.DELETE or event.old is None:
        return bool(spec.get("propagateDeps"))
    if _state(event.old) == _state(event.obj):
        return False
    return bool(binding_spec(event.old).get("propagateDeps") or spec.get("propagateDeps"))


@dataclass
class _DependencyEvents:
    """An informer handler on a dependency kind: each event enqueues the bindings that depend
    on the object (before and after an update: a label change may move it between selectors)."""

    distributor: DependenciesDistributor
    gvk: GVK

    def _enqueue(self, *objects: Obj) -> None:
        for obj in objects:
            for request in self.distributor.dependents(self.gvk, obj):
                self.distributor.enqueue(request)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._enqueue(old, new)

    def on_delete(self, obj: Obj) -> None:
        self._enqueue(obj)


@dataclass
class DependenciesDistributor:
    """Keeps the attached bindings of propagateDeps bindings (see the module docstring)."""

    client: CachedClient
    interpreter: Interpreter
    recorder: EventRecorder
    queue: WorkQueue[Request] | None = None
    watched: set[GVK] = field(default_factory=set)
    kinds: PermittedKinds = field(default_factory=PermittedKinds)
    """Which kinds may be read, as the detector's discovery found (``context.permitted_kinds``)."""
    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE
    """Where the member credentials are (``--cluster-namespace``): never a dependency."""
    warnings: WithheldEvents = field(init=False)

    def __post_init__(self) -> None:
        self.warnings = WithheldEvents(self.recorder)

    def enqueue(self, request: Request) -> None:
        """Queue a binding (dropped before the controller is set up)."""
        if self.queue is not None:
            self.queue.add(request)

    def dependents(self, gvk: GVK, obj: Obj) -> list[Request]:
        """The bindings in ``obj``'s namespace whose recorded dependencies name or select it."""
        typed = {**obj, "apiVersion": gvk.api_version, "kind": gvk.kind}
        informer = self.client.cache.get_informer(RESOURCE_BINDING_GVK)
        return [
            Request(name_of(binding), namespace_of(binding))
            for binding in informer.indexer.by_index(NAMESPACE_INDEX, namespace_of(obj))
            if any(matches(ref, typed) for ref in recorded_dependencies(binding))
        ]

    def on_permitted(self, kinds: frozenset[GVK]) -> None:
        """Queue the bindings recorded as depending on objects of ``kinds``, just permitted."""
        informer = self.client.cache.get_informer(RESOURCE_BINDING_GVK)
        for binding in informer.indexer.values():
            if any(_gvk_of(ref) in kinds for ref in recorded_dependencies(binding)):
                self.enqueue(Request(name_of(binding), namespace_of(binding)))

    async def reconcile(self, request: Request) -> Result | None:
        """Bring one binding's attached bindings in line with its dependencies.

        Raises:
            ApiError: a read or write failed; retried with backoff.
        """
        try:
            binding = await self.client.get(
                RESOURCE_BINDING_GVK, request.name, namespace=request.namespace
            )
        except NotFound:
            self.warnings.forget(request.namespace or "", request.name)
            return None
        try:
            return await self._reconcile(binding)
        except Conflict:
            return Result(requeue_after=CONFLICT_RETRY)

    async def _reconcile(self, binding: Obj) -> Result | None:
        spec = binding_spec(binding)
        if not spec.get("propagateDeps") or is_being_deleted(binding):
            self.warnings.forget(namespace_of(binding), name_of(binding))
            await self._release_all(binding)
            if remove_finalizer(binding, DISTRIBUTOR_FINALIZER):
                with contextlib.suppress(NotFound):
                    await self.client.update(binding)
            return None
        if not spec.get("clusters"):
            return None  # not scheduled yet: its schedule result is what dependencies follow
        template = await self._template(binding)
        if template is None:
            return None
        try:
            dependencies = unique_dependencies(await self.interpreter.get_dependencies(template))
        except NotSupported:
            dependencies = []
        except InterpreterError as error:
            message = f"Failed to get dependencies: {error}"
            self.recorder.event(template, "Warning", GET_DEPENDENCIES_FAILED_REASON, message)
            return Result(requeue_after=BAD_INPUT_RETRY)
        binding = await self._record(binding, dependencies)
        return await self._sync(binding, dependencies)

    async def _record(self, binding: Obj, dependencies: list[DependentObjectReference]) -> Obj:
        recorded = dependencies_json(dependencies)
        changed = add_finalizer(binding, DISTRIBUTOR_FINALIZER)
        annotations = binding["metadata"].setdefault("annotations", {})
        if annotations.get(DEPENDENCIES_ANNOTATION) != recorded:
            annotations[DEPENDENCIES_ANNOTATION] = recorded
            changed = True
        return await self.client.update(binding) if changed else binding

    async def _sync(
        self, binding: Obj, dependencies: list[DependentObjectReference]
    ) -> Result | None:
        if self.kinds.pending() and not all(self._informed(_gvk_of(r)) for r in dependencies):
            # Not knowing yet whether RBAC lets us read them: do not ask the apiserver.
            return Result(requeue_after=DISCOVERY_WAIT)
        found = await self._find(dependencies)
        desired_bindings = (attached_binding(binding, obj) for obj in found.objects)
        wanted = {name_of(desired): desired for desired in desired_bindings}
        # What was attached for a dependency we may no longer read stays as it is: a revoked
        # permission must not delete member copies.
        unread = [w.ref for w in found.withheld if w.reason == DEPENDENCY_FORBIDDEN_REASON]
        for attached in await self._attached(binding):
            if name_of(attached) not in wanted and not any(_for(r, attached) for r in unread):
                await self._release(attached, binding)
        self.warnings.report(binding, found.withheld)
        failures = []
        for desired in wanted.values():
            try:
                await self._apply(desired)
            except ValueError as error:
                failures.append(str(error))
        if failures:
            message = "; ".join(failures)
            self.recorder.event(binding, "Warning", SYNC_FAILED_REASON, message)
            return Result(requeue_after=BAD_INPUT_RETRY)
        return Result(requeue_after=UNWATCHED_RESYNC) if found.waiting else None

    async def _find(self, dependencies: list[DependentObjectReference]) -> _Found:
        found = _Found()
        for ref in dependencies:
            withheld = reserved(ref, self.cluster_namespace) or self._forbidden(ref)
            if withheld is not None:
                found.withheld.append(withheld)
                continue
            try:
                found.objects += await self._objects(ref)
            except _Unwatched:
                found.waiting = True
            except _Refused as refused:
                found.withheld.append(forbidden(ref, refused.denial))
        return found

    def _forbidden(self, ref: DependentObjectReference) -> Withheld | None:
        """``ref`` withheld when the detector found RBAC refusing a read verb on its kind."""
        gvk = _gvk_of(ref)
        denial = None if self._informed(gvk) else self.kinds.denial(gvk)
        return forbidden(ref, denial) if denial is not None else None

    def _informed(self, gvk: GVK) -> bool:
        """Whether a full informer of ``gvk`` is in the host cache (and so watched by us too)."""
        if not any(
            scope.gvk == gvk and not scope.metadata_only and scope.namespace is None
            for scope in self.client.cache.informers()
        ):
            return False
        if gvk not in self.watched:
            self.watched.add(gvk)
            informer = self.client.cache.informers()[InformerScope(gvk)]
            informer.add_event_handler(_DependencyEvents(self, gvk))
        return True

    async def _template(self, binding: Obj) -> Obj | None:
        resource = binding_spec(binding).get("resource") or {}
        gvk = GVK.from_api_version(resource.get("apiVersion", ""), resource.get("kind", ""))
        name, namespace = resource.get("name", ""), resource.get("namespace") or None
        informed = self._informed(gvk)
        if not informed and self.kinds.denial(gvk) is not None:
            return None  # the detector may not watch the kind either: nothing to follow
        reader = self.client if informed else self.client.live
        try:
            template = await reader.get(gvk, name, namespace=namespace)
        except (NotFound, NoKindMatch):
            return None  # deleted: the detector deletes its binding
        return {**template, "apiVersion": gvk.api_version, "kind": gvk.kind}

    async def _objects(self, ref: DependentObjectReference) -> list[Obj]:
        """The objects ``ref`` names or selects, with apiVersion and kind.

        Raises:
            _Unwatched: a named object of an unwatched kind does not exist (yet).
            _Refused: the apiserver refused reading an unwatched kind.
        """
        gvk = _gvk_of(ref)
        informed = self._informed(gvk)
        reader = self.client if informed else self.client.live
        try:
            if ref.name:
                found = [await reader.get(gvk, ref.name, namespace=ref.namespace or None)]
            else:
                listed = await reader.list(gvk, namespace=ref.namespace or None)
                found = list(listed.get("items") or [])
        except (NotFound, NoKindMatch) as error:
            if not informed:
                raise _Unwatched(str(ref)) from error
            return []  # its creation enqueues this binding
        except Forbidden as error:
            # A kind the detector does not review (or it does not run here): as RBAC answered.
            plural = str(error.details.get("kind") or f"{gvk.kind.lower()}s")
            verb = "get" if ref.name else "list"
            raise _Refused(Denial(gvk.group, plural, verb)) from error
        typed = [{**obj, "apiVersion": gvk.api_version, "kind": gvk.kind} for obj in found]
        return [obj for obj in typed if matches(ref, obj)]

    async def _attached(self, binding: Obj) -> list[Obj]:
        # key=value, as attached_binding labels them (the parent's permanent id): served by the
        # cache's label index, where a bare key (exists) would scan every binding.
        label = depended_by_label(namespace_of(binding), name_of(binding))
        value = labels_of(binding).get(RESOURCE_BINDING_PERMANENT_ID_LABEL, "")
        return await self.client.list_all(
            RESOURCE_BINDING_GVK, namespace=namespace_of(binding), label_selector=f"{label}={value}"
        )

    async def _release_all(self, binding: Obj) -> None:
        for attached in await self._attached(binding):
            await self._release(attached, binding)

    async def _release(self, attached: Obj, binding: Obj) -> None:
        updated = released(attached, namespace_of(binding), name_of(binding))
        spec = updated.get("spec") or {}
        with contextlib.suppress(NotFound):
            if not spec.get("requiredBy") and is_attached_only(attached):
                log.info("deleting an attached binding nobody requires", binding=name_of(attached))
                await self.client.delete(
                    RESOURCE_BINDING_GVK,
                    name_of(attached),
                    namespace=namespace_of(attached),
                    preconditions=Preconditions(uid=uid_of(attached)),
                )
            elif updated != attached:
                await self.client.update(updated)

    async def _apply(self, desired: Obj) -> None:
        """Create or update one attached binding.

        Raises:
            ValueError: a binding of that name belongs to another object (an earlier one of
                the same name, not yet garbage-collected; Karmada waits the same way).
        """
        name, namespace = name_of(desired), namespace_of(desired)
        try:
            existing = await self.client.get(RESOURCE_BINDING_GVK, name, namespace=namespace)
        except NotFound:
            try:
                await self.client.create(copy.deepcopy(desired))
                return
            except AlreadyExists:
                existing = await self.client.live.get(
                    RESOURCE_BINDING_GVK, name, namespace=namespace
                )
        owner = _controller_of(existing)
        wanted_owner = desired["metadata"]["ownerReferences"][0]
        if owner is not None and owner.get("uid") != wanted_owner.get("uid"):
            raise ValueError(
                f"binding {namespace}/{name} belongs to another {owner.get('kind')} "
                f"(uid {owner.get('uid')}): waiting for it to be deleted"
            )
        if is_being_deleted(existing):
            return
        merged = merged_attached(existing, desired)
        if merged != existing:
            await self.client.update(merged)


def _gvk_of(ref: DependentObjectReference) -> GVK:
    return GVK.from_api_version(ref.api_version, ref.kind)


def _for(ref: DependentObjectReference, attached: Mapping[str, Any]) -> bool:
    """Whether ``attached`` may be the binding of an object ``ref`` names or selects (its
    labels unknown: a selector is taken to match every object of its kind and namespace)."""
    resource = binding_spec(attached).get("resource") or {}
    where = (resource.get("apiVersion"), resource.get("kind"), resource.get("namespace") or "")
    if where != (ref.api_version, ref.kind, ref.namespace):
        return False
    return not ref.name or resource.get("name") == ref.name


def _controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((o for o in owners if o.get("controller")), None)


def setup(context: Context) -> None:
    """Register the dependencies distributor with ``context.manager``."""
    manager = context.manager
    distributor = DependenciesDistributor(
        manager.client,
        context.interpreter,
        context.recorder(NAME),
        kinds=context.permitted_kinds,
        cluster_namespace=context.members.options.cluster_namespace,
    )
    controller = (
        controller_managed_by(manager)
        .named(NAME)
        .for_(RESOURCE_BINDING_GVK, binding_event_filter)
        .complete(distributor)
    )
    distributor.queue = controller.queue

    def reinterpret(kinds: KindFilter) -> None:
        # A customization's GetDependencies may answer differently now.
        informer = manager.cache.get_informer(RESOURCE_BINDING_GVK)
        for binding in informer.indexer.values():
            if binding_spec(binding).get("propagateDeps") and _resource_kind(binding, kinds):
                distributor.enqueue(Request(name_of(binding), namespace_of(binding)))

    context.interpreter.subscribe(reinterpret)
    context.permitted_kinds.subscribe(distributor.on_permitted)


def _resource_kind(binding: Mapping[str, Any], kinds: KindFilter) -> bool:
    resource = binding_spec(binding).get("resource") or {}
    gvk = GVK.from_api_version(resource.get("apiVersion", ""), resource.get("kind", ""))
    return bool(kinds(gvk))
