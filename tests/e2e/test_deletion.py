"""End to end: deleting a policy releases its claims; deleting a template removes what it became."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import RESOURCE_BINDING_GVK, WORK_GVK, execution_namespace
from controllers.detector import claim_of
from reconcile import name_of
from testenv import Environment, consistently, eventually
from tests.builders import get_or_none, gone, scaled
from tests.e2e.stack import (
    DEPLOYMENT,
    MEMBERS,
    POLICY,
    Stack,
    new_deployment,
    new_policy,
    running,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]


async def _binding(stack: Stack, template: str) -> dict[str, Any] | None:
    return await get_or_none(
        stack.host, RESOURCE_BINDING_GVK, f"{template}-deployment", stack.namespace
    )


async def _works(stack: Stack, template: str) -> list[str]:
    """The Works (in every execution namespace) of the template's binding."""
    names = []
    for cluster in MEMBERS:
        works = await stack.host.list_all(WORK_GVK, namespace=execution_namespace(cluster))
        for work in works:
            manifests = work["spec"]["workload"]["manifests"]
            meta = manifests[0]["metadata"]
            if meta["name"] == template and meta.get("namespace") == stack.namespace:
                names.append(f"{cluster}/{name_of(work)}")
    return names


async def test_deleted_policy_releases_its_claims(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        await stack.host.create(new_deployment("kept", namespace, 3))
        await stack.host.create(new_policy("kept", namespace, "kept"))
        await stack.wait_replicas("kept", {"member1": 2, "member2": 1})
        template = await stack.host.get(DEPLOYMENT, "kept", namespace=namespace)
        assert claim_of(template) is not None
        works = await _works(stack, "kept")
        assert len(works) == 2

        await stack.host.delete(POLICY, "kept", namespace=namespace)

        async def released() -> bool:
            template = await stack.host.get(DEPLOYMENT, "kept", namespace=namespace)
            binding = await _binding(stack, "kept")
            return claim_of(template) is None and binding is not None and not claim_of(binding)

        await eventually(released, timeout=60)
        # Its finalizer is dropped once the claims are released.
        await eventually(lambda: gone(stack.host, POLICY, "kept", namespace), timeout=60)

        # Nothing the policy propagated is taken back. A withdrawal would follow the release
        # with no mark to wait for, so this holds over a window, not at one instant.
        async def untouched() -> bool:
            kept = await stack.replicas("kept") == {"member1": 2, "member2": 1}
            return kept and await _works(stack, "kept") == works

        await consistently(untouched, duration=scaled(3.0), interval=0.3)


async def test_deleted_template_takes_its_works_and_member_objects(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        for name in ("gone", "stays"):
            await stack.host.create(new_deployment(name, namespace, 3))
            await stack.host.create(new_policy(name, namespace, name))
        await stack.wait_replicas("gone", {"member1": 2, "member2": 1})
        await stack.wait_replicas("stays", {"member1": 2, "member2": 1})

        await stack.host.delete(DEPLOYMENT, "gone", namespace=namespace)

        await stack.wait_replicas("gone", {"member1": None, "member2": None})

        async def collected() -> bool:
            return await _binding(stack, "gone") is None and not await _works(stack, "gone")

        await eventually(collected, timeout=60)
        assert await stack.replicas("stays") == {"member1": 2, "member2": 1}
        assert len(await _works(stack, "stays")) == 2


async def test_template_created_again_is_propagated_again(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await stack.host.create(new_deployment("again", namespace, 3))
        await stack.host.create(new_policy("again", namespace, "again"))
        await stack.wait_replicas("again", {"member1": 2, "member2": 1})
        first = await _binding(stack, "again")
        assert first is not None

        # Deleted and created again at once: the binding still names the first template.
        await stack.host.delete(DEPLOYMENT, "again", namespace=namespace)
        await stack.host.create(new_deployment("again", namespace, 6))

        await stack.wait_replicas("again", {"member1": 4, "member2": 2})
        template = await stack.host.get(DEPLOYMENT, "again", namespace=namespace)
        binding = await _binding(stack, "again")
        assert binding is not None
        owners = binding["metadata"]["ownerReferences"]
        assert [owner["uid"] for owner in owners] == [template["metadata"]["uid"]]
        assert binding["metadata"]["uid"] != first["metadata"]["uid"]
