"""End to end: the controller-manager sharded over three replicas (#14, ``--shards=auto``).

Three ``reconcile controller-manager`` processes (``tests/e2e/replicas.py``: the real CLI, each
recording every reconcile its shard guard lets through: ring key, begin, end) run with leader
election and ``--shards=auto`` on a control plane of the module's own (host + member1 + member2:
the sharder assigns every template of the host, so no other test's leftovers may be there).
TEMPLATES Deployments propagate 2:1 over both members. Then:

- every template's binding, Works and member Deployments exist exactly once (``converge``);
- each replica's cache holds exactly the templates labelled with its shard, as its /metrics
  say (``sharding_shard_objects{ring="karmada",kind="Deployment"}``), and all replicas together
  hold every template once; its member caches hold exactly those templates' member Deployments
  (``reconcile_cache_objects{cluster="member1",kind="Deployment"}``), after a handover too;
- one replica (not the leader) SIGKILLed: its templates are labelled with live shards and held
  by the survivors' caches within the lease duration + 5 s, their member Deployments taken over
  without a new generation, and converge after a change;
- a replica added: keys move to it, drained first (no key reconciled by two replicas at
  overlapping times, over the whole test, from the records), and everything converges again.

Then, with deploy/'s shard assignment webhook installed and called on the leader (two replicas,
``--shard-assignment-webhook``): every template's create answers with the shard label of its
owner, so none waits for the sharder's patch, the leader's /metrics count them, and they
propagate.
"""

from __future__ import annotations

import secrets
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import aiohttp
import anyio
import pytest
import pytest_asyncio

from controllers.cluster import clusters_ready
from controllers.execution.controller import SYNC_SUCCEEDED
from controllers.sharding import LEADER_WEIGHT, RING, template_key
from reconcile import EVENT_GVK, SharedInformer
from reconcile.metrics import CACHE_OBJECTS
from reconcile.sharding import SHARD_OBJECTS, SHARD_PREFIX, owner
from testenv import (
    Environment,
    WebhookInstallOptions,
    WebhookServing,
    eventually,
    load_manifests,
)
from testenv.ports import free_port
from testenv.webhooks import MUTATING
from tests.builders import scaled as timing
from tests.e2e.conftest import join_members, own_control_plane
from tests.e2e.convergence import (
    REPLICAS,
    Clusters,
    bounded,
    clusters_of,
    converge,
    label_policy,
    labelled_template,
    scaled,
)
from tests.e2e.replicas import (
    Replica,
    Timings,
    leader_of,
    lease_holder,
    replica,
    sharded_flags,
)
from tests.e2e.stack import DEPLOYMENT, MEMBERS

pytestmark = [
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.multicluster,
    pytest.mark.slow,
]

TEMPLATES = 300
TIMINGS = Timings(lease=timing(2.0), renew=timing(1.5), retry=timing(0.25))
REASSIGN_BOUND = TIMINGS.lease + timing(5.0)
"""#14 asks for a dead replica's templates owned elsewhere within the lease duration + 5 s; the
lease and the 5 s are stretched by TIMING_SCALE like every real-time bound of the suite (at
scale 1: 2 + 5 s). Measured 6.4-7.7 s at the default scale 2 (lease 4 s, so within 4 + 5 s
unstretched) on this 2-core machine, the machine's CPU the bottleneck: ~400 label patches of the
sharder on the host while the survivors take the keys over (docs/operations.md)."""
CONVERGE_TIMEOUT = 240.0
ADMITTED = 40
ASSIGNMENT_WEBHOOK = (
    Path(__file__).parents[2]
    / "deploy"
    / "controller-manager"
    / "optional"
    / "shard-assignment-webhook.yaml"
)
LABELS = {"e2e.reconcile.io/sharding": "true"}
POLICY = "sharded"
SHARD_LABEL = SHARD_PREFIX + RING


@dataclass
class Span:
    replica: str
    key: str
    begin: float
    end: float


@dataclass
class Fleet:
    env: Environment
    directory: Path
    namespace: str
    stack: AsyncExitStack
    templates: SharedInformer
    """The namespace's templates, watched (metadata): a relist at every look would be load on the
    host apiserver competing with the handover it times."""
    replicas: dict[str, Replica] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    waiting: str = ""

    async def add(self, name: str, *extra: str) -> Replica:
        port = free_port()
        flags = [*sharded_flags(name, port), *extra]
        started = replica(
            self.env,
            name,
            self.directory,
            lease_namespace=self.namespace,
            timings=TIMINGS,
            flags=flags,
        )
        one = await self.stack.enter_async_context(started)
        self.replicas[name], self.ports[name] = one, port
        return one

    def alive(self) -> dict[str, Replica]:
        return {n: r for n, r in self.replicas.items() if r.process.returncode is None}

    async def sample(self, name: str, metric: str) -> float | None:
        """The sample ``metric`` (name and labels, as exposed) on the replica's /metrics (None:
        not served, or no such sample)."""
        url = f"http://127.0.0.1:{self.ports[name]}/metrics"
        try:
            async with aiohttp.ClientSession() as session, session.get(url) as answer:
                text = await answer.text()
        except aiohttp.ClientError:
            return None
        for line in text.splitlines():
            if line.startswith(metric + " "):
                return float(line.split()[-1])
        return None

    async def cached_templates(self, name: str) -> float | None:
        """The Deployments the replica's cache holds, from its /metrics (None: not served)."""
        return await self.sample(name, f'{SHARD_OBJECTS}{{kind="Deployment",ring="{RING}"}}')

    def spans(self) -> list[Span]:
        return [
            Span(name, key, begin, end)
            for name, one in self.replicas.items()
            for key, begin, end in one.reconcile_spans()
        ]

    def print_logs(self) -> None:
        for one in self.replicas.values():
            print(f"replica {one.name} log ({one.log}), last lines:\n{one.tail(40)}")


def overlaps(spans: list[Span]) -> list[tuple[str, str, str]]:
    """Keys two replicas reconciled at overlapping times."""
    by_key: dict[str, list[Span]] = {}
    for span in spans:
        by_key.setdefault(span.key, []).append(span)
    found = []
    for key, group in by_key.items():
        group.sort(key=lambda s: s.begin)
        for index, first in enumerate(group):
            for second in group[index + 1 :]:
                if second.begin >= first.end:
                    break
                if second.replica != first.replica:
                    found.append((key, first.replica, second.replica))
    return found


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def sharded_env() -> AsyncIterator[Environment]:
    """A control plane of the module's own, members joined: the sharder labels every template
    of the host it runs on."""
    async with own_control_plane() as env:
        yield await join_members(env)


def assignments(fleet: Fleet) -> dict[str, str | None]:
    """Template name -> the shard its label names, as the watch shows them now."""
    return {
        t["metadata"]["name"]: (t["metadata"].get("labels") or {}).get(SHARD_LABEL)
        for t in fleet.templates.indexer.values()
    }


async def held_by_their_shards(
    fleet: Fleet, clusters: Clusters, weights: dict[str, float], count: int = TEMPLATES
) -> dict[str, int] | None:
    """Shard -> templates, once every template is on the live shard that owns its key (as the
    ring is ``weights``-ed) and each live replica's cache holds exactly its own (None until then;
    ``fleet.waiting`` says why)."""
    assigned = assignments(fleet)
    alive = sorted(fleet.alive())

    def wrong_owner(name: str, shard: str | None) -> bool:
        return shard != owner(alive, _template_key(name, clusters), weights)

    wrong = {n: s for n, s in assigned.items() if wrong_owner(n, s)}
    if len(assigned) != count or wrong:
        fleet.waiting = f"{len(assigned)} templates, {len(wrong)} not on their owner: {wrong}"
        return None
    counts = {name: sum(1 for s in assigned.values() if s == name) for name in alive}
    cached = {name: await fleet.cached_templates(name) for name in alive}
    if any(cached[name] != counts[name] for name in alive):
        fleet.waiting = f"labelled {counts}, cached {cached}"
        return None
    return counts


def _template_key(name: str, clusters: Clusters) -> str:
    key = template_key(DEPLOYMENT.kind)(
        {"metadata": {"namespace": clusters.namespace, "name": name}}
    )
    assert key is not None
    return key


async def leader_weights(fleet: Fleet, clusters: Clusters) -> dict[str, float]:
    """The ring's weights as the leader's sharder has them: its own shard lighter."""

    async def leading() -> Replica | None:
        holder = await lease_holder(clusters.host, fleet.namespace)
        return leader_of(fleet.alive().values(), holder)

    leader = await eventually(leading, timeout=60, interval=0.25)
    return {leader.name: LEADER_WEIGHT}


async def held(
    fleet: Fleet, clusters: Clusters, timeout: float, count: int = TEMPLATES
) -> dict[str, int]:
    """``held_by_their_shards``, waited for."""
    weights = await leader_weights(fleet, clusters)
    try:
        # Not too often: each look scrapes every replica's /metrics, work on their event loops.
        probe = partial(held_by_their_shards, fleet, clusters, weights, count)
        return await eventually(probe, timeout=timeout, interval=0.25)
    except AssertionError:
        raise AssertionError(f"not held within {timeout}s: {fleet.waiting}") from None


async def held_in_members(fleet: Fleet, counts: dict[str, int], timeout: float) -> None:
    """Wait until each replica's member caches hold the member Deployments of its ``counts``
    templates and no other (every template has one in each member)."""

    async def holding() -> bool:
        for name, count in counts.items():
            for member in MEMBERS:
                metric = f'{CACHE_OBJECTS}{{cluster="{member}",kind="{DEPLOYMENT.kind}"}}'
                found = await fleet.sample(name, metric)
                if found != count:
                    fleet.waiting = f"{name} holds {found} Deployments of {member}, not {count}"
                    return False
        return True

    try:
        await eventually(holding, timeout=timeout, interval=0.5)
    except AssertionError:
        raise AssertionError(f"members not held within {timeout}s: {fleet.waiting}") from None


@asynccontextmanager
async def fleet_of(env: Environment, directory: Path) -> AsyncIterator[tuple[Fleet, Clusters]]:
    """A fleet of no replica yet on a namespace of its own, its templates watched; the
    replicas' logs printed if the test fails."""
    namespace = f"shard-{secrets.token_hex(3)}"
    await env.host.create_namespace(namespace)
    async with AsyncExitStack() as stack, clusters_of(env, namespace) as clusters:
        lister = clusters.host.lister_watcher(DEPLOYMENT, namespace=namespace, metadata_only=True)
        templates = SharedInformer(lister, name="templates")
        fleet = Fleet(env, directory, namespace, stack, templates)
        async with anyio.create_task_group() as group:
            group.start_soon(templates.run)
            try:
                await templates.wait_for_sync()
                yield fleet, clusters
            except BaseException:
                fleet.print_logs()
                raise
            finally:
                group.cancel_scope.cancel()


async def stop_and_purge(fleet: Fleet, clusters: Clusters) -> None:
    """SIGTERM every live replica, each must exit 0; then remove what the templates made."""
    # Stopped first, as purge requires: running controllers re-create what it deletes.
    for one in fleet.alive().values():
        one.process.send_signal(signal.SIGTERM)
    for one in fleet.replicas.values():
        if one.killed_at is None:
            assert await one.exit_status(60) == 0, one.tail()
    await clusters.purge(POLICY, CONVERGE_TIMEOUT)


async def test_three_replicas_share_the_templates_and_hand_them_over(
    sharded_env: Environment, tmp_path: Path
) -> None:
    async with fleet_of(sharded_env, tmp_path) as (fleet, clusters):
        await _shard_and_hand_over(fleet, clusters)


async def _shard_and_hand_over(fleet: Fleet, clusters: Clusters) -> None:
    host, ns = clusters.host, clusters.namespace
    for name in ("r0", "r1", "r2"):
        await fleet.add(name)
    names = [f"web-{i:03d}" for i in range(TEMPLATES)]
    # Scheduled once, as Karmada does: a member not Ready yet would get no share for good.
    await eventually(lambda: clusters_ready(host, MEMBERS), timeout=120)
    await host.create(label_policy(POLICY, ns, LABELS, MEMBERS))
    await bounded(partial(host.create, labelled_template(n, ns, LABELS)) for n in names)
    took = await converge(clusters, set(names), CONVERGE_TIMEOUT, interval=2.0)
    print(f"{TEMPLATES} templates propagated by 3 shards in {took:.1f}s")
    counts = await held(fleet, clusters, 60)
    print(f"templates per shard: {counts}")
    assert all(counts[name] > 0 for name in ("r0", "r1", "r2")), counts
    await held_in_members(fleet, counts, 60)

    took = await _events_written(clusters)
    print(f"events of the propagation written {took:.1f}s later")
    leader = leader_of(fleet.replicas.values(), await lease_holder(host, ns))
    assert leader is not None, "no replica leads"
    victim = next(one for one in fleet.replicas.values() if one is not leader)
    generations = await _member_generations(clusters)
    applied = await _applied_events(clusters)
    victim.kill()
    killed, killed_at = anyio.current_time(), victim.killed_at or 0.0
    assert await victim.exit_status(60) == -signal.SIGKILL
    after_kill = await held(fleet, clusters, 60)
    reassigned = anyio.current_time() - killed
    print(
        f"{victim.name} SIGKILLed: its templates held elsewhere {reassigned:.1f}s later: "
        f"{after_kill}"
    )
    assert reassigned <= REASSIGN_BOUND, f"{reassigned:.1f}s > {REASSIGN_BOUND}s"
    await held_in_members(fleet, after_kill, 60)
    print(f"and their member objects {anyio.current_time() - killed:.1f}s after the kill")
    assert await _member_generations(clusters) == generations, (
        "relabelling a moved key's member objects changed what their controllers act on"
    )
    creates = [w for one in fleet.alive().values() for w in _member_creates(one, ns, killed_at)]
    assert creates == [], "the new owners created member objects that exist (each an error)"
    await _events_written(clusters)
    assert await _applied_events(clusters) == applied, "a handover reported as an apply"
    await _scale_and_converge(clusters, set(names[:30]), names)

    before_join = assignments(fleet)
    await fleet.add("r3")
    joined = await held(fleet, clusters, 90)
    now = assignments(fleet)
    moved = [n for n, shard in now.items() if shard != before_join[n]]
    print(f"r3 joined: {len(moved)} templates moved to it: {joined}")
    assert joined["r3"] > 0, "the new replica got no templates"
    assert all(now[n] == "r3" for n in moved), "keys moved only to the new replica"
    await held_in_members(fleet, joined, 60)
    await _scale_and_converge(clusters, set(names[:60]), names)
    assert overlaps(fleet.spans()) == [], "a key was reconciled by two replicas at once"
    await stop_and_purge(fleet, clusters)


async def _member_generations(clusters: Clusters) -> dict[tuple[str, str], int]:
    """(member, name) -> generation of the member Deployments: a Deployment's grows with each
    change of its spec or annotations, each a rollout check by the member's controller."""
    return {
        (member, d["metadata"]["name"]): d["metadata"]["generation"]
        for member in MEMBERS
        for d in await clusters.member_deployments(member)
    }


def _member_creates(one: Replica, namespace: str, since: float) -> list[str]:
    """The creates of member Deployments ``one`` sent since wall time ``since`` (the templates,
    the host's, are the test's own: no replica creates one)."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    return [
        r["path"]
        for r in one.records("write")
        if r["wall"] > since and r["method"] == "POST" and r["path"].split("?")[0] == path
    ]


async def _applied_events(clusters: Clusters) -> int:
    """How many times the replicas reported a Work applied, over all Events."""
    events = await clusters.host.list(EVENT_GVK)
    return sum(int(e.get("count") or 1) for e in events["items"] if e["reason"] == SYNC_SUCCEEDED)


async def _events_written(clusters: Clusters) -> float:
    """Wait until the replicas wrote the Events of what they did; returns the seconds waited. A
    broadcaster writes them one at a time, after the fact: 300 templates make about 1,500, still
    being written 4.5-6.5 s after the templates converged here, and a failover timed meanwhile
    timed that backlog too (537 Event writes in its window, against 6 once they were written)."""
    started, seen = anyio.current_time(), [-1]

    async def quiet() -> bool:
        events = await clusters.host.list(EVENT_GVK)
        written = sum(int(e.get("count") or 1) for e in events["items"])
        unchanged, seen[0] = written == seen[0], written
        return unchanged

    await eventually(quiet, timeout=CONVERGE_TIMEOUT, interval=2.0)
    return anyio.current_time() - started


async def _scale_and_converge(clusters: Clusters, doubled: set[str], names: list[str]) -> None:
    """Scale the templates ``doubled`` (some already) to twice REPLICAS; wait until every
    template converged."""
    await bounded(
        partial(
            clusters.host.patch,
            DEPLOYMENT,
            name,
            {"spec": {"replicas": 2 * REPLICAS}},
            namespace=clusters.namespace,
        )
        for name in sorted(doubled)
    )
    took = await converge(clusters, set(names), CONVERGE_TIMEOUT, scaled(doubled), interval=1.0)
    print(f"converged {took:.1f}s after scaling {len(doubled)} templates")


async def test_the_leaders_webhook_labels_templates_as_they_are_created(
    sharded_env: Environment, tmp_path: Path
) -> None:
    configuration = next(
        obj for obj in load_manifests([ASSIGNMENT_WEBHOOK]) if obj["kind"] == MUTATING
    )
    installed = WebhookInstallOptions(mutating_webhooks=[configuration])
    serving = await installed.install([sharded_env.host])
    try:
        async with fleet_of(sharded_env, tmp_path) as (fleet, clusters):
            await _assigned_at_admission(fleet, clusters, serving)
    finally:
        await installed.uninstall()


async def _assigned_at_admission(fleet: Fleet, clusters: Clusters, serving: WebhookServing) -> None:
    host, ns = clusters.host, clusters.namespace
    # What deploy/'s manifest says to add; r0 alone first, so that it leads and is called.
    webhook = [
        "--shard-assignment-webhook",
        f"--webhook-port={serving.port}",
        f"--webhook-cert-path={serving.cert_dir}",
    ]
    await fleet.add("r0", *webhook)
    assert (await leader_weights(fleet, clusters)).keys() == {"r0"}
    await fleet.add("r1")
    live = f'sharding_live_shards{{ring="{RING}"}}'
    await eventually(partial(_sample_is, fleet, "r0", live, 2.0), timeout=60, interval=0.25)
    await eventually(lambda: clusters_ready(host, MEMBERS), timeout=120)
    await host.create(label_policy(POLICY, ns, LABELS, MEMBERS))

    names = [f"admitted-{i:02d}" for i in range(ADMITTED)]
    created: dict[str, str | None] = {}

    async def create(name: str) -> None:
        answer = await host.create(labelled_template(name, ns, LABELS))
        created[name] = (answer["metadata"].get("labels") or {}).get(SHARD_LABEL)

    await bounded(partial(create, name) for name in names)
    # The create's own answer: a label the sharder patched on afterwards cannot be in it.
    weights = {"r0": LEADER_WEIGHT}
    wanted = {n: owner(["r0", "r1"], _template_key(n, clusters), weights) for n in names}
    assert created == wanted, "every template labelled with its owner as it was created"
    admitted = 0.0
    for shard in ("r0", "r1"):
        metric = f'sharding_admission_assignments_total{{ring="{RING}",shard="{shard}"}}'
        admitted += await fleet.sample("r0", metric) or 0.0
    assert admitted == ADMITTED, f"the leader counted {admitted} assignments at admission"

    await converge(clusters, set(names), CONVERGE_TIMEOUT, interval=1.0)
    counts = await held(fleet, clusters, 60, count=ADMITTED)
    assert all(counts[name] > 0 for name in ("r0", "r1")), counts
    assert overlaps(fleet.spans()) == [], "a key was reconciled by two replicas at once"
    await stop_and_purge(fleet, clusters)


async def _sample_is(fleet: Fleet, name: str, metric: str, value: float) -> bool:
    return await fleet.sample(name, metric) == value
