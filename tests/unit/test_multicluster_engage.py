"""Multi-cluster controllers on testenv's fake clients (issue #30, items 1 and 2).

A provider engages fake clusters in a manager whose own cluster is another fake; controllers built
with ``cluster=ENGAGED`` reconcile Requests that name the cluster their object lives in. The
real-apiserver behaviour (an unreachable member, a restart) is in
tests/integration/test_multicluster_engage.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus
from prometheus_client import CollectorRegistry

from reconcile import (
    ENGAGED,
    GVK,
    Engaged,
    Engager,
    EnqueueRequestsFromMapFunc,
    Manager,
    ManagerOptions,
    Request,
    Result,
    controller_managed_by,
)
from reconcile.workqueue import LOW_PRIORITY, WorkQueue
from testenv import FakeClient, FakeClusters, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")


def _configmap(name: str, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **extra},
    }


class ListProvider:
    """Engages the clusters it was given, then whatever the test engages through it."""

    def __init__(self, clusters: dict[str, FakeClient] | None = None) -> None:
        self.clusters = clusters or {}
        self.engager: Engager | None = None

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        self.engager = engager
        for name, client in self.clusters.items():
            await engager.engage(name, client=client)
        task_status.started()
        await anyio.sleep_forever()


def _manager(registry: CollectorRegistry | None = None) -> Manager:
    options = ManagerOptions(metrics_bind_address="0", registry=registry)
    return Manager(client=FakeClient(), options=options)


@asynccontextmanager
async def _started(manager: Manager) -> AsyncIterator[None]:
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            yield
            manager.stop()


def _recorder(seen: list[Request]) -> Callable[[Request], Any]:
    async def reconcile(request: Request) -> Result | None:
        seen.append(request)
        return None

    return reconcile


async def _until(condition: Callable[[], bool], timeout: float = 5) -> None:
    async def probe() -> bool:
        return condition()

    await eventually(probe, timeout=timeout)


async def test_the_manager_is_an_engager() -> None:
    engager: Engager = _manager()  # mypy checks the protocol
    assert callable(engager.engage)
    assert callable(engager.disengage)


async def test_engaged_selects_members_by_default_and_the_host_on_request() -> None:
    assert ENGAGED.selects("member1")
    assert not ENGAGED.selects("")
    assert Engaged(include_host=True).selects("")
    named = Engaged(names=["a", "b"])
    assert named.selects("a")
    assert not named.selects("c")
    chosen = Engaged(predicate=lambda name: name.startswith("eu-"))
    assert chosen.selects("eu-1")
    assert not chosen.selects("us-1")
    with pytest.raises(TypeError, match="not the string 'a'"):
        Engaged(names="a")


async def test_work_queue_remove_drops_queued_parked_and_delayed_keys_only() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    async with queue:
        in_flight = Request("busy", "ns", "gone")
        queue.add(in_flight)
        assert await queue.get() == in_flight
        queue.add(in_flight)  # parked while processed
        queue.add(Request("a", "ns", "gone"))
        queue.add(Request("b", "ns", "gone"), priority=LOW_PRIORITY)
        queue.add(Request("b", "ns", "gone"))  # raised: a stale entry stays in the low FIFO
        queue.add_after(Request("later", "ns", "gone"), 60)
        queue.add(Request("kept", "ns", "here"), priority=LOW_PRIORITY)
        assert queue.remove(lambda request: request.cluster == "gone") == 4
        assert len(queue) == 1
        assert await queue.get() == Request("kept", "ns", "here")
        queue.done(in_flight)  # was parked: dropped, so not queued again
        assert len(queue) == 0
        queue.add(Request("a", "ns", "gone"))  # the cluster may come back
        assert await queue.get() == Request("a", "ns", "gone")


async def test_a_controller_reconciles_every_engaged_cluster_and_names_it() -> None:
    member1, member2 = FakeClient(), FakeClient()
    await member1.create(_configmap("one"))
    await member2.create(_configmap("two"))
    manager = _manager()
    await manager.client.live.create(_configmap("host"))
    manager.add_provider(ListProvider({"member1": member1, "member2": member2}))
    seen: list[Request] = []
    controller_managed_by(manager).for_(CONFIGMAP, cluster=ENGAGED).complete(_recorder(seen))
    with_host: list[Request] = []
    builder = controller_managed_by(manager).named("with-host")
    builder.for_(CONFIGMAP, cluster=Engaged(include_host=True, names=["member2"]))
    builder.complete(_recorder(with_host))
    async with _started(manager):
        await _until(lambda: len(seen) >= 2 and len(with_host) >= 2)
        assert manager.get_cluster("member1").api_reader is member1
        assert set(manager.engaged()) == {"member1", "member2"}
    assert set(seen) == {Request("one", "default", "member1"), Request("two", "default", "member2")}
    assert set(with_host) == {Request("host", "default", ""), Request("two", "default", "member2")}


async def test_a_cluster_engaged_at_run_time_is_watched_and_reengaging_it_is_a_no_op() -> None:
    manager = _manager()
    provider = ListProvider()
    manager.add_provider(provider)
    seen: list[Request] = []
    controller_managed_by(manager).for_(CONFIGMAP, cluster=ENGAGED).complete(_recorder(seen))
    late = FakeClient()
    await late.create(_configmap("late"))
    async with _started(manager):
        assert provider.engager is not None
        await provider.engager.engage("late", client=late)
        await _until(lambda: Request("late", "default", "late") in seen)
        cluster = manager.get_cluster("late")
        await provider.engager.engage("late", client=late)
        assert manager.get_cluster("late") is cluster, "same client: nothing replaced"
        other = FakeClient()
        await other.create(_configmap("other"))
        await provider.engager.engage("late", client=other)
        assert manager.get_cluster("late").api_reader is other
        await _until(lambda: Request("other", "default", "late") in seen)
        assert not cluster.cache.started, "the replaced cluster's cache stopped"


async def test_a_name_engaged_by_one_provider_is_refused_to_another() -> None:
    manager = _manager()
    first, second = ListProvider(), ListProvider()
    manager.add_provider(first)
    async with _started(manager):
        manager.add_provider(second)  # after start: runs at once
        await _until(lambda: second.engager is not None)
        assert first.engager is not None
        assert second.engager is not None
        mine = FakeClient()
        await first.engager.engage("shared", client=mine)
        with pytest.raises(ValueError, match=r"'shared'.*engaged it"):
            await second.engager.engage("shared", client=FakeClient())
        await second.engager.disengage("shared")  # not its own: ignored
        assert manager.get_cluster("shared").api_reader is mine
        with pytest.raises(ValueError, match="manager's own"):
            await first.engager.engage("", client=FakeClient())
        manager.add_cluster("added", client=FakeClient())
        with pytest.raises(ValueError, match="add_cluster"):
            await first.engager.engage("added", client=FakeClient())


async def test_map_functions_and_owners_map_within_the_cluster_of_the_event() -> None:
    member = FakeClient()
    owner = await member.create(_configmap("owner"))
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    await member.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "owned", "namespace": "default", "ownerReferences": [reference]},
        }
    )
    manager = _manager()
    manager.add_provider(ListProvider({"member": member}))
    owned: list[Request] = []
    builder = controller_managed_by(manager).named("owner")
    builder.for_(CONFIGMAP, lambda event: False, cluster=ENGAGED)  # only what owns() brings
    builder.owns(SECRET, cluster=ENGAGED).complete(_recorder(owned))
    mapped: list[Request] = []
    to_fixed = EnqueueRequestsFromMapFunc(lambda obj: [Request("fixed", "ns")])
    builder = controller_managed_by(manager).named("mapped")
    builder.watches(SECRET, to_fixed, cluster=ENGAGED).complete(_recorder(mapped))
    async with _started(manager):
        await _until(lambda: bool(owned) and bool(mapped))
    assert owned == [Request("owner", "default", "member")]
    assert mapped == [Request("fixed", "ns", "member")]


class _Gate:
    """A reconciler that holds every reconcile until released, failing it afterwards."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.seen: list[Request] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.seen.append(request)
        self.entered.set()
        await self.release.wait()
        raise RuntimeError("its cluster is gone")  # requeued with backoff: must be dropped


async def test_disengaging_stops_the_sources_and_cache_and_drops_queued_requests() -> None:
    registry = CollectorRegistry()
    manager = _manager(registry)
    provider = ListProvider()
    manager.add_provider(provider)
    gate = _Gate()
    controller = controller_managed_by(manager).for_(CONFIGMAP, cluster=ENGAGED).complete(gate)
    member = FakeClient()
    for index in range(5):
        await member.create(_configmap(f"cm{index}"))
    async with _started(manager):
        assert provider.engager is not None
        before = {task.id for task in anyio.get_running_tasks()}
        await provider.engager.engage("member", client=member)
        cluster = manager.get_cluster("member")
        with anyio.fail_after(5):
            await gate.entered.wait()
        await _until(lambda: len(controller.queue) == 4)
        assert cluster.cache.informers(), "the source started an informer in the member"
        await provider.engager.disengage("member")
        assert len(controller.queue) == 0
        assert not cluster.cache.started
        assert "member" not in manager.clusters
        gate.release.set()  # the in-flight reconcile fails and requeues: dropped as well
        await _until(lambda: _dropped(registry) == 5)
        await member.create(_configmap("after"))
        await anyio.sleep(0.2)  # nothing may reach the queue from a disengaged cluster
        assert len(controller.queue) == 0
        assert len(gate.seen) == 1
        names = [task.name or "" for task in anyio.get_running_tasks() if task.id not in before]
        left = [name for name in names if "member" in name or "informer" in name]
        assert left == []


async def test_reconciles_are_counted_per_cluster_in_their_own_family() -> None:
    registry = CollectorRegistry()
    member = FakeClient()
    await member.create(_configmap("one"))
    manager = _manager(registry)
    manager.add_provider(ListProvider({"member": member}))
    seen: list[Request] = []
    controller_managed_by(manager).for_(CONFIGMAP, cluster=ENGAGED).complete(_recorder(seen))
    async with _started(manager):
        await _until(lambda: bool(seen))
        labels = {"controller": "configmap", "cluster": "member", "result": "success"}
        await _until(
            lambda: registry.get_sample_value("reconcile_multicluster_reconcile_total", labels) == 1
        )
        # The controller-runtime family keeps its labels.
        total = {"controller": "configmap", "result": "success"}
        assert registry.get_sample_value("controller_runtime_reconcile_total", total) == 1


def _dropped(registry: CollectorRegistry) -> float:
    labels = {"controller": "configmap", "cluster": "member"}
    value = registry.get_sample_value("reconcile_multicluster_dropped_requests_total", labels)
    return value or 0.0


async def test_testenvs_fake_clusters_drive_the_manager() -> None:
    # The provider of testenv/fake/clusters.py against the real engager: the two were written
    # side by side against the protocols only.
    clusters = FakeClusters(["east", "west"])
    await clusters["east"].create(_configmap("e"))
    manager = _manager()
    manager.add_provider(clusters)
    seen: list[Request] = []
    controller_managed_by(manager).for_(CONFIGMAP, cluster=ENGAGED).complete(_recorder(seen))
    async with _started(manager):
        await _until(lambda: Request("e", "default", "east") in seen)
        north = clusters.add("north")
        await north.create(_configmap("n"))
        await _until(lambda: Request("n", "default", "north") in seen)
        west = manager.get_cluster("west")
        clusters.remove("west")
        await clusters.settled()
        assert set(manager.engaged()) == {"east", "north"}
        assert not west.cache.started


async def test_the_managers_namespace_scopes_its_own_cluster_not_the_engaged_ones() -> None:
    """An agent's manager is scoped to its namespace of the host; its member's objects live in
    whatever namespaces its Works name (#31: the member's cache saw one namespace only)."""
    member = FakeClient()
    await member.create(_configmap("elsewhere", namespace="apps"))
    host = FakeClient()
    await host.create(_configmap("mine", namespace="scoped"))
    await host.create(_configmap("not-mine", namespace="apps"))
    options = ManagerOptions(metrics_bind_address="0", namespace="scoped")
    manager = Manager(client=host, options=options)
    manager.add_provider(ListProvider({"member": member}))
    seen: list[Request] = []
    builder = controller_managed_by(manager)
    builder.for_(CONFIGMAP, cluster=Engaged(include_host=True)).complete(_recorder(seen))
    async with _started(manager):
        await _until(lambda: len(seen) >= 2)
    assert set(seen) == {Request("mine", "scoped", ""), Request("elsewhere", "apps", "member")}
