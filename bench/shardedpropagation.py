"""Benchmark: bench.propagation's workload with the controller-manager sharded over N replicas.

For each N of ``--replicas`` (default 1 2 3), on control planes of its own: bench.propagation's
setup (a testenv host and ``--members`` members joined, the namespace ``bench`` everywhere, one
ClusterPropagationPolicy dividing its Deployments among the members, the members' Deployment
controller played by the parent), then N ``reconcile controller-manager --leader-elect
--shards=auto`` processes, each ``tests/e2e/manager_process.py`` (the real CLI, recording every
reconcile its shard guard lets through: ring key, begin, end). A first Deployment warms them up;
then ``--templates`` Deployments are created by ``--concurrency`` writers and waited for until
every binding is FullyApplied and every template aggregated (wall: first create to the last).

The leader's shard takes ``--leader-weight`` of a share (the replicas' ``--shard-leader-weight``;
default ``controllers.sharding.LEADER_WEIGHT``). Per replica, after the bulk: RSS (VmRSS) warm
and after, the cache part (after - warm), peak (VmHWM), and the templates its cache holds (its
``sharding_shard_objects`` on /metrics); the leader also runs the sharder, whose metadata cache
holds every object of the ring. The cache part is compared with N = 1's against the goal of #14
(≤ 1.2/N of it).

Then, with N = ``--kill`` (default 3; 0: none), one more run in which, once half of the
templates are created, one replica that does not lead is SIGKILLed; failover is the time from the
kill until every template it held is labelled with its owner among the survivors (rendezvous, as
the sharder decides; watched, not polled). At the end of every run: overlaps — a key reconciled by
two replicas at overlapping times, from the records (a SIGKILLed replica's unfinished reconciles
last until the kill); must be 0 — and every template is present in every member (member names
are unique, so once each).

Run from the repository root: ``.venv/bin/python -m bench.shardedpropagation [--templates N]``
(docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

if not __package__:  # run as a script: make ``bench`` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._cluster import create_namespace, run_parallel
from bench._workload import rss_kib, say
from bench.propagation import (
    DEPLOYMENT,
    NAMESPACE,
    WARM_TIMEOUT,
    Host,
    _client,
    _prepare,
    bulk_name,
    deployment,
    member_names,
    single,
    watch_clusters,
)
from bench.sharding import Span, overlaps
from controllers.api import crd_paths
from controllers.sharding import LEADER_WEIGHT, RING, template_key
from reconcile import Client, SharedInformer, configure_logging
from reconcile.metrics import CACHE_OBJECTS
from reconcile.sharding import SHARD_OBJECTS, SHARD_PREFIX, owner
from testenv import Environment
from testenv.ports import free_port
from tests.e2e.replicas import (
    Replica,
    Timings,
    leader_of,
    lease_holder,
    replica,
    sharded_flags,
)

__all__ = ["main"]

LEASES: Final = "bench-leases"
SHARD_LABEL: Final = SHARD_PREFIX + RING
STOP_TIMEOUT: Final = 60.0
FAILOVER_TIMEOUT: Final = 300.0


@dataclass
class ReplicaFigures:
    """One replica's figures at the end of its run."""

    name: str
    leader: bool
    templates: float
    member_objects: float
    """Member Deployments its member caches hold, all members together."""
    warm_mib: float
    after_mib: float
    peak_mib: float
    killed: bool = False

    @property
    def cache_mib(self) -> float:
        return self.after_mib - self.warm_mib


@dataclass
class RunFigures:
    """What one run with ``count`` replicas measured."""

    count: int
    templates: int
    kill: bool = False
    fully_applied: float = 0.0
    aggregated: float = 0.0
    replicas: list[ReplicaFigures] = field(default_factory=list)
    failover: float | None = None
    moved: int = 0
    overlaps: int = 0
    missing: int = 0


@dataclass
class _Fleet:
    """The run's replicas, their metrics ports and the templates' labels (watched)."""

    env: Environment
    directory: Path
    timings: Timings
    stack: AsyncExitStack
    labels: SharedInformer
    leader_weight: float = LEADER_WEIGHT
    replicas: dict[str, Replica] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    warm: dict[str, float] = field(default_factory=dict)

    async def add(self, name: str) -> None:
        port = free_port()
        weight = f"--shard-leader-weight={self.leader_weight}"
        flags = [*sharded_flags(name, port), weight, "--log-level=WARNING"]
        started = replica(
            self.env,
            name,
            self.directory,
            lease_namespace=LEASES,
            timings=self.timings,
            flags=flags,
        )
        self.replicas[name] = await self.stack.enter_async_context(started)
        self.ports[name] = port

    def assigned(self) -> dict[str, str | None]:
        """Template name → the shard its label names, as watched now."""
        return {
            obj["metadata"]["name"]: (obj["metadata"].get("labels") or {}).get(SHARD_LABEL)
            for obj in self.labels.indexer.values()
        }

    def spans(self) -> list[Span]:
        return [
            Span(begin, end, name, key)
            for name, one in self.replicas.items()
            for key, begin, end in one.reconcile_spans()
        ]


def _key(name: str) -> str:
    key = template_key(DEPLOYMENT.kind)({"metadata": {"namespace": NAMESPACE, "name": name}})
    assert key is not None
    return key


async def _held(port: int, members: Sequence[str]) -> tuple[float, float]:
    """The templates a replica's cache holds and the member Deployments its member caches hold,
    from its /metrics."""

    def get() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text: str = answer.read().decode()
            return text

    samples = dict(
        line.rsplit(" ", 1)
        for line in (await anyio.to_thread.run_sync(get)).splitlines()
        if line and not line.startswith("#")
    )
    templates = samples.get(f'{SHARD_OBJECTS}{{kind="Deployment",ring="{RING}"}}', "0")
    held = (
        samples.get(f'{CACHE_OBJECTS}{{cluster="{m}",kind="Deployment"}}', "0") for m in members
    )
    return float(templates), sum(float(value) for value in held)


async def _until(probe: Any, timeout: float, interval: float = 0.05) -> None:
    with anyio.fail_after(timeout):
        while not probe():
            await anyio.sleep(interval)


async def _kill_when_half_created(
    fleet: _Fleet, host: Client, created: list[int], total: int, figures: RunFigures
) -> None:
    """SIGKILL a replica that does not lead once half the bulk exists; time its handover."""
    await _until(lambda: created[0] >= total // 2, FAILOVER_TIMEOUT)
    leader = leader_of(fleet.replicas.values(), await lease_holder(host, LEASES))
    victim = next(r for r in fleet.replicas.values() if r is not leader)
    held = {name for name, shard in fleet.assigned().items() if shard == victim.name}
    victim.kill()
    killed = time.monotonic()
    figures.moved = len(held)
    say(f"  SIGKILLed {victim.name} holding {len(held)} templates")

    survivors = [name for name in fleet.replicas if name != victim.name]
    weights = {leader.name: fleet.leader_weight} if leader is not None else {}

    def handed_over() -> bool:
        assigned = fleet.assigned()
        return all(assigned.get(n) == owner(survivors, _key(n), weights) for n in held)

    await _until(handed_over, FAILOVER_TIMEOUT)
    figures.failover = time.monotonic() - killed


async def _bulk(
    args: argparse.Namespace, fleet: _Fleet, client: Client, host: Host, figures: RunFigures
) -> None:
    names = {bulk_name(index) for index in range(args.templates)}
    created = [0]

    async def create(index: int) -> None:
        await client.create(deployment(bulk_name(index), args.members))
        created[0] += 1

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        if figures.kill:
            group.start_soon(
                _kill_when_half_created, fleet, client, created, args.templates, figures
            )
        await run_parallel(args.templates, args.concurrency, create)
        timeout = max(WARM_TIMEOUT, args.templates * 3.0)
        figures.fully_applied = await host.fully_applied.wait(names, timeout) - started
        figures.aggregated = await host.aggregated.wait(names, timeout) - started


async def _replica_figures(
    fleet: _Fleet, host: Client, members: Sequence[str]
) -> list[ReplicaFigures]:
    leader = leader_of(fleet.replicas.values(), await lease_holder(host, LEASES))
    found = []
    for name, one in fleet.replicas.items():
        if one.process.returncode is not None:
            found.append(ReplicaFigures(name, False, 0, 0, fleet.warm[name], 0, 0, killed=True))
            continue
        rss, peak = rss_kib(one.process.pid)
        templates, in_members = await _held(fleet.ports[name], members)
        warm = fleet.warm[name]
        found.append(
            ReplicaFigures(
                name, one is leader, templates, in_members, warm, rss / 1024, peak / 1024
            )
        )
    return found


async def _run(args: argparse.Namespace, count: int, *, kill: bool = False) -> RunFigures:
    figures = RunFigures(count, args.templates, kill=kill)
    names = member_names(args.members)
    lease = args.lease
    timings = Timings(lease=lease, renew=lease * 0.75, retry=lease / 8)
    async with (
        Environment(members=names, crd_paths=crd_paths()) as env,
        AsyncExitStack() as stack,
    ):
        host_client = await _client(env.host)
        stack.push_async_callback(host_client.close)
        member_clients = {name: await _client(env.members[name]) for name in names}
        for client in member_clients.values():
            stack.push_async_callback(client.close)
        await _prepare(host_client, member_clients, env)
        await create_namespace(host_client, LEASES)
        lister = host_client.lister_watcher(DEPLOYMENT, namespace=NAMESPACE, metadata_only=True)
        # Kept: the replicas' logs and records are where a slow or failed run says why.
        directory = Path(tempfile.mkdtemp(prefix="bench-sharded-"))
        say(f"{count} replica(s): logs and records in {directory}")
        labels = SharedInformer(lister, name="labels")
        fleet = _Fleet(env, directory, timings, stack, labels, args.leader_weight)
        async with anyio.create_task_group() as group:
            host, members = await watch_clusters(group, host_client, member_clients)
            group.start_soon(fleet.labels.run)
            for index in range(count):
                await fleet.add(f"r{index}")
            await host.ready.wait(set(names), WARM_TIMEOUT)
            await single(host_client, members, "warmup", WARM_TIMEOUT)
            await host.aggregated.wait({"warmup"}, WARM_TIMEOUT)
            for name, one in fleet.replicas.items():
                fleet.warm[name] = rss_kib(one.process.pid)[0] / 1024
            say(f"{count} replica(s) warm; bulk of {args.templates} ...")
            await _bulk(args, fleet, host_client, host, figures)
            figures.replicas = await _replica_figures(fleet, host_client, names)
            every = {bulk_name(index) for index in range(args.templates)}
            figures.missing = sum(len(every - member.seen.times.keys()) for member in members)
            figures.overlaps = len(overlaps(fleet.spans()))
            await _stop(fleet)
            group.cancel_scope.cancel()
    return figures


async def _stop(fleet: _Fleet) -> None:
    for one in fleet.replicas.values():
        if one.process.returncode is None:
            one.process.send_signal(signal.SIGTERM)
    for one in fleet.replicas.values():
        if one.killed_at is None:
            await one.exit_status(STOP_TIMEOUT)


def _one_cache(runs: Sequence[RunFigures]) -> float | None:
    base = {run.count: run for run in runs if not run.kill}.get(1)
    return base.replicas[0].cache_mib if base and base.replicas else None


def _report(runs: Sequence[RunFigures]) -> None:
    for run in runs:
        _report_run(run, _one_cache(runs))


def _report_run(run: RunFigures, one_cache: float | None) -> None:
    """One run's figures (cache parts against ``one_cache``, N = 1's, when known)."""
    n = run.templates
    killed = ", one SIGKILLed mid-bulk" if run.kill else ""
    say(f"\n{run.count} replica(s){killed}, {n} templates:")
    for what, took in (("FullyApplied", run.fully_applied), ("aggregated", run.aggregated)):
        say(f"  first create to all {what:<12} {took:8.1f} s ({n / took:.1f}/s)")
    for one in run.replicas:
        if one.killed:
            say(f"  {one.name}: SIGKILLed")
            continue
        ratio = f"{one.cache_mib / one_cache:.2f}" if one_cache else "-"
        say(
            f"  {one.name}{' (leader)' if one.leader else '':9} templates {one.templates:6.0f}"
            f" (member objects {one.member_objects:6.0f})"
            f"  RSS warm {one.warm_mib:6.1f} after {one.after_mib:6.1f} MiB"
            f"  cache part {one.cache_mib:6.1f} MiB ({ratio} of N=1; goal"
            f" {1.2 / run.count:.2f})  peak {one.peak_mib:6.1f} MiB"
        )
    if run.failover is not None:
        moved = f"{run.moved} templates owned elsewhere"
        say(f"  failover: {moved} {run.failover:.1f} s after the kill")
    say(f"  overlaps {run.overlaps} (must be 0); templates missing in members {run.missing}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--templates", type=int, default=10_000)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument(
        "--replicas", type=int, nargs="*", default=[1, 2, 3], help="replica counts (none: --kill)"
    )
    parser.add_argument(
        "--kill", type=int, default=3, help="then a run of N replicas, one SIGKILLed (0: none)"
    )
    parser.add_argument("--concurrency", type=int, default=20, help="parallel creators")
    parser.add_argument("--lease", type=float, default=4.0, help="shard Lease duration, seconds")
    parser.add_argument(
        "--leader-weight",
        type=float,
        default=LEADER_WEIGHT,
        help=f"the replicas' --shard-leader-weight (default {LEADER_WEIGHT})",
    )
    return parser.parse_args(argv)


def main() -> None:
    """Run every replica count in turn and print the figures."""
    args = parse_args()
    configure_logging(level="WARNING")
    runs: list[RunFigures] = []

    async def run_all() -> None:
        counts = [(count, False) for count in args.replicas]
        for count, kill in counts + ([(args.kill, True)] if args.kill else []):
            runs.append(await _run(args, count, kill=kill))
            # As each run ends: a long series stopped early keeps what it measured.
            _report_run(runs[-1], _one_cache(runs))

    anyio.run(run_all)
    say(f"\nleader weight {args.leader_weight}; all runs:")
    _report(runs)
    if any(run.overlaps or run.missing for run in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
