"""End to end: an application that stays unhealthy on member1 fails over to member2.

Three Deployments run with ``spec.failover.application`` (tolerationSeconds ``TOLERATION``) and a
statePreservation rule (member1's ``unavailableReplicas`` under ``ALIAS``); the test plays the
Deployment controller testenv lacks. Once every copy is healthy the failover is added to the
policies (a copy with no status yet counts Unhealthy, so its timer would start at creation),
then the test writes member1's copies' status Unhealthy (``readyReplicas`` 0, current
``observedGeneration``):

- ``web``, Divided 2:1, purgeMode Gracefully: not evicted before the toleration, then all three
  replicas go to member2, member1 moves into ``gracefulEvictionTasks`` (Karmada's reason,
  producer, grace period, preserved state and clustersBeforeFailover), and member1's copy goes once
  member2's copy is healthy. member2 ran the application before, so (Karmada's injection rules)
  its copy gets no preserved label.
- ``solo``, on member1 only (one replica, weighted 2:1), Gracefully: member2's copy is new, so the
  old Work and copy stay, with the task, until the test reports member2's copy healthy.
- ``flink``, on member1 only, purgeMode Immediately: the old copy goes at once and member2's copy
  carries the preserved label (Karmada's StatefulFailoverInjection).

The test reacts to each new member2 copy at once: it is Unhealthy until reported ready and would
itself be failed over after the toleration.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from controllers.api import RESOURCE_BINDING_GVK, WORK_GVK
from controllers.binding.names import work_name
from controllers.eviction.applicationfailover import RESOURCE_BINDING_PRODUCER
from reconcile import NotFound
from testenv import Environment, eventually
from tests.builders import deployment, deployment_selector, propagation_policy, weighted
from tests.e2e.stack import DEPLOYMENT, MEMBERS, POLICY, Stack, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

TOLERATION = 5
ALIAS = "failover.reconcile.io/unavailable-replicas"
RULES = {"rules": [{"aliasLabelName": ALIAS, "jsonPath": "{.unavailableReplicas}"}]}
TIMEOUT = 90.0


async def until(check: Callable[[], Awaitable[Any]], timeout: float = TIMEOUT) -> Any:
    return await eventually(check, timeout=timeout, interval=0.1)


def application(purge_mode: str) -> dict[str, Any]:
    behavior: dict[str, Any] = {
        "decisionConditions": {"tolerationSeconds": TOLERATION},
        "purgeMode": purge_mode,
        "statePreservation": RULES,
    }
    if purge_mode == "Gracefully":
        behavior["gracePeriodSeconds"] = 600
    return behavior


async def binding(stack: Stack, name: str) -> dict[str, Any]:
    found: dict[str, Any] = await stack.host.get(
        RESOURCE_BINDING_GVK, f"{name}-deployment", namespace=stack.namespace
    )
    return found


async def targets(stack: Stack, name: str) -> dict[str, int]:
    spec = (await binding(stack, name))["spec"]
    return {t["name"]: t.get("replicas", 0) for t in spec.get("clusters") or []}


async def tasks(stack: Stack, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await binding(stack, name))["spec"].get(
        "gracefulEvictionTasks"
    ) or []
    return found


async def has_work(stack: Stack, cluster: str, name: str) -> bool:
    try:
        await stack.host.get(
            WORK_GVK,
            work_name("Deployment", name, stack.namespace),
            namespace=f"karmada-es-{cluster}",
        )
    except NotFound:
        return False
    return True


async def write_status(stack: Stack, cluster: str, name: str, *, ready: bool) -> None:
    """Play ``cluster``'s Deployment controller for ``name``: all replicas ready, or none."""
    client = stack.members[cluster]
    member = await client.get(DEPLOYMENT, name, namespace=stack.namespace)
    replicas = member["spec"]["replicas"]
    status: dict[str, Any] = {
        "observedGeneration": member["metadata"]["generation"],
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas if ready else 0,
        "availableReplicas": replicas if ready else 0,
    }
    if not ready:
        status["unavailableReplicas"] = replicas
    member["status"] = status
    await client.update_status(member)


async def healths(stack: Stack, name: str) -> dict[str, str]:
    items = (await binding(stack, name)).get("status", {}).get("aggregatedStatus") or []
    return {i["clusterName"]: i.get("health", "") for i in items}


async def setup_template(stack: Stack, name: str, replicas: int, expected: dict[str, int]) -> None:
    """The template and its policy without failover; every copy reported healthy."""
    ns = stack.namespace
    await stack.host.create(deployment(name, ns, replicas))
    placement = weighted(MEMBERS, (2, 1))
    await stack.host.create(
        propagation_policy(name, ns, deployment_selector(name), placement, propagateDeps=True)
    )
    await stack.wait_replicas(name, {c: expected.get(c) for c in MEMBERS})
    for cluster in expected:
        await write_status(stack, cluster, name, ready=True)

    async def healthy() -> bool:
        return await healths(stack, name) == dict.fromkeys(expected, "Healthy")

    await until(healthy)


async def add_failover(stack: Stack, name: str, purge_mode: str) -> None:
    policy = await stack.host.get(POLICY, name, namespace=stack.namespace)
    updated = copy.deepcopy(policy)
    updated["spec"]["failover"] = {"application": application(purge_mode)}
    await stack.host.update(updated)

    async def copied() -> bool:
        failover = (await binding(stack, name))["spec"].get("failover") or {}
        seconds = failover.get("application", {}).get("decisionConditions", {})
        return bool(seconds.get("tolerationSeconds") == TOLERATION)

    await until(copied)


async def first_eviction(stack: Stack, name: str, resource_version: str) -> dict[str, Any]:
    """The first version of the binding with an eviction task, watched from
    ``resource_version`` (a task may be dropped again sooner than a poll would see it)."""
    with anyio.fail_after(TIMEOUT):
        async with stack.host.watch(
            RESOURCE_BINDING_GVK,
            namespace=stack.namespace,
            field_selector=f"metadata.name={name}-deployment",
            resource_version=resource_version,
        ) as events:
            async for event in events:
                found: dict[str, Any] = event.get("object") or {}
                if event.get("type") == "MODIFIED" and found["spec"].get("gracefulEvictionTasks"):
                    return found
    raise AssertionError(f"the watch of {name}'s binding ended without an eviction")


async def evicted(stack: Stack, name: str, resource_version: str) -> dict[str, Any]:
    found = (await first_eviction(stack, name, resource_version))["spec"]
    assert [t["fromCluster"] for t in found["gracefulEvictionTasks"]] == ["member1"]
    assert "member1" not in [t["name"] for t in found.get("clusters") or []]
    task: dict[str, Any] = found["gracefulEvictionTasks"][0]
    assert task["reason"] == "ApplicationFailure"
    assert task["producer"] == RESOURCE_BINDING_PRODUCER
    return task


async def member2_has(stack: Stack, name: str, replicas: int) -> dict[str, Any] | None:
    found = await stack.member_deployment("member2", name)
    return found if found and found["spec"]["replicas"] == replicas else None


async def test_an_unhealthy_application_fails_over(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        async with anyio.create_task_group() as group:
            group.start_soon(setup_template, stack, "web", 3, {"member1": 2, "member2": 1})
            group.start_soon(setup_template, stack, "solo", 1, {"member1": 1})
            group.start_soon(setup_template, stack, "flink", 1, {"member1": 1})
        async with anyio.create_task_group() as group:
            group.start_soon(_web, stack)
            group.start_soon(_solo, stack)
            group.start_soon(_flink, stack)


async def _fail_member1(stack: Stack, name: str, purge_mode: str) -> tuple[float, str]:
    """Add the failover, make member1's copy Unhealthy; when, and the binding's version then."""
    await add_failover(stack, name, purge_mode)
    version = str((await binding(stack, name))["metadata"]["resourceVersion"])
    await write_status(stack, "member1", name, ready=False)
    return anyio.current_time(), version


async def _web(stack: Stack) -> None:
    failed, version = await _fail_member1(stack, "web", "Gracefully")
    task = await evicted(stack, "web", version)
    # The timer starts when the controller sees the Unhealthy status, after the write.
    assert anyio.current_time() - failed >= TOLERATION
    assert task["purgeMode"] == "Gracefully"
    assert task["gracePeriodSeconds"] == 600
    assert task["replicas"] == 2
    assert task["preservedLabelState"] == {ALIAS: "2"}
    assert task["clustersBeforeFailover"] == ["member1", "member2"]
    await until(lambda: _targets_are(stack, "web", {"member2": 3}))
    member2 = await until(lambda: member2_has(stack, "web", 3))
    await write_status(stack, "member2", "web", ready=True)
    assert ALIAS not in member2["metadata"].get("labels", {}), "member2 ran it before the failover"

    async def finished() -> bool:
        return not await tasks(stack, "web") and not await has_work(stack, "member1", "web")

    await until(finished)
    await until(lambda: _gone(stack, "member1", "web"))
    assert await targets(stack, "web") == {"member2": 3}


async def _targets_are(stack: Stack, name: str, expected: dict[str, int]) -> bool:
    return await targets(stack, name) == expected


async def _gone(stack: Stack, cluster: str, name: str) -> bool:
    return await stack.member_deployment(cluster, name) is None


async def _solo(stack: Stack) -> None:
    failed, version = await _fail_member1(stack, "solo", "Gracefully")
    await evicted(stack, "solo", version)
    assert anyio.current_time() - failed >= TOLERATION
    await until(lambda: member2_has(stack, "solo", 1))
    # member2's new copy is not healthy yet: the old Work, its copy and the task stay.
    assert [t["fromCluster"] for t in await tasks(stack, "solo")] == ["member1"]
    assert await has_work(stack, "member1", "solo")
    assert await stack.member_deployment("member1", "solo") is not None
    await write_status(stack, "member2", "solo", ready=True)

    async def finished() -> bool:
        return not await tasks(stack, "solo") and not await has_work(stack, "member1", "solo")

    await until(finished)
    await until(lambda: _gone(stack, "member1", "solo"))


async def _flink(stack: Stack) -> None:
    _, version = await _fail_member1(stack, "flink", "Immediately")
    task = await evicted(stack, "flink", version)
    assert task["purgeMode"] == "Immediately"
    assert task["preservedLabelState"] == {ALIAS: "1"}
    assert task["clustersBeforeFailover"] == ["member1"]

    async def labelled() -> dict[str, Any] | None:
        found = await member2_has(stack, "flink", 1)
        return found if found and found["metadata"].get("labels", {}).get(ALIAS) == "1" else None

    await until(labelled)
    await write_status(stack, "member2", "flink", ready=True)
    # Immediately: the old copy does not wait for the new one.
    await until(lambda: _gone(stack, "member1", "flink"))
    await until(lambda: _no_tasks(stack, "flink"))


async def _no_tasks(stack: Stack, name: str) -> bool:
    return not await tasks(stack, name)
