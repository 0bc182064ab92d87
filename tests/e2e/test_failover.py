"""End to end: two controller-manager replicas with leader election; the leader SIGKILLed mid-load.

Both replicas (``tests/e2e/replicas.py``: the real CLI, each with its own field manager and a
record of its writes) run against the testenv host with a short Lease (4 s, renew 3 s, retry
0.25 s at the default TIMING_SCALE) in the test's namespace; the templates go to one member.
Once one replica leads, templates and a policy are created; while they propagate the leader is
SIGKILLed and a new template created at once. The standby, whose caches, sources and member
connections are warm (#15 item 5), must take the Lease and reconcile (write) within the lease
duration + 2 s of the kill, the new template reaching the member soon after
(PROPAGATION_SLACK); then everything converges: each member object once, with its replicas, no
orphan Work. Before it led the standby wrote nothing that needs leadership (its own record), and
after the kill no host or member object was changed by the dead leader's field manager (the
apiserver's managedFields times). The failover time is printed and recorded in
docs/operations.md.
"""

from __future__ import annotations

import signal
from functools import partial
from pathlib import Path

import anyio
import pytest

from reconcile import name_of
from testenv import Environment, eventually
from tests.builders import scaled
from tests.e2e.convergence import (
    REPLICAS,
    Clusters,
    bounded,
    clusters_of,
    converge,
    label_policy,
    labelled_template,
)
from tests.e2e.replicas import (
    Replica,
    Timings,
    changed_after_kill,
    leader_of,
    lease_holder,
    replica,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

TIMINGS = Timings(lease=scaled(2.0), renew=scaled(1.5), retry=scaled(0.125))
"""4 s, 3 s, 0.25 s at the suite's default TIMING_SCALE (2)."""
FAILOVER_BOUND = TIMINGS.lease + scaled(1.0)
"""#15 item 5: the standby reconciles within the lease duration + 2 s of the leader's death (at
the default scale). Taking the Lease alone may take up to lease + retry * (1 + JITTER_FACTOR)
(4.55 s): the standby last saw the record change up to one attempt before the kill, and tries
again up to one jittered retry period after it expired."""
PROPAGATION_SLACK = scaled(1.5)
"""What the new template may take beyond FAILOVER_BOUND to reach the member: created before the
takeover, it is part of the standby's backlog (every key it saw change while standing by, queued
at low priority so that changes after the takeover go first), which on the loaded 2-core machine
took 1.1 s to 3.4 s after the takeover (see docs/operations.md)."""
TEMPLATES = 40
KILL_AFTER = 20
"""member1 Deployments seen before the SIGKILL: propagation is under way, far from done."""
LABELS = {"e2e.reconcile.io/failover": "true"}
MEMBER = ("member1",)
"""The templates go to member1 only (host + 1 member, as #15 item 5 asks)."""
START_TIMEOUT = 120.0
CONVERGE_TIMEOUT = 120.0
EXIT_TIMEOUT = 60.0


async def test_standby_takes_over_within_the_lease_after_a_sigkill(
    joined: Environment, namespace: str, tmp_path: Path
) -> None:
    async with (
        clusters_of(joined, namespace, MEMBER) as clusters,
        replica(joined, "a", tmp_path, lease_namespace=namespace, timings=TIMINGS) as a,
        replica(joined, "b", tmp_path, lease_namespace=namespace, timings=TIMINGS) as b,
    ):
        try:
            await _failover(clusters, a, b)
        except BaseException:
            for one in (a, b):
                print(f"replica {one.name} log ({one.log}), last lines:\n{one.tail()}")
            raise


async def _failover(clusters: Clusters, a: Replica, b: Replica) -> None:
    ns, host = clusters.namespace, clusters.host
    leader = await wait_for_leader(clusters, (a, b))
    standby = b if leader is a else a
    names = [f"web-{i:03d}" for i in range(TEMPLATES)]
    await host.create(label_policy("failover", ns, LABELS, MEMBER))
    await bounded(partial(host.create, labelled_template(n, ns, LABELS)) for n in names)

    await _wait_for_member_deployments(clusters, KILL_AFTER, (a, b))
    killed = anyio.current_time()
    leader.kill()
    await host.create(labelled_template("after-kill", ns, LABELS))
    assert await leader.exit_status(EXIT_TIMEOUT) == -signal.SIGKILL
    at_kill = await clusters.counts()
    print(f"at the SIGKILL of {leader.name}: {at_kill}")
    assert at_kill["member1 deployments"] < TEMPLATES, f"nothing left to take over: {at_kill}"

    await _wait_on_members(clusters, "after-kill", killed, START_TIMEOUT)
    failover = anyio.current_time() - killed
    assert leader.killed_at is not None
    first_write = _first_write_after(standby, leader.killed_at)
    print(
        f"failover: lease {TIMINGS.lease}s renew {TIMINGS.renew}s retry {TIMINGS.retry}s; "
        f"standby {standby.name} led {_since(standby.led_since(), leader.killed_at)} after the "
        f"kill, made its first write (reconciled) {_since(first_write, leader.killed_at)} after "
        f"it, and the template created after the kill was on member1 {failover:.2f}s after it"
    )
    assert first_write is not None, f"{standby.name} never wrote"
    reconciled = first_write - leader.killed_at
    assert reconciled <= FAILOVER_BOUND, f"first reconcile {reconciled:.2f}s > {FAILOVER_BOUND}s"
    bound = FAILOVER_BOUND + PROPAGATION_SLACK
    assert failover <= bound, f"the new template took {failover:.2f}s > {bound}s"
    assert await lease_holder(host, ns) == standby.identity()

    took = await converge(clusters, {*names, "after-kill"}, CONVERGE_TIMEOUT, _all_replicas)
    print(f"converged {took:.1f}s after the failover")
    _assert_standby_wrote_only_while_leading(standby)
    assert not await changed_after_kill(clusters, leader)

    await clusters.clean_up([*names, "after-kill"], "failover", CONVERGE_TIMEOUT)
    standby.process.send_signal(signal.SIGTERM)
    assert await standby.exit_status(EXIT_TIMEOUT) == 0
    # A clean stop hands the Lease back (the CLI sets leader_election_release_on_cancel).
    assert await lease_holder(host, ns) == ""


def _all_replicas(template: str, cluster: str) -> int:
    return REPLICAS


async def wait_for_leader(clusters: Clusters, replicas: tuple[Replica, ...]) -> Replica:
    """The replica holding the Lease, once one does; the others must be running still."""

    async def elected() -> Replica | None:
        for one in replicas:
            assert one.process.returncode is None, f"{one.name} exited: {one.tail()}"
        return leader_of(replicas, await lease_holder(clusters.host, clusters.namespace))

    return await eventually(elected, timeout=START_TIMEOUT, interval=0.1)


async def _wait_for_member_deployments(
    clusters: Clusters, count: int, replicas: tuple[Replica, ...]
) -> None:
    async def under_way() -> bool:
        for one in replicas:
            assert one.process.returncode is None, f"{one.name} exited: {one.tail()}"
        return len(await clusters.member_deployments("member1")) >= count

    await eventually(under_way, timeout=START_TIMEOUT, interval=0.05)


async def _wait_on_members(clusters: Clusters, name: str, since: float, timeout: float) -> None:
    async def on_both() -> bool:
        for cluster in clusters.members:
            found = await clusters.member_deployments(cluster)
            if name not in {name_of(d) for d in found}:
                return False
        return True

    await eventually(on_both, timeout=timeout - (anyio.current_time() - since), interval=0.05)


def _since(moment: float | None, origin: float) -> str:
    return "never" if moment is None else f"{moment - origin:.2f}s"


def _first_write_after(replica: Replica, moment: float) -> float | None:
    """Wall time of the first write of ``replica`` that needs leadership after ``moment``."""
    writes = [float(w["wall"]) for w in replica.leader_writes() if w["wall"] >= moment]
    return min(writes) if writes else None


def _assert_standby_wrote_only_while_leading(standby: Replica) -> None:
    """Its own record: no write that needs leadership passed the guard before it led."""
    led = standby.led_since()
    assert led is not None, f"{standby.name} does not lead"
    early = [w for w in standby.leader_writes() if w["wall"] < led]
    assert not early, f"{standby.name} wrote before it led: {early[:3]}"
    refused = [w for w in standby.records("write") if not w["allowed"]]
    print(f"standby {standby.name}: {len(refused)} writes refused while not leading")
