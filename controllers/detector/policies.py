"""Policies reconciles PropagationPolicies and ClusterPropagationPolicies for the detector.

A policy gets what Karmada's webhook gives it: a permanent id (a uuid in its own
``(cluster)propagationpolicy.karmada.io/permanent-id`` label) and a finalizer
(``karmada.io/(cluster-)propagation-policy-controller``). A created or changed policy enqueues
every template it selects (so unclaimed ones get claimed, and preemption is decided) and every
template it claimed (found through the bindings carrying its id, so a template it no longer
selects is released). A policy being deleted releases its claims from bindings and templates —
the bindings, Works and member objects stay, as in Karmada — enqueues those templates (another
policy may take them), and then drops its finalizer. A policy that Karmada's webhook would refuse
(``validation``: label selectors Kubernetes would not accept) gets a Warning Event
``InvalidPolicy`` naming each problem; its invalid resource selectors select nothing. A field the
CRD accepts but nothing here acts on gets a Warning Event ``UnsupportedField`` naming it, once per
policy generation (``unsupported``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any, Final

import structlog

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_GVK,
    propagation_spec,
)
from controllers.detector.discovery import Discovery
from controllers.detector.keys import ObjectRef
from controllers.detector.matching import (
    CLUSTER_POLICY_FINALIZER,
    POLICY_FINALIZER,
    Claim,
    implicit_priority,
    is_cluster_policy,
    permanent_id_label,
    policy_id,
)
from controllers.detector.templates import release_claim, release_object
from controllers.detector.unsupported import UnsupportedFieldReporter
from controllers.detector.validation import policy_problems, spec_shape_problems
from reconcile import (
    GVK,
    CachedClient,
    EventRecorder,
    ExpectedError,
    NoKindMatch,
    NotFound,
    add_finalizer,
    is_being_deleted,
    name_of,
    namespace_of,
    remove_finalizer,
)

__all__ = ["INVALID_POLICY", "ClaimsRemain", "PolicyReconciler", "ensure_policy_metadata"]

INVALID_POLICY: Final = "InvalidPolicy"
"""Reason of the Warning Event on a policy that Karmada's webhook would refuse."""

log = structlog.get_logger("controllers.detector")

Obj = dict[str, Any]
Enqueue = Callable[[ObjectRef], None]


def _finalizer(policy: Obj) -> str:
    return CLUSTER_POLICY_FINALIZER if is_cluster_policy(policy) else POLICY_FINALIZER


def ensure_policy_metadata(policy: Obj, new_id: str) -> bool:
    """Give ``policy`` a permanent id (``new_id``) and the finalizer if missing, in place;
    returns whether it changed."""
    labels = policy.setdefault("metadata", {}).setdefault("labels", {})
    changed = False
    if not labels.get(permanent_id_label(policy)):
        labels[permanent_id_label(policy)] = new_id
        changed = True
    return add_finalizer(policy, _finalizer(policy)) or changed


def _reference(binding: Obj) -> ObjectRef | None:
    resource = (binding.get("spec") or {}).get("resource") or {}
    try:
        gvk = GVK.from_api_version(str(resource["apiVersion"]), str(resource["kind"]))
        return ObjectRef(gvk, str(resource.get("namespace", "")), str(resource["name"]))
    except KeyError:
        return None


class ClaimsRemain(ExpectedError):
    """A deleted policy's claims are not all released yet (other replicas hold some)."""

    reason = "ClaimsRemain"


class PolicyReconciler:
    """Keeps policies identified and their claims consistent; hands templates to ``enqueue``."""

    def __init__(
        self,
        client: CachedClient,
        discovery: Discovery,
        enqueue: Enqueue,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.discovery = discovery
        self.enqueue = enqueue
        self.recorder = recorder
        self.unsupported = UnsupportedFieldReporter(recorder)

    async def reconcile(self, ref: ObjectRef) -> None:
        """Handle one policy's creation, change or deletion.

        Raises:
            ApiError: a read or write failed; retried with backoff.
        """
        try:
            policy = await self.client.get(ref.gvk, ref.name, namespace=ref.namespace or None)
        except NotFound:
            return
        if is_being_deleted(policy):
            self.unsupported.forget(policy)
            await self._release(policy)
            if await self._bindings(policy, live=True):
                # Claimed bindings this replica does not cache (another shard's, or not cached
                # yet): the finalizer stays until their replicas released them too.
                raise ClaimsRemain(name_of(policy))
            if remove_finalizer(policy, _finalizer(policy)):
                await self.client.update(policy)
            return
        if ensure_policy_metadata(policy, str(uuid.uuid4())):
            # An RV-checked update: two writers can never give one policy two ids.
            policy = await self.client.update(policy)
        self._report_problems(policy)
        self.unsupported.report(policy)
        for template in {*await self._claimed(policy), *await self._selected(policy)}:
            self.enqueue(template)

    def _report_problems(self, policy: Obj) -> None:
        problems = policy_problems(policy)
        if not problems:
            return
        message = f"the policy is invalid: {'; '.join(problems)}"
        log.warning("invalid policy", policy=name_of(policy), problems=problems)
        if self.recorder is not None:
            self.recorder.event(policy, "Warning", INVALID_POLICY, message)

    async def _bindings(self, policy: Obj, *, live: bool = False) -> list[Obj]:
        """The bindings carrying the policy's claim (cached, or ``live``)."""
        identifier = policy_id(policy)
        if identifier is None:
            return []
        selector = f"{permanent_id_label(policy)}={identifier}"
        reader = self.client.live if live else self.client
        if not is_cluster_policy(policy):
            namespace = namespace_of(policy)
            return await reader.list_all(
                RESOURCE_BINDING_GVK, namespace=namespace, label_selector=selector
            )
        found = await reader.list_all(RESOURCE_BINDING_GVK, label_selector=selector)
        found += await reader.list_all(CLUSTER_RESOURCE_BINDING_GVK, label_selector=selector)
        return found

    async def _claimed(self, policy: Obj) -> set[ObjectRef]:
        return {ref for b in await self._bindings(policy) if (ref := _reference(b)) is not None}

    async def _selected(self, policy: Obj, label_selector: str | None = None) -> set[ObjectRef]:
        """Templates of watched kinds that ``policy`` selects (and that match the selector)."""
        found: set[ObjectRef] = set()
        for gvk, namespace in self._scopes(policy):
            templates = await self.client.list_all(
                gvk, namespace=namespace, label_selector=label_selector
            )
            for template in templates:
                if implicit_priority(policy, template):
                    found.add(ObjectRef(gvk, namespace_of(template), name_of(template)))
        return found

    def _scopes(self, policy: Obj) -> Iterable[tuple[GVK, str | None]]:
        """The (kind, namespace) pairs to list for the policy's selectors, watched kinds only."""
        scopes: set[tuple[GVK, str | None]] = set()
        if spec_shape_problems(policy):
            return []
        for selector in propagation_spec(policy).get("resourceSelectors") or []:
            gvk = GVK.from_api_version(selector.get("apiVersion", ""), selector.get("kind", ""))
            resource = self.discovery.resource(gvk)
            if resource is None:
                continue
            if is_cluster_policy(policy):
                scopes.add(
                    (gvk, (selector.get("namespace") or None) if resource.namespaced else None)
                )
            elif resource.namespaced:
                scopes.add((gvk, namespace_of(policy)))
        return sorted(scopes, key=str)

    async def _release(self, policy: Obj) -> None:
        """Remove the policy's claims from its bindings and templates; enqueue the templates."""
        identifier = policy_id(policy)
        if identifier is None:
            return
        claim = Claim(is_cluster_policy(policy), namespace_of(policy), name_of(policy), identifier)
        selector = f"{permanent_id_label(policy)}={identifier}"
        templates = await self._claimed(policy) | await self._selected(policy, selector)
        for ref in templates:
            template = await self._template(ref)
            if template is not None:
                await release_claim(self.client, template, claim)
                self.enqueue(ref)
        for binding in await self._bindings(policy):
            # Bindings whose template is gone keep no claim either (the scheduler ignores them).
            await release_object(self.client, binding, claim)
        log.info("released a deleted policy's claims", policy=name_of(policy), count=len(templates))

    async def _template(self, ref: ObjectRef) -> Obj | None:
        # Kinds the detector does not watch are read live: no informer for a kind that may be gone.
        reader = self.client if self.discovery.resource(ref.gvk) else self.client.live
        try:
            return await reader.get(ref.gvk, ref.name, namespace=ref.namespace or None)
        except (NotFound, NoKindMatch):
            return None
