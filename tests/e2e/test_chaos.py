"""End to end: faults of the control plane under a propagation load (#15, "Chaos").

TEMPLATES Deployment templates are propagated 2:1 over the two members, ONCE for the module
(the ``load`` fixture), by two supervised controller-manager replicas (``tests/e2e/replicas.py``:
the real CLI with leader election, a field manager of its own and a record of every write
decision) that run throughout; the faults then run in sequence on that load, each while a
stream of changes propagates. Each test first sends a wave of replica changes to WAVE of the
templates (a different slice each time), waits until WAVE_UNDER_WAY of them have reached
member1, and injects one fault: (a) etcd restarted, (b) the host kube-apiserver restarted, (c)
member2's apiserver flapped 3 times, (d) the leader SIGKILLed. A replica that exits (a lost
Lease exits 1, a SIGKILL) is started again by its Supervisor, as a Deployment would. Each must
converge within RECOVERY_BOUND seconds after the control plane is back: every template's member
Deployments present once on each member, applied by its Work, with its share of the template's
latest replicas; one Scheduled binding per template; one Applied Work per binding and member;
no orphan Work.

"Every reconcile after a lost lease is counted as zero writes", checked two ways, neither an
apiserver audit (testenv has none): (1) each replica's own record, made by the manager's write
guard that every non-GET request of its clients (host and members) passes: no write that needs
leadership was let through while the replica did not lead, before it first led or after it
recorded a lost Lease; (2) for a SIGKILLed leader, the apiserver's managedFields: no object was
changed by its field manager after the kill. (1) proves the guard saw and refused; a write
already sent when the Lease was lost cannot be told apart by either.

TEMPLATES is the issue's 1,000 (2,000 member Deployments, 2,000 Works). Measured on the 2-core
machine with nothing else running (load average 3-4 from the module itself), 2026-12-01:
converged 16.7 s after the etcd restart, 16.8 s after the host apiserver's, 1.6 s after the
flaps, 19.2 s after the SIGKILL; first propagation 68 s, module 4 min 43 s. With other suites
running (load average 7-10) the same took 19-24 s, 19-22 s, 1.5-3 s and 26-27 s, and at load
10-12 the etcd case went past 30 s: the standby that takes over reconciles every template,
binding and Work besides the wave (docs/testing.md). The replicas run with
``--cluster-success-threshold=5s``: with the 30 s default, three restarts of member2 that
together outlast the 30 s failure threshold leave it NotReady for 30 s after the last.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio
import pytest
import pytest_asyncio

from controllers.cluster import clusters_ready
from testenv import Environment, eventually
from tests.builders import scaled
from tests.e2e.conftest import join_members, own_control_plane
from tests.e2e.convergence import (
    REPLICAS,
    SHARES,
    Clusters,
    bounded,
    clusters_of,
    converge,
    label_policy,
    labelled_template,
)
from tests.e2e.replicas import (
    Replica,
    Supervisor,
    Timings,
    changed_after_kill,
    leader_of,
    lease_holder,
    writes_without_the_lease,
)
from tests.e2e.stack import DEPLOYMENT, MEMBERS

pytestmark = [
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.multicluster,
    pytest.mark.slow,
]

TEMPLATES = 1000
WAVE = 150
"""Templates whose replicas each fault's wave changes."""
WAVE_UNDER_WAY = 25
"""Changed member1 Deployments seen before the fault: the wave propagates, far from done."""
RECOVERY_BOUND = 30.0
"""#15: converged within 30 s after the control plane is back."""
PROPAGATED_TIMEOUT = 300.0
"""The first propagation of the load (1,000 took 70-230 s here; docs/benchmarks.md)."""
TIMINGS = Timings(
    lease=scaled(2.0), renew=scaled(1.5), retry=scaled(0.125), cluster_success=scaled(2.5)
)
"""With Karmada's 30 s success threshold, three slow restarts of member2 (over the 30 s failure
threshold when the machine is loaded) leave it NotReady for 30 s more after the last: nothing
could converge within RECOVERY_BOUND of it."""
FLAPS = 3
REPLICA_COUNT = 2
POLICY_NAME = "chaos"
LABELS = {"e2e.reconcile.io/chaos": "true"}
START_TIMEOUT = 120.0
CLEAN_UP_TIMEOUT = 120.0
EXIT_TIMEOUT = 60.0

Fault = Callable[[Environment], Awaitable[None]]


@dataclass
class Load:
    """The module's templates and replicas, and the replicas (in units of REPLICAS) each
    template should now have."""

    clusters: Clusters
    replicas: Replicas
    factors: dict[str, int] = field(default_factory=dict)
    waves: int = 0

    def expected(self, name: str, cluster: str) -> int:
        """Replicas ``cluster`` should run of the template ``name``: its 2:1 share."""
        return SHARES[cluster] * self.factors[name]

    async def wave(self) -> list[str]:
        """Scale the next WAVE templates up by REPLICAS each; returns their names."""
        names = sorted(self.factors)
        start = (self.waves * WAVE) % len(names)
        chosen = names[start : start + WAVE]
        self.waves += 1
        for name in chosen:
            self.factors[name] += 1
        host, ns = self.clusters.host, self.clusters.namespace
        await bounded(
            partial(
                host.patch,
                DEPLOYMENT,
                name,
                {"spec": {"replicas": REPLICAS * self.factors[name]}},
                namespace=ns,
            )
            for name in chosen
        )
        return chosen

    async def under_way(self, changed: list[str]) -> None:
        """Wait until WAVE_UNDER_WAY of ``changed`` have their new replicas on member1."""
        want = {name: self.expected(name, "member1") for name in changed}

        async def arrived() -> bool:
            found = await self.clusters.member_deployments("member1")
            fresh = [d for d in found if want.get(d["metadata"]["name"]) == d["spec"]["replicas"]]
            return len(fresh) >= WAVE_UNDER_WAY

        await eventually(arrived, timeout=START_TIMEOUT, interval=0.1)
        exits = {s.name: s.exits for s in self.replicas.supervisors}
        print(f"wave {self.waves} under way; {await self.clusters.counts()}; exits so far {exits}")


class Replicas:
    """REPLICA_COUNT supervised replicas, run by one task of their own.

    pytest-asyncio sets a module fixture up and tears it down in two different tasks, and an
    anyio task group must be left by the task that entered it; so the group lives in a task
    made for it, which ``stop`` (every replica SIGTERMed, exit 0) or ``cancel`` awaits.
    """

    def __init__(self, env: Environment, directory: Path, namespace: str) -> None:
        self.supervisors = [
            Supervisor(env, f"r{i}", directory, lease_namespace=namespace, timings=TIMINGS)
            for i in range(REPLICA_COUNT)
        ]
        self.env = env
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        async with anyio.create_task_group() as group:
            for supervisor in self.supervisors:
                group.start_soon(supervisor.run)

    async def stop(self) -> None:
        """SIGTERM each replica: all exit 0."""
        assert self._task is not None
        for supervisor in self.supervisors:
            assert await supervisor.stop(EXIT_TIMEOUT) == 0
        await self._task

    async def cancel(self) -> None:
        """Kill every replica (their processes are killed as their contexts exit)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    def print_logs(self) -> None:
        for supervisor in self.supervisors:
            for one in supervisor.incarnations:
                print(f"replica {one.name} log ({one.log}), last lines:\n{one.tail()}")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def chaos_env() -> AsyncIterator[Environment]:
    """A control plane of the module's own: etcd, host, member1 and member2.

    The replicas reconcile every object they see, and the session's shared one holds what
    earlier tests left (testenv runs no namespace controller, so their objects stay, some of
    them failing for good): after test_application_failover and test_bad_input, 400 templates
    took 19.0 / 27.6 / 0.5 / 21.7 s to converge instead of 7.4 / 7.4 / 0.6 / 9.7 s alone. Its own
    etcd also keeps the etcd restart from reaching other tests' control planes.
    """
    async with own_control_plane() as env:
        yield env


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def load(
    chaos_env: Environment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Load]:
    """TEMPLATES templates propagated by REPLICA_COUNT supervised replicas (converged once);
    on the way out the replicas are stopped (exit 0) and what the load made is removed."""
    env = await join_members(chaos_env)
    namespace = f"chaos-{secrets.token_hex(3)}"
    await env.host.create_namespace(namespace)
    replicas = Replicas(env, tmp_path_factory.mktemp("chaos"), namespace)
    try:
        async with clusters_of(env, namespace) as clusters:
            try:
                loaded = await _propagated(clusters, replicas)
                yield loaded
                await replicas.stop()
            except BaseException:
                replicas.print_logs()
                raise
            finally:
                await replicas.cancel()
                started = anyio.current_time()
                await clusters.purge(POLICY_NAME, CLEAN_UP_TIMEOUT)
                print(f"purge of {TEMPLATES} templates took {anyio.current_time() - started:.1f}s")
    finally:
        await env.host.request("DELETE", f"/api/v1/namespaces/{namespace}")


async def _propagated(clusters: Clusters, replicas: Replicas) -> Load:
    """Start the replicas, create the policy and templates, wait for the first convergence.

    The templates come once both members are Ready: the scheduler leaves a Divided binding
    where it first put it (as Karmada's does), so one scheduled while a member is not yet known
    to be Ready would stay on the other member until its replicas change.
    """
    ns = clusters.namespace
    names = [f"web-{i:04d}" for i in range(TEMPLATES)]
    replicas.start()
    await eventually(lambda: clusters_ready(clusters.host, MEMBERS), timeout=START_TIMEOUT)
    started = anyio.current_time()
    await clusters.host.create(label_policy(POLICY_NAME, ns, LABELS))
    await bounded(partial(clusters.host.create, labelled_template(n, ns, LABELS)) for n in names)
    loaded = Load(clusters, replicas, dict.fromkeys(names, 1))
    took = await converge(clusters, set(names), PROPAGATED_TIMEOUT, loaded.expected, interval=2.0)
    wall = anyio.current_time() - started
    print(f"{len(names)} templates propagated in {wall:.1f}s (converge waited {took:.1f}s)")
    return loaded


async def _restart_etcd(env: Environment) -> None:
    assert env.etcd is not None
    await env.etcd.stop()
    await env.etcd.start(timeout=60)
    for plane in env.clusters.values():
        await _wait_ready(plane.request)


async def _restart_host_apiserver(env: Environment) -> None:
    await env.host.stop_apiserver()
    await env.host.start_apiserver()


async def _flap_member2(env: Environment) -> None:
    for _ in range(FLAPS):
        await env.members["member2"].stop_apiserver()
        await env.members["member2"].start_apiserver()


async def _wait_ready(request: Callable[[str, str], Awaitable[object]]) -> None:
    async def ready() -> bool:
        try:
            await request("GET", "/readyz")
        except Exception:  # refused, reset, 500 while etcd reconnects: not ready yet
            return False
        return True

    await eventually(ready, timeout=60, interval=0.2)


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(_restart_etcd, id="etcd-restart"),
        pytest.param(_restart_host_apiserver, id="host-apiserver-restart"),
        pytest.param(_flap_member2, id="member-apiserver-flaps"),
    ],
)
async def test_converges_after_a_control_plane_fault(load: Load, fault: Fault) -> None:
    await load.under_way(await load.wave())
    await fault(load.replicas.env)
    recovered = anyio.current_time()
    print(f"{fault.__name__}: done")
    await _converged(load, recovered)


async def test_converges_after_the_leader_is_sigkilled(load: Load) -> None:
    await load.under_way(await load.wave())
    leader = await _leader(load)
    leader.kill()
    assert await leader.exit_status(EXIT_TIMEOUT) == -signal.SIGKILL
    killed = anyio.current_time()
    print(f"SIGKILL of {leader.name}")
    await _converged(load, killed)
    assert not await changed_after_kill(load.clusters, leader)


async def _leader(load: Load) -> Replica:
    replicas = [s.current for s in load.replicas.supervisors if s.current is not None]

    async def elected() -> Replica | None:
        holder = await lease_holder(load.clusters.host, load.clusters.namespace)
        return leader_of(replicas, holder)

    return await eventually(elected, timeout=START_TIMEOUT, interval=0.1)


async def _converged(load: Load, since: float) -> None:
    """Converged within RECOVERY_BOUND of ``since``; no replica wrote without the Lease."""
    left = RECOVERY_BOUND - (anyio.current_time() - since)
    try:
        took = await converge(load.clusters, set(load.factors), left, load.expected, interval=1.0)
    except AssertionError:
        load.replicas.print_logs()
        raise
    exits = {s.name: s.exits for s in load.replicas.supervisors}
    print(
        f"converged {anyio.current_time() - since:.1f}s after recovery ({took:.1f}s of "
        f"waiting); replica exits: {exits}"
    )
    for supervisor in load.replicas.supervisors:
        for one in supervisor.incarnations:
            refused = [w for w in one.records("write") if not w["allowed"]]
            lost = [c for c in one.records("leader") if not c["leading"]]
            print(f"  {one.name}: {len(lost)} leadership losses, {len(refused)} writes refused")
            assert not writes_without_the_lease(one), writes_without_the_lease(one)[:3]
