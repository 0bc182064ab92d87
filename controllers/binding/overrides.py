"""Overrides apply (Cluster)OverridePolicies to a resource for one member cluster.

The binding controller calls ``apply_overrides`` per target cluster on a copy of the (revised)
template. As in Karmada's override manager:

- ClusterOverridePolicies apply first, then the OverridePolicies of the resource's own namespace
  (only for namespaced resources), so a namespaced policy has the last word;
- a policy selects the resource when it has no ``resourceSelectors`` or one of them matches; each
  group is sorted by implicit priority (no selectors or kind only < label selector < name), then
  by name, and applied in that order, so the most specific policy wins;
- a rule applies when its ``targetCluster`` is unset or matches the Cluster object; a policy
  without ``overrideRules`` uses its deprecated ``targetCluster``/``overriders`` pair as one rule;
- every applied rule is recorded; Karmada writes the records, sorted by policy name, as JSON
  ``[{"policyName", "overriders"}]`` in the Work annotations ``policy.karmada.io/applied-overrides``
  and ``policy.karmada.io/applied-cluster-overrides`` (see ``OverrideResult.annotations``).

A rule that cannot be applied raises ``OverrideError`` naming the policy, the rule index and the
overrider entry; so does a selecting policy whose fields lack the CRD's types or that is nested
deeper than ``MAX_OVERRIDE_DEPTH`` levels (entry ``spec``);
nothing is half-applied to the caller's object, which is never changed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import (
    APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
    APPLIED_OVERRIDES_ANNOTATION,
    OverrideSpec,
    ResourceSelector,
    nested_deeper_than,
    override_spec,
    shape_problems,
)
from controllers.binding.overriders import OverriderError, apply_overriders
from controllers.binding.selectors import PRIORITY_MATCH_ALL, cluster_matches, selectors_priority

__all__ = [
    "AppliedOverride",
    "MAX_OVERRIDE_DEPTH",
    "OverrideError",
    "OverrideResult",
    "applied_overrides_annotations",
    "applied_overrides_json",
    "apply_overrides",
    "matching_rules",
]

# The field order of Karmada's Overriders struct, which json.Marshal keeps (plaintext first,
# although it is applied last).
# Problems named in the error about a policy of the wrong shape; the rest are counted.
_LISTED_PROBLEMS: Final = 5
# Far deeper than any manifest, far below where copying and patching recurse too deep.
MAX_OVERRIDE_DEPTH: Final = 100

_SHADOW_ORDER: Final = (
    "plaintext",
    "imageOverrider",
    "commandOverrider",
    "argsOverrider",
    "labelsOverrider",
    "annotationsOverrider",
    "fieldOverrider",
)


class OverrideError(ValueError):
    """A rule of an override policy that cannot be applied to the resource.

    ``policy`` is ``namespace/name`` for an OverridePolicy and ``name`` for a
    ClusterOverridePolicy; ``rule`` indexes ``spec.overrideRules`` (0 for the deprecated form);
    ``entry`` names the overrider, e.g. ``plaintext[1]``.
    """

    def __init__(self, policy: str, rule: int, entry: str, reason: str) -> None:
        super().__init__(f"override policy {policy} rule {rule}: {entry}: {reason}")
        self.policy = policy
        self.rule = rule
        self.entry = entry
        self.reason = reason


@dataclass(frozen=True)
class AppliedOverride:
    """One applied rule: the policy's name and the overriders it applied."""

    policy_name: str
    overriders: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """Karmada's OverridePolicyShadow: overriders in its field order, empty lists omitted."""
        ordered = {k: self.overriders[k] for k in _SHADOW_ORDER if self.overriders.get(k)}
        return {"policyName": self.policy_name, "overriders": ordered}


@dataclass(frozen=True)
class OverrideResult:
    """The overridden manifest and the rules applied, ClusterOverridePolicies first."""

    manifest: dict[str, Any]
    cluster_overrides: tuple[AppliedOverride, ...] = ()
    overrides: tuple[AppliedOverride, ...] = ()

    def annotations(self) -> dict[str, str]:
        """The Work annotations recording the applied overrides (absent when none applied)."""
        return applied_overrides_annotations(self.cluster_overrides, self.overrides)


def applied_overrides_annotations(
    cluster_overrides: Iterable[AppliedOverride], overrides: Iterable[AppliedOverride]
) -> dict[str, str]:
    """The applied-(cluster-)overrides annotations of a Work; absent when nothing applied."""
    recorded = {
        APPLIED_CLUSTER_OVERRIDES_ANNOTATION: applied_overrides_json(cluster_overrides),
        APPLIED_OVERRIDES_ANNOTATION: applied_overrides_json(overrides),
    }
    return {key: value for key, value in recorded.items() if value is not None}


def applied_overrides_json(applied: Iterable[AppliedOverride]) -> str | None:
    """The applied-overrides annotation value: compact JSON sorted by policy name, None if empty."""
    items = sorted(applied, key=lambda item: item.policy_name)
    if not items:
        return None
    return json.dumps([item.to_json() for item in items], separators=(",", ":"), ensure_ascii=False)


def _name(policy: Mapping[str, Any]) -> str:
    return str((policy.get("metadata") or {}).get("name", ""))


def _reference(policy: Mapping[str, Any]) -> str:
    namespace = (policy.get("metadata") or {}).get("namespace")
    return f"{namespace}/{_name(policy)}" if namespace else _name(policy)


def _priority(policy: Mapping[str, Any], resource: Mapping[str, Any]) -> int:
    selectors = override_spec(policy).get("resourceSelectors") or []
    if shape_problems(selectors, list[ResourceSelector], "spec.resourceSelectors", enums=False):
        # Whether it selects the resource cannot be told: it does, so its error is reported.
        return PRIORITY_MATCH_ALL
    return selectors_priority(resource, selectors) if selectors else PRIORITY_MATCH_ALL


def _check_shape(policy: Mapping[str, Any]) -> None:
    if nested_deeper_than(policy.get("spec"), MAX_OVERRIDE_DEPTH):
        reason = f"invalid policy: nested deeper than {MAX_OVERRIDE_DEPTH} levels"
        raise OverrideError(_reference(policy), 0, "spec", reason)
    problems = shape_problems(policy.get("spec"), OverrideSpec, "spec", enums=False)
    if problems:
        shown = "; ".join(problems[:_LISTED_PROBLEMS])
        more = len(problems) - _LISTED_PROBLEMS
        reason = shown + (f"; and {more} more" if more > 0 else "")
        raise OverrideError(_reference(policy), 0, "spec", f"invalid policy: {reason}")


def _ordered_policies(
    policies: Iterable[Mapping[str, Any]], resource: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    ranked = []
    for policy in policies:
        priority = _priority(policy, resource)
        if priority:
            ranked.append((priority, _name(policy), policy))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [policy for _, _, policy in ranked]


def _rules(policy: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = override_spec(policy)
    rules = spec.get("overrideRules") or []
    if rules:
        return list(rules)
    # The deprecated single-rule form; the webhook forbids mixing it with overrideRules.
    rule: dict[str, Any] = {"overriders": spec.get("overriders") or {}}
    if spec.get("targetCluster") is not None:
        rule["targetCluster"] = spec["targetCluster"]
    return [rule]


def matching_rules(
    policies: Iterable[Mapping[str, Any]],
    resource: Mapping[str, Any],
    cluster: Mapping[str, Any],
) -> list[tuple[Mapping[str, Any], int, Mapping[str, Any]]]:
    """The (policy, rule index, overriders) to apply to ``resource`` in ``cluster``, in order.

    Raises:
        OverrideError: a policy that selects the resource (or whose selectors do not have the
            CRD's types) has fields of the wrong type (entry ``spec``, each field named) or is
            nested too deep.
    """
    matched = []
    for policy in _ordered_policies(policies, resource):
        _check_shape(policy)
        for index, rule in enumerate(_rules(policy)):
            target = rule.get("targetCluster")
            if target is None or cluster_matches(cluster, target):
                matched.append((policy, index, rule.get("overriders") or {}))
    return matched


def _apply_group(
    manifest: dict[str, Any],
    policies: Iterable[Mapping[str, Any]],
    cluster: Mapping[str, Any],
) -> tuple[AppliedOverride, ...]:
    applied = []
    for policy, index, overriders in matching_rules(policies, manifest, cluster):
        try:
            apply_overriders(manifest, overriders)
        except OverriderError as error:
            raise OverrideError(_reference(policy), index, error.entry, error.reason) from error
        applied.append(AppliedOverride(_name(policy), copy.deepcopy(overriders)))
    return tuple(applied)


def apply_overrides(
    manifest: Mapping[str, Any],
    cluster: Mapping[str, Any],
    *,
    cluster_override_policies: Sequence[Mapping[str, Any]] = (),
    override_policies: Sequence[Mapping[str, Any]] = (),
) -> OverrideResult:
    """A copy of ``manifest`` with the matching policies' rules for ``cluster`` applied.

    ``cluster`` is the target Cluster object (its name, labels and spec feed ``targetCluster``).
    OverridePolicies outside the manifest's namespace are ignored, as are all of them for a
    cluster-scoped manifest.

    Raises:
        OverrideError: a matching rule cannot be applied.
    """
    result = copy.deepcopy(dict(manifest))
    applied_cluster = _apply_group(result, cluster_override_policies, cluster)
    namespace = (result.get("metadata") or {}).get("namespace")
    own = [p for p in override_policies if (p.get("metadata") or {}).get("namespace") == namespace]
    applied = _apply_group(result, own, cluster) if namespace else ()
    return OverrideResult(result, applied_cluster, applied)
