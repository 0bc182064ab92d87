"""Templates reconciles one resource template: which policy claims it, and its binding.

Per template (read from the cache): a claim whose policy is gone, being deleted, re-created (a new
permanent id) or no longer selecting the template is removed, from the binding first and then from
the template (as Karmada does, so a failure halfway is retried from the template). Then the
policy is chosen (``matching.choose``); without one nothing happens until a policy appears. A
policy whose ``dependentOverrides`` do not all exist yet holds the template back
(``dependentoverrides``: an Event, no claim, no binding) until they do. The template is claimed
with a merge patch, the interpreter reports its replicas, and the binding is created or updated
when it differs — unless the policy is Lazy and the template unchanged since its binding was built
(``activation``). Interpreter failures and a binding owned by another object are
reported as Events on the template and raised (the detector retries them later); other templates
are unaffected.

The detector also does the garbage collector's part for bindings (their owner reference names the
template), because not every control plane runs one: the binding of a deleted template, or of an
earlier template of the same kind and name, is deleted — its Works and member objects follow.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from typing import Any, Final

import structlog

from controllers.api import (
    CLUSTER_PROPAGATION_POLICY_GVK,
    PROPAGATION_POLICY_GVK,
    is_reserved_namespace,
)
from controllers.detector.activation import keeps_binding
from controllers.detector.bindings import binding_coordinates, desired_binding
from controllers.detector.dependentoverrides import Waiting, dependent_overrides, missing_overrides
from controllers.detector.discovery import Discovery
from controllers.detector.keys import ObjectRef
from controllers.detector.matching import (
    Claim,
    choose,
    claim_changes,
    claim_of,
    claimed_by,
    implicit_priority,
    is_cluster_policy,
    merge_patch,
    pending_changes,
    policy_id,
    release_changes,
)
from controllers.interpreter import Interpreter, InterpreterError, NotSupported
from reconcile import (
    GVK,
    AlreadyExists,
    CachedClient,
    EventRecorder,
    ExpectedError,
    NotFound,
    Preconditions,
    controller_of,
    is_being_deleted,
    name_of,
    namespace_of,
    resource_version_of,
    uid_of,
)

__all__ = ["BindingOwnedElsewhere", "TemplateReconciler", "release_claim", "release_object"]

APPLY_POLICY_SUCCEED: Final = "ApplyPolicySucceed"
APPLY_POLICY_FAILED: Final = "ApplyPolicyFailed"
DEPENDENT_OVERRIDES_MISSING: Final = "DependentOverridesMissing"
"""Reason of the Warning Event on a template held back by its policy's dependentOverrides."""

log = structlog.get_logger("controllers.detector")

Obj = dict[str, Any]


class BindingOwnedElsewhere(ExpectedError):
    """The template's binding is controlled by another object (e.g. a deleted earlier template)."""

    reason = "BindingOwnedElsewhere"


async def _get(client: CachedClient, gvk: GVK, namespace: str, name: str) -> Obj | None:
    try:
        return await client.get(gvk, name, namespace=namespace or None)
    except NotFound:
        return None


def _holds(obj: Mapping[str, Any], claim: Claim) -> bool:
    """Whether ``obj`` still carries ``claim``'s permanent id (never remove someone else's)."""
    current = claim_of(obj)
    return current is not None and current.cluster == claim.cluster and current.id == claim.id


async def release_object(client: CachedClient, obj: Obj, claim: Claim) -> Obj:
    """Remove ``claim`` from one object that still carries it (merge patch); returns the object.

    Raises:
        ApiError: the patch was refused.
    """
    changes = pending_changes(obj, release_changes(claim.cluster))
    if changes is None or not _holds(obj, claim):
        return obj
    # Conditional on the version read: a claim made meanwhile by another policy is never removed.
    patch = merge_patch(changes, resource_version_of(obj))
    return await client.patch(GVK.of(obj), name_of(obj), patch, namespace=namespace_of(obj) or None)


async def release_claim(client: CachedClient, template: Obj, claim: Claim) -> Obj:
    """Remove ``claim`` from the template's binding, then from the template; returns the template.

    Raises:
        ApiError: a patch was refused (the caller retries).
    """
    gvk, namespace, name = binding_coordinates(template)
    binding = await _get(client, gvk, namespace, name)
    if binding is not None:
        await release_object(client, binding, claim)
    return await release_object(client, template, claim)


class TemplateReconciler:
    """Claims resource templates for their policies and keeps their bindings up to date."""

    def __init__(
        self,
        client: CachedClient,
        interpreter: Interpreter,
        recorder: EventRecorder,
        discovery: Discovery,
        waiting: Waiting | None = None,
    ) -> None:
        self.client = client
        self.interpreter = interpreter
        self.recorder = recorder
        self.discovery = discovery
        self.waiting = waiting or Waiting()

    async def reconcile(self, ref: ObjectRef) -> None:
        """Bring one template's claim and binding in line with the policies.

        Raises:
            InterpreterError, BindingOwnedElsewhere: already reported as an Event on the template.
            ApiError: a read or write failed.
        """
        if self.discovery.resource(ref.gvk) is None or is_reserved_namespace(ref.namespace):
            return
        template = await _get(self.client, ref.gvk, ref.namespace, ref.name)
        if template is None:
            self.waiting.done(ref)
            await self._collect_orphaned_binding(ref)
            return
        if is_being_deleted(template):
            return
        template, claimed = await self._valid_claim(template)
        policy = choose(template, claimed, await self._policies(template))
        if policy is None:
            return
        identifier = policy_id(policy)
        if identifier is None:
            # The policy is reconciled first (it gets its id) and then enqueues its templates.
            log.info("policy has no permanent id yet", policy=name_of(policy))
            return
        if not await self._overrides_present(ref, template, policy):
            return
        template = await self._claim(template, policy, identifier)
        await self._bind(template, policy, identifier)

    async def _overrides_present(self, ref: ObjectRef, template: Obj, policy: Obj) -> bool:
        """Whether the policy's dependentOverrides all exist; if not, the template waits (an
        Event says for which) until one of them is created."""
        names = dependent_overrides(policy)
        if names:
            # Registered before the read, so a creation seen meanwhile still enqueues it.
            self.waiting.wait(ref, names)
        missing = await missing_overrides(self.client, policy, template) if names else []
        if not missing:
            self.waiting.done(ref)
            return True
        kind = "OverridePolicies" if ref.namespace else "ClusterOverridePolicies"
        message = (
            f"waiting for the {kind} {', '.join(missing)} that policy {name_of(policy)} depends "
            "on (dependentOverrides)"
        )
        self.recorder.event(template, "Warning", DEPENDENT_OVERRIDES_MISSING, message)
        log.info("waiting for dependent overrides", missing=missing)
        return False

    async def _policy(self, claim: Claim) -> Obj | None:
        if claim.cluster:
            return await _get(self.client, CLUSTER_PROPAGATION_POLICY_GVK, "", claim.name)
        return await _get(self.client, PROPAGATION_POLICY_GVK, claim.namespace, claim.name)

    async def _valid_claim(self, template: Obj) -> tuple[Obj, Obj | None]:
        claim = claim_of(template)
        if claim is None:
            return template, None
        policy = await self._policy(claim)
        if (
            policy is not None
            and not is_being_deleted(policy)
            and claimed_by(claim, policy)
            and implicit_priority(policy, template)
        ):
            return template, policy
        log.info("releasing a stale claim", policy=claim.name, policy_namespace=claim.namespace)
        return await release_claim(self.client, template, claim), None

    async def _policies(self, template: Obj) -> list[Obj]:
        namespace = namespace_of(template)
        found = []
        if namespace:
            found += await self.client.list_all(PROPAGATION_POLICY_GVK, namespace=namespace)
        found += await self.client.list_all(CLUSTER_PROPAGATION_POLICY_GVK)
        return found

    async def _claim(self, template: Obj, policy: Obj, identifier: str) -> Obj:
        changes = pending_changes(template, claim_changes(policy, identifier))
        if changes is None:
            return template
        # Conditional on the version the choice was made from (409 Conflict: decide again).
        patch = merge_patch(changes, resource_version_of(template))
        namespace = namespace_of(template) or None
        return await self.client.patch(
            GVK.of(template), name_of(template), patch, namespace=namespace
        )

    async def _replicas(self, template: Obj) -> tuple[int, dict[str, Any] | None]:
        try:
            replicas, requirements = await self.interpreter.get_replicas(template)
        except NotSupported:
            return 0, None
        except InterpreterError as error:
            message = f"interpreting the replicas of {template.get('kind')} failed: {error}"
            self.recorder.event(template, "Warning", APPLY_POLICY_FAILED, message)
            raise
        return replicas, (requirements.to_dict() or None) if requirements else None

    async def _bind(self, template: Obj, policy: Obj, identifier: str) -> None:
        replicas, requirements = await self._replicas(template)
        gvk, namespace, name = binding_coordinates(template)

        async def apply(existing: Obj | None) -> None:
            if existing is not None and await self._replaced_owner(template, existing):
                return
            self._check_owner(template, existing)
            if keeps_binding(policy, template, existing):
                return  # Lazy: the policy's change waits for the template's next change.
            desired = desired_binding(
                template,
                policy,
                identifier,
                replicas=replicas,
                requirements=requirements,
                existing=existing,
                new_id=str(uuid.uuid4()),
            )
            if existing is None:
                await self.client.create(desired)
            elif desired != existing:
                await self.client.update(desired)
            else:
                return
            self.recorder.event(template, "Normal", APPLY_POLICY_SUCCEED, _applied(policy))

        try:
            await apply(await _get(self.client, gvk, namespace, name))
        except AlreadyExists:
            # The cache has not seen the binding yet: read it live and update it instead.
            await apply(await self.client.live.get(gvk, name, namespace=namespace or None))

    async def _collect_orphaned_binding(self, ref: ObjectRef) -> None:
        """Delete the binding of a deleted template, as the garbage collector would through the
        owner reference: not every control plane runs one (testenv does not), and a binding left
        behind keeps its Works — and the member objects — alive."""
        gvk, namespace, name = binding_coordinates(
            {"kind": ref.gvk.kind, "metadata": {"name": ref.name, "namespace": ref.namespace}}
        )
        binding = await _get(self.client, gvk, namespace, name)
        owner = controller_of(binding) if binding is not None else None
        if binding is None or owner is None or owner.get("kind") != ref.gvk.kind:
            return
        if owner.get("name") != ref.name or is_being_deleted(binding):
            return
        try:
            live = await self.client.live.get(ref.gvk, ref.name, namespace=ref.namespace or None)
        except NotFound:
            live = None
        if live is not None and uid_of(live) == owner.get("uid"):
            return  # The cache is behind: the owner is still there.
        await self._delete_binding(binding)

    async def _replaced_owner(self, template: Obj, binding: Obj) -> bool:
        """Whether ``binding`` belongs to an earlier template of the same kind and name (deleted and
        created again); such a binding is deleted, and the template is bound again once it is gone
        (the detector watches binding deletions)."""
        owner = controller_of(binding)
        if owner is None or owner.get("uid") == uid_of(template):
            return False
        if owner.get("kind") != template.get("kind") or owner.get("name") != name_of(template):
            return False
        if not is_being_deleted(binding):
            await self._delete_binding(binding)
        return True

    async def _delete_binding(self, binding: Obj) -> None:
        # Only that very binding: one created meanwhile for the new template must stay.
        log.info("deleting the binding of a deleted template", binding=name_of(binding))
        with contextlib.suppress(NotFound):
            await self.client.delete(binding, preconditions=Preconditions(uid=uid_of(binding)))

    def _check_owner(self, template: Obj, binding: Obj | None) -> None:
        owner = controller_of(binding) if binding is not None else None
        if binding is None or owner is None or owner.get("uid") == uid_of(template):
            return
        message = (
            f"{binding.get('kind')} {name_of(binding)} is controlled by another "
            f"{owner.get('kind')} (uid {owner.get('uid')}): waiting for it to be deleted"
        )
        self.recorder.event(template, "Warning", APPLY_POLICY_FAILED, message)
        raise BindingOwnedElsewhere(message)


def _applied(policy: Obj) -> str:
    if is_cluster_policy(policy):
        return f"Apply cluster policy({name_of(policy)}) succeed"
    return f"Apply policy({namespace_of(policy)}/{name_of(policy)}) succeed"
