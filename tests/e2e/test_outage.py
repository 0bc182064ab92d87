"""End to end: a member's apiserver goes away and comes back; a member's connection is replaced.

While member2 is down its Cluster turns Ready=False/ClusterNotReachable once the failure threshold
has passed, its Works say they cannot be applied, and member1 keeps receiving changes; a template
created meanwhile keeps off member2 (its not-ready NoSchedule taint) and stays on member1 once
member2 is back (no rebalancing, as in Karmada). Once it is back (and the success threshold has
passed) the Cluster is Ready again, member2 gets the current desired state, and its objects are
watched again (a deleted one is re-created).
"""

from __future__ import annotations

import anyio
import pytest

from controllers.api import CLUSTER_GVK, READY_CONDITION, WORK_APPLIED_CONDITION, WORK_GVK
from controllers.binding import work_name
from controllers.cluster import ClusterStatusOptions
from controllers.cluster.status import PROBE_TIMEOUT
from controllers.join import join_cluster
from reconcile import Condition, NotFound, get_condition
from testenv import Environment, eventually
from tests.e2e.stack import DEPLOYMENT, Stack, new_deployment, new_policy, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

FAST = ClusterStatusOptions(update_frequency=1.0, failure_threshold=4.0, success_threshold=3.0)
# Slack for a slow, shared machine on top of what the thresholds allow.
MARGIN = 20.0
# A member reflector that failed through the outage may wait its whole backoff (client-go's: up to
# 30 s, doubled by jitter) before it watches again.
REWATCH_TIMEOUT = 90.0


async def ready_condition(stack: Stack, cluster: str) -> Condition:
    """The Ready condition of the Cluster ``cluster`` ({} while it has none)."""
    found = get_condition(await stack.host.get(CLUSTER_GVK, cluster), READY_CONDITION)
    return found or Condition()


async def applied_condition(stack: Stack, cluster: str, template: str) -> Condition:
    """The Applied condition of the Work of Deployment ``template`` for ``cluster`` ({}: none)."""
    name = work_name("Deployment", template, stack.namespace)
    try:
        work = await stack.host.get(WORK_GVK, name, namespace=f"karmada-es-{cluster}")
    except NotFound:
        return Condition()
    return get_condition(work, WORK_APPLIED_CONDITION) or Condition()


async def work_replicas(stack: Stack, cluster: str, template: str) -> int | None:
    """The replicas the Work of ``template`` for ``cluster`` asks for (None: no Work)."""
    name = work_name("Deployment", template, stack.namespace)
    try:
        work = await stack.host.get(WORK_GVK, name, namespace=f"karmada-es-{cluster}")
    except NotFound:
        return None
    replicas: int = work["spec"]["workload"]["manifests"][0]["spec"]["replicas"]
    return replicas


async def wait_ready(stack: Stack, cluster: str, status: str, timeout: float) -> Condition:
    """Wait until the Cluster's Ready condition has ``status``; returns the condition."""

    async def matches() -> Condition | None:
        condition = await ready_condition(stack, cluster)
        return condition if condition.get("status") == status else None

    return await eventually(matches, timeout=timeout, interval=0.2)


async def wait_applied(stack: Stack, cluster: str, template: str, status: str) -> Condition:
    """Wait until the Work of ``template`` for ``cluster`` is Applied=``status``."""

    async def matches() -> Condition | None:
        condition = await applied_condition(stack, cluster, template)
        return condition if condition.get("status") == status else None

    return await eventually(matches, timeout=60, interval=0.2)


async def test_member_outage_is_reported_then_converges(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace, health=FAST) as stack:
        await _member_outage_is_reported_then_converges(stack)


async def _member_outage_is_reported_then_converges(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(new_deployment("web", ns, 3))
    await stack.host.create(new_policy("web", ns, "web"))
    await stack.wait_replicas("web", {"member1": 2, "member2": 1})

    plane = stack.env.members["member2"]
    stopping = anyio.current_time()
    try:
        # The apiserver takes a while to stop (graceful shutdown): watch the Cluster meanwhile.
        async with anyio.create_task_group() as group:
            group.start_soon(plane.stop_apiserver)
            await _while_member2_is_down(stack, stopping)
    finally:
        last_down, up = await _restart(stack)

    # Ready again only once the member answered for the success threshold, and soon after.
    bound = FAST.success_threshold + FAST.update_frequency + PROBE_TIMEOUT + MARGIN
    await wait_ready(stack, "member2", "True", timeout=bound)
    assert anyio.current_time() - last_down >= FAST.success_threshold
    assert anyio.current_time() - up <= bound

    await stack.wait_replicas("web", {"member1": 4, "member2": 2})
    await stack.wait_replicas("late", {"member1": 3, "member2": None})
    for cluster in ("member1", "member2"):
        await wait_applied(stack, cluster, "web", "True")
    await wait_applied(stack, "member1", "late", "True")

    # Only member2's watch, re-established after the restart, can notice this deletion.
    await stack.members["member2"].delete(DEPLOYMENT, "web", namespace=ns)

    async def recreated() -> bool:
        return await stack.member_deployment("member2", "web") is not None

    await eventually(recreated, timeout=REWATCH_TIMEOUT, interval=0.5)
    await stack.wait_replicas("web", {"member1": 4, "member2": 2})


async def _while_member2_is_down(stack: Stack, stopping: float) -> None:
    ns = stack.namespace
    bound = FAST.failure_threshold + FAST.update_frequency + PROBE_TIMEOUT + MARGIN
    await wait_ready(stack, "member2", "False", timeout=bound)
    # Debounced: not before the failure threshold has passed since the apiserver began to stop.
    assert anyio.current_time() - stopping >= FAST.failure_threshold
    assert anyio.current_time() - stopping <= bound

    async def unreachable() -> Condition | None:
        condition = await ready_condition(stack, "member2")
        return condition if condition.get("reason") == "ClusterNotReachable" else None

    condition = await eventually(unreachable, timeout=bound, interval=0.2)
    assert condition["status"] == "False"
    assert "not reachable" in condition["message"]
    assert (await ready_condition(stack, "member1"))["status"] == "True"

    # A change while member2 is away: member1 follows; member2's Work holds it and says why not.
    await stack.host.patch(DEPLOYMENT, "web", {"spec": {"replicas": 6}}, namespace=ns)
    await stack.host.create(new_deployment("late", ns, 3))
    await stack.host.create(new_policy("late", ns, "late"))

    async def member1_follows() -> bool:
        web = await stack.member_deployment("member1", "web")
        late = await stack.member_deployment("member1", "late")
        return bool(web and late and web["spec"]["replicas"] == 4 and late["spec"]["replicas"] == 3)

    await eventually(member1_follows, timeout=60, interval=0.2)
    await wait_applied(stack, "member1", "late", "True")
    failed = await wait_applied(stack, "member2", "web", "False")
    assert "cluster member2 is not ready" in failed["message"]
    assert "not reachable" in failed["message"]

    async def desired_for_member2() -> bool:
        return await work_replicas(stack, "member2", "web") == 2

    await eventually(desired_for_member2, timeout=60, interval=0.2)
    # The new placement kept off the tainted member: no Work for it there.
    assert await work_replicas(stack, "member2", "late") is None


async def _restart(stack: Stack) -> tuple[float, float]:
    """Start member2's apiserver again; returns when it was last seen not ready (a probe sent
    then failed) and when it was first seen ready."""
    client = stack.members["member2"]
    last_down = anyio.current_time()

    async def answers() -> float | None:
        nonlocal last_down
        sent = anyio.current_time()
        try:
            code, _ = await client.get_path("/readyz", timeout=PROBE_TIMEOUT)
        except Exception:  # refused, reset, timed out: all mean not up yet
            code = 0
        if code != 200:
            last_down = sent
            return None
        return anyio.current_time()

    async with anyio.create_task_group() as group:
        group.start_soon(stack.env.members["member2"].start_apiserver)
        up = await eventually(answers, timeout=90, interval=0.1)
    return last_down, up


async def test_a_replaced_member_connection_keeps_repairing(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace, health=FAST) as stack:
        await _a_replaced_member_connection_keeps_repairing(stack)


async def _a_replaced_member_connection_keeps_repairing(stack: Stack) -> None:
    ns = stack.namespace
    assert stack.context is not None
    members = stack.context.members
    await stack.host.create(new_deployment("api", ns, 3))
    await stack.host.create(new_policy("api", ns, "api"))
    await stack.wait_replicas("api", {"member1": 2, "member2": 1})
    before = members.get("member2")
    assert before is not None

    # Joining again issues a new token: the member gets a new connection (client and cache).
    kubeconfig = str(stack.env.members["member2"].kubeconfig)
    await join_cluster("member2", host=stack.host, member_kubeconfig=kubeconfig)

    async def replaced() -> bool:
        current = members.get("member2")
        return current is not None and current is not before

    await eventually(replaced, timeout=30, interval=0.2)

    # The new cache starts without watches on member objects: the Works must set them up again.
    await stack.members["member2"].delete(DEPLOYMENT, "api", namespace=ns)
    await stack.wait_replicas("api", {"member1": 2, "member2": 1})
