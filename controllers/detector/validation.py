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

import re
from collections.abc import Mapping
from typing import Any, Final

from controllers.api import propagation_spec

__all__ = ["label_selector_problems", "policy_problems", "resource_selector_problems"]

_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_MAX: Final = 63
_PREFIX_MAX: Final = 253
_VALUES_REQUIRED: Final = ("In", "NotIn")
_VALUES_FORBIDDEN: Final = ("Exists", "DoesNotExist")

_NAME_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_VALUE_RULE: Final = (
    "a valid label value must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)


def _key_problem(key: object) -> str | None:
    """Why ``key`` is no qualified name (``[prefix/]name``), None when it is one."""
    if not isinstance(key, str):
        return "must be a string"
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > _PREFIX_MAX or not _DNS_SUBDOMAIN.match(prefix)):
        return "the prefix must be a lowercase DNS subdomain (at most 253 characters)"
    if not name or len(name) > _NAME_MAX or not _NAME.match(name):
        return f"the name part {_NAME_RULE} (at most 63 characters)"
    return None


def _value_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if value and (len(value) > _NAME_MAX or not _NAME.match(value)):
        return f"{_VALUE_RULE} (at most 63 characters)"
    return None


def _labels_problems(labels: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    for key, value in labels.items():
        if (why := _key_problem(key)) is not None:
            problems.append(f"{path}: Invalid value: {key!r}: {why}")
        if (why := _value_problem(value)) is not None:
            problems.append(f"{path}[{key}]: Invalid value: {value!r}: {why}")
    return problems


def _requirement_problems(requirement: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if operator in _VALUES_REQUIRED and not values:
        problems.append(
            f"{path}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        )
    elif operator in _VALUES_FORBIDDEN and values:
        problems.append(
            f"{path}.values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'"
        )
    elif operator not in (*_VALUES_REQUIRED, *_VALUES_FORBIDDEN):
        problems.append(f"{path}.operator: Invalid value: {operator!r}: not a valid operator")
    if (why := _key_problem(requirement.get("key"))) is not None:
        problems.append(f"{path}.key: Invalid value: {requirement.get('key')!r}: {why}")
    for index, value in enumerate(values):
        if (why := _value_problem(value)) is not None:
            problems.append(f"{path}.values[{index}]: Invalid value: {value!r}: {why}")
    return problems


def label_selector_problems(selector: Mapping[str, Any] | None, path: str) -> list[str]:
    """What is wrong with the LabelSelector ``selector`` at ``path`` (empty: nothing)."""
    if not selector:
        return []
    problems = _labels_problems(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for index, requirement in enumerate(selector.get("matchExpressions") or []):
        problems += _requirement_problems(requirement, f"{path}.matchExpressions[{index}]")
    return problems


def resource_selector_problems(selector: Mapping[str, Any], path: str = "") -> list[str]:
    """What is wrong with one entry of ``resourceSelectors`` (empty: nothing)."""
    return label_selector_problems(selector.get("labelSelector"), f"{path}labelSelector")


def policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """What is wrong with a (Cluster)PropagationPolicy beyond its schema (empty: nothing)."""
    spec = propagation_spec(policy)
    problems = []
    for index, selector in enumerate(spec.get("resourceSelectors") or []):
        problems += resource_selector_problems(selector, f"spec.resourceSelectors[{index}].")
    placement = spec.get("placement") or {}
    affinity = placement.get("clusterAffinity") or {}
    problems += label_selector_problems(
        affinity.get("labelSelector"), "spec.placement.clusterAffinity.labelSelector"
    )
    for index, group in enumerate(placement.get("clusterAffinities") or []):
        path = f"spec.placement.clusterAffinities[{index}].labelSelector"
        problems += label_selector_problems(group.get("labelSelector"), path)
    return problems
