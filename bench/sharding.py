"""Benchmark: ConfigMaps sharded over 1, 2 and 3 replica processes, and one replica SIGKILLed.

The parent starts one testenv control plane and creates ``--objects`` ConfigMaps of about 2 KB in
one namespace (``--concurrency`` parallel creators). Each run then spawns N replicas at once, each a
subprocess of its own (so memory never mixes): a Manager with leader election (short lease
timings, as the integration test's), a ``Shard`` named after the replica, a ``Sharder`` of one ring
over those ConfigMaps (a ring name per run, so runs never see each other's labels), and a
controller on ConfigMaps behind ``shard.guard(...)`` whose reconcile reads the object from the
cache and appends (replica, key, start, end) to a JSONL file of its own: a line when it begins
and one when it ends, each written at once, so a SIGKILLed replica leaves its open reconciles
behind as begun-but-unended (they count as running until the kill).

Per run the parent measures:

- wall: from spawning the replicas to every object labelled with its owner (rendezvous over the
  live shards), undrained, and reconciled once by that owner (the end of the last such first
  reconcile, from the records; the clocks agree: CLOCK_MONOTONIC is system-wide on Linux);
- per replica, after its shard settled: RSS after ``gc.collect()`` (reported by the child on
  SIGUSR1), the objects in its cache (its registry's ``sharding_shard_objects``), and the cache
  part: that RSS minus the child's own RSS just before its manager started (after imports and
  the manager's construction, no informer yet). The leader also caches the metadata of every
  object of the ring (its sharder), which shows in its figures;
- with N = 3 (``--kill``): one replica (not the leader, unless ``--kill-leader``) is SIGKILLed once
  settled; failover is the time until each of its keys is labelled with a live shard (polled) and
  reconciled there (from the records);
- overlaps: two replicas reconciling one key at overlapping times, over all records of the run
  (must be 0); and at the end each object is labelled with exactly one live shard and the live
  replicas' caches together hold every object once.

Run from the repository root: ``.venv/bin/python -m bench.sharding [--objects N]``
(``--replicas 1 2 3`` by default; ``--json PATH`` also writes the figures as JSON; the last
stdout line is ``RESULT <json>``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Final

if not __package__:  # run as a script: make ``bench`` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio
import anyio.abc

from bench._cluster import CONFIGMAP, create_configmaps, create_namespace
from bench._workload import NAMESPACE, rss_kib, say
from reconcile import (
    Client,
    ClusterConfig,
    ControllerOptions,
    Manager,
    ManagerOptions,
    NotFound,
    Request,
    Unlimited,
    configure_logging,
    controller_managed_by,
)
from reconcile.sharding import SHARD_OBJECTS, Ring, Shard, ShardedKind, Sharder, object_key, owner
from testenv import Environment

__all__ = ["Span", "main", "merge_spans", "overlaps", "parse_args"]

ROOT: Final = Path(__file__).resolve().parents[1]
NAME_PREFIX: Final = "cm-"
SETTLE_TIMEOUT: Final = 600.0
STOP_TIMEOUT: Final = 30.0
POLL: Final = 1.0
"""Seconds between the parent's checks of the labels (a metadata-only list of every object)."""


# --- records -------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Span:
    """One reconcile: which replica reconciled which key, from start to end (monotonic s)."""

    start: float
    end: float
    replica: str
    key: str


def merge_spans(lines: Iterable[Mapping[str, Any]], cut: Mapping[str, float]) -> list[Span]:
    """The spans of begin lines (``e`` null) and end lines (``e`` set) of reconciles.

    A reconcile that began but never ended lasts until its replica's ``cut`` (the time it was
    killed), or for ever when it has none: it may still be running.
    """
    ends: dict[tuple[str, str, float], float | None] = {}
    for line in lines:
        ident = (str(line["r"]), str(line["k"]), float(line["s"]))
        end = line.get("e")
        if end is not None or ident not in ends:
            ends[ident] = None if end is None else float(end)
    return sorted(
        Span(start, cut.get(replica, math.inf) if end is None else end, replica, key)
        for (replica, key, start), end in ends.items()
    )


def overlaps(spans: Iterable[Span]) -> list[tuple[str, str, str]]:
    """(key, replica, other replica) for each pair of spans of one key, of two replicas, that
    overlap in time."""
    by_key: dict[str, list[Span]] = {}
    for span in spans:
        by_key.setdefault(span.key, []).append(span)
    found = []
    for key, listed in by_key.items():
        running: list[Span] = []
        for span in sorted(listed):
            running = [other for other in running if other.end > span.start]
            found += [(key, o.replica, span.replica) for o in running if o.replica != span.replica]
            running.append(span)
    return found


def first_ends(spans: Iterable[Span], after: float = -math.inf) -> dict[tuple[str, str], float]:
    """(replica, key) → the end of that replica's first reconcile of key begun after ``after``."""
    first: dict[tuple[str, str], float] = {}
    for span in spans:
        if span.start > after and span.end < first.get((span.replica, span.key), math.inf):
            first[(span.replica, span.key)] = span.end
    return first


class _Tail:
    """The lines a replica's JSONL file gained since the last read (complete lines only)."""

    def __init__(self, path: Path) -> None:
        self.path, self._offset, self.lines = path, 0, list[dict[str, Any]]()

    def read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as stream:
            stream.seek(self._offset)
            chunk = stream.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        self.lines += [json.loads(line) for line in complete.splitlines() if line]


# --- the replica (child) -------------------------------------------------------------------------


def _ring(name: str) -> Ring:
    def key(obj: Mapping[str, Any]) -> str | None:
        # Only the bench's ConfigMaps: the sharder sees every ConfigMap of the cluster.
        metadata = obj["metadata"]
        ours = metadata.get("namespace") == NAMESPACE
        return object_key(obj) if ours and metadata["name"].startswith(NAME_PREFIX) else None

    return Ring(name, kinds=(ShardedKind(CONFIGMAP, key=key),))


def _recorder(replica: str, out: IO[str], manager: Manager, hold: float) -> Any:
    def write(key: str, start: float, end: float | None) -> None:
        out.write(json.dumps({"r": replica, "k": key, "s": start, "e": end}) + "\n")

    async def reconcile(request: Request) -> None:
        start, key = time.monotonic(), f"{request.namespace}/{request.name}"
        write(key, start, None)
        with contextlib.suppress(NotFound):  # deleted: still a reconcile of the key
            await manager.client.get(CONFIGMAP, request.name, namespace=request.namespace)
        if hold:
            await anyio.sleep(hold)
        write(key, start, time.monotonic())

    return reconcile


def _manager(config: ClusterConfig, args: argparse.Namespace) -> Manager:
    options = ManagerOptions(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=f"sharder-{args.ring}",
        leader_election_namespace=NAMESPACE,
        leader_election_release_on_cancel=True,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
    )
    return Manager(config, options=options)


async def _replica(args: argparse.Namespace) -> None:
    config = await ClusterConfig.from_kubeconfig(args.kubeconfig)
    manager, ring = _manager(config, args), _ring(args.ring)
    timings = {
        "lease_duration": args.lease_duration,
        "renew_deadline": args.renew_deadline,
        "retry_period": args.retry_period,
    }
    shard = Shard(manager, ring, name=args.child, namespace=NAMESPACE, **timings)
    manager.add(shard)
    sharder = Sharder(
        manager,
        ring,
        namespace=NAMESPACE,
        workers=args.sharder_workers,
        leader_shard=args.child,
        leader_weight=args.leader_weight,
    )
    manager.add(sharder)
    with (args.out / f"{args.child}.jsonl").open("w", buffering=1) as out:
        options = ControllerOptions(need_leader_election=False, max_concurrent_reconciles=4)
        (
            controller_managed_by(manager)
            .named(f"configmaps-{args.child}")
            .for_(CONFIGMAP)
            .with_options(options)
            .complete(shard.guard(CONFIGMAP, _recorder(args.child, out, manager, args.hold)))
        )
        gc.collect()
        say("BASELINE", rss_kib()[0])
        async with anyio.create_task_group() as group:
            group.start_soon(_announce_leader, manager)
            group.start_soon(_answer_samples, manager, ring)
            await manager.run_until_signalled()
            group.cancel_scope.cancel()


async def _announce_leader(manager: Manager) -> None:
    await manager.elected.wait()
    say("LEADER")


async def _answer_samples(manager: Manager, ring: Ring) -> None:
    """On each SIGUSR1: ``SAMPLE <RSS KiB after gc> <objects in the shard's cache>``."""
    labels = {"ring": ring.name, "kind": CONFIGMAP.kind}
    with anyio.open_signal_receiver(signal.SIGUSR1) as signals:
        async for _ in signals:
            gc.collect()
            objects = manager.registry.get_sample_value(SHARD_OBJECTS, labels) or 0
            say("SAMPLE", rss_kib()[0], int(objects))


# --- the parent ----------------------------------------------------------------------------------


@dataclass
class _Child:
    """A running replica and what it said on stdout."""

    name: str
    process: anyio.abc.Process
    tail: _Tail
    baseline_kib: int = 0
    leader: bool = False
    samples: list[tuple[int, int]] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)
    killed_at: float | None = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        pending = b""
        async for chunk in self.process.stdout:
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self._line(line.decode(errors="replace").split())

    def _line(self, words: list[str]) -> None:
        if words[:1] == ["BASELINE"]:
            self.baseline_kib = int(words[1])
        elif words[:1] == ["LEADER"]:
            self.leader = True
        elif words[:1] == ["SAMPLE"]:
            self.samples.append((int(words[1]), int(words[2])))
        self.changed.set()
        self.changed = anyio.Event()

    async def sample(self) -> tuple[int, int]:
        """(RSS KiB after gc, objects in its cache), asked of the child now."""
        before = len(self.samples)
        self.process.send_signal(signal.SIGUSR1)
        with anyio.fail_after(STOP_TIMEOUT):
            while len(self.samples) == before:
                await self.changed.wait()
        return self.samples[-1]


@dataclass
class ReplicaFigures:
    """One replica's memory once its shard settled (MiB) and the objects its cache held."""

    name: str
    leader: bool
    baseline_mib: float
    rss_mib: float
    cache_part_mib: float
    objects: int


@dataclass
class RunFigures:
    """One run with N replicas."""

    replicas: int
    wall_seconds: float
    members: list[ReplicaFigures]
    overlaps: int = 0
    failover: dict[str, Any] = field(default_factory=dict)

    def max_cache_part(self) -> float:
        """The largest cache part among the replicas (MiB)."""
        return max(member.cache_part_mib for member in self.members)


class _Run:
    """N replicas of one ring against the filled cluster."""

    def __init__(self, args: argparse.Namespace, client: Client, count: int) -> None:
        self.args, self.client, self.count = args, client, count
        self.ring = _ring(f"bench-n{count}-{secrets.token_hex(3)}")
        self.out = args.out / self.ring.name
        self.children: dict[str, _Child] = {}

    async def spawn(self, group: anyio.abc.TaskGroup) -> None:
        self.out.mkdir(parents=True)
        for index in range(self.count):
            name = f"r{index}"
            argv = [sys.executable, "-m", "bench.sharding", "--child", name]
            argv += ["--kubeconfig", str(self.args.kubeconfig), "--ring", self.ring.name]
            argv += ["--out", str(self.out), "--hold", str(self.args.hold)]
            argv += ["--sharder-workers", str(self.args.sharder_workers)]
            argv += ["--leader-weight", str(self.args.leader_weight)]
            argv += [f"--{flag}={getattr(self.args, flag.replace('-', '_'))}" for flag in _LEASE]
            process = await anyio.open_process(argv, cwd=ROOT, stderr=None)
            child = _Child(name, process, _Tail(self.out / f"{name}.jsonl"))
            self.children[name] = child
            group.start_soon(child.read)

    def live(self) -> list[str]:
        """The replicas not killed."""
        return [name for name, child in self.children.items() if child.killed_at is None]

    def owner(self, live: list[str], key: str) -> str | None:
        """The owner of ``key`` among ``live`` as the leader's sharder weighs them."""
        weights = {
            name: self.args.leader_weight
            for name, child in self.children.items()
            if child.leader and child.killed_at is None
        }
        return owner(live, key, weights)

    def spans(self) -> list[Span]:
        """Every reconcile of the run so far."""
        cut = {c.name: c.killed_at for c in self.children.values() if c.killed_at is not None}
        lines = [line for child in self.children.values() for line in child.tail.lines]
        return merge_spans(lines, cut)

    async def assignments(self) -> dict[str, tuple[str | None, bool]]:
        """key → (shard label, drain label set) of every bench ConfigMap."""
        listed = await self.client.list(CONFIGMAP, namespace=NAMESPACE, metadata_only=True)
        found = {}
        for item in listed["items"]:
            labels = item["metadata"].get("labels") or {}
            if item["metadata"]["name"].startswith(NAME_PREFIX):
                key = object_key(item) or ""
                found[key] = (labels.get(self.ring.shard_label), self.ring.drain_label in labels)
        return found

    async def settle(self, keys: set[str] | None = None, after: float = -math.inf) -> float:
        """Wait until every object is labelled with its owner among the live replicas, undrained,
        and each of ``keys`` (default: all) was reconciled by its owner after ``after``; returns
        the end of the last of those reconciles (monotonic)."""
        with anyio.fail_after(SETTLE_TIMEOUT):
            while True:
                last = await self._settled(keys, after)
                if last is not None:
                    return last
                await anyio.sleep(POLL)

    async def _settled(self, keys: set[str] | None, after: float) -> float | None:
        for child in self.children.values():
            child.tail.read()
        live, assigned = self.live(), await self.assignments()
        if len(assigned) != self.args.objects:
            return None
        if any(drain or shard != self.owner(live, key) for key, (shard, drain) in assigned.items()):
            return None
        firsts, last = first_ends(self.spans(), after), -math.inf
        for key in assigned if keys is None else keys:
            end = firsts.get((str(self.owner(live, key)), key))
            if end is None:
                return None
            last = max(last, end)
        return last

    async def members(self) -> list[ReplicaFigures]:
        """Each live replica's figures, once its cache holds exactly its shard's objects."""
        assigned = await self.assignments()
        wanted = dict.fromkeys(self.live(), 0)
        for shard, _ in assigned.values():
            wanted[str(shard)] = wanted.get(str(shard), 0) + 1
        figures = []
        for name in self.live():
            child = self.children[name]
            with anyio.fail_after(SETTLE_TIMEOUT):
                while (sample := await child.sample())[1] != wanted[name]:
                    await anyio.sleep(POLL)
            rss, objects = sample
            part = (rss - child.baseline_kib) / 1024
            figures.append(
                ReplicaFigures(
                    name, child.leader, child.baseline_kib / 1024, rss / 1024, part, objects
                )
            )
        return figures

    async def stop(self) -> None:
        """SIGTERM every live replica and wait for it (SIGKILL after ``STOP_TIMEOUT``)."""
        for child in self.children.values():
            if child.killed_at is None and child.process.returncode is None:
                child.process.send_signal(signal.SIGTERM)
        for child in self.children.values():
            with anyio.move_on_after(STOP_TIMEOUT) as scope:
                await child.process.wait()
            if scope.cancelled_caught:
                child.process.kill()
                await child.process.wait()
        for child in self.children.values():
            child.tail.read()


_LEASE: Final = ("lease-duration", "renew-deadline", "retry-period")


async def _one_run(args: argparse.Namespace, client: Client, count: int) -> RunFigures:
    run = _Run(args, client, count)
    async with anyio.create_task_group() as group:
        started = time.monotonic()
        await run.spawn(group)
        try:
            wall = await run.settle() - started
            say(f"N={count}: settled, every object reconciled by its owner after {wall:.1f} s")
            figures = RunFigures(count, wall, await run.members())
            if count == args.kill:
                figures.failover = await _failover(run, args.kill_leader)
        finally:
            await run.stop()
    figures.overlaps = len(overlaps(run.spans()))
    return figures


async def _failover(run: _Run, kill_leader: bool) -> dict[str, Any]:
    """SIGKILL one replica; time until its keys are owned and reconciled elsewhere."""
    victim = next(c for c in run.children.values() if c.leader == kill_leader)
    before = await run.assignments()
    keys = {key for key, (shard, _) in before.items() if shard == victim.name}
    victim.process.kill()
    victim.killed_at = killed = time.monotonic()
    say(f"N={run.count}: SIGKILLed {victim.name} (leader: {victim.leader}), {len(keys)} keys")
    labelled = await _labelled_live(run, keys) - killed
    reconciled = await run.settle(keys, after=killed) - killed
    members = await run.members()
    assigned = await run.assignments()
    live = set(run.live())
    return {
        "victim": victim.name,
        "victim_was_leader": victim.leader,
        "keys": len(keys),
        "labelled_seconds": labelled,
        "reconciled_seconds": reconciled,
        "assigned_to_one_live_shard": all(shard in live for shard, _ in assigned.values()),
        "cached_once": sum(m.objects for m in members) == len(assigned),
        "members": [asdict(m) for m in members],
    }


async def _labelled_live(run: _Run, keys: set[str]) -> float:
    """When (monotonic, at the poll's resolution) every one of ``keys`` is labelled with a live
    shard, undrained."""
    live = set(run.live())
    with anyio.fail_after(SETTLE_TIMEOUT):
        while True:
            assigned = await run.assignments()
            if all(assigned[k][0] in live and not assigned[k][1] for k in keys):
                return time.monotonic()
            await anyio.sleep(POLL / 4)


def _report(runs: Sequence[RunFigures]) -> dict[str, Any]:
    base = next((run.max_cache_part() for run in runs if run.replicas == 1), None)
    columns = f"{'wall s':>7} {'replica':>8} {'RSS MiB':>8} {'base MiB':>9} {'cache MiB':>10}"
    print(f"\n{'N':>2} {columns} {'objects':>7}")
    for run in runs:
        for member in run.members:
            tag = member.name + ("*" if member.leader else "")
            print(
                f"{run.replicas:>2} {run.wall_seconds:7.1f} {tag:>8} {member.rss_mib:8.1f}"
                f" {member.baseline_mib:9.1f} {member.cache_part_mib:10.1f} {member.objects:>7}"
            )
    print("(* the leader, which also runs the sharder; cache = RSS after sync minus base)")
    ratios = {}
    for run in runs:
        rss = max(member.rss_mib for member in run.members)
        ratio = run.max_cache_part() / base if base else math.nan
        followers = [m.cache_part_mib for m in run.members if not m.leader]
        follower = max(followers) / base if base and followers else math.nan
        ratios[run.replicas] = {"max": ratio, "max_non_leader": follower}
        print(
            f"N={run.replicas}: max RSS {rss:.1f} MiB, max cache part {run.max_cache_part():.1f}"
            f" MiB, ratio to N=1 {ratio:.2f} (goal <= {1.2 / run.replicas:.2f};"
            f" non-leaders {follower:.2f}), overlaps {run.overlaps}"
        )
        if run.failover:
            fail = run.failover
            print(
                f"N={run.replicas} failover of {fail['victim']} ({fail['keys']} keys): labelled"
                f" live {fail['labelled_seconds']:.1f} s, reconciled there"
                f" {fail['reconciled_seconds']:.1f} s; one live shard each:"
                f" {fail['assigned_to_one_live_shard']}, cached once: {fail['cached_once']}"
            )
    return {"runs": [asdict(run) for run in runs], "cache_part_ratio": ratios}


async def _parent(args: argparse.Namespace) -> None:
    async with Environment() as env:
        args.kubeconfig = env.host.kubeconfig
        args.out = env.host.directory / "sharding-bench"
        config = await ClusterConfig.from_kubeconfig(args.kubeconfig)
        async with Client(config, limiter=Unlimited()) as client:
            await create_namespace(client)
            seconds = await create_configmaps(client, args.objects, concurrency=args.concurrency)
            say(f"created {args.objects} ConfigMaps in {seconds:.1f} s")
            runs = [await _one_run(args, client, count) for count in args.replicas]
    result = _report(runs)
    result.update(
        objects=args.objects,
        sharder_workers=args.sharder_workers,
        lease_duration=args.lease_duration,
        date=time.strftime("%Y-%m-%d"),
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    say("RESULT", json.dumps(result))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line of the parent (and, hidden, of a replica)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20, help="parallel creators")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--kill", type=int, default=3, help="SIGKILL one replica in this run")
    parser.add_argument("--kill-leader", action="store_true", help="kill the leader instead")
    parser.add_argument("--hold", type=float, default=0.0, help="seconds each reconcile sleeps")
    parser.add_argument(
        "--leader-weight",
        type=float,
        default=0.4,
        help="the leader's shard's share of keys against 1 (default 0.4: a ConfigMap costs a "
        "shard about 3 KB, the sharder's view of it 1 KB)",
    )
    parser.add_argument(
        "--sharder-workers", type=int, default=4, help="concurrent label patches (Sharder's)"
    )
    parser.add_argument("--lease-duration", type=float, default=4.0)
    parser.add_argument("--renew-deadline", type=float, default=3.0)
    parser.add_argument("--retry-period", type=float, default=0.5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ring", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if any(count < 1 for count in args.replicas) or args.objects < 1:
        parser.error("--objects and --replicas must be positive")
    if args.kill in args.replicas and args.kill < 2:
        parser.error("--kill needs a run of at least 2 replicas (a survivor)")
    return args


def main() -> None:
    """Parse the command line; run the parent, or one replica."""
    args = parse_args()
    if args.child:
        configure_logging(level=os.environ.get("BENCH_LOG_LEVEL", "WARNING"))
        anyio.run(_replica, args)
    else:
        anyio.run(_parent, args)


if __name__ == "__main__":
    main()
