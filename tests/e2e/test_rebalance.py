"""End to end: a WorkloadRebalancer returns a skewed Divided Deployment to its policy's split."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.api import RESOURCE_BINDING_GVK, SCHEDULED_CONDITION, WORKLOAD_REBALANCER_GVK
from controllers.workloadrebalancer import parse_time
from reconcile import Conflict, NotFound, generation_of, is_condition_true
from testenv import Environment, eventually
from tests.e2e.stack import Stack, after_last_schedule, new_deployment, new_policy, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]


async def test_rebalancer_restores_the_split(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        await _rebalancer_restores_the_split(stack)


def _ref(name: str, namespace: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": name}


async def _skew(stack: Stack, binding_name: str) -> None:
    """Patch the binding's clusters to 1:2 by hand: the scheduler's steady path keeps that."""
    ns = stack.namespace
    skewed = [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 2}]

    async def update() -> bool:
        # Read-modify-write, again on a Conflict (client-go's RetryOnConflict): the scheduler and
        # the status controllers write this binding too.
        binding = await stack.host.get(RESOURCE_BINDING_GVK, binding_name, namespace=ns)
        binding["spec"]["clusters"] = skewed
        try:
            await stack.host.update(binding)
        except Conflict:
            return False
        return True

    await eventually(update, timeout=30)
    await stack.wait_replicas("nginx", {"member1": 1, "member2": 2})
    # The scheduler saw the skew and kept it: what restores the split below is the rebalancer.
    binding = await _scheduled(stack, binding_name)
    assert binding["spec"]["clusters"] == skewed


async def _scheduled(stack: Stack, binding_name: str) -> dict[str, Any]:
    """The binding once the scheduler has observed its generation with Scheduled True."""
    found: list[dict[str, Any]] = []

    async def observed() -> bool:
        ns = stack.namespace
        binding = await stack.host.get(RESOURCE_BINDING_GVK, binding_name, namespace=ns)
        found[:] = [binding]
        seen = (binding.get("status") or {}).get("schedulerObservedGeneration")
        return is_condition_true(binding, SCHEDULED_CONDITION) and seen == generation_of(binding)

    await eventually(observed, timeout=30)
    return found[0]


async def _rebalancer_restores_the_split(stack: Stack) -> None:
    ns, rebalancer_name = stack.namespace, f"rebalance-{stack.namespace}"
    await stack.host.create(new_deployment("nginx", ns, 3))
    await stack.host.create(new_policy("nginx", ns, "nginx"))
    await stack.wait_replicas("nginx", {"member1": 2, "member2": 1})
    # Skewing before the first result's status is written would make the scheduler schedule
    # afresh ("not scheduled yet") and undo the skew.
    await _scheduled(stack, "nginx-deployment")
    await _skew(stack, "nginx-deployment")
    await after_last_schedule(stack, "nginx-deployment")

    created = await stack.host.create(
        {
            "apiVersion": WORKLOAD_REBALANCER_GVK.api_version,
            "kind": WORKLOAD_REBALANCER_GVK.kind,
            "metadata": {"name": rebalancer_name},
            "spec": {
                "workloads": [_ref("nginx", ns), _ref("ghost", ns)],
                "ttlSecondsAfterFinished": 5,
            },
        }
    )

    async def finished() -> bool:
        try:
            current = await stack.host.get(WORKLOAD_REBALANCER_GVK, rebalancer_name)
        except NotFound:
            return False
        return bool((current.get("status") or {}).get("finishTime"))

    await eventually(finished, timeout=30, interval=0.1)
    rebalancer = await stack.host.get(WORKLOAD_REBALANCER_GVK, rebalancer_name)
    assert rebalancer["status"]["observedGeneration"] == 1
    assert rebalancer["status"]["observedWorkloads"] == [
        {"workload": _ref("ghost", ns), "result": "Failed", "reason": "ReferencedBindingNotFound"},
        {"workload": _ref("nginx", ns), "result": "Successful"},
    ]
    # Successful means the trigger is set (as Karmada's); the scheduler acts on it after that.
    triggered = created["metadata"]["creationTimestamp"]

    async def rescheduled() -> bool:
        binding = await stack.host.get(RESOURCE_BINDING_GVK, "nginx-deployment", namespace=ns)
        assert binding["spec"]["rescheduleTriggeredAt"] == triggered
        last = (binding.get("status") or {}).get("lastScheduledTime")
        return isinstance(last, str) and parse_time(last) >= parse_time(triggered)

    await eventually(rescheduled, timeout=30)
    await stack.wait_replicas("nginx", {"member1": 2, "member2": 1})

    async def deleted() -> bool:
        try:
            await stack.host.get(WORKLOAD_REBALANCER_GVK, rebalancer_name)
        except NotFound:
            return True
        return False

    await eventually(deleted, timeout=30)
    finish = parse_time(rebalancer["status"]["finishTime"])
    # Deleted once its TTL ran out, not before (the second of finishTime may be cut short).
    assert datetime.now(UTC) >= finish + timedelta(seconds=4)
