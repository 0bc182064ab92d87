"""Override defaults and validates OverridePolicies and ClusterOverridePolicies at admission.

What karmada-webhook's overridepolicy and clusteroverridepolicy handlers do: an OverridePolicy's
resource selectors without a namespace get the policy's (``default_override_policy``); both kinds
are refused (``override_policy_problems``) when their fields lack the CRD's types (the words of the
override manager, which refuses such policies at apply time), when a label selector is one
Kubernetes would refuse, or by Karmada's ValidateOverrideSpec: the deprecated ``targetCluster`` or
``overriders`` next to ``overrideRules``; a cluster affinity's field selector; label values and
annotation keys Kubernetes would refuse; an imageOverrider predicate, fieldOverrider ``fieldPath``
or ``subPath`` that is no JSON pointer; a fieldOverrider with both ``json`` and ``yaml``; an
``add``/``replace`` without a value or a ``remove`` with one. A plaintext ``path`` must be a JSON
pointer too (Karmada finds out when applying; the binding controller here would refuse the rule).
Stricter than Karmada: no plaintext ``path``, fieldOverrider ``fieldPath`` or imageOverrider
predicate may point at, under or above ``/apiVersion``, ``/kind``, ``/metadata/namespace`` or
``/metadata/name`` (issue #26: a namespaced policy turned a ConfigMap into a ClusterRoleBinding);
the binding controller refuses such a result anyway, this says so at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from controllers.api import (
    IDENTITY_POINTERS,
    OverrideSpec,
    nested_deeper_than,
    override_spec,
    shape_problems,
)
from controllers.binding.overrides import MAX_OVERRIDE_DEPTH
from controllers.detector.validation import resource_selector_problems
from controllers.webhook.fields import invalid, new_problems, refuse_if_any
from controllers.webhook.placement import cluster_affinity_problems
from reconcile import (
    JsonPatchError,
    parse_pointer,
    qualified_name_problem,
    validate_label_selector,
    validate_labels,
)

__all__ = [
    "OverridePolicyDefaulter",
    "OverridePolicyValidator",
    "default_override_policy",
    "override_policy_problems",
]

# apimachinery's TotalAnnotationSizeLimitB.
_ANNOTATIONS_LIMIT: Final = 256 * 1024
_VALUED: Final = ("add", "replace")
_IDENTITY_TOKENS: Final = tuple(parse_pointer(pointer) for pointer in IDENTITY_POINTERS)

Obj = dict[str, Any]


def default_override_policy(policy: Obj) -> None:
    """Give an OverridePolicy's namespace to its resource selectors that name none, in place."""
    if policy.get("kind") != "OverridePolicy":
        return
    namespace = (policy.get("metadata") or {}).get("namespace")
    selectors = (policy.get("spec") or {}).get("resourceSelectors")
    if not namespace or not isinstance(selectors, list):
        return
    for selector in selectors:
        if isinstance(selector, dict) and not selector.get("namespace"):
            selector["namespace"] = namespace


def _pointer_problem(pointer: object, path: str) -> list[str]:
    try:
        parse_pointer(pointer)
    except JsonPatchError as error:
        return [invalid(path, pointer, str(error))]
    return []


def _object_pointer_problem(pointer: object, path: str) -> list[str]:
    """A pointer into the object that does not parse, or reaches at, under or above one of its
    identity fields."""
    if problems := _pointer_problem(pointer, path):
        return problems
    tokens = parse_pointer(pointer)
    for identity in _IDENTITY_TOKENS:
        shorter = min(len(tokens), len(identity))
        if tokens[:shorter] == identity[:shorter]:
            detail = (
                "must not reach the object's apiVersion, kind, namespace or name (an override "
                "cannot turn one object into another)"
            )
            return [invalid(path, pointer, detail)]
    return []


def _operation_problems(operator: object, value: object, path: str) -> list[str]:
    if operator in _VALUED and value is None:
        return [invalid(path, value, "value is required for add or replace operation")]
    if operator == "remove" and value is not None:
        return [invalid(path, value, "value is not allowed for remove operation")]
    return []


def _annotations_problems(annotations: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    for key in annotations:
        if (why := qualified_name_problem(str(key).lower())) is not None:
            problems.append(invalid(path, key, why))
    size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        problems.append(f"{path}: Too long: must have at most {_ANNOTATIONS_LIMIT} bytes")
    return problems


def _field_overrider_problems(overrider: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    if overrider.get("json") and overrider.get("yaml"):
        detail = "FieldOverrider has both YAML and JSON set. Only one is allowed"
        problems.append(invalid(path, dict(overrider), detail))
    problems += _object_pointer_problem(overrider.get("fieldPath", ""), f"{path}.fieldPath")
    for form in ("json", "yaml"):
        for index, patch in enumerate(overrider.get(form) or []):
            where = f"{path}.{form}[{index}]"
            problems += _pointer_problem(patch.get("subPath", ""), f"{where}.subPath")
            problems += _operation_problems(
                patch.get("operator"), patch.get("value"), f"{where}.value"
            )
    return problems


def _overriders_problems(overriders: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    for index, entry in enumerate(overriders.get("annotationsOverrider") or []):
        problems += _annotations_problems(
            entry.get("value") or {}, f"{path}.annotationsOverrider[{index}].value"
        )
    for index, entry in enumerate(overriders.get("labelsOverrider") or []):
        problems += validate_labels(entry.get("value"), f"{path}.labelsOverrider[{index}].value")
    for index, entry in enumerate(overriders.get("imageOverrider") or []):
        predicate = entry.get("predicate")
        if predicate is not None:
            where = f"{path}.imageOverrider[{index}].predicate.path"
            problems += _object_pointer_problem(predicate.get("path", ""), where)
    for index, entry in enumerate(overriders.get("fieldOverrider") or []):
        problems += _field_overrider_problems(entry, f"{path}.fieldOverrider[{index}]")
    for index, entry in enumerate(overriders.get("plaintext") or []):
        where = f"{path}.plaintext[{index}]"
        problems += _object_pointer_problem(entry.get("path", ""), f"{where}.path")
        problems += _operation_problems(entry.get("operator"), entry.get("value"), f"{where}.value")
    return problems


def _affinity_problems(affinity: Mapping[str, Any] | None, path: str) -> list[str]:
    if not affinity:
        return []
    problems = validate_label_selector(affinity.get("labelSelector"), f"{path}.labelSelector")
    return problems + cluster_affinity_problems(affinity, path)


def _rules_problems(rules: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    for index, rule in enumerate(rules):
        path = f"spec.overrideRules[{index}]"
        problems += _overriders_problems(rule.get("overriders") or {}, f"{path}.overriders")
        problems += _affinity_problems(rule.get("targetCluster"), f"{path}.targetCluster")
    return problems


def _spec_problems(spec: OverrideSpec) -> list[str]:
    problems = []
    rules = spec.get("overrideRules")
    if spec.get("targetCluster") is not None and rules is not None:
        detail = "overrideRules and targetCluster can't co-exist"
        problems.append(invalid("spec.targetCluster", spec.get("targetCluster"), detail))
    if any((spec.get("overriders") or {}).values()) and rules is not None:
        problems.append(
            invalid(
                "spec.overriders",
                spec.get("overriders"),
                "overrideRules and overriders can't co-exist",
            )
        )
    for index, selector in enumerate(spec.get("resourceSelectors") or []):
        problems += resource_selector_problems(selector, f"spec.resourceSelectors[{index}].")
    problems += _affinity_problems(spec.get("targetCluster"), "spec.targetCluster")
    problems += _overriders_problems(spec.get("overriders") or {}, "spec.overriders")
    return problems + _rules_problems(rules or [])


def override_policy_problems(policy: Mapping[str, Any]) -> list[str]:
    """Why the webhook refuses a (Cluster)OverridePolicy (empty: it admits it)."""
    spec = policy.get("spec")
    if nested_deeper_than(spec, MAX_OVERRIDE_DEPTH):
        return [invalid("spec", "object", f"nested deeper than {MAX_OVERRIDE_DEPTH} levels")]
    shape = shape_problems(spec, OverrideSpec, "spec", enums=False)
    if shape:
        return shape
    return _spec_problems(override_spec(policy))


class OverridePolicyDefaulter:
    """The CustomDefaulter of OverridePolicy (ClusterOverridePolicy has nothing to default)."""

    async def default(self, obj: Obj) -> None:
        """Fill in the resource selectors' namespace (see ``default_override_policy``)."""
        default_override_policy(obj)


class OverridePolicyValidator:
    """The CustomValidator of OverridePolicy and ClusterOverridePolicy; raises ``Refused``."""

    async def validate_create(self, obj: Obj) -> list[str]:
        """Admit a policy Karmada's rules accept."""
        refuse_if_any(override_policy_problems(obj))
        return []

    async def validate_update(self, old: Obj, new: Obj) -> list[str]:
        """Admit a change that brings no new problem (``fields.new_problems``)."""
        refuse_if_any(new_problems(override_policy_problems(old), override_policy_problems(new)))
        return []

    async def validate_delete(self, obj: Obj) -> list[str]:
        """Deleting is always allowed."""
        return []
