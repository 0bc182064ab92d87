"""Sharding spreads the propagation of templates over controller-manager replicas (``--shards``).

One ring, ``karmada``, holds every resource template kind (added as the detector discovers them),
Namespaces, ResourceBindings, ClusterResourceBindings and Works, all keyed by their binding: a
template by the (Cluster)ResourceBinding it gets (``<namespace>/<binding_name(kind, name)>``, the
name Karmada gives it), a binding by itself, a Work by the binding its annotations name, a
Namespace's Works (the namespace controller's) by the Namespace. Templates in the namespaces
Karmada never propagates from (kube-*, karmada-system, karmada-cluster, karmada-es-*) have no key:
no replica holds them. So a template, its binding and its Works are one key and always on one
replica: the detector, scheduler, binding, status, execution, eviction and namespace controllers
each see and reconcile that replica's keys only, and a key's objects move between replicas
together (``reconcile.sharding``). Policies, Clusters and the
interpreter's customizations are not sharded: every replica caches all of them.

Differences from what the sharding issue sketched, and why: execution and Work status follow the
template's key, not the member cluster, so a template's chain never spans two replicas (a binding
controller sharded by template and an execution controller sharded by cluster would each need the
other's Works); every replica connects to every member, but holds only its part of each: the
execution controller labels the member objects of its Works with its shard (``member_labels``)
and its member informers select that label, so a moved key's member objects join the new
owner's cache when its first apply relabels them. The dependencies distributor is not run
sharded: an attached binding is keyed by its dependency, on another replica than the parent that
needs it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    WORK_GVK,
    is_reserved_namespace,
)
from controllers.api.names import KARMADA_SYSTEM_NAMESPACE
from controllers.binding.names import binding_name
from controllers.rbac import Permissions, Rule
from controllers.shardingoptions import LEADER_WEIGHT, ShardingOptions
from reconcile import GVK, Manager, Reconciler, ReconcilerFunc, Request
from reconcile.sharding import (
    KeyFunc,
    Ring,
    Shard,
    ShardAssigner,
    ShardedKind,
    Sharder,
)

__all__ = [
    "LEADER_WEIGHT",
    "NAMESPACE",
    "PERMISSIONS",
    "RING",
    "Sharding",
    "ShardingOptions",
    "binding_key",
    "template_key",
    "work_key",
]

RING: Final = "karmada"
BINDING_DEPTH: Final = 1
WORK_DEPTH: Final = 2
"""Templates and Namespaces (depth 0) own bindings, bindings own Works: a moving key's Works are
labelled first, then its binding, then its template, so the replica taking it over never
reconciles a binding without its Works (its aggregated status would drop a member until they
arrived) or a template without its binding (the detector would try to create it again)."""
NAMESPACE: Final = GVK("", "v1", "Namespace")
PERMISSIONS: Final = Permissions(
    rules=(
        Rule(
            ("coordination.k8s.io",),
            ("leases",),
            ("get", "update", "list", "watch"),
            "--shards: each replica's shard Lease (named after its Pod), the sharder's cache",
            namespace=KARMADA_SYSTEM_NAMESPACE,
        ),
        Rule(
            ("work.karmada.io",),
            ("works",),
            ("patch",),
            "--shards: the sharder's and the shards' shard and drain labels (templates and "
            "bindings are patched already)",
        ),
    )
)
"""What ``--shards=auto`` adds (deploy/ grants it: its Deployment runs sharded)."""


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


@functools.cache
def template_key(kind: str) -> KeyFunc:
    """The key function of templates of ``kind``: the key of the binding they get (one function
    per kind, so the ring sees the same ShardedKind however often the kind is discovered)."""

    def key(obj: Mapping[str, Any]) -> str | None:
        metadata = obj.get("metadata") or {}
        namespace, name = metadata.get("namespace") or "", metadata["name"]
        # Never propagated (the detector and namespace controller skip them): no shard's part.
        if is_reserved_namespace(namespace or (name if kind == NAMESPACE.kind else "")):
            return None
        return _key(namespace, binding_name(kind, name))

    return key


def binding_key(obj: Mapping[str, Any]) -> str | None:
    """A (Cluster)ResourceBinding's key: itself."""
    metadata = obj.get("metadata") or {}
    return _key(metadata.get("namespace") or "", metadata["name"])


def work_key(obj: Mapping[str, Any]) -> str | None:
    """A Work's key: the binding its annotations name, or the Namespace that owns it."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    name = annotations.get(RESOURCE_BINDING_NAME_ANNOTATION)
    if name:
        return _key(annotations.get(RESOURCE_BINDING_NAMESPACE_ANNOTATION) or "", name)
    name = annotations.get(CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION)
    if name:
        return str(name)
    for owner in metadata.get("ownerReferences") or []:
        if owner.get("kind") == NAMESPACE.kind and owner.get("controller"):
            return binding_name(NAMESPACE.kind, owner["name"])
    return None


class Sharding:
    """This replica's shard of the ``karmada`` ring and, while it leads, the ring's sharder.

    Made before any controller is set up (their setups open informers of the sharded kinds).
    """

    def __init__(self, manager: Manager, options: ShardingOptions) -> None:
        self.ring = Ring(
            RING,
            kinds=(
                ShardedKind(RESOURCE_BINDING_GVK, binding_key, depth=BINDING_DEPTH),
                ShardedKind(CLUSTER_RESOURCE_BINDING_GVK, binding_key, depth=BINDING_DEPTH),
                ShardedKind(WORK_GVK, work_key, depth=WORK_DEPTH),
                ShardedKind(NAMESPACE, template_key(NAMESPACE.kind)),
            ),
        )
        self.shard = Shard(
            manager,
            self.ring,
            name=options.name,
            namespace=options.namespace,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
        manager.add(self.shard)
        self.sharder = Sharder(
            manager,
            self.ring,
            namespace=options.namespace,
            leader_shard=options.name,
            leader_weight=options.leader_weight,
        )
        manager.add(self.sharder)
        if options.admission:
            assigner = ShardAssigner(self.sharder)
            manager.webhook_server.register(assigner.path, assigner)

    @property
    def member_labels(self) -> dict[str, str]:
        """The label the execution controller puts on the member objects of this replica's
        Works, and the one its member informers select: each replica holds its part of every
        member, not all of it."""
        return {self.ring.shard_label: self.shard.name}

    def add_template_kind(self, gvk: GVK) -> None:
        """Shard the templates of ``gvk`` (before their informer opens).

        Raises:
            ValueError: the cache read the kind already, unsharded.
        """
        self.ring.add(ShardedKind(gvk, template_key(gvk.kind)))

    def guard(self, gvk: GVK, reconciler: Reconciler | ReconcilerFunc) -> Reconciler:
        """``reconciler`` of requests for ``gvk`` objects, behind the shard's guard."""
        return self.shard.guard(gvk, reconciler)

    def guard_templates(self, reconciler: Reconciler | ReconcilerFunc) -> Reconciler:
        """``reconciler`` of the detector's queue (requests that encode their kind, templates
        and policies) behind the shard's guard; policies, and templates of kinds the ring does
        not shard, pass through."""
        from controllers.detector.keys import ObjectRef  # the detector's own, loaded with it

        ring = self.ring

        def route(request: Request) -> tuple[Ring, GVK, Request] | None:
            try:
                ref = ObjectRef.from_request(request)
            except ValueError:
                return None
            if not ring.has(ref.gvk):
                return None
            return ring, ref.gvk, Request(ref.name, ref.namespace)

        return self.shard.guard_by(route, reconciler)

    def guard_bindings(self, reconciler: Reconciler | ReconcilerFunc) -> Reconciler:
        """``reconciler`` of a queue of ResourceBindings (namespaced requests) and
        ClusterResourceBindings, behind the shard's guard."""
        ring = self.ring

        def route(request: Request) -> tuple[Ring, GVK, Request]:
            gvk = RESOURCE_BINDING_GVK if request.namespace else CLUSTER_RESOURCE_BINDING_GVK
            return ring, gvk, request

        return self.shard.guard_by(route, reconciler)
