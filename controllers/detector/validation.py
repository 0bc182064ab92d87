"""Validation finds what a policy's CRD schema lets through but Kubernetes would refuse.

Karmada's admission webhook refuses such policies; without a webhook the detector reports them in
a Warning Event on the policy instead (``policies``), and a resource selector that does not
validate selects nothing (``matching``). A spec whose fields do not have the CRD's types
(``shape_problems``: a string where a list belongs, a null list item) is reported field by field
and makes the whole policy select nothing, as the apiserver would have refused it. Checked, as
apimachinery's ValidateLabelSelector does, in every label selector of the policy
(``resourceSelectors[].labelSelector``, the cluster affinity's or each of the cluster affinities'
``labelSelector``): matchLabels keys are qualified names and values label values; a
matchExpressions entry has a known operator, values exactly when the operator is In or NotIn, a
qualified-name key and label-value values. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.api import PropagationSpec, ResourceSelector, propagation_spec, shape_problems
from reconcile import validate_label_selector

__all__ = ["policy_problems", "resource_selector_problems", "spec_shape_problems"]


def spec_shape_problems(policy: Mapping[str, Any]) -> list[str]:
    """Where a (Cluster)PropagationPolicy's spec lacks the CRD's types (empty: it has them)."""
    return shape_problems(policy.get("spec"), PropagationSpec, "spec")


def resource_selector_problems(selector: Mapping[str, Any], path: str = "") -> list[str]:
    """What is wrong with one entry of ``resourceSelectors`` (empty: nothing)."""
    shape = shape_problems(selector, ResourceSelector, path.removesuffix(".") or "resourceSelector")
    if shape:
        return shape
    return validate_label_selector(selector.get("labelSelector"), f"{path}labelSelector")


def policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """What is wrong with a (Cluster)PropagationPolicy beyond its schema (empty: nothing)."""
    shape = spec_shape_problems(policy)
    if shape:
        # The label selector checks below read fields of these types.
        return shape
    spec = propagation_spec(policy)
    problems = []
    for index, selector in enumerate(spec.get("resourceSelectors") or []):
        problems += resource_selector_problems(selector, f"spec.resourceSelectors[{index}].")
    placement = spec.get("placement") or {}
    affinity = placement.get("clusterAffinity") or {}
    problems += validate_label_selector(
        affinity.get("labelSelector"), "spec.placement.clusterAffinity.labelSelector"
    )
    for index, group in enumerate(placement.get("clusterAffinities") or []):
        path = f"spec.placement.clusterAffinities[{index}].labelSelector"
        problems += validate_label_selector(group.get("labelSelector"), path)
    return problems
