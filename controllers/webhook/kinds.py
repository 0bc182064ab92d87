"""Kinds lists the Karmada kinds the admission webhook serves and registers them on a manager.

``ADMITTED`` says, per kind, whether it is defaulted (a mutating webhook) and validated (a
validating webhook), and on which operations the apiserver should call; deploy/webhook's
configurations list the same (a unit test compares them). ``register_webhooks(manager, ...)``
builds each kind's defaulter and validator and registers them through the webhook builder, at
controller-runtime's paths (``/mutate-policy-karmada-io-v1alpha1-propagationpolicy``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import (
    CLUSTER_OVERRIDE_POLICIES,
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    OVERRIDE_POLICIES,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
    RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
    RESOURCE_INTERPRETER_CUSTOMIZATIONS,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATIONS,
    WORKS,
)
from controllers.cluster.connection import MemberOptions
from controllers.interpreter.pool import WorkerPool
from controllers.webhook.cluster import ClusterValidator
from controllers.webhook.config import (
    CustomizationValidator,
    InterpreterWebhookConfigurationValidator,
)
from controllers.webhook.override import OverridePolicyDefaulter, OverridePolicyValidator
from controllers.webhook.propagation import PropagationPolicyDefaulter, PropagationPolicyValidator
from controllers.webhook.work import PermanentIdDefaulter
from reconcile import GVK, Manager, Resource
from reconcile.webhook import CustomDefaulter, CustomValidator, webhook_managed_by

__all__ = ["ADMITTED", "AdmittedKind", "register_webhooks"]

_WRITES: Final = ("CREATE", "UPDATE")
_SECRET: Final = GVK("", "v1", "Secret")


@dataclass(frozen=True)
class AdmittedKind:
    """One kind the webhook serves: whether it defaults and validates it, on which operations."""

    resource: Resource
    mutating: Sequence[str] = ()
    """Operations the mutating webhook is called on (none: not defaulted)."""
    validating: Sequence[str] = ()
    """Operations the validating webhook is called on (none: not validated)."""


ADMITTED: Final = (
    AdmittedKind(PROPAGATION_POLICIES, _WRITES, _WRITES),
    AdmittedKind(CLUSTER_PROPAGATION_POLICIES, _WRITES, _WRITES),
    AdmittedKind(OVERRIDE_POLICIES, _WRITES, _WRITES),
    AdmittedKind(CLUSTER_OVERRIDE_POLICIES, (), _WRITES),
    # Karmada's: bindings get their id when created; a Work on every write.
    AdmittedKind(RESOURCE_BINDINGS, ("CREATE",)),
    AdmittedKind(CLUSTER_RESOURCE_BINDINGS, ("CREATE",)),
    AdmittedKind(WORKS, _WRITES),
    AdmittedKind(CLUSTERS, (), _WRITES),
    AdmittedKind(RESOURCE_INTERPRETER_CUSTOMIZATIONS, (), _WRITES),
    AdmittedKind(RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATIONS, (), _WRITES),
)
"""The kinds of policy.karmada.io, work.karmada.io, cluster.karmada.io and config.karmada.io
the webhook admits, as karmada-webhook's configurations list them."""


def _hooks(
    manager: Manager, members: MemberOptions, pool: WorkerPool | None
) -> dict[str, tuple[CustomDefaulter | None, CustomValidator | None]]:
    async def customizations() -> list[dict[str, Any]]:
        listing = await manager.client.list(RESOURCE_INTERPRETER_CUSTOMIZATION_GVK)
        return list(listing.get("items") or [])

    async def secret(namespace: str, name: str) -> dict[str, Any]:
        # Live (get, no cache): the webhook neither watches nor lists Secrets.
        return await manager.api_reader.get(_SECRET, name, namespace=namespace)

    propagation = (PropagationPolicyDefaulter(), PropagationPolicyValidator())
    permanent_id = (PermanentIdDefaulter(), None)
    return {
        "PropagationPolicy": propagation,
        "ClusterPropagationPolicy": propagation,
        "OverridePolicy": (OverridePolicyDefaulter(), OverridePolicyValidator()),
        "ClusterOverridePolicy": (None, OverridePolicyValidator()),
        "ResourceBinding": permanent_id,
        "ClusterResourceBinding": permanent_id,
        "Work": permanent_id,
        "Cluster": (None, ClusterValidator(members, read_secret=secret)),
        "ResourceInterpreterCustomization": (
            None,
            CustomizationValidator(customizations, pool=pool),
        ),
        "ResourceInterpreterWebhookConfiguration": (
            None,
            InterpreterWebhookConfigurationValidator(),
        ),
    }


def register_webhooks(
    manager: Manager,
    *,
    members: MemberOptions | None = None,
    pool: WorkerPool | None = None,
) -> None:
    """Register the defaulters and validators of every kind of ``ADMITTED`` on ``manager``'s
    webhook server.

    ``members`` must be the controller-manager's member options (which Cluster endpoints and
    Secret namespaces it accepts; default: https only, ``karmada-cluster``); ``pool`` runs the Lua
    checks of customizations (default: the process-wide worker pool).

    Raises:
        WebhookBuilderError: a path is registered already (called twice on one manager).
    """
    hooks = _hooks(manager, members or MemberOptions(), pool)
    for kind in ADMITTED:
        defaulter, validator = hooks[kind.resource.gvk.kind]
        builder = webhook_managed_by(manager).for_(kind.resource.gvk)
        if kind.mutating and defaulter is not None:
            builder.with_defaulter(defaulter)
        if kind.validating and validator is not None:
            builder.with_validator(validator)
        builder.complete()
