"""End to end: host namespaces appear in, and leave, both members (the namespace controller)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from controllers.api import NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL, WORK_GVK, execution_namespace
from controllers.binding import work_name
from reconcile import GVK, Client, NotFound
from testenv import Environment, eventually
from tests.e2e.stack import MEMBERS, Stack, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

NAMESPACE = GVK("", "v1", "Namespace")
CLUSTER_OVERRIDE = GVK("policy.karmada.io", "v1alpha1", "ClusterOverridePolicy")


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


async def _member_namespace(client: Client, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(NAMESPACE, name)
    except NotFound:
        return None


async def _in_members(stack: Stack, name: str) -> dict[str, dict[str, Any]] | None:
    found = {c: await _member_namespace(m, name) for c, m in stack.members.items()}
    return {c: ns for c, ns in found.items() if ns} if all(found.values()) else None


async def _gone_from_members(stack: Stack, name: str) -> bool:
    # testenv runs no namespace controller: a deleted member namespace stays Terminating.
    for member in stack.members.values():
        found = await _member_namespace(member, name)
        if found is not None and not found["metadata"].get("deletionTimestamp"):
            return False
    return True


async def test_host_namespaces_follow_into_members(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        await _host_namespaces_follow_into_members(stack)


async def _host_namespaces_follow_into_members(stack: Stack) -> None:
    suffix = secrets.token_hex(3)
    team, skipped = f"team-a-{suffix}", f"team-skip-{suffix}"
    await stack.host.create(_namespace(skipped, **{NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL: "true"}))
    await stack.host.create(_namespace(team))

    found = await eventually(lambda: _in_members(stack, team), timeout=60)
    for member_namespace in found.values():
        assert member_namespace["metadata"]["labels"]["karmada.io/managed"] == "true"
    # One worker, first in first out: the skipped namespace was looked at before team-a.
    for cluster in MEMBERS:
        with pytest.raises(NotFound):
            await stack.host.get(
                WORK_GVK, work_name("Namespace", skipped), namespace=execution_namespace(cluster)
            )
        assert await _member_namespace(stack.members[cluster], skipped) is None

    await stack.host.delete(NAMESPACE, team)
    await eventually(lambda: _gone_from_members(stack, team), timeout=60)


async def test_cluster_override_policies_apply_to_namespaces(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        suffix = secrets.token_hex(3)
        team = f"team-o-{suffix}"
        await stack.host.create(
            {
                "apiVersion": "policy.karmada.io/v1alpha1",
                "kind": "ClusterOverridePolicy",
                "metadata": {"name": f"ns-label-{suffix}"},
                "spec": {
                    "resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace", "name": team}],
                    "overrideRules": [
                        {
                            "targetCluster": {"clusterNames": ["member1"]},
                            "overriders": {
                                "labelsOverrider": [{"operator": "add", "value": {"tier": "gold"}}]
                            },
                        }
                    ],
                },
            }
        )
        try:
            await stack.host.create(_namespace(team))
            found = await eventually(lambda: _in_members(stack, team), timeout=60)
            assert found["member1"]["metadata"]["labels"].get("tier") == "gold"
            assert "tier" not in found["member2"]["metadata"]["labels"]
        finally:
            await stack.host.delete(CLUSTER_OVERRIDE, f"ns-label-{suffix}")
            await stack.host.delete(NAMESPACE, team)
