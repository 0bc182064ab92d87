"""End to end: a template and a policy on the host become Deployments in two real members."""

from __future__ import annotations

import copy

import pytest

from testenv import Environment, eventually
from tests.e2e.stack import DEPLOYMENT, POLICY, Stack, new_deployment, new_policy, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]


async def test_weighted_scaled_duplicated_and_excluded(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        await _weighted_scaled_duplicated_and_excluded(stack)


async def _weighted_scaled_duplicated_and_excluded(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(new_deployment("nginx", ns, 3))
    await stack.host.create(new_policy("nginx", ns, "nginx"))
    await stack.wait_replicas("nginx", {"member1": 2, "member2": 1})

    await stack.host.patch(DEPLOYMENT, "nginx", {"spec": {"replicas": 9}}, namespace=ns)
    await stack.wait_replicas("nginx", {"member1": 6, "member2": 3})

    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    policy = await stack.host.get(POLICY, "nginx", namespace=ns)
    policy["spec"]["placement"] = {**policy["spec"]["placement"], **duplicated}
    await stack.host.update(policy)
    await stack.host.patch(DEPLOYMENT, "nginx", {"spec": {"replicas": 3}}, namespace=ns)
    await stack.wait_replicas("nginx", {"member1": 3, "member2": 3})

    policy = await stack.host.get(POLICY, "nginx", namespace=ns)
    policy["spec"]["placement"]["clusterAffinity"] = {
        "clusterNames": ["member1", "member2"],
        "exclude": ["member2"],
    }
    await stack.host.update(policy)
    await stack.wait_replicas("nginx", {"member1": 3, "member2": None})
    # Every list the controllers made from the host's cache was served by an index.
    assert stack.context.manager.cache.scans == {}


async def test_overrides_show_only_on_their_member(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        await _overrides_show_only_on_their_member(stack)


async def _overrides_show_only_on_their_member(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "OverridePolicy",
            "metadata": {"name": "web-overrides", "namespace": ns},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
                ],
                "overrideRules": [
                    {
                        "targetCluster": {"clusterNames": ["member2"]},
                        "overriders": {
                            "labelsOverrider": [{"operator": "add", "value": {"tier": "edge"}}]
                        },
                    },
                    {
                        "targetCluster": {"clusterNames": ["member1"]},
                        "overriders": {
                            "imageOverrider": [
                                {
                                    "component": "Registry",
                                    "operator": "replace",
                                    "value": "registry.example.com",
                                }
                            ]
                        },
                    },
                ],
            },
        }
    )
    await stack.host.create(new_deployment("web", ns, 3))
    await stack.host.create(new_policy("web", ns, "web"))
    await stack.wait_replicas("web", {"member1": 2, "member2": 1})

    async def overridden() -> bool:
        one = await stack.member_deployment("member1", "web")
        two = await stack.member_deployment("member2", "web")
        if one is None or two is None:
            return False
        image = one["spec"]["template"]["spec"]["containers"][0]["image"]
        labelled = two["metadata"]["labels"].get("tier") == "edge"
        return bool(image == "registry.example.com/nginx:1.25" and labelled)

    await eventually(overridden, timeout=60)
    one = await stack.member_deployment("member1", "web")
    two = await stack.member_deployment("member2", "web")
    assert one is not None
    assert two is not None
    assert "tier" not in one["metadata"]["labels"]
    assert two["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    template = await stack.host.get(DEPLOYMENT, "web", namespace=ns)
    assert "tier" not in template["metadata"]["labels"], "the template itself is untouched"


async def test_members_are_repaired_and_status_comes_back(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _members_are_repaired_and_status_comes_back(stack)


async def _members_are_repaired_and_status_comes_back(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(new_deployment("api", ns, 3))
    await stack.host.create(new_policy("api", ns, "api"))
    await stack.wait_replicas("api", {"member1": 2, "member2": 1})

    member1 = stack.members["member1"]
    await member1.delete(DEPLOYMENT, "api", namespace=ns)
    await stack.wait_replicas("api", {"member1": 2, "member2": 1})

    drifted = await member1.get(DEPLOYMENT, "api", namespace=ns)
    edited = copy.deepcopy(drifted)
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:evil"
    await member1.update(edited)

    async def reverted() -> bool:
        current = await stack.member_deployment("member1", "api")
        if current is None:
            return False
        return bool(current["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25")

    await eventually(reverted, timeout=60)

    await stack.report_ready("api")

    async def aggregated() -> bool:
        template = await stack.host.get(DEPLOYMENT, "api", namespace=ns)
        return (template.get("status") or {}).get("readyReplicas") == 3

    await eventually(aggregated, timeout=60)
