"""detector is Karmada's resource detector: resource templates + propagation policies → bindings.

``setup(context)`` registers the ``detector`` controller. It watches every kind the host serves
(``Discovery``), PropagationPolicies and ClusterPropagationPolicies; it claims each template for
the policy that matches it best (``matching``) and keeps its ResourceBinding or
ClusterResourceBinding up to date (``bindings``); the scheduler fills in the binding's clusters.
"""

from controllers.detector.bindings import binding_coordinates, desired_binding, resource_reference
from controllers.detector.detector import (
    DEFAULT_WORKERS,
    DETECTOR_NAME,
    Detector,
    setup,
    template_event_filter,
)
from controllers.detector.discovery import (
    DEFAULT_DISCOVERY_INTERVAL,
    TEMPLATE_VERBS,
    AccessReview,
    Discovery,
    is_skipped,
    watchable_resources,
)
from controllers.detector.keys import ObjectRef
from controllers.detector.matching import (
    CLUSTER_POLICY_FINALIZER,
    POLICY_FINALIZER,
    Changes,
    Claim,
    apply_changes,
    candidates,
    choose,
    claim_changes,
    claim_of,
    claimed_by,
    implicit_priority,
    is_cluster_policy,
    merge_patch,
    pending_changes,
    permanent_id_label,
    policy_id,
    preempts,
    release_changes,
    spec_changed,
)
from controllers.detector.policies import INVALID_POLICY, PolicyReconciler, ensure_policy_metadata
from controllers.detector.templates import (
    BindingOwnedElsewhere,
    TemplateReconciler,
    release_claim,
    release_object,
)
from controllers.detector.validation import (
    policy_problems,
    resource_selector_problems,
    spec_shape_problems,
)

__all__ = [
    "AccessReview",
    "BindingOwnedElsewhere",
    "CLUSTER_POLICY_FINALIZER",
    "Changes",
    "Claim",
    "DEFAULT_DISCOVERY_INTERVAL",
    "DEFAULT_WORKERS",
    "DETECTOR_NAME",
    "INVALID_POLICY",
    "Detector",
    "Discovery",
    "ObjectRef",
    "POLICY_FINALIZER",
    "PolicyReconciler",
    "TEMPLATE_VERBS",
    "TemplateReconciler",
    "apply_changes",
    "binding_coordinates",
    "candidates",
    "choose",
    "claim_changes",
    "claim_of",
    "claimed_by",
    "desired_binding",
    "ensure_policy_metadata",
    "implicit_priority",
    "is_cluster_policy",
    "is_skipped",
    "merge_patch",
    "pending_changes",
    "permanent_id_label",
    "policy_id",
    "policy_problems",
    "preempts",
    "release_changes",
    "release_claim",
    "release_object",
    "resource_selector_problems",
    "resource_reference",
    "setup",
    "spec_changed",
    "spec_shape_problems",
    "template_event_filter",
    "watchable_resources",
]
