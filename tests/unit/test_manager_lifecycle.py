"""Manager lifecycle on testenv's fake client: runnable groups, late runnables, leadership, stop.

Issue #15 items 3-6 and 8: caches synced before other runnables start; runnables and controllers
added after start run at once; controllers warm up on standbys; a runnable that needs no
leadership may write on a standby; the Lease is released after every runnable stopped; a lost
Lease cancels in-flight reconciles at once and surfaces LeadershipLost unwrapped; the graceful
timeout bounds the whole stop however much is queued.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from reconcile import (
    GVK,
    LEASE,
    ControllerOptions,
    LeadershipLost,
    Manager,
    ManagerOptions,
    NotLeader,
    Request,
    Result,
    controller_managed_by,
    micro_time,
)
from reconcile.cache.reflector import WATCH_LIST_ENV
from reconcile.serving.certificate import CertificateError
from reconcile.webhook import WebhookServer
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
OPTIONS = ManagerOptions(metrics_bind_address="0")
ELECTION = replace(
    OPTIONS,
    leader_election=True,
    leader_election_id="lifecycle",
    leader_election_namespace="default",
    lease_duration=2.0,
    renew_deadline=1.5,
    retry_period=0.2,
)


def _configmap(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


async def _true(value: bool) -> bool:
    return value


@asynccontextmanager
async def _started(manager: Manager) -> AsyncIterator[None]:
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        yield
        manager.stop()


class _SlowLists(FakeClient):
    """Lists answer after a while, so a runnable started before the sync would see no object."""

    def lister_watcher(self, *args: Any, **kwargs: Any) -> Any:
        inner = super().lister_watcher(*args, **kwargs)

        class Slow:
            async def list(self, **options: Any) -> dict[str, Any]:
                await anyio.sleep(0.3)
                return await inner.list(**options)

            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

        return Slow()


async def test_caches_synced_before_other_runnables_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WATCH_LIST_ENV, "false")  # list+watch: the slow list is the sync
    fake = _SlowLists()
    for index in range(50):
        await fake.create(_configmap(f"cm{index}"))
    manager = Manager(client=fake, options=OPTIONS)
    informer = manager.cache.get_informer(CONFIGMAP)  # requested before start, as indexes are
    seen: list[int] = []

    async def reader() -> None:
        seen.append(len(informer.indexer))
        await anyio.sleep_forever()

    manager.add(reader, leader_only=False)
    with anyio.fail_after(10):
        async with _started(manager):
            await eventually(lambda: _true(bool(seen)), timeout=5)
    assert seen == [50], "the runnable started on a synced cache"


async def test_runnables_and_controllers_added_after_start_run_at_once() -> None:
    fake = FakeClient()
    manager = Manager(client=fake, options=OPTIONS)
    ran: list[str] = []
    reconciled: list[str] = []

    async def runnable(name: str) -> None:
        ran.append(name)
        await anyio.sleep_forever()

    async def note(request: Request) -> Result | None:
        reconciled.append(request.name)
        return None

    with anyio.fail_after(10):
        async with _started(manager):
            manager.add(lambda: runnable("leader"))
            manager.add(lambda: runnable("any"), leader_only=False)
            controller_managed_by(manager).for_(CONFIGMAP).complete(note)
            await fake.create(_configmap("late"))
            await eventually(lambda: _true(sorted(ran) == ["any", "leader"]), timeout=5)
            await eventually(lambda: _true("late" in reconciled), timeout=5)


async def test_a_standby_warms_its_caches_and_writes_only_from_non_leader_runnables() -> None:
    fake = FakeClient()
    await fake.create(_configmap("existing"))
    leader = Manager(client=fake, options=ELECTION)
    standby = Manager(client=fake, options=ELECTION)
    standby_reconciles: list[str] = []

    async def note(request: Request) -> Result | None:
        standby_reconciles.append(request.name)
        return None

    controller = controller_managed_by(standby).for_(CONFIGMAP).complete(note)
    wrote: list[str] = []

    async def prober() -> None:  # e.g. cluster probing: no leadership needed
        await standby.client.create(_configmap("from-standby"))
        wrote.append("from-standby")
        await anyio.sleep_forever()

    standby.add(prober, leader_only=False)
    with anyio.fail_after(20):
        async with _started(leader):
            await leader.elected.wait()
            async with _started(standby):
                await eventually(lambda: _true(wrote == ["from-standby"]), timeout=5)
                informers = list(standby.cache.informers().values())
                await eventually(lambda: _true(all(i.has_synced() for i in informers)))
                assert informers, "the standby's controller opened its informer"
                # Both objects' events are queued, waiting for leadership.
                await eventually(lambda: _true(len(controller.queue) == 2), timeout=5)
                assert standby_reconciles == []
                with pytest.raises(NotLeader):
                    await standby.client.create(_configmap("outside-any-runnable"))


async def test_the_lease_is_released_after_every_runnable_stopped() -> None:
    fake = FakeClient()
    options = replace(ELECTION, leader_election_release_on_cancel=True)
    manager = Manager(client=fake, options=options)
    holders_at_stop: list[str] = []

    async def other() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                lease = await fake.get(LEASE, "lifecycle", namespace="default")
                holders_at_stop.append(lease["spec"]["holderIdentity"])

    manager.add(other, leader_only=False)
    with anyio.fail_after(10):
        async with _started(manager):
            await manager.elected.wait()
    assert len(holders_at_stop) == 1
    assert holders_at_stop[0], "still held while the runnables stopped"
    lease = await fake.get(LEASE, "lifecycle", namespace="default")
    assert lease["spec"]["holderIdentity"] == "", "released at the end"


async def test_the_lease_is_kept_on_stop_by_default() -> None:
    fake = FakeClient()
    manager = Manager(client=fake, options=ELECTION)
    with anyio.fail_after(10):
        async with _started(manager):
            await manager.elected.wait()
    lease = await fake.get(LEASE, "lifecycle", namespace="default")
    assert lease["spec"]["holderIdentity"], "controller-runtime's default: not released"


async def test_a_lost_lease_cancels_reconciles_at_once_and_raises_leadership_lost() -> None:
    fake = FakeClient()
    await fake.create(_configmap("slow"))
    options = replace(ELECTION, graceful_shutdown_timeout=30)
    manager = Manager(client=fake, options=options)
    started = anyio.Event()
    cancelled_at: list[float] = []

    async def stuck(request: Request) -> Result | None:
        started.set()
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            cancelled_at.append(time.monotonic())
            raise
        return None

    controller_managed_by(manager).for_(CONFIGMAP).complete(stuck)
    lost_at: list[float] = []

    def watch_leadership(leading: bool) -> None:
        if not leading:
            lost_at.append(time.monotonic())

    async def thief() -> None:  # another replica taking the Lease over
        await started.wait()
        assert manager._elector is not None
        manager._elector._on_change = _chain(manager._elector._on_change, watch_leadership)
        await _steal_lease(fake)
        await anyio.sleep_forever()

    manager.add(thief, leader_only=False)
    with anyio.fail_after(20), pytest.raises(LeadershipLost):
        await manager.start()  # ends by itself, raising LeadershipLost unwrapped
    assert lost_at
    assert cancelled_at
    assert cancelled_at[0] - lost_at[0] < 1.0, "in-flight reconcile cancelled at once"


def _chain(*hooks: Any) -> Any:
    def call(leading: bool) -> None:
        for hook in hooks:
            if hook is not None:
                hook(leading)

    return call


async def _steal_lease(fake: FakeClient) -> None:
    lease = await fake.get(LEASE, "lifecycle", namespace="default")
    stamp = micro_time()
    lease["spec"].update(holderIdentity="thief", renewTime=stamp, acquireTime=stamp)
    lease["spec"]["leaseDurationSeconds"] = 3600
    await fake.update(lease)


async def test_the_graceful_timeout_bounds_the_whole_stop_with_10000_keys_queued() -> None:
    fake = FakeClient()
    manager = Manager(client=fake, options=replace(OPTIONS, graceful_shutdown_timeout=0.5))
    started = anyio.Event()
    reconciled = 0

    async def stuck(request: Request) -> Result | None:
        nonlocal reconciled
        reconciled += 1
        started.set()
        await anyio.sleep(60)
        return None

    options = ControllerOptions(max_concurrent_reconciles=2)
    controller = controller_managed_by(manager).for_(CONFIGMAP).with_options(options)
    queue = controller.complete(stuck).queue
    with anyio.fail_after(10):
        async with _started(manager):
            for index in range(10_000):
                queue.add(Request(f"k{index}", "default"))
            await started.wait()
            stop = time.monotonic()
    assert time.monotonic() - stop < 0.5 + 1.0
    assert reconciled == 2


async def test_cache_only_reconciles_leave_lease_renewals_and_healthz_on_time() -> None:
    fake = FakeClient()
    for index in range(10_000):
        await fake.create(_configmap(f"cm{index:05}"))
    options = replace(ELECTION, health_probe_bind_address="127.0.0.1:0")
    manager = Manager(client=fake, options=options)
    reconciled = 0

    async def cache_only(request: Request) -> Result | None:
        # Reads only, so nothing here ever suspends, for at least 0.3 ms each: the 10,000
        # reconciles hold the loop for 3 s or more however fast the machine (a fixed number of
        # reads was over before 20 probes on a fast one).
        nonlocal reconciled
        busy_until = time.monotonic() + 0.0003
        while time.monotonic() < busy_until:
            await manager.client.get(CONFIGMAP, request.name, namespace=request.namespace)
        reconciled += 1
        return None

    controller_managed_by(manager).for_(CONFIGMAP).complete(cache_only)
    probe_latencies: list[float] = []
    renewals: list[float] = []  # local times at which a new renewTime was seen
    with anyio.fail_after(60):
        async with _started(manager), aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{manager.probe_port}/healthz"
            # Measured once reconciles run: the fake's start-up list of 10,000 objects holds
            # the loop for a moment (tens of ms), and that is not what this test is about.
            while reconciled == 0:
                await anyio.sleep(0.001)
            last_renewal = ""
            while reconciled < 10_000:
                asked = time.monotonic()
                async with session.get(url) as response:
                    assert response.status == 200
                probe_latencies.append(time.monotonic() - asked)
                lease = await fake.get(LEASE, "lifecycle", namespace="default")
                if lease["spec"]["renewTime"] != last_renewal:
                    last_renewal = lease["spec"]["renewTime"]
                    renewals.append(time.monotonic())
                await anyio.sleep(0.01)
    gaps = [later - earlier for earlier, later in itertools.pairwise(renewals)]
    assert len(probe_latencies) > 20, "the reconciles took long enough to be probed throughout"
    assert max(probe_latencies) < 0.25, f"/healthz waited up to {max(probe_latencies):.2f} s"
    # Renewed every retry_period (0.2 s): no gap near the 1.5 s renew deadline.
    assert gaps, "renewals were observed"
    assert max(gaps) < 0.6, f"renewals {max(gaps):.2f} s apart"


async def test_a_webhook_server_of_the_options_runs_only_once_asked_for(tmp_path: Path) -> None:
    # Its directory holds no certificate, so the server cannot start: a manager that starts shows
    # it was not run (controller-runtime's GetWebhookServer adds its server on the first call).
    server = WebhookServer(port=0, cert_dir=tmp_path)
    unasked = Manager(client=FakeClient(), options=replace(OPTIONS, webhook_server=server))
    with anyio.fail_after(10):
        async with _started(unasked):
            pass
    assert server.certificate is None

    asked = Manager(client=FakeClient(), options=replace(OPTIONS, webhook_server=server))
    assert asked.webhook_server is server
    with pytest.raises(BaseExceptionGroup) as failed, anyio.fail_after(10):
        async with _started(asked):
            pass
    assert failed.group_contains(CertificateError, depth=None)
