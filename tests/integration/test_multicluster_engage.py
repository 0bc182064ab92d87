"""Multi-cluster controllers against real apiservers: the acceptance of issue #30, items 1 and 2.

The host runs the manager; a tiny provider engages the members the test hands it. A member
engaged at run time is reconciled within one sync; a member whose apiserver stops backs off
while the other member's reconciles go on at their rate, and rejoins when it returns; a
disengaged member leaves no informer, no task and no queued request behind.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.abc import TaskStatus
from prometheus_client import CollectorRegistry

from reconcile import (
    ENGAGED,
    GVK,
    Client,
    ClusterConfig,
    ControllerOptions,
    Engager,
    Manager,
    ManagerOptions,
    NotFound,
    Request,
    Result,
    controller_managed_by,
)
from reconcile.leaderelection import LEASE
from testenv import ControlPlane, Environment, eventually, manager_for, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

CONFIGMAP = GVK("", "v1", "ConfigMap")
SYNC = 30.0
"""Seconds one sync may take on a loaded machine (a list and a watch of a few objects)."""
REJOIN = 90.0
"""Seconds a restarted member may take to be watched again: the apiserver's start plus the
reflector's backoff, which reaches 30 s after a few failed attempts."""


class PlaneProvider:
    """Engages the members it is told to, by name, through their admin kubeconfigs."""

    def __init__(self, *planes: ControlPlane) -> None:
        self.initial = planes
        self.engager: Engager | None = None

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        self.engager = engager
        for plane in self.initial:
            await self.engage(plane)
        task_status.started()
        await anyio.sleep_forever()

    async def engage(self, plane: ControlPlane) -> None:
        assert self.engager is not None, "the manager runs the provider"
        await self.engager.engage(plane.name, await _config(plane))


async def _config(plane: ControlPlane) -> ClusterConfig:
    return await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )


async def _namespace(*planes: ControlPlane) -> str:
    name = f"mc-{secrets.token_hex(4)}"
    for plane in planes:
        await plane.create_namespace(name)
    return name


async def _create(plane: ControlPlane, namespace: str, name: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await plane.request("POST", path, {"metadata": {"name": name}})


def _in(namespace: str) -> Callable[[Any], bool]:
    def predicate(event: Any) -> bool:
        return bool(event.obj["metadata"].get("namespace") == namespace)

    return predicate


async def _until(condition: Callable[[], bool], timeout: float) -> None:
    async def probe() -> bool:
        return condition()

    await eventually(probe, timeout=timeout, interval=0.1)


async def test_a_member_engaged_at_run_time_is_reconciled_within_one_sync(
    multicluster: Environment, manager: Manager
) -> None:
    member1, member2 = multicluster.members["member1"], multicluster.members["member2"]
    namespace = await _namespace(member1, member2)
    await _create(member1, namespace, "early")
    await _create(member2, namespace, "late")
    provider = PlaneProvider(member1)
    manager.add_provider(provider)
    manager.add_provider(SilentProvider())  # a member that accepts connections, never answers
    seen: set[Request] = set()

    async def reconcile(request: Request) -> None:
        seen.add(request)

    builder = controller_managed_by(manager).named(f"runtime-{namespace}")
    builder.for_(CONFIGMAP, _in(namespace), cluster=ENGAGED).complete(reconcile)
    with anyio.fail_after(SYNC):  # the silent member holds up neither the start nor member1
        async with running(manager):
            await _until(lambda: Request("early", namespace, "member1") in seen, SYNC)
            assert "silent" in manager.engaged()
            assert not any(request.cluster == "member2" for request in seen)
            engaged_at = time.monotonic()
            with anyio.fail_after(5):  # engaging waits for no sync
                await provider.engage(member2)
            await _until(lambda: Request("late", namespace, "member2") in seen, SYNC)
            took = time.monotonic() - engaged_at
            client = manager.get_cluster("member2").client
            assert await client.get(CONFIGMAP, "late", namespace=namespace)
            stopping = time.monotonic()
    assert took < SYNC
    assert time.monotonic() - stopping < 10, "the silent member held up the stop"
    assert {request.cluster for request in seen} == {"member1", "member2"}


class SilentProvider:
    """Engages ``silent``: a TCP listener that accepts connections and never answers, as a
    member behind a dead proxy; it stops listening when the manager cancels the provider."""

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        held: list[anyio.abc.SocketStream] = []

        async def hold(stream: anyio.abc.SocketStream) -> None:
            held.append(stream)
            await anyio.sleep_forever()

        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        async with listener, anyio.create_task_group() as group:
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            group.start_soon(listener.serve, hold)
            config = ClusterConfig(f"https://127.0.0.1:{port}", source="a silent member")
            await engager.engage("silent", config)
            task_status.started()
            await anyio.sleep_forever()


async def test_a_stopped_member_backs_off_the_other_keeps_its_rate_and_it_rejoins(
    multicluster: Environment, restartable: ControlPlane, manager: Manager
) -> None:
    live = multicluster.members["member1"]
    namespace = await _namespace(live, restartable)
    for index in range(4):
        await _create(live, namespace, f"cm{index}")
        await _create(restartable, namespace, f"cm{index}")
    manager.add_provider(PlaneProvider(live, restartable))
    reconciled: Counter[str] = Counter()

    async def reconcile(request: Request) -> Result:
        # A live read: a reconcile of the stopped member fails as a real one would.
        client = manager.get_cluster(request.cluster).api_reader
        await client.get(CONFIGMAP, request.name, namespace=request.namespace)
        reconciled[request.cluster] += 1
        return Result(requeue_after=0.05)  # a steady flow to measure

    options = ControllerOptions(max_concurrent_reconciles=4)
    builder = controller_managed_by(manager).named(f"rate-{namespace}").with_options(options)
    builder.for_(CONFIGMAP, _in(namespace), cluster=ENGAGED).complete(reconcile)
    async with running(manager):
        await _until(lambda: reconciled[restartable.name] > 0 and reconciled["member1"] > 0, SYNC)
        before = await _rate(reconciled, "member1")
        await restartable.stop_apiserver()
        try:
            during = await _rate(reconciled, "member1")
            stopped_at = reconciled[restartable.name]
            await anyio.sleep(1.0)
            assert reconciled[restartable.name] == stopped_at, "its reconciles fail meanwhile"
            informers = manager.get_cluster(restartable.name).cache.informers().values()

            async def backing_off() -> bool:  # its reflector failed and waits to retry
                return any(informer.reflector.last_error for informer in informers)

            await eventually(backing_off, timeout=SYNC)
        finally:
            await restartable.start_apiserver()
        await _create(restartable, namespace, "after-restart")
        after = Request("after-restart", namespace, restartable.name)

        async def watched_again() -> bool:
            cache = manager.get_cluster(restartable.name).cache
            try:
                found = await cache.get(CONFIGMAP, after.name, namespace=namespace)
            except Exception:
                return False
            return bool(found)

        await eventually(watched_again, timeout=REJOIN, interval=0.2)
        await _until(lambda: reconciled[restartable.name] > stopped_at, SYNC)
    assert before > 0
    assert during >= 0.5 * before, f"member1: {before:.1f}/s before, {during:.1f}/s during"


async def _rate(counts: Counter[str], cluster: str, window: float = 2.0) -> float:
    """Reconciles per second of ``cluster`` over the next ``window`` seconds."""
    start, at = counts[cluster], time.monotonic()
    await anyio.sleep(window)
    return (counts[cluster] - start) / (time.monotonic() - at)


async def test_a_disengaged_member_leaves_no_informer_task_or_queued_request(
    multicluster: Environment, host: ControlPlane
) -> None:
    member = multicluster.members["member2"]
    namespace = await _namespace(member)
    for index in range(4):
        await _create(member, namespace, f"cm{index}")
    registry = CollectorRegistry()
    manager = await manager_for(host, registry=registry)
    provider = PlaneProvider()
    manager.add_provider(provider)
    entered, release = anyio.Event(), anyio.Event()

    async def reconcile(request: Request) -> None:
        entered.set()
        await release.wait()  # one in flight, the others queued behind it

    name = f"gone-{namespace}"
    builder = controller_managed_by(manager).named(name)
    controller = builder.for_(CONFIGMAP, _in(namespace), cluster=ENGAGED).complete(reconcile)
    async with running(manager):
        before = {task.id for task in anyio.get_running_tasks()}
        await provider.engage(member)
        cluster = manager.get_cluster(member.name)
        with anyio.fail_after(SYNC):
            await entered.wait()
        await _until(lambda: len(controller.queue) == 3, SYNC)
        assert cluster.cache.informers(), "the source started the member's informers"
        assert provider.engager is not None
        await provider.engager.disengage(member.name)
        assert len(controller.queue) == 0
        assert not cluster.cache.started
        assert member.name not in manager.clusters
        release.set()
        labels = {"controller": name, "cluster": member.name}
        dropped = registry.get_sample_value("reconcile_multicluster_dropped_requests_total", labels)
        assert dropped == 3
        names = [t.name or "" for t in anyio.get_running_tasks() if t.id not in before]
        assert [n for n in names if member.name in n or "informer" in n] == []


async def test_leader_election_can_hold_its_lease_in_another_cluster(
    multicluster: Environment, client: Client, namespace: str
) -> None:
    """``leader_election_config``: a manager of the host elects its leader in a member (an
    agent's replicas run in the member), and no Lease of that name is written on the host."""
    member = multicluster.members["member1"]
    lease_id = f"elsewhere-{namespace}"
    options = ManagerOptions(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=lease_id,
        leader_election_namespace="default",
        leader_election_config=await ClusterConfig.from_kubeconfig(member.kubeconfig),
    )
    manager = await Manager.from_kubeconfig(str(multicluster.host.kubeconfig), options=options)
    on_member = Client(await ClusterConfig.from_kubeconfig(member.kubeconfig))
    async with on_member, anyio.create_task_group() as group:
        await group.start(manager.start)
        with anyio.fail_after(30):
            await manager.elected.wait()
        lease = await on_member.get(LEASE, lease_id, namespace="default")
        assert lease["spec"]["holderIdentity"]
        with pytest.raises(NotFound):
            await client.get(LEASE, lease_id, namespace="default")
        manager.stop()
