"""Leader election: config validation, and client-go's takeover rules stepped on a fake clock.

The Lease API is an in-memory fake with the apiserver's optimistic concurrency (resourceVersion
conflicts, AlreadyExists on create, NotFound on get), so every rule is checked without a cluster.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import pytest

from reconcile.errors import AlreadyExists, Conflict, NotFound, ServiceUnavailable
from reconcile.gvk import GVK
from reconcile.leaderelection import (
    JITTER_FACTOR,
    LEASE,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    LeaseClient,
    micro_time,
)
from tests.builders import FakeClock

asyncio_test = pytest.mark.asyncio(loop_scope="session")
"""Marks the async tests (strict mode); a module-wide pytestmark would warn on the sync ones."""

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "code": code, "reason": reason, "message": reason}


class FakeLeases:
    """One namespace of Leases with resourceVersions, as the apiserver keeps them."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.requests: list[str] = []
        self.before_update: Callable[[], None] | None = None
        self.fail_updates = False

    def _stamp(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(dict(obj))
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.leases[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)

    async def get(self, gvk: GVK, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        assert gvk == LEASE
        self.requests.append("get")
        if name not in self.leases:
            raise NotFound(_status(404, "NotFound"))
        return copy.deepcopy(self.leases[name])

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.requests.append("create")
        if obj["metadata"]["name"] in self.leases:
            raise AlreadyExists(_status(409, "AlreadyExists"))
        return self._stamp(obj)

    async def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.requests.append("update")
        if self.before_update is not None:
            hook, self.before_update = self.before_update, None
            hook()
        if self.fail_updates:
            raise ServiceUnavailable(_status(503, "ServiceUnavailable"))
        current = self.leases.get(obj["metadata"]["name"])
        if current is None:
            raise NotFound(_status(404, "NotFound"))
        if obj["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(_status(409, "Conflict"))
        return self._stamp(obj)

    def spec(self, name: str = "lock") -> dict[str, Any]:
        spec: dict[str, Any] = self.leases[name]["spec"]
        return spec

    def write(self, name: str = "lock", **spec: Any) -> None:
        """Another writer changes the Lease (bumping its resourceVersion)."""
        lease = copy.deepcopy(self.leases[name])
        lease["spec"].update(spec)
        self._stamp(lease)

    def put(self, name: str = "lock", **spec: Any) -> None:
        """A Lease that exists before any elector looks."""
        self._stamp({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})


def config(identity: str, **overrides: Any) -> LeaderElectionConfig:
    options: dict[str, Any] = {
        "lease_name": "lock",
        "lease_namespace": "ns",
        "identity": identity,
        "lease_duration": 15.0,
        "renew_deadline": 10.0,
        "retry_period": 2.0,
    }
    return LeaderElectionConfig(**{**options, **overrides})


@pytest.fixture
def leases() -> FakeLeases:
    return FakeLeases()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


def elector(
    leases: LeaseClient, clock: FakeClock, identity: str, **overrides: Any
) -> LeaderElector:
    return LeaderElector(leases, config(identity, **overrides), clock=clock)


# Configuration.


def test_defaults_are_client_gos() -> None:
    chosen = LeaderElectionConfig(lease_name="lock", lease_namespace="ns")
    assert (chosen.lease_duration, chosen.renew_deadline, chosen.retry_period) == (15, 10, 2)
    assert chosen.release_on_cancel is True
    assert JITTER_FACTOR == 1.2


def test_default_identity_is_hostname_and_unique_per_config() -> None:
    first = LeaderElectionConfig(lease_name="lock", lease_namespace="ns")
    second = LeaderElectionConfig(lease_name="lock", lease_namespace="ns")
    host, _, suffix = first.identity.rpartition("_")
    assert host
    assert len(suffix) == 36
    assert first.identity != second.identity


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"lease_duration": 10.0}, "lease_duration", id="lease-equal-to-renew"),
        pytest.param({"lease_duration": 5.0}, "lease_duration", id="lease-shorter-than-renew"),
        pytest.param(
            {"renew_deadline": 2.4}, "1.2 \\* retry_period", id="renew-not-above-jittered-retry"
        ),
        pytest.param({"retry_period": 0.0}, "retry_period must be positive", id="zero-retry"),
        pytest.param({"renew_deadline": -1.0}, "renew_deadline must be positive", id="neg-renew"),
        pytest.param(
            {"lease_duration": 0.9, "renew_deadline": 0.5, "retry_period": 0.1},
            "at least 1 s",
            id="sub-second-lease",
        ),
        pytest.param({"lease_name": ""}, "lease_name", id="no-name"),
        pytest.param({"lease_namespace": ""}, "lease_namespace", id="no-namespace"),
    ],
)
def test_invalid_configs_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config("me", **overrides)


def test_empty_identity_is_refused() -> None:
    with pytest.raises(ValueError, match="identity"):
        config("")


def test_a_valid_short_config_is_accepted() -> None:
    chosen = config("me", lease_duration=2.0, renew_deadline=1.5, retry_period=0.3)
    assert chosen.lease == "ns/lock"


def test_micro_time_has_six_fraction_digits_and_z() -> None:
    assert MICRO_TIME.match(micro_time())


# One attempt at a time, on the fake clock.


@asyncio_test
async def test_a_missing_lease_is_created_with_the_full_record(
    leases: FakeLeases, clock: FakeClock
) -> None:
    me = elector(leases, clock, "a")
    assert await me.try_acquire_or_renew()
    spec = leases.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"])
    assert MICRO_TIME.match(spec["renewTime"])
    assert me.leader == "a"


@asyncio_test
async def test_a_lease_held_by_another_waits_for_local_expiry(
    leases: FakeLeases, clock: FakeClock
) -> None:
    assert await elector(leases, clock, "a").try_acquire_or_renew()
    b = elector(leases, clock, "b")
    assert not await b.try_acquire_or_renew()
    clock.time += 14.9
    assert not await b.try_acquire_or_renew(), "taken before lease_duration passed"
    clock.time += 0.2
    assert await b.try_acquire_or_renew()
    spec = leases.spec()
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)


@asyncio_test
async def test_expiry_ignores_the_renew_time_written_in_the_record(
    leases: FakeLeases, clock: FakeClock
) -> None:
    # A holder whose clock is far behind (or a long-dead holder): its renewTime says nothing.
    leases.put(
        holderIdentity="skewed",
        leaseDurationSeconds=15,
        acquireTime="2000-01-01T00:00:00.000000Z",
        renewTime="2000-01-01T00:00:00.000000Z",
        leaseTransitions=3,
    )
    b = elector(leases, clock, "b")
    assert not await b.try_acquire_or_renew(), "expiry must be judged from our first sight"
    clock.time += 15.1
    assert await b.try_acquire_or_renew()
    assert leases.spec()["leaseTransitions"] == 4


@asyncio_test
async def test_every_change_of_the_record_restarts_the_wait(
    leases: FakeLeases, clock: FakeClock
) -> None:
    assert await elector(leases, clock, "a").try_acquire_or_renew()
    b = elector(leases, clock, "b")
    assert not await b.try_acquire_or_renew()
    clock.time += 10
    leases.write(renewTime=micro_time())  # the holder renewed
    assert not await b.try_acquire_or_renew()
    clock.time += 10  # 20 s after b first looked, 10 s after the renewal
    assert not await b.try_acquire_or_renew(), "the renewal must restart the lease duration"
    clock.time += 5.1
    assert await b.try_acquire_or_renew()


@asyncio_test
async def test_a_metadata_only_change_does_not_restart_the_wait(
    leases: FakeLeases, clock: FakeClock
) -> None:
    assert await elector(leases, clock, "a").try_acquire_or_renew()
    b = elector(leases, clock, "b")
    assert not await b.try_acquire_or_renew()
    clock.time += 10
    leases.write()  # same record, new resourceVersion (e.g. a label was added)
    assert not await b.try_acquire_or_renew()
    clock.time += 5.1
    assert await b.try_acquire_or_renew()


@asyncio_test
async def test_the_holders_own_lease_duration_decides_expiry(
    leases: FakeLeases, clock: FakeClock
) -> None:
    leases.put(holderIdentity="other", leaseDurationSeconds=60, leaseTransitions=0)
    b = elector(leases, clock, "b")
    assert not await b.try_acquire_or_renew()
    clock.time += 30
    assert not await b.try_acquire_or_renew(), "the holder promised 60 s, not our 15"
    clock.time += 30.1
    assert await b.try_acquire_or_renew()


@asyncio_test
async def test_a_released_lease_is_taken_at_once(leases: FakeLeases, clock: FakeClock) -> None:
    leases.put(holderIdentity="", leaseDurationSeconds=1, leaseTransitions=2)
    b = elector(leases, clock, "b")
    assert await b.try_acquire_or_renew()
    assert (leases.spec()["holderIdentity"], leases.spec()["leaseTransitions"]) == ("b", 3)


@asyncio_test
async def test_a_conflicting_write_fails_the_attempt_without_raising(
    leases: FakeLeases, clock: FakeClock
) -> None:
    leases.put(holderIdentity="", leaseDurationSeconds=1, leaseTransitions=0)
    b = elector(leases, clock, "b")
    leases.before_update = lambda: leases.write(holderIdentity="c", leaseDurationSeconds=15)
    assert not await b.try_acquire_or_renew()
    assert leases.spec()["holderIdentity"] == "c", "a conflicting writer must never be overwritten"
    assert not await b.try_acquire_or_renew(), "c's fresh record is valid"


@asyncio_test
async def test_renewal_keeps_acquire_time_and_transitions_in_one_request(
    leases: FakeLeases, clock: FakeClock
) -> None:
    leases.put(holderIdentity="", leaseDurationSeconds=1, leaseTransitions=4)
    a = elector(leases, clock, "a")
    assert await a.try_acquire_or_renew()
    acquired = dict(leases.spec())
    leases.requests.clear()
    clock.time += 2
    assert await a.try_acquire_or_renew()
    assert leases.requests == ["update"], "the leader renews optimistically, without a read"
    renewed = leases.spec()
    assert renewed["acquireTime"] == acquired["acquireTime"]
    assert renewed["leaseTransitions"] == 5
    assert renewed["renewTime"] >= acquired["renewTime"]


@asyncio_test
async def test_a_stolen_lease_is_not_renewed(leases: FakeLeases, clock: FakeClock) -> None:
    a = elector(leases, clock, "a")
    assert await a.try_acquire_or_renew()
    leases.write(holderIdentity="thief", leaseDurationSeconds=3600)
    assert not await a.try_acquire_or_renew()
    assert leases.spec()["holderIdentity"] == "thief"
    assert a.leader == "thief"


@asyncio_test
async def test_api_errors_fail_the_attempt(leases: FakeLeases, clock: FakeClock) -> None:
    a = elector(leases, clock, "a")
    assert await a.try_acquire_or_renew()
    leases.fail_updates = True
    assert not await a.try_acquire_or_renew()


# The run loop (real time, but nothing waits for a lease to expire).


@asyncio_test
async def test_run_leads_then_releases_on_cancellation(leases: FakeLeases) -> None:
    changes: list[bool] = []
    a = LeaderElector(leases, config("a"), on_change=changes.append)
    leading = anyio.Event()

    async def work() -> None:
        assert a.is_leader
        leading.set()
        await anyio.sleep_forever()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(a.run, work)
            await leading.wait()
            group.cancel_scope.cancel()
    assert changes == [True, False]
    assert not a.is_leader
    spec = leases.spec()
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("", 1)


async def _lead_then_stop(leases: FakeLeases, meanwhile: Callable[[], None]) -> None:
    """Elector "a" leads; ``meanwhile`` changes the Lease; then "a" is stopped (and releases)."""
    a = LeaderElector(leases, config("a"))
    leading = anyio.Event()

    async def work() -> None:
        leading.set()
        await anyio.sleep_forever()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(a.run, work)
            await leading.wait()
            meanwhile()
            group.cancel_scope.cancel()


@asyncio_test
async def test_release_survives_a_renewal_whose_answer_was_lost(leases: FakeLeases) -> None:
    # A renewal cancelled by the stop may have been applied: the cached resourceVersion is then
    # stale, though the Lease is still ours. The release must not leave it to expire.
    await _lead_then_stop(leases, lambda: leases.write(renewTime=micro_time()))
    spec = leases.spec()
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("", 1)


@asyncio_test
async def test_release_leaves_a_lease_someone_else_took(leases: FakeLeases) -> None:
    await _lead_then_stop(leases, lambda: leases.write(holderIdentity="b"))
    assert leases.spec()["holderIdentity"] == "b"


@asyncio_test
async def test_run_without_release_leaves_the_lease_held(leases: FakeLeases) -> None:
    a = LeaderElector(leases, config("a", release_on_cancel=False))
    leading = anyio.Event()

    async def work() -> None:
        leading.set()
        await anyio.sleep_forever()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(a.run, work)
            await leading.wait()
            group.cancel_scope.cancel()
    assert leases.spec()["holderIdentity"] == "a"


@asyncio_test
async def test_cancelled_while_waiting_writes_nothing(leases: FakeLeases) -> None:
    leases.put(holderIdentity="other", leaseDurationSeconds=3600, leaseTransitions=0)
    changes: list[bool] = []
    b = LeaderElector(leases, config("b"), on_change=changes.append)

    async def work() -> None:
        raise AssertionError("must not lead")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(b.run, work)
            while "get" not in leases.requests:
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
    assert changes == []
    assert "update" not in leases.requests
    assert leases.spec()["holderIdentity"] == "other"


@asyncio_test
async def test_run_raises_leadership_lost_when_renewals_fail(leases: FakeLeases) -> None:
    chosen = config("a", lease_duration=1.0, renew_deadline=0.5, retry_period=0.1)
    changes: list[bool] = []
    a = LeaderElector(leases, chosen, on_change=changes.append)
    leading = anyio.Event()
    work_cancelled = anyio.Event()

    async def work() -> None:
        leading.set()
        try:
            await anyio.sleep_forever()
        finally:
            assert not a.is_leader, "is_leader turns False before the work is cancelled"
            work_cancelled.set()

    async def break_the_apiserver() -> None:
        await leading.wait()
        leases.fail_updates = True

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(break_the_apiserver)
            with pytest.raises(LeadershipLost) as lost:
                await a.run(work)
    assert work_cancelled.is_set()
    assert lost.value.identity == "a"
    assert lost.value.lease == "ns/lock"
    assert changes == [True, False]


@asyncio_test
async def test_work_that_returns_steps_down(leases: FakeLeases) -> None:
    a = LeaderElector(leases, config("a"))

    async def work() -> None:
        return None

    with anyio.fail_after(5):
        await a.run(work)
    assert not a.is_leader
    assert leases.spec()["holderIdentity"] == ""


@asyncio_test
async def test_work_errors_propagate_unwrapped_after_release(leases: FakeLeases) -> None:
    a = LeaderElector(leases, config("a"))

    async def work() -> None:
        raise KeyError("boom")

    with anyio.fail_after(5), pytest.raises(KeyError, match="boom"):
        await a.run(work)
    assert leases.spec()["holderIdentity"] == ""


@asyncio_test
async def test_run_twice_at_once_is_refused(leases: FakeLeases) -> None:
    a = LeaderElector(leases, config("a"))
    leading = anyio.Event()

    async def work() -> None:
        leading.set()
        await anyio.sleep_forever()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(a.run, work)
            await leading.wait()
            with pytest.raises(RuntimeError, match="already running"):
                await a.run(work)
            group.cancel_scope.cancel()
