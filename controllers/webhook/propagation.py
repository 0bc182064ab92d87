"""Propagation defaults and validates (Cluster)PropagationPolicies at admission, as Karmada does.

What karmada-webhook's propagationpolicy and clusterpropagationpolicy handlers do:

- defaults (``default_propagation_policy``): a PropagationPolicy's resource selectors without a
  namespace get the policy's; a spread constraint with neither ``spreadByField`` nor
  ``spreadByLabel`` spreads by ``cluster``, one without ``minGroups`` gets 1; selecting a
  ServiceImport sets ``propagateDeps``; ``Divided`` replica scheduling without a preference is
  ``Weighted``; a graceful application failover without ``gracePeriodSeconds`` waits 600 s;
  ``schedulerName`` is ``default-scheduler`` (the CRD's default, for objects an older CRD let
  through); on create the policy gets a new permanent id (a UUID in its
  ``(cluster)propagationpolicy.karmada.io/permanent-id`` label, replacing any given) and the
  detector's finalizer.
- validation (``propagation_policy_problems``): the detector's checks first (the CRD's field types,
  label selectors as Kubernetes validates them: ``controllers.detector.validation``), then Karmada's
  pkg/util/validation rules (``placement``); the permanent-id label must be there; and, beyond
  Karmada, each state preservation rule's ``jsonPath`` must parse and be at most
  ``MAX_TEMPLATE_LENGTH`` characters (the controllers run it on their event loop; refused here,
  the tenant hears why at once instead of from an Event at the first failover). On update
  ``schedulerName`` may not change, nor a permanent id once set, and only problems the policy did
not have before refuse it (``fields.new_problems``).

One difference: Karmada refuses any change of the permanent-id label; here a policy created before
the webhook ran (so without one) may get one on update (the mutating side gives it one then), as
the detector would give it one anyway.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from controllers.api import PropagationSpec, propagation_spec
from controllers.detector.matching import (
    CLUSTER_POLICY_FINALIZER,
    POLICY_FINALIZER,
    is_cluster_policy,
    permanent_id_label,
)
from controllers.detector.validation import policy_problems, spec_shape_problems
from controllers.eviction.jsonpath import MAX_TEMPLATE_LENGTH, JsonPathError, parse
from controllers.webhook.fields import invalid, new_problems, refuse_if_any, required
from controllers.webhook.operation import creating_request
from controllers.webhook.placement import placement_problems
from reconcile import add_finalizer, labels_of

__all__ = [
    "DEFAULT_GRACE_PERIOD_SECONDS",
    "DEFAULT_SCHEDULER_NAME",
    "PropagationPolicyDefaulter",
    "PropagationPolicyValidator",
    "default_propagation_policy",
    "propagation_policy_problems",
    "propagation_update_problems",
]

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
"""The scheduler of a policy that names none (Karmada's default)."""
DEFAULT_GRACE_PERIOD_SECONDS: Final = 600
"""How long a graceful application failover waits for the new cluster (Karmada's default)."""

_GRACEFUL: Final = ("Graciously", "Gracefully")
_SERVICE_IMPORT: Final = "ServiceImport"

Obj = dict[str, Any]
NewId = Callable[[], str]


def _default_spread_constraints(placement: Mapping[str, Any]) -> None:
    for constraint in placement.get("spreadConstraints") or []:
        if not constraint.get("spreadByField") and not constraint.get("spreadByLabel"):
            constraint["spreadByField"] = "cluster"
        if not constraint.get("minGroups"):
            constraint["minGroups"] = 1


def _default_division_preference(placement: Mapping[str, Any]) -> None:
    strategy = placement.get("replicaScheduling")
    if strategy and strategy.get("replicaSchedulingType") == "Divided":
        strategy.setdefault("replicaDivisionPreference", "Weighted")


def _default_failover(spec: Mapping[str, Any]) -> None:
    application = (spec.get("failover") or {}).get("application")
    if application and application.get("purgeMode") in _GRACEFUL:
        application.setdefault("gracePeriodSeconds", DEFAULT_GRACE_PERIOD_SECONDS)


def _default_spec(spec: Obj, namespace: str | None) -> None:
    selectors = spec.get("resourceSelectors") or []
    if namespace:
        for selector in selectors:
            if not selector.get("namespace"):
                selector["namespace"] = namespace
    if any(selector.get("kind") == _SERVICE_IMPORT for selector in selectors):
        spec["propagateDeps"] = True
    placement = spec.get("placement") or {}
    _default_spread_constraints(placement)
    _default_division_preference(placement)
    _default_failover(spec)
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME


def default_propagation_policy(policy: Obj, *, creating: bool, new_id: NewId) -> None:
    """Apply Karmada's defaults to a (Cluster)PropagationPolicy, in place.

    ``creating``: the request creates the policy, which then gets the id ``new_id()`` (on update a
    policy only gets one when it has none). A spec whose fields lack the CRD's types is left as it
    is, for the validator to refuse.
    """
    spec = policy.get("spec")
    if isinstance(spec, dict) and not spec_shape_problems(policy):
        # PropagationPolicies select in their own namespace only; cluster ones anywhere.
        namespace = (
            None if is_cluster_policy(policy) else (policy.get("metadata") or {}).get("namespace")
        )
        _default_spec(spec, namespace)
    labels = policy.setdefault("metadata", {}).setdefault("labels", {})
    key = permanent_id_label(policy)
    if creating or not labels.get(key):
        labels[key] = new_id()
    if creating:
        add_finalizer(
            policy, CLUSTER_POLICY_FINALIZER if is_cluster_policy(policy) else POLICY_FINALIZER
        )


def _failover_problems(spec: PropagationSpec) -> list[str]:
    application = (spec.get("failover") or {}).get("application")
    if not isinstance(application, Mapping):
        return []
    path = "spec.failover.application"
    problems = []
    if not spec.get("propagateDeps"):
        problems.append(
            invalid(
                "spec.propagateDeps",
                False,
                "application failover is set, propagateDeps must be true",
            )
        )
    seconds = (application.get("decisionConditions") or {}).get("tolerationSeconds")
    if isinstance(seconds, int) and seconds < 0:
        problems.append(
            invalid(
                f"{path}.decisionConditions.tolerationSeconds",
                seconds,
                "must be greater than or equal to 0",
            )
        )
    graceful = application.get("purgeMode") in _GRACEFUL
    grace = application.get("gracePeriodSeconds")
    if grace is not None and not graceful:
        problems.append(
            invalid(
                f"{path}.gracePeriodSeconds",
                grace,
                "only takes effect when purgeMode is graciously",
            )
        )
    if grace is None and graceful:
        problems.append(
            invalid(
                f"{path}.gracePeriodSeconds",
                None,
                "should not be empty when purgeMode is graciously",
            )
        )
    if isinstance(grace, int) and grace <= 0:
        problems.append(invalid(f"{path}.gracePeriodSeconds", grace, "must be greater than 0"))
    return problems


def _json_path_problem(path: str, template: object) -> str | None:
    if not isinstance(template, str):
        return None  # the CRD's type check has refused it already
    if len(template) > MAX_TEMPLATE_LENGTH:
        return invalid(path, template, f"must be no more than {MAX_TEMPLATE_LENGTH} characters")
    try:
        parse(template)
    except JsonPathError as error:
        return invalid(path, template, f"is not a valid JSONPath template: {error}")
    return None


def _state_preservation_problems(spec: PropagationSpec) -> list[str]:
    failover = spec.get("failover") or {}
    problems = []
    for kind in ("application", "cluster"):
        behavior = failover.get(kind) if isinstance(failover, Mapping) else None
        preservation = behavior.get("statePreservation") if isinstance(behavior, Mapping) else None
        rules = preservation.get("rules") if isinstance(preservation, Mapping) else None
        for index, rule in enumerate(rules if isinstance(rules, list) else []):
            path = f"spec.failover.{kind}.statePreservation.rules[{index}].jsonPath"
            template = rule.get("jsonPath") if isinstance(rule, Mapping) else None
            if problem := _json_path_problem(path, template):
                problems.append(problem)
    return problems


def _preemption_problems(spec: PropagationSpec) -> list[str]:
    if spec.get("preemption") != "Always":
        return []
    detail = (
        "name cannot be empty if preemption is Always, the empty name may cause unexpected "
        "resources preemption"
    )
    return [
        invalid(f"spec.resourceSelectors[{index}].name", "", detail)
        for index, selector in enumerate(spec.get("resourceSelectors") or [])
        if not selector.get("name")
    ]


def _suspension_problems(spec: PropagationSpec) -> list[str]:
    suspension = spec.get("suspension") or {}
    on_clusters = (suspension.get("dispatchingOnClusters") or {}).get("clusterNames")
    if suspension.get("dispatching") and on_clusters:
        detail = "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames"
        return [invalid("spec.suspension", suspension, detail)]
    return []


def propagation_policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """Why the webhook refuses a (Cluster)PropagationPolicy (empty: it admits it)."""
    problems = policy_problems(policy)
    if spec_shape_problems(policy):
        # Karmada's rules below read fields of the CRD's types.
        return problems
    spec = propagation_spec(policy)
    problems += placement_problems(spec.get("placement") or {}, "spec.placement")
    problems += _failover_problems(spec)
    problems += _state_preservation_problems(spec)
    problems += _preemption_problems(spec)
    problems += _suspension_problems(spec)
    key = permanent_id_label(dict(policy))
    if key not in labels_of(dict(policy)):
        detail = (
            f"label {key} is required, it should be set by the mutating admission webhook "
            "during creation"
        )
        problems.append(required("metadata.labels", detail))
    return problems


def propagation_update_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Why the webhook refuses changing ``old`` into ``new`` (empty: allowed)."""
    problems = []
    old_spec, new_spec = propagation_spec(old), propagation_spec(new)
    if old_spec.get("schedulerName") != new_spec.get("schedulerName"):
        problems.append(
            invalid(
                "spec.schedulerName",
                new_spec.get("schedulerName"),
                "the schedulerName should not be updated",
            )
        )
    key = permanent_id_label(dict(new))
    before, after = labels_of(dict(old)).get(key), labels_of(dict(new)).get(key)
    if before and before != after:
        detail = f"label {key} is immutable, it can only be set by the system during creation"
        problems.append(invalid(f"metadata.labels[{key}]", after, detail))
    return problems


class PropagationPolicyDefaulter:
    """The CustomDefaulter of PropagationPolicy and ClusterPropagationPolicy.

    ``creating(obj)`` tells a create from an update (default: the admission request's operation,
    ``creating_request``); ``new_id`` makes permanent ids (default: a random UUID).
    """

    def __init__(
        self, *, new_id: NewId | None = None, creating: Callable[[Obj], bool] | None = None
    ) -> None:
        self.new_id = new_id or (lambda: str(uuid.uuid4()))
        self.creating = creating or creating_request

    async def default(self, obj: Obj) -> None:
        """Apply Karmada's defaults in place (see ``default_propagation_policy``)."""
        default_propagation_policy(obj, creating=self.creating(obj), new_id=self.new_id)


class PropagationPolicyValidator:
    """The CustomValidator of PropagationPolicy and ClusterPropagationPolicy.

    Each method raises ``Refused`` listing the problems; none returns warnings.
    """

    async def validate_create(self, obj: Obj) -> list[str]:
        """Admit a new policy that Karmada's rules accept."""
        refuse_if_any(propagation_policy_problems(obj))
        return []

    async def validate_update(self, old: Obj, new: Obj) -> list[str]:
        """Admit a change that keeps the scheduler and the permanent id and brings no new
        problem (``fields.new_problems``)."""
        fresh = new_problems(propagation_policy_problems(old), propagation_policy_problems(new))
        refuse_if_any(propagation_update_problems(old, new) + fresh)
        return []

    async def validate_delete(self, obj: Obj) -> list[str]:
        """Deleting is always allowed."""
        return []
