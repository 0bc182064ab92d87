"""Detector is the controller that turns resource templates and propagation policies into bindings.

It is Karmada's resource detector on ``reconcile``: one controller, one work queue, whose Requests
name the kind of their object (``keys.ObjectRef``), because it reconciles objects of every kind:

- resource templates of every kind the host serves (``discovery.Discovery``, refreshed every 30 s,
  one shared informer per kind), outside the reserved namespaces, ignoring updates that change
  nothing but status → ``templates.TemplateReconciler``: claim, then ResourceBinding or
  ClusterResourceBinding;
- PropagationPolicies and ClusterPropagationPolicies → ``policies.PolicyReconciler``: permanent id
  and finalizer, then the templates they select or claimed are enqueued; deleted → claims released;
- deleted bindings → their template, so a binding removed by hand comes back; created bindings
  whose template the cache lacks → that template, so the binding of a template deleted while the
  detector was not running is deleted too;
- created OverridePolicies and ClusterOverridePolicies → the templates waiting for them
  (``dependentoverrides``);
- interpreter changes (a customization or webhook configuration loaded, changed or removed) →
  every claimed template of the kinds concerned, whose replicas may now read differently.

``setup(context)`` registers it with the context's manager.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import structlog

from controllers.api import (
    CLUSTER_OVERRIDE_POLICY_GVK,
    CLUSTER_PROPAGATION_POLICY_GVK,
    CLUSTER_RESOURCE_BINDING_GVK,
    OVERRIDE_POLICY_GVK,
    PROPAGATION_POLICY_GVK,
    RESOURCE_BINDING_GVK,
    is_reserved_namespace,
)
from controllers.context import TEMPLATES, Context
from controllers.detector.discovery import (
    DEFAULT_DISCOVERY_INTERVAL,
    TEMPLATE_VERBS,
    AccessReview,
    Discovery,
)
from controllers.detector.keys import ObjectRef
from controllers.detector.matching import claim_of, spec_changed
from controllers.detector.policies import ClaimsRemain, PolicyReconciler
from controllers.detector.templates import BindingOwnedElsewhere, TemplateReconciler
from controllers.interpreter import InterpreterError, KindFilter
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    Conflict,
    EnqueueRequestsFromMapFunc,
    Event,
    EventHandler,
    EventType,
    Obj,
    ObjectKey,
    Request,
    Result,
    WorkQueue,
    controller_managed_by,
    name_of,
    namespace_of,
    resource_version_changed,
)

__all__ = [
    "BAD_INPUT_RETRY",
    "CLAIMS_RETRY",
    "CONFLICT_RETRY",
    "DEFAULT_WORKERS",
    "DETECTOR_NAME",
    "PERMISSIONS",
    "Detector",
    "setup",
    "template_event_filter",
]

DETECTOR_NAME: Final = "detector"
DEFAULT_WORKERS: Final = 4
"""Templates and policies reconciled in parallel (Karmada: 5 template syncs)."""
CONFLICT_RETRY: Final = 0.2
"""Seconds before an object whose write hit a conflict is reconciled again."""
BAD_INPUT_RETRY: Final = 30.0
"""Seconds before a template the interpreter failed on (or whose binding is taken) is retried."""
CLAIMS_RETRY: Final = 1.0
"""Seconds before a deleted policy whose claims other replicas still hold is looked at again."""

_POLICY_KINDS: Final = (PROPAGATION_POLICY_GVK, CLUSTER_PROPAGATION_POLICY_GVK)
_BINDINGS: Final = ("resourcebindings", "clusterresourcebindings")
_POLICIES: Final = ("propagationpolicies", "clusterpropagationpolicies")
_OVERRIDES: Final = ("overridepolicies", "clusteroverridepolicies")

PERMISSIONS: Final = Permissions(
    rules=(
        cache("policy.karmada.io", *_POLICIES),
        Rule(("policy.karmada.io",), _POLICIES, ("update",), "finalizer and permanent id"),
        cache("policy.karmada.io", *_OVERRIDES, why="dependentOverrides"),
        cache("work.karmada.io", *_BINDINGS),
        Rule(("work.karmada.io",), _BINDINGS, ("get",), "a live read after AlreadyExists"),
        Rule(("work.karmada.io",), _BINDINGS, ("create", "update", "delete"), "the bindings"),
        Rule(("work.karmada.io",), _BINDINGS, ("patch",), "a deleted policy's claim removed"),
        Rule(
            ("authorization.k8s.io",),
            ("selfsubjectaccessreviews",),
            ("create",),
            "discovery: may this kind be watched and claimed",
        ),
    ),
    templates=TEMPLATE_VERBS,
)
"""What the detector does on the host: watch templates, read them live, claim them by a merge
patch (see controllers.rbac)."""

log = structlog.get_logger("controllers.detector")


def template_event_filter(event: Event) -> bool:
    """Pass template events outside reserved namespaces; updates only when more than status (or
    resourceVersion, managedFields, generation) changed."""
    namespace = namespace_of(event.obj)
    if namespace and is_reserved_namespace(namespace):
        return False
    if event.type is EventType.UPDATE and event.old is not None:
        return spec_changed(event.old, event.obj)
    return True


def _handler(gvk: GVK) -> EventHandler:
    """Enqueue events of ``gvk`` objects as Requests naming their kind."""

    def requests(obj: Obj) -> Iterable[Request]:
        return [ObjectRef(gvk, namespace_of(obj), name_of(obj)).request()]

    return EnqueueRequestsFromMapFunc(requests)


def _template_ref(binding: Obj) -> ObjectRef | None:
    resource = (binding.get("spec") or {}).get("resource") or {}
    if not resource.get("name") or not resource.get("kind"):
        return None
    gvk = GVK.from_api_version(str(resource.get("apiVersion", "")), str(resource["kind"]))
    return ObjectRef(gvk, str(resource.get("namespace", "")), str(resource["name"]))


def _template_of_claimed(binding: Obj) -> Iterable[Request]:
    """A deleted binding's template, if claimed: it makes a new binding."""
    ref = _template_ref(binding)
    return [ref.request()] if ref is not None and claim_of(binding) is not None else []


def _deleted(event: Event) -> bool:
    return event.type is EventType.DELETE


def _created(event: Event) -> bool:
    return event.type is EventType.CREATE


class Detector:
    """Reconciles templates and propagation policies (see the module docstring)."""

    def __init__(
        self, context: Context, *, discovery_interval: float = DEFAULT_DISCOVERY_INTERVAL
    ) -> None:
        manager = context.manager
        self.discovery = Discovery(
            manager.api_reader,
            manager.cache,
            _handler,
            (template_event_filter,),
            interval=discovery_interval,
            access=AccessReview(manager.api_reader),
            permitted_kinds=context.permitted_kinds,
            before_watch=context.sharding.add_template_kind if context.sharding else None,
        )
        recorder = context.recorder(DETECTOR_NAME)
        self.templates = TemplateReconciler(
            manager.client, context.interpreter, recorder, self.discovery
        )
        self.policies = PolicyReconciler(manager.client, self.discovery, self.enqueue, recorder)
        self.cache = manager.cache
        self.queue: WorkQueue[Request] | None = None

    def enqueue(self, ref: ObjectRef) -> None:
        """Queue an object for reconciliation (dropped before the controller is set up)."""
        if self.queue is not None:
            self.queue.add(ref.request())

    def template_if_missing(self, binding: Obj) -> Iterable[Request]:
        """A created binding's template when the cache does not hold it. Every binding listed at
        start is created: so is found the binding of a template deleted while the detector was not
        running (``templates`` deletes it). Present templates are reconciled anyway."""
        ref = _template_ref(binding)
        if ref is None:
            return []
        key = str(ObjectKey(namespace=ref.namespace, name=ref.name))
        for scope, informer in self.cache.informers().items():
            # Whatever its scope (a sharded replica's informers carry its shard's selector).
            if scope.gvk == ref.gvk and not scope.metadata_only and informer.indexer.get(key):
                return []
        return [ref.request()]

    def reinterpret(self, kinds: KindFilter) -> None:
        """Queue every claimed template of ``kinds`` (an interpreter change concerns them)."""
        for scope, informer in self.cache.informers().items():
            gvk = scope.gvk
            if scope.metadata_only or self.discovery.resource(gvk) is None or not kinds(gvk):
                continue
            for template in informer.indexer.values():
                if claim_of(template) is not None:
                    self.enqueue(ObjectRef(scope.gvk, namespace_of(template), name_of(template)))

    async def reconcile(self, request: Request) -> Result | None:
        """Reconcile the template or policy ``request`` names."""
        try:
            ref = ObjectRef.from_request(request)
        except ValueError as error:
            log.error("ignoring a request without a kind", error=str(error))
            return None
        try:
            if ref.gvk in _POLICY_KINDS:
                await self.policies.reconcile(ref)
            else:
                await self.templates.reconcile(ref)
        except Conflict:
            # Written meanwhile (often: our own write the cache has not seen yet): read again.
            log.debug("conflict, reading again", object=str(ref))
            return Result(requeue_after=CONFLICT_RETRY)
        except ClaimsRemain:
            return Result(requeue_after=CLAIMS_RETRY)
        except (InterpreterError, BindingOwnedElsewhere) as error:
            # Reported as an Event on the template; retrying soon would only repeat it.
            log.warning("cannot propagate the template", object=str(ref), error=str(error))
            return Result(requeue_after=BAD_INPUT_RETRY)
        return None


def setup(context: Context, *, discovery_interval: float = DEFAULT_DISCOVERY_INTERVAL) -> None:
    """Register the detector with ``context.manager`` (controller name ``detector``)."""
    detector = Detector(context, discovery_interval=discovery_interval)
    builder = controller_managed_by(context.manager).named(DETECTOR_NAME)
    for gvk in _POLICY_KINDS:
        builder.watches(gvk, _handler(gvk), resource_version_changed)
    for gvk in (RESOURCE_BINDING_GVK, CLUSTER_RESOURCE_BINDING_GVK):
        builder.watches(gvk, EnqueueRequestsFromMapFunc(_template_of_claimed), _deleted)
        builder.watches(gvk, EnqueueRequestsFromMapFunc(detector.template_if_missing), _created)
    waiting = EnqueueRequestsFromMapFunc(detector.templates.waiting.requests)
    for gvk in (OVERRIDE_POLICY_GVK, CLUSTER_OVERRIDE_POLICY_GVK):
        # A template held back by dependentOverrides goes on once the override exists.
        builder.watches(gvk, waiting, _created)
    builder.watches(detector.discovery)
    controller = context.complete(builder, detector, sharded_by=TEMPLATES, workers=DEFAULT_WORKERS)
    detector.queue = controller.queue
    context.interpreter.subscribe(detector.reinterpret)
