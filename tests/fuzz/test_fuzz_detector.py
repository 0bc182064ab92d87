"""Fuzz the detector with malformed PropagationPolicies: problems are reported, nothing raises.

A (Cluster)PropagationPolicy whose spec follows the CRD's shape only in part must give the
detector a list of problems (its Warning Event InvalidPolicy), a ranking of candidates and a
desired binding, never an exception: a policy is a user's input, and one bad policy must not
stop the templates of others from being claimed.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controllers.detector import (
    candidates,
    choose,
    desired_binding,
    implicit_priority,
    policy_problems,
)
from tests.fuzz.strategies import crd_schema, from_schema, fuzz_settings, label_maps, within

SPEC = crd_schema("policy.karmada.io_propagationpolicies.yaml", "spec")


def _policy(kind: str, name: str, spec: Any, labels: dict[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels, "uid": f"uid-{name}"}
    if kind == "PropagationPolicy":
        metadata["namespace"] = "default"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    }


policies = st.builds(
    _policy,
    st.sampled_from(["PropagationPolicy", "ClusterPropagationPolicy"]),
    st.sampled_from(["a", "b", "c"]),
    from_schema(SPEC),
    st.just({"propagationpolicy.karmada.io/permanent-id": "id"}),
)

templates = st.builds(
    lambda labels, name: {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": "uid-web",
            "resourceVersion": "7",
            "labels": labels,
        },
        "spec": {"replicas": 3},
    },
    label_maps,
    st.sampled_from(["web", "a"]),
)


@fuzz_settings(max_examples=150)
@given(policy=policies)
def test_policy_problems_are_a_list_of_messages(policy: dict[str, Any]) -> None:
    with within(5):
        problems = policy_problems(policy)
    assert isinstance(problems, list)
    assert all(isinstance(problem, str) and problem for problem in problems)


@fuzz_settings(max_examples=100)
@given(template=templates, found=st.lists(policies, min_size=1, max_size=3))
def test_matching_ranks_and_binds_any_policies(
    template: dict[str, Any], found: list[dict[str, Any]]
) -> None:
    with within(5):
        ranked = candidates(template, found)
        # As the template reconciler does: a claim counts only while its policy selects.
        claimed = found[0] if implicit_priority(found[0], template) else None
        chosen = choose(template, claimed, found)
        if chosen is not None:
            binding = desired_binding(
                template, chosen, "id", replicas=3, requirements=None, existing=None,
                new_id="binding-id",
            )  # fmt: skip
            assert binding["spec"]["resource"]["name"] == template["metadata"]["name"]
    assert all(policy in found for policy in ranked)
    assert chosen is None or chosen in ranked or chosen is claimed
