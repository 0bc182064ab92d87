"""Detector is the controller that turns resource templates and propagation policies into bindings.

It is Karmada's resource detector on ``reconcile``: one controller, one work queue, whose Requests
name the kind of their object (``keys.ObjectRef``), because it reconciles objects of every kind:

- resource templates of every kind the host serves (``discovery.Discovery``, refreshed every 30 s,
  one shared informer per kind), outside the reserved namespaces, ignoring updates that change
  nothing but status → ``templates.TemplateReconciler``: claim, then ResourceBinding or
  ClusterResourceBinding;
- PropagationPolicies and ClusterPropagationPolicies → ``policies.PolicyReconciler``: permanent id
  and finalizer, then the templates they select or claimed are enqueued; deleted → claims released;
- created and deleted bindings → their template, so a binding removed by hand comes back and one
  whose template is gone (even while the detector was not running) is deleted;
- interpreter changes (a customization or webhook configuration loaded, changed or removed) →
  every claimed template of the kinds concerned, whose replicas may now read differently.

``setup(context)`` registers it with the context's manager.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import structlog

from controllers.api import (
    CLUSTER_PROPAGATION_POLICY_GVK,
    CLUSTER_RESOURCE_BINDING_GVK,
    PROPAGATION_POLICY_GVK,
    RESOURCE_BINDING_GVK,
    is_reserved_namespace,
)
from controllers.context import Context
from controllers.detector.discovery import DEFAULT_DISCOVERY_INTERVAL, Discovery
from controllers.detector.keys import ObjectRef
from controllers.detector.matching import claim_of, spec_changed
from controllers.detector.policies import PolicyReconciler
from controllers.detector.templates import BindingOwnedElsewhere, TemplateReconciler
from controllers.interpreter import InterpreterError, KindFilter
from reconcile import (
    GVK,
    Conflict,
    ControllerOptions,
    EnqueueRequestsFromMapFunc,
    Event,
    EventHandler,
    EventType,
    Obj,
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
    "CONFLICT_RETRY",
    "DEFAULT_WORKERS",
    "DETECTOR_NAME",
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

_POLICY_KINDS: Final = (PROPAGATION_POLICY_GVK, CLUSTER_PROPAGATION_POLICY_GVK)

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


def _template_of_binding(binding: Obj) -> Iterable[Request]:
    resource = (binding.get("spec") or {}).get("resource") or {}
    if claim_of(binding) is None or not resource.get("name") or not resource.get("kind"):
        return []
    gvk = GVK.from_api_version(str(resource.get("apiVersion", "")), str(resource["kind"]))
    return [ObjectRef(gvk, str(resource.get("namespace", "")), str(resource["name"])).request()]


def _created_or_deleted(event: Event) -> bool:
    # Deleted: the template makes a new one. Created, which includes every binding listed at
    # start: a template deleted while the detector was not running still has its binding.
    return event.type in (EventType.CREATE, EventType.DELETE)


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

    def reinterpret(self, kinds: KindFilter) -> None:
        """Queue every claimed template of ``kinds`` (an interpreter change concerns them)."""
        for scope, informer in self.cache.informers().items():
            if self.discovery.resource(scope.gvk) is None or not kinds(scope.gvk):
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
        builder.watches(gvk, EnqueueRequestsFromMapFunc(_template_of_binding), _created_or_deleted)
    options = ControllerOptions(max_concurrent_reconciles=DEFAULT_WORKERS)
    controller = builder.watches(detector.discovery).with_options(options).complete(detector)
    detector.queue = controller.queue
    context.interpreter.subscribe(detector.reinterpret)
