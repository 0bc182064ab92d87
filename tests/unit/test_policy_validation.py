"""Policies Karmada's webhook would refuse: each problem named; invalid selectors select nothing."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.detector import implicit_priority, policy_problems
from reconcile import validate_label_selector

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
}


def policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


def by_labels(selector: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": selector}


VALID = [
    {"matchLabels": {"app": "web", "example.com/tier": "", "a.b_c-d": "x.Y_z-1"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": []}]},
    {},
]


@pytest.mark.parametrize("selector", VALID)
def test_what_kubernetes_accepts_passes(selector: dict[str, Any]) -> None:
    assert validate_label_selector(selector, "s") == []


INVALID = [
    (
        {"matchExpressions": [{"key": "app", "operator": "In"}]},
        "s.matchExpressions[0].values: Required value",
    ),
    (
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": []}]},
        "s.matchExpressions[0].values: Required value",
    ),
    (
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
        "s.matchExpressions[0].values: Forbidden",
    ),
    (
        {"matchExpressions": [{"key": "app", "operator": "Matches", "values": ["x"]}]},
        "s.matchExpressions[0].operator: Invalid value: 'Matches'",
    ),
    (
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["ok", "not ok"]}]},
        "s.matchExpressions[0].values[1]: Invalid value: 'not ok'",
    ),
    (
        {"matchExpressions": [{"key": "-app", "operator": "Exists"}]},
        "s.matchExpressions[0].key: Invalid value: '-app'",
    ),
    ({"matchLabels": {"app": "front end"}}, "s.matchLabels[app]: Invalid value: 'front end'"),
    ({"matchLabels": {"app": "x" * 64}}, "at most 63 characters"),
    ({"matchLabels": {"Example.com/app": "web"}}, "s.matchLabels: Invalid value"),
    ({"matchLabels": {"a/b/c": "web"}}, "prefix must be a lowercase DNS subdomain"),
]


@pytest.mark.parametrize(("selector", "expected"), INVALID)
def test_what_kubernetes_refuses_is_named(selector: dict[str, Any], expected: str) -> None:
    problems = validate_label_selector(selector, "s")
    assert len(problems) == 1
    assert expected in problems[0]


def test_every_label_selector_of_a_policy_is_checked() -> None:
    no_values = {"matchExpressions": [{"key": "region", "operator": "In"}]}
    problems = policy_problems(
        policy(
            resourceSelectors=[by_labels({"matchLabels": {"app": "web"}}), by_labels(no_values)],
            placement={
                "clusterAffinities": [
                    {"affinityName": "a", "labelSelector": {"matchLabels": {"env": "ok"}}},
                    {"affinityName": "b", "labelSelector": no_values},
                ]
            },
        )
    )
    assert [problem.split(":")[0] for problem in problems] == [
        "spec.resourceSelectors[1].labelSelector.matchExpressions[0].values",
        "spec.placement.clusterAffinities[1].labelSelector.matchExpressions[0].values",
    ]
    affinity = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "a b"}}}}
    (problem,) = policy_problems(policy(resourceSelectors=[], placement=affinity))
    assert problem.startswith("spec.placement.clusterAffinity.labelSelector.matchLabels[env]")


def test_an_invalid_resource_selector_selects_nothing() -> None:
    # Leniently read, "NotIn a value no label can have" would select every Deployment.
    lenient = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["no such!"]}]}
    assert implicit_priority(policy(resourceSelectors=[by_labels(lenient)]), DEPLOYMENT) == 0
    fine = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["api"]}]}
    assert implicit_priority(policy(resourceSelectors=[by_labels(fine)]), DEPLOYMENT) == 2
    both = policy(resourceSelectors=[by_labels(lenient), by_labels(fine)])
    assert implicit_priority(both, DEPLOYMENT) == 2, "the valid selector still counts"


MALFORMED_SPECS = [
    # Found by tests/fuzz/test_fuzz_detector.py: each raised AttributeError or TypeError.
    (True, 'spec: Invalid value: "boolean": must be of type object'),
    ({"resourceSelectors": 1}, 'spec.resourceSelectors: Invalid value: "integer"'),
    ({"resourceSelectors": ["apps/v1"]}, 'spec.resourceSelectors[0]: Invalid value: "string"'),
    ({"placement": {"clusterAffinities": [{"labelSelector": []}]}},
     'spec.placement.clusterAffinities[0].labelSelector: Invalid value: "array"'),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "expected"), MALFORMED_SPECS)
def test_a_spec_of_the_wrong_shape_is_reported_and_selects_nothing(
    spec: Any, expected: str
) -> None:
    malformed = {**policy(), "spec": spec}
    (problem,) = policy_problems(malformed)
    assert problem.startswith(expected)
    assert implicit_priority(malformed, DEPLOYMENT) == 0
    # A well-formed selector beside the malformed field does not make it select.
    if isinstance(spec, dict) and "placement" in spec:
        spec["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "Deployment"}]
        assert implicit_priority(malformed, DEPLOYMENT) == 0
