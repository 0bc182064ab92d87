"""BindingStatusController reports where a binding's resource stands in each member cluster.

One controller per binding kind (ResourceBinding, ClusterResourceBinding). For each binding it
lists the Works labelled with the binding's permanent id, writes ``status.aggregatedStatus`` (see
``aggregate``) and the FullyApplied condition when they changed, then the resource template's
aggregated status (see ``template``). It reconciles when a scheduled binding (one with
``status.lastScheduledTime``) is created or its spec or labels change (new target clusters, a new
template version, the id label), and when one of its Works changes status or goes away; Works
name their binding in the annotations ``resourcebinding.karmada.io/namespace`` and ``/name``
(``clusterresourcebinding.karmada.io/name`` for cluster bindings).

A change is written ``COALESCE_WINDOW`` seconds after the reconcile that first saw it, with
whatever else changed meanwhile: a binding's Works are applied, and their members report, at
nearly the same moment, and writing each partial aggregation made 3.0 binding status and 1.5
template status writes per template at 1,000 templates on 2 members where 2 and 1 carry every
state that lasts (docs/benchmarks.md). The statuses written are Karmada's; they arrive that much
later, and a state that lasted less than the window is not written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    FULLY_APPLIED_CONDITION,
    FULLY_APPLIED_FAILED_REASON,
    FULLY_APPLIED_SUCCESS_REASON,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    WORK_GVK,
    AggregatedStatusItem,
    binding_spec,
    binding_status,
)
from controllers.context import Context
from controllers.rbac import Permissions, Rule, cache
from controllers.status.aggregate import (
    FULLY_APPLIED_FAILED_MESSAGE,
    FULLY_APPLIED_SUCCESS_MESSAGE,
    aggregated_items,
    fully_applied,
)
from controllers.status.template import TemplateStatusWriter
from reconcile import (
    GVK,
    CachedClient,
    EnqueueRequestsFromMapFunc,
    Event,
    EventType,
    NotFound,
    Obj,
    Request,
    Result,
    annotations_of,
    controller_managed_by,
    deep_copy,
    deletion_timestamp_of,
    generation_changed,
    is_being_deleted,
    labels_changed,
    labels_of,
    name_of,
    namespace_of,
    or_,
    set_condition,
)

__all__ = [
    "PERMISSIONS",
    "BINDING",
    "BindingKind",
    "BindingStatusController",
    "CLUSTER_BINDING",
    "DEFAULT_WORKERS",
    "setup_binding_status_controllers",
]

PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "resourcebindings", "clusterresourcebindings"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings/status", "clusterresourcebindings/status"),
            ("patch",),
            "aggregatedStatus, FullyApplied",
        ),
        cache("work.karmada.io", "works"),
    ),
    templates=("get",),
    template_status=("update",),
)
"""What the status controllers do on the host: templates are read from the cache the detector
fills (live for a kind no full informer holds) and their status written for the kinds whose status
is aggregated (see controllers.rbac)."""


COALESCE_WINDOW: Final = 0.1
"""Seconds a binding's status change waits for the changes that come with it (see the module
docstring)."""


class Window:
    """When each binding's pending change was first seen, to write it once ``seconds`` later."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._since: dict[Request, float] = {}

    def __len__(self) -> int:
        return len(self._since)

    def remaining(self, request: Request) -> float:
        """Seconds until ``request``'s pending change is due (0 or less: write it now)."""
        now = self.clock()
        return self._since.setdefault(request, now) + self.seconds - now

    def close(self, request: Request) -> None:
        """Nothing pending for ``request`` any more (written, unchanged, or gone)."""
        self._since.pop(request, None)


DEFAULT_WORKERS: Final = 5
"""Bindings aggregated in parallel, per binding kind. Each waits on up to three requests (its
status, the template when not cached, the template's status); Karmada's syncs default to 5."""


@dataclass(frozen=True)
class BindingKind:
    """What differs between ResourceBindings and ClusterResourceBindings for this controller."""

    gvk: GVK
    name: str
    id_label: str
    namespace_annotation: str | None
    name_annotation: str

    def request_for_work(self, work: Obj) -> list[Request]:
        """The binding a Work belongs to, from its annotations (none if it names none)."""
        annotations = annotations_of(work)
        name = annotations.get(self.name_annotation)
        if not name:
            return []
        if self.namespace_annotation is None:
            return [Request(name)]
        namespace = annotations.get(self.namespace_annotation)
        return [Request(name, namespace)] if namespace else []


BINDING: Final = BindingKind(
    RESOURCE_BINDING_GVK,
    "resource-binding-status",
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDING_NAME_ANNOTATION,
)
CLUSTER_BINDING: Final = BindingKind(
    CLUSTER_RESOURCE_BINDING_GVK,
    "cluster-resource-binding-status",
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    None,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
)


def _work_status_changed(event: Event) -> bool:
    """Work events that can change a binding's aggregated status: not creations (a new Work has
    no status yet; its first status is an update), as Karmada."""
    if event.type is EventType.CREATE:
        return False
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return event.old.get("status") != event.obj.get("status") or (
        deletion_timestamp_of(event.old) != deletion_timestamp_of(event.obj)
    )


def _scheduled(binding: Obj) -> bool:
    # lastScheduledTime is set only by a successful scheduling (the Scheduled condition also
    # changes while rescheduling fails).
    return bool(binding_status(binding).get("lastScheduledTime"))


_spec_or_labels_changed = or_(generation_changed, labels_changed)


def _binding_changed(event: Event) -> bool:
    """Binding events worth a reconcile, as Karmada: only once scheduled. Before that it has no
    Works, and writing its empty status then would only race the scheduler's writes (a Conflict
    on the path of every new binding); its Works' status updates bring it here later."""
    if event.type is EventType.DELETE:
        return True
    return _scheduled(event.obj) and _spec_or_labels_changed(event)


def _status_with(binding: Obj, items: list[AggregatedStatusItem]) -> dict[str, Any]:
    """The binding's status with these items and the matching FullyApplied condition."""
    holder: Obj = {
        "metadata": binding.get("metadata", {}),
        "status": deep_copy(dict(binding_status(binding))),
    }
    if items:
        holder["status"]["aggregatedStatus"] = items
    else:
        holder["status"].pop("aggregatedStatus", None)  # as the apiserver stores "none"
    done = fully_applied(binding, items)
    if done:
        reason, message = FULLY_APPLIED_SUCCESS_REASON, FULLY_APPLIED_SUCCESS_MESSAGE
    else:
        reason, message = FULLY_APPLIED_FAILED_REASON, FULLY_APPLIED_FAILED_MESSAGE
    set_condition(holder, FULLY_APPLIED_CONDITION, done, reason, message)
    status: dict[str, Any] = holder["status"]
    return status


class BindingStatusController:
    """Reconciles one kind of binding: aggregated status, FullyApplied, template status."""

    def __init__(
        self, context: Context, kind: BindingKind, *, window: float = COALESCE_WINDOW
    ) -> None:
        self.kind = kind
        self.window = Window(window)
        self.host: CachedClient = context.manager.client
        self.templates = TemplateStatusWriter(
            context.manager.client, context.interpreter, context.recorder(kind.name)
        )

    async def reconcile(self, request: Request) -> Result | None:
        """Aggregate the binding's Works into its status, then onto its template.

        Raises:
            ApiError: a read or write failed (retried).
            InterpreterError: the template's status could not be aggregated (retried).
        """
        try:
            binding = await self.host.get(
                self.kind.gvk, request.name, namespace=request.namespace or None
            )
        except NotFound:
            self.window.close(request)
            return None
        binding_id = labels_of(binding).get(self.kind.id_label)
        if is_being_deleted(binding) or not binding_id:
            self.window.close(request)
            return None  # no id yet: the binding controller has made no Works for it
        works = await self.host.list(WORK_GVK, label_selector={self.kind.id_label: binding_id})
        resource = binding_spec(binding).get("resource") or {}
        items = aggregated_items(works["items"], resource)
        status = _status_with(binding, items)
        if status != binding_status(binding):
            wait = self.window.remaining(request)
            if wait > 0:
                return Result(requeue_after=wait)  # the template's status waits with it
            await self._write(binding, status)
        self.window.close(request)
        await self.templates.update(resource, items)
        return None

    async def _write(self, binding: Obj, status: Mapping[str, Any]) -> None:
        patch = {
            "status": {
                "aggregatedStatus": status.get("aggregatedStatus") or None,
                "conditions": status.get("conditions"),
            }
        }
        await self.host.patch_status(
            self.kind.gvk, name_of(binding), patch, namespace=namespace_of(binding) or None
        )


def setup_binding_status_controllers(context: Context) -> list[BindingStatusController]:
    """Register the ResourceBinding and ClusterResourceBinding status controllers."""
    reconcilers = []
    for kind in (BINDING, CLUSTER_BINDING):
        reconciler = BindingStatusController(context, kind)
        builder = (
            controller_managed_by(context.manager)
            .for_(kind.gvk, _binding_changed)
            .watches(
                WORK_GVK,
                EnqueueRequestsFromMapFunc(kind.request_for_work),
                _work_status_changed,
            )
            .named(kind.name)
        )
        context.complete(builder, reconciler, sharded_by=kind.gvk, workers=DEFAULT_WORKERS)
        reconcilers.append(reconciler)
    return reconcilers
