"""Leader election against the real kube-apiserver: one leader, crash takeover, release, loss.

Durations are short (lease 2 s, renew 1.5 s, retry 0.3 s, times the suite's TIMING_SCALE) so
takeovers happen within seconds; every wait is on a condition with a deadline, and the timing
assertions compare anyio clock stamps recorded by the test and by the leading work itself.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from reconcile.client.client import Client
from reconcile.errors import Conflict
from reconcile.gvk import GVK
from reconcile.leaderelection import (
    JITTER_FACTOR,
    LEASE,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    micro_time,
)
from testenv import eventually
from tests.builders import scaled

pytestmark = pytest.mark.asyncio(loop_scope="session")

LEASE_DURATION = scaled(2.0)
RENEW_DEADLINE = scaled(1.5)
RETRY_PERIOD = scaled(0.3)
SLOWEST_RETRY = RETRY_PERIOD * (1 + JITTER_FACTOR)
"""The longest wait between two acquire attempts of a standby."""
SLACK = scaled(1.0)
"""Allowance for requests and scheduling on a busy machine."""


class CountingClient:
    """Passes the Lease verbs through to the real client, counting the reads."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.gets = 0

    async def get(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        self.gets += 1
        return await self.client.get(gvk, name, namespace=namespace)

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.client.create(obj)

    async def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.client.update(obj)


@dataclass
class Contender:
    """One elector in the test, with what its leading work saw."""

    elector: LeaderElector
    api: CountingClient
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    leading: anyio.Event = field(default_factory=anyio.Event)
    work_cancelled: anyio.Event = field(default_factory=anyio.Event)
    finished: anyio.Event = field(default_factory=anyio.Event)
    started_at: float | None = None
    lost: LeadershipLost | None = None
    changes: list[bool] = field(default_factory=list)

    @property
    def identity(self) -> str:
        return self.elector.config.identity

    async def work(self) -> None:
        self.started_at = anyio.current_time()
        self.leading.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.work_cancelled.set()
            raise

    async def run(self) -> None:
        try:
            with self.scope:
                await self.elector.run(self.work)
        except LeadershipLost as exc:
            self.lost = exc
        finally:
            self.finished.set()

    async def stop(self) -> None:
        self.scope.cancel()
        with anyio.fail_after(5):
            await self.finished.wait()


def contender(client: Client, namespace: str, name: str, **options: Any) -> Contender:
    timings: dict[str, Any] = {
        "lease_duration": LEASE_DURATION,
        "renew_deadline": RENEW_DEADLINE,
        "retry_period": RETRY_PERIOD,
    }
    config = LeaderElectionConfig(
        lease_name="lock",
        lease_namespace=namespace,
        identity=f"{name}-{secrets.token_hex(3)}",
        **{**timings, **options},
    )
    api = CountingClient(client)
    changes: list[bool] = []
    elector = LeaderElector(api, config, on_change=changes.append)
    return Contender(elector, api, changes=changes)


async def leader_of(contenders: list[Contender], timeout: float = 10.0) -> Contender:
    """The contender whose work started, once one did."""

    async def started() -> Contender | None:
        return next((c for c in contenders if c.leading.is_set()), None)

    return await eventually(started, timeout=timeout, interval=0.01)


async def read_lease(client: Client, namespace: str) -> dict[str, Any]:
    return await client.get(LEASE, "lock", namespace=namespace)


def _seconds_since(stamp: str) -> float:
    written = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - written).total_seconds()


async def test_two_electors_on_one_lease_elect_exactly_one_leader(
    client: Client, namespace: str
) -> None:
    first, second = contender(client, namespace, "a"), contender(client, namespace, "b")
    async with anyio.create_task_group() as group:
        group.start_soon(first.run)
        group.start_soon(second.run)
        winner = await leader_of([first, second])
        loser = second if winner is first else first
        seen = loser.api.gets

        async def loser_tried_again() -> bool:
            return loser.api.gets >= seen + 3

        await eventually(loser_tried_again, timeout=5 * SLOWEST_RETRY + SLACK)
        assert not loser.leading.is_set(), "the standby's work must not run"
        assert not loser.elector.is_leader
        assert loser.elector.leader == winner.identity
        assert winner.elector.is_leader
        assert not winner.work_cancelled.is_set()
        spec = (await read_lease(client, namespace))["spec"]
        assert spec["holderIdentity"] == winner.identity
        assert spec["leaseDurationSeconds"] == int(LEASE_DURATION)
        assert spec["leaseTransitions"] == 0
        group.cancel_scope.cancel()
    assert winner.changes == [True, False]
    assert loser.changes == []


async def test_a_crashed_leader_is_replaced_once_its_lease_expired(
    client: Client, namespace: str
) -> None:
    first = contender(client, namespace, "a", release_on_cancel=False)
    second = contender(client, namespace, "b", release_on_cancel=False)
    async with anyio.create_task_group() as group:
        group.start_soon(first.run)
        group.start_soon(second.run)
        leader = await leader_of([first, second])
        standby = second if leader is first else first
        seen = standby.api.gets

        async def standby_watched_renewals() -> bool:
            return standby.api.gets >= seen + 2

        await eventually(standby_watched_renewals, timeout=3 * SLOWEST_RETRY + SLACK)

        crashed_at = anyio.current_time()
        await leader.stop()  # cancelled without releasing: the Lease stays as last renewed
        lease = await read_lease(client, namespace)
        assert lease["spec"]["holderIdentity"] == leader.identity, "no release on a crash"
        expires_at = (
            anyio.current_time() - _seconds_since(lease["spec"]["renewTime"]) + LEASE_DURATION
        )
        assert not standby.leading.is_set()

        with anyio.fail_after(LEASE_DURATION + SLOWEST_RETRY + SLACK):
            await standby.leading.wait()
        assert standby.started_at is not None
        # Not before the Lease expired (a 50 ms allowance for the two clocks compared) ...
        assert standby.started_at >= expires_at - 0.05, (
            f"took over {expires_at - standby.started_at:.3f}s before the lease expired"
        )
        # ... and within the lease duration plus one jittered retry (and slack) of the crash.
        assert standby.started_at - crashed_at <= LEASE_DURATION + SLOWEST_RETRY + SLACK
        spec = (await read_lease(client, namespace))["spec"]
        assert spec["holderIdentity"] == standby.identity
        assert spec["leaseTransitions"] == 1
        group.cancel_scope.cancel()
    assert leader.work_cancelled.is_set()


async def test_a_clean_shutdown_releases_the_lease_to_the_standby_at_once(
    client: Client, namespace: str
) -> None:
    # A longer lease than elsewhere: waiting for its expiry would be unmistakable.
    lease = 2 * LEASE_DURATION
    timings = {"lease_duration": lease, "renew_deadline": 2 * RENEW_DEADLINE}
    first = contender(client, namespace, "a", **timings)
    second = contender(client, namespace, "b", **timings)
    async with anyio.create_task_group() as group:
        group.start_soon(first.run)
        group.start_soon(second.run)
        leader = await leader_of([first, second])
        standby = second if leader is first else first
        seen = standby.api.gets

        async def standby_is_waiting() -> bool:
            return standby.api.gets >= seen + 1

        await eventually(standby_is_waiting, timeout=2 * SLOWEST_RETRY + SLACK)

        stopped_at = anyio.current_time()
        await leader.stop()  # cancellation with release_on_cancel (the default)
        assert leader.work_cancelled.is_set()
        assert leader.changes == [True, False]
        with anyio.fail_after(lease):
            await standby.leading.wait()
        assert standby.started_at is not None
        took = standby.started_at - stopped_at
        # Expiry would come no sooner than the lease less one retry (the last renewal) after the
        # stop; a released Lease is taken at the standby's next try.
        assert took < lease - SLOWEST_RETRY, f"the standby waited {took:.2f}s: not released"
        spec = (await read_lease(client, namespace))["spec"]
        assert spec["holderIdentity"] == standby.identity
        assert spec["leaseTransitions"] == 1
        assert spec["leaseDurationSeconds"] == int(lease)
        group.cancel_scope.cancel()


async def test_a_leader_whose_lease_is_taken_loses_leadership(
    client: Client, namespace: str
) -> None:
    leader = contender(client, namespace, "a")
    async with anyio.create_task_group() as group:
        group.start_soon(leader.run)
        with anyio.fail_after(10):
            await leader.leading.wait()

        async def steal() -> bool:
            lease = await read_lease(client, namespace)
            lease["spec"].update(
                holderIdentity="thief", leaseDurationSeconds=3600, renewTime=micro_time()
            )
            try:
                await client.update(lease)
            except Conflict:  # the leader renewed in between: read again
                return False
            return True

        await eventually(steal, timeout=5)
        stolen_at = anyio.current_time()

        with anyio.fail_after(RETRY_PERIOD + RENEW_DEADLINE + SLACK):
            await leader.finished.wait()
        lost_after = anyio.current_time() - stolen_at
        group.cancel_scope.cancel()

    assert leader.lost is not None, "run() must raise LeadershipLost"
    assert leader.lost.identity == leader.identity
    assert leader.work_cancelled.is_set(), "the leading work must be cancelled"
    assert not leader.elector.is_leader
    assert leader.changes == [True, False]
    # A renewal already in flight when the Lease was taken may start the round a request early.
    assert lost_after >= RENEW_DEADLINE - 0.2, "gave up before the renew deadline"
    spec = (await read_lease(client, namespace))["spec"]
    assert spec["holderIdentity"] == "thief", "stepping down must not overwrite the new holder"
