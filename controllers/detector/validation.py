"""Validation finds what a policy's CRD schema lets through but Kubernetes would refuse.

Karmada's admission webhook refuses such policies; without a webhook the detector reports them in
a Warning Event on the policy instead (``policies``), and a resource selector that does not
validate selects nothing (``matching``). Checked, as apimachinery's ValidateLabelSelector does, in
every label selector of the policy (``resourceSelectors[].labelSelector``, the cluster affinity's
or each of the cluster affinities' ``labelSelector``): matchLabels keys are qualified names and
values label values; a matchExpressions entry has a known operator, values exactly when the
operator is In or NotIn, a qualified-name key and label-value values. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.api import propagation_spec
from reconcile import validate_label_selector

__all__ = ["policy_problems", "resource_selector_problems"]


def resource_selector_problems(selector: Mapping[str, Any], path: str = "") -> list[str]:
    """What is wrong with one entry of ``resourceSelectors`` (empty: nothing)."""
    return validate_label_selector(selector.get("labelSelector"), f"{path}labelSelector")


def policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """What is wrong with a (Cluster)PropagationPolicy beyond its schema (empty: nothing)."""
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
