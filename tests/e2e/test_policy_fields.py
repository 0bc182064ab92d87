"""End to end: no policy field is silently ignored — Lazy activation, dependentOverrides, and a
Warning Event ``UnsupportedField`` for what is accepted but not implemented."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import RESOURCE_BINDING_GVK
from reconcile import EVENT_GVK, NotFound
from testenv import Environment, consistently, eventually
from tests.builders import deployment_selector, propagation_policy, weighted
from tests.e2e.stack import (
    DEPLOYMENT,
    MEMBERS,
    OVERRIDE,
    POLICY,
    Stack,
    new_deployment,
    running,
    warning_event,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]


async def _warnings(stack: Stack, obj: str, reason: str) -> list[dict[str, Any]]:
    events = await stack.host.list(
        EVENT_GVK, namespace=stack.namespace, field_selector=f"involvedObject.name={obj}"
    )
    return [e for e in events["items"] if e["type"] == "Warning" and e["reason"] == reason]


async def _placement_weights(stack: Stack, template: str) -> list[int]:
    binding = await stack.host.get(
        RESOURCE_BINDING_GVK, f"{template}-deployment", namespace=stack.namespace
    )
    rules = binding["spec"]["placement"]["replicaScheduling"]["weightPreference"]
    return [rule["weight"] for rule in rules["staticWeightList"]]


async def test_a_lazy_policy_change_waits_for_the_template_to_change(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _a_lazy_policy_change_waits_for_the_template_to_change(stack)


async def _a_lazy_policy_change_waits_for_the_template_to_change(stack: Stack) -> None:
    ns = stack.namespace
    selectors = deployment_selector("old") + deployment_selector("new")
    policy = propagation_policy(
        "lazy", ns, selectors, weighted(MEMBERS, (2, 1)), activationPreference="Lazy"
    )
    await stack.host.create(new_deployment("old", ns, 3))
    await stack.host.create(policy)
    await stack.wait_replicas("old", {"member1": 2, "member2": 1})

    policy = await stack.host.get(POLICY, "lazy", namespace=ns)
    policy["spec"]["placement"] = weighted(MEMBERS, (1, 2))
    await stack.host.update(policy)
    # A template the policy claims after the change gets it at once: the marker that the
    # detector has seen the change.
    await stack.host.create(new_deployment("new", ns, 3))
    await stack.wait_replicas("new", {"member1": 1, "member2": 2})

    async def unchanged() -> bool:
        return await _placement_weights(stack, "old") == [2, 1]

    await consistently(unchanged, duration=3)
    assert await stack.replicas("old") == {"member1": 2, "member2": 1}

    # The template's next change brings the policy's change along.
    touched = {"metadata": {"annotations": {"example.com/touched": "yes"}}}
    await stack.host.patch(DEPLOYMENT, "old", touched, namespace=ns)
    await stack.wait_replicas("old", {"member1": 1, "member2": 2})


async def test_dependent_overrides_hold_the_template_back_until_they_exist(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _dependent_overrides_hold_the_template_back_until_they_exist(stack)


def _override(name: str, namespace: str, target: str) -> dict[str, Any]:
    labels = {"labelsOverrider": [{"operator": "add", "value": {"tier": "edge"}}]}
    return {
        "apiVersion": OVERRIDE.api_version,
        "kind": OVERRIDE.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "resourceSelectors": deployment_selector(target),
            "overrideRules": [
                {"targetCluster": {"clusterNames": ["member2"]}, "overriders": labels}
            ],
        },
    }


async def _dependent_overrides_hold_the_template_back_until_they_exist(stack: Stack) -> None:
    ns = stack.namespace
    policy = propagation_policy(
        "dep",
        ns,
        deployment_selector("dep"),
        weighted(MEMBERS, (2, 1)),
        dependentOverrides=["dep-labels"],
    )
    await stack.host.create(new_deployment("dep", ns, 3))
    await stack.host.create(policy)

    event = await warning_event(stack, "dep", "DependentOverridesMissing")
    assert "dep-labels" in event["message"]
    with pytest.raises(NotFound):
        await stack.host.get(RESOURCE_BINDING_GVK, "dep-deployment", namespace=ns)
    assert await stack.replicas("dep") == {"member1": None, "member2": None}

    await stack.host.create(_override("dep-labels", ns, "dep"))
    await stack.wait_replicas("dep", {"member1": 2, "member2": 1})
    # The override was there before the first Work: member2's copy never lacked its label.
    labelled = await stack.member_deployment("member2", "dep")
    assert labelled is not None
    assert labelled["metadata"]["labels"].get("tier") == "edge"


async def test_an_unsupported_field_is_reported_once_per_generation(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _an_unsupported_field_is_reported_once_per_generation(stack)


async def _an_unsupported_field_is_reported_once_per_generation(stack: Stack) -> None:
    ns = stack.namespace
    priority = {"priorityClassSource": "KubePriorityClass", "priorityClassName": "high"}
    policy = propagation_policy(
        "prio",
        ns,
        deployment_selector("prio"),
        weighted(MEMBERS, (2, 1)),
        schedulePriority=priority,
    )
    await stack.host.create(new_deployment("prio", ns, 3))
    await stack.host.create(policy)
    # Propagating takes the policy's reconciles after its permanent id was written: same
    # generation, so still one Event.
    await stack.wait_replicas("prio", {"member1": 2, "member2": 1})
    event = await warning_event(stack, "prio", "UnsupportedField")
    assert "spec.schedulePriority" in event["message"]
    assert event["involvedObject"]["kind"] == "PropagationPolicy"

    async def reported(times: int) -> bool:
        events = await _warnings(stack, "prio", "UnsupportedField")
        return sum(int(e.get("count") or 1) for e in events) == times

    assert await reported(1)
    current = await stack.host.get(POLICY, "prio", namespace=ns)
    current["spec"]["placement"] = weighted(MEMBERS, (1, 2))
    await stack.host.update(current)
    await stack.wait_replicas("prio", {"member1": 1, "member2": 2})
    await eventually(lambda: reported(2), timeout=30)

    async def still_twice() -> bool:
        return await reported(2)

    await consistently(still_twice, duration=2)
