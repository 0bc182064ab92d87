"""Benchmark: Deployments propagated by one ClusterPropagationPolicy from a host to N members.

testenv starts a host and ``--members`` members (default 2; real kube-apiservers on one etcd)
with the Karmada CRDs; the parent joins every member, creates the namespace ``bench``
everywhere and one ClusterPropagationPolicy dividing every Deployment of that namespace between
the members with equal static weights,
then runs ``reconcile controller-manager`` as a child process of its own (all controllers, so its
memory is measured alone, from ``/proc/<pid>/status``).

testenv runs no kube-controller-manager, so the parent plays each member's Deployment
controller: a watch on each member's Deployments writes the status of every Deployment whose
status does not yet match its spec (replicas, updated/ready/available = spec.replicas,
observedGeneration = generation; one merge patch each). The parent also watches the host's
ResourceBindings and Deployments. Phases:

1. setup: control planes, join, policy, the controller-manager started, both Clusters Ready, and
   a first Deployment created and present in both members (its latency is printed as "cold");
2. bulk: ``--templates`` Deployments created by ``--concurrency`` writers; measured from the
   first create to every binding FullyApplied, and to every template aggregated (its
   ``status.readyReplicas`` equals ``spec.replicas``: the members' statuses summed on the host),
   with the throughput of each thousand templates in the order they arrived, so a rate that
   falls as the number of objects grows shows;
3. latency: once the controller-manager's work queues are empty (the bulk's trailing reconciles
   done; the wait is printed), ``--samples`` Deployments created one after the other, each timed
   from the start of its create on the host to its ADDED event from every member's watch;
   P50/P99/max and the ratio of P99 to the goal (1 s, to compare later with Karmada's own
   controller-manager).

RSS (VmRSS) of the controller-manager after warm-up, after the bulk phase and at the end, its
peak (VmHWM), and its CPU seconds per phase. From its /metrics (on a free local port; off with
``--no-metrics``): each controller's reconciles per template in the bulk, by result, with their
mean time worked and waited in the queue, which shows where a slow phase went. From every
kube-apiserver's own /metrics (``apiserver_request_total``, read with an admin client): its
requests per template in the bulk by verb and resource, the bench's own (template creates on the
host, member status writes) in their own column, and the error answers (e.g. 409); with the
controller-manager's CPU per template (docs/benchmarks.md derives the minimum to compare with).

Run from the repository root: ``.venv/bin/python -m bench.propagation [--templates N]
[--members M] [--samples S]`` (docs/benchmarks.md: 1,000 and 10,000 templates on 2 members,
1,000 on 10).
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import signal
import statistics
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from bench._apiserver import Requests, request_table, scrape_requests
from bench._cluster import create_namespace, run_parallel
from bench._workload import cpu_seconds, rss_kib
from controllers.api import (
    CLUSTER_GVK,
    FULLY_APPLIED_CONDITION,
    RESOURCE_BINDING_GVK,
    crd_paths,
)
from controllers.cluster import cluster_schedulable
from controllers.join import join_cluster
from reconcile import (
    GVK,
    Client,
    ClusterConfig,
    FuncHandler,
    Obj,
    SharedInformer,
    Unlimited,
    configure_logging,
    is_condition_true,
    name_of,
)
from testenv import ControlPlane, Environment
from testenv.ports import free_port

__all__ = ["main"]

NAMESPACE: Final = "bench"
DEPLOYMENT: Final = GVK("apps", "v1", "Deployment")
GOAL_P99: Final = 1.0
"""Seconds: the goal for a single object's create → present in every member, P99."""
ROOT: Final = Path(__file__).resolve().parents[1]
WARM_TIMEOUT: Final = 120.0
SAMPLE_TIMEOUT: Final = 60.0
STATUS_WRITERS: Final = 4
"""Parallel status writers per member (the stand-in for its Deployment controller)."""
STOP_TIMEOUT: Final = 30.0


def member_names(count: int) -> list[str]:
    """member1 … member<count>."""
    return [f"member{index}" for index in range(1, count + 1)]


def policy(members: list[str]) -> Obj:
    """The ClusterPropagationPolicy dividing the bench's Deployments among ``members``."""
    weights = [{"targetCluster": {"clusterNames": [name]}, "weight": 1} for name in members]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "bench-deployments"},
        "spec": {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE}
            ],
            "placement": {
                "clusterAffinity": {"clusterNames": members},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": weights},
                },
            },
        },
    }


def deployment(name: str, replicas: int) -> Obj:
    """A small nginx Deployment template in the bench namespace.

    The bench gives each Deployment one replica per member: divided 1:1:…, every member gets
    a Work (a member given 0 replicas of a Divided binding gets none).
    """
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
            },
        },
    }


# --- what the parent watches ---------------------------------------------------------------------


class Arrivals:
    """When each name first met a condition (time.monotonic()); waits for sets of names."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._changed = anyio.Event()

    def note(self, name: str) -> None:
        """Record ``name`` now, unless it was recorded before."""
        if name not in self.times:
            self.times[name] = time.monotonic()
            self._changed.set()
            self._changed = anyio.Event()

    async def wait(self, names: set[str], timeout: float) -> float:
        """Wait until every one of ``names`` arrived; returns the last arrival's time.

        Raises:
            TimeoutError: not all arrived within ``timeout`` seconds.
        """
        with anyio.fail_after(timeout):
            while not names <= self.times.keys():
                await self._changed.wait()
        return max(self.times[name] for name in names)


def _watch(informer: SharedInformer, on_object: Callable[[Obj], None]) -> SharedInformer:
    informer.add_event_handler(
        FuncHandler(add=lambda obj, _: on_object(obj), update=lambda _, new: on_object(new))
    )
    return informer


def needs_status(member_deployment: Mapping[str, Any]) -> bool:
    """Whether a member Deployment's status does not yet say all replicas run its generation."""
    status = member_deployment.get("status") or {}
    replicas = (member_deployment.get("spec") or {}).get("replicas", 1)
    generation = member_deployment["metadata"].get("generation")
    return bool(
        status.get("observedGeneration") != generation or status.get("readyReplicas", 0) != replicas
    )


def ready_status(member_deployment: Mapping[str, Any]) -> Obj:
    """The status a Deployment controller would report once every replica is ready."""
    replicas = (member_deployment.get("spec") or {}).get("replicas", 1)
    return {
        "observedGeneration": member_deployment["metadata"].get("generation"),
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
    }


class Member:
    """One member: Deployments seen (for latency) and their status written (for aggregation)."""

    def __init__(self, name: str, client: Client) -> None:
        self.name = name
        self.client = client
        self.seen = Arrivals()
        self.status_writes = 0
        send, receive = anyio.create_memory_object_stream[Obj](math.inf)
        self._send: MemoryObjectSendStream[Obj] = send
        self._receive: MemoryObjectReceiveStream[Obj] = receive
        lister = client.lister_watcher(DEPLOYMENT, namespace=NAMESPACE)
        self.informer = _watch(SharedInformer(lister, name=f"{name} deployments"), self._on)

    def _on(self, obj: Obj) -> None:
        self.seen.note(name_of(obj))
        if needs_status(obj):
            self._send.send_nowait(obj)

    async def run(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start the watch and the status writers in ``task_group``; wait for the first list."""
        task_group.start_soon(self.informer.run)
        for _ in range(STATUS_WRITERS):
            task_group.start_soon(self._write_statuses)
        await self.informer.wait_for_sync()

    async def _write_statuses(self) -> None:
        async for obj in self._receive:
            # A merge patch: no resourceVersion to conflict on; a newer generation comes back as
            # another event and is written again.
            patch = {"status": ready_status(obj)}
            await self.client.patch_status(DEPLOYMENT, name_of(obj), patch, namespace=NAMESPACE)
            self.status_writes += 1


class Host:
    """The host's bindings (FullyApplied) and templates (aggregated), by template name, and its
    Clusters (Ready)."""

    def __init__(self, client: Client) -> None:
        self.fully_applied = Arrivals()
        self.aggregated = Arrivals()
        self.ready = Arrivals()
        bindings = client.lister_watcher(RESOURCE_BINDING_GVK, namespace=NAMESPACE)
        templates = client.lister_watcher(DEPLOYMENT, namespace=NAMESPACE)
        clusters = client.lister_watcher(CLUSTER_GVK)
        self.informers = [
            _watch(SharedInformer(bindings, name="host bindings"), self._on_binding),
            _watch(SharedInformer(templates, name="host templates"), self._on_template),
            _watch(SharedInformer(clusters, name="host clusters"), self._on_cluster),
        ]

    def _on_cluster(self, cluster: Obj) -> None:
        # Only a schedulable member is scheduled to, and a Divided binding is not spread again
        # when another member turns schedulable later: templates must wait for both.
        if cluster_schedulable(cluster):
            self.ready.note(name_of(cluster))

    def _on_binding(self, binding: Obj) -> None:
        if is_condition_true(binding, FULLY_APPLIED_CONDITION):
            template = (binding.get("spec") or {}).get("resource") or {}
            self.fully_applied.note(str(template.get("name")))

    def _on_template(self, template: Obj) -> None:
        status = template.get("status") or {}
        if status.get("readyReplicas") == template["spec"].get("replicas"):
            self.aggregated.note(name_of(template))

    async def run(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start the watches in ``task_group``; wait for their first lists."""
        for informer in self.informers:
            task_group.start_soon(informer.run)
        for informer in self.informers:
            await informer.wait_for_sync()


# --- the controller-manager child ----------------------------------------------------------------


@dataclass
class ControllerManager:
    """The controller-manager child process and its figures."""

    process: anyio.abc.Process
    rss_mib: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)

    def sample(self, label: str) -> None:
        """Note the RSS and CPU seconds now, under ``label``."""
        self.rss_mib[label] = rss_kib(self.process.pid)[0] / 1024
        self.cpu[label] = cpu_seconds(self.process.pid)

    def peak_mib(self) -> float:
        """VmHWM: the child's peak RSS so far."""
        return rss_kib(self.process.pid)[1] / 1024


@asynccontextmanager
async def controller_manager(
    kubeconfig: Path, metrics: str, log_level: str, extra: Sequence[str] = ()
) -> AsyncIterator[ControllerManager]:
    """Run ``reconcile controller-manager`` against the host until the block ends (SIGTERM)."""
    argv = [sys.executable, "-m", "controllers.cli", "controller-manager"]
    argv += ["--kubeconfig", str(kubeconfig), "--metrics-bind-address", metrics]
    argv += ["--health-probe-bind-address", "0", "--log-level", log_level, *extra]
    process = await anyio.open_process(argv, cwd=ROOT, stdout=None, stderr=None)
    async with process:
        try:
            yield ControllerManager(process)
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(STOP_TIMEOUT) as scope:
                await process.wait()
            if scope.cancelled_caught:
                process.kill()


# --- the controller-manager's /metrics ------------------------------------------------------------

_SAMPLE: Final = re.compile(r"^(\w+)\{([^}]*)\} ([0-9.e+-]+)$")
_COUNTED: Final = {
    "controller_runtime_reconcile_total": "result",
    "workqueue_retries_total": "retries",
    "workqueue_work_duration_seconds_sum": "work ms",
    "workqueue_queue_duration_seconds_sum": "queued ms",
    "workqueue_depth": "depth",
    "reconcile_events_total": "outcome",
}
_TIMES: Final = ("work ms", "queued ms")
_NOT_RECONCILES: Final = ("retries", "depth", *_TIMES)
SETTLE_TIMEOUT: Final = 600.0


def parse_counters(text: str) -> Counter[tuple[str, str]]:
    """(controller, what) → value of the reconcile and retry counters in a /metrics page."""
    found: Counter[tuple[str, str]] = Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match.group(1) not in _COUNTED:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
        what = _COUNTED[match.group(1)]
        value = float(match.group(3))
        if what in _TIMES:
            value *= 1000
        else:
            what = labels.get(what, what)
        # Queues are labelled by name, controllers by controller: the same names here. Events
        # have neither: their outcomes show as the "events" row.
        owner = labels.get("controller") or labels.get("name", "events")
        found[owner, what] += int(value)
    return found


async def scrape(address: str | None) -> Counter[tuple[str, str]]:
    """The child's reconcile and retry counters (empty when metrics are off)."""
    if address is None:
        return Counter()

    def get() -> str:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
            text: str = response.read().decode()
            return text

    return parse_counters(await anyio.to_thread.run_sync(get))


async def settle(address: str | None) -> float:
    """Wait until the child's work queues are all empty; returns the seconds it took.

    After the bulk, redundant reconciles (events of the bulk's own writes) may still be queued;
    a single object measured behind them would time the backlog, not the path.
    """
    started = time.monotonic()
    with anyio.fail_after(SETTLE_TIMEOUT):
        while address is not None:
            counters = await scrape(address)
            if not sum(n for (_, what), n in counters.items() if what == "depth"):
                break
            await anyio.sleep(0.2)
    return time.monotonic() - started


# --- phases --------------------------------------------------------------------------------------


async def _client(plane: ControlPlane) -> Client:
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config, field_manager="bench-propagation", limiter=Unlimited())


async def present(members: list[Member], name: str, timeout: float) -> float:
    """Wait until ``name`` was seen in every member; returns the last sighting's time."""
    return max([await member.seen.wait({name}, timeout) for member in members])


async def single(host: Client, members: list[Member], name: str, timeout: float) -> float:
    """Create one Deployment; seconds from the start of the create to it in every member."""
    started = time.monotonic()
    await host.create(deployment(name, len(members)))
    return await present(members, name, timeout) - started


def bulk_name(index: int) -> str:
    """The name of the bulk's ``index``-th Deployment."""
    return f"bulk-{index:05d}"


async def bulk(
    host_client: Client, host: Host, figures: Figures, concurrency: int, replicas: int
) -> None:
    """Create ``figures.templates`` Deployments; note the seconds to all created, FullyApplied
    and aggregated, and the rates of each thousand."""
    names = {bulk_name(index) for index in range(figures.templates)}
    started = time.monotonic()

    async def create(index: int) -> None:
        await host_client.create(deployment(bulk_name(index), replicas))

    figures.created = await run_parallel(figures.templates, concurrency, create)
    timeout = max(WARM_TIMEOUT, figures.templates * 3.0)
    figures.fully_applied = await host.fully_applied.wait(names, timeout) - started
    figures.aggregated = await host.aggregated.wait(names, timeout) - started
    figures.applied_per_thousand = per_thousand(host.fully_applied.times, names, started)
    figures.aggregated_per_thousand = per_thousand(host.aggregated.times, names, started)


def _percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (P99 of 100 samples is the 99th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def per_thousand(arrivals: Mapping[str, float], names: set[str], started: float) -> list[float]:
    """Templates per second in each successive thousand of ``names`` to arrive (the last
    group may be smaller), from ``started``: a rate that falls with n shows as a falling row."""
    times = sorted(arrivals[name] for name in names if name in arrivals)
    rates = []
    for first in range(0, len(times), 1000):
        group = times[first : first + 1000]
        begin = started if first == 0 else times[first - 1]
        rates.append(len(group) / max(group[-1] - begin, 1e-9))
    return rates


@dataclass
class Figures:
    """What one run measured (seconds; counters from the child's /metrics by phase)."""

    templates: int
    members: int
    applied_per_thousand: list[float] = field(default_factory=list)
    aggregated_per_thousand: list[float] = field(default_factory=list)
    control_planes: float = 0.0
    setup: float = 0.0
    cold: float = 0.0
    created: float = 0.0
    fully_applied: float = 0.0
    aggregated: float = 0.0
    settled: float = 0.0
    latencies: list[float] = field(default_factory=list)
    status_writes: int = 0
    counters: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    requests: dict[str, dict[str, Requests]] = field(default_factory=dict)
    """Phase label → apiserver ("host" or a member's name) → its request counters then."""
    member_writes: dict[str, dict[str, int]] = field(default_factory=dict)
    """Phase label → member → the bench's status writes on it so far."""


def _line(label: str, value: str) -> None:
    print(f"  {label:<46} {value}")


def _report_latency(latencies: list[float]) -> None:
    p50, p99 = statistics.median(latencies), _percentile(latencies, 0.99)
    print(f"single create on the host → present in every member, {len(latencies)} samples:")
    _line(
        "P50 / P99 / max / min",
        " / ".join(
            f"{value * 1000:.0f} ms" for value in (p50, p99, max(latencies), min(latencies))
        ),
    )
    _line(f"ratio P99 / goal ({GOAL_P99:.0f} s)", f"{p99 / GOAL_P99:.2f}")
    slowest = sorted(enumerate(latencies), key=lambda sample: sample[1])[-3:][::-1]
    _line("slowest (sample: ms)", ", ".join(f"{i}: {v * 1000:.0f}" for i, v in slowest))


def _report_counters(figures: Figures) -> None:
    """Reconciles per template of each controller in the bulk phase (from /metrics)."""
    before, after = figures.counters.get("warm"), figures.counters.get("after bulk")
    if not before and not after:
        return
    delta = (after or Counter()) - (before or Counter())
    print(f"controller-manager reconciles per template in the bulk ({figures.templates}):")
    for controller in sorted({name for name, _ in delta}):
        counts = {what: n for (name, what), n in delta.items() if name == controller}
        total = sum(n for what, n in counts.items() if what not in _NOT_RECONCILES)
        mean = {what: counts.get(what, 0) / max(total, 1) for what in _TIMES}
        detail = ", ".join(
            f"{w} {n}" for w, n in sorted(counts.items()) if w not in (*_TIMES, "depth")
        )
        timing = f"mean {mean['work ms']:.0f} ms working, {mean['queued ms']:.0f} ms queued"
        _line(controller, f"{total / figures.templates:6.2f}   ({detail}; {timing})")


def _rates(rates: list[float]) -> str:
    row = " ".join(f"{rate:.1f}" for rate in rates)
    return row if len(rates) < 2 else f"{row}  (last / first {rates[-1] / rates[0]:.2f})"


def report(figures: Figures, child: ControllerManager, peak: float) -> None:
    """Print the figures."""
    n = figures.templates
    print(f"\n{n} Deployments, 1 ClusterPropagationPolicy, {figures.members} members")
    _line("setup: control planes ready", f"{figures.control_planes:8.2f} s")
    _line("setup: total, to the controller-manager warm", f"{figures.setup:8.2f} s")
    _line("first Deployment after start (cold)", f"{figures.cold:8.2f} s")
    _line(f"bulk: {n} creates took", f"{figures.created:8.2f} s")
    _line("bulk: first create to all FullyApplied", f"{figures.fully_applied:8.2f} s")
    _line("bulk: first create to all aggregated", f"{figures.aggregated:8.2f} s")
    _line("bulk: throughput, templates FullyApplied / s", f"{n / figures.fully_applied:8.1f}")
    _line("bulk: throughput, templates aggregated / s", f"{n / figures.aggregated:8.1f}")
    _line("bulk: FullyApplied / s, by thousand", _rates(figures.applied_per_thousand))
    _line("bulk: aggregated / s, by thousand", _rates(figures.aggregated_per_thousand))
    _line("bulk: then until every work queue was empty", f"{figures.settled:8.2f} s")
    _line("member status writes (by the bench)", f"{figures.status_writes:8d}")
    if figures.latencies:
        _report_latency(figures.latencies)
    print("controller-manager process:")
    for label, rss in child.rss_mib.items():
        _line(f"RSS {label}", f"{rss:8.1f} MiB")
    _line("peak RSS (VmHWM)", f"{peak:8.1f} MiB")
    labels = list(child.cpu)
    for before, after in itertools.pairwise(labels):
        _line(f"CPU seconds, {before} → {after}", f"{child.cpu[after] - child.cpu[before]:8.1f}")
    _report_counters(figures)
    _report_requests(figures, child)


def _report_requests(figures: Figures, child: ControllerManager) -> None:
    """Each apiserver's requests per template in the bulk, the bench's own apart, and the
    controller-manager's CPU per template."""
    before, after = figures.requests.get("warm"), figures.requests.get("after bulk")
    if not before or not after:
        return
    n = figures.templates
    cpu = child.cpu.get("after bulk", 0.0) - child.cpu.get("warm", 0.0)
    print(f"controller-manager CPU per template in the bulk: {cpu / n * 1000:.1f} ms")
    writes_before = figures.member_writes.get("warm", {})
    writes_after = figures.member_writes.get("after bulk", {})
    for plane in after:
        delta = after[plane] - before.get(plane, Counter())
        if plane == "host":
            # The bench creates the templates; its watches' lists were before the bulk.
            parent = {("POST", "deployments"): n}
        else:
            writes = writes_after.get(plane, 0) - writes_before.get(plane, 0)
            parent = {("PATCH", "deployments/status"): writes}
        print(f"{plane} apiserver requests per template in the bulk ({n}), WATCH not counted:")
        for line in request_table(delta, n, parent):
            print(line)


async def _prepare(host: Client, members: Mapping[str, Client], env: Environment) -> None:
    for name in members:
        plane = env.members[name]
        await join_cluster(name, host=host, member_kubeconfig=str(plane.kubeconfig))
    for client in (host, *members.values()):
        await create_namespace(client, NAMESPACE)
    await host.create(policy(list(members)))


async def watch_clusters(
    group: anyio.abc.TaskGroup, host_client: Client, member_clients: Mapping[str, Client]
) -> tuple[Host, list[Member]]:
    """The host's and every member's watches (and the members' status writers), started in
    ``group`` and synced."""
    members = [Member(name, client) for name, client in member_clients.items()]
    host = Host(host_client)
    for member in members:
        await member.run(group)
    await host.run(group)
    return host, members


async def _phases(
    args: argparse.Namespace,
    figures: Figures,
    child: ControllerManager,
    host_client: Client,
    member_clients: Mapping[str, Client],
    started: float,
) -> None:
    async with anyio.create_task_group() as group:
        host, members = await watch_clusters(group, host_client, member_clients)
        planes = Planes({"host": host_client, **member_clients}, members)
        await host.ready.wait(set(member_clients), WARM_TIMEOUT)
        figures.cold = await single(host_client, members, "warmup", WARM_TIMEOUT)
        figures.setup = time.monotonic() - started
        await host.aggregated.wait({"warmup"}, WARM_TIMEOUT)
        await phase_end(child, figures, args.metrics_address, "warm", planes)
        print(f"warm after {figures.setup:.1f} s; bulk of {args.templates} ...", flush=True)
        await bulk(host_client, host, figures, args.concurrency, len(members))
        await phase_end(child, figures, args.metrics_address, "after bulk", planes)
        figures.settled = await settle(args.metrics_address)
        print(f"bulk done; {args.samples} single creates ...", flush=True)
        for index in range(args.samples):
            name = f"sample-{index:04d}"
            figures.latencies.append(await single(host_client, members, name, SAMPLE_TIMEOUT))
        await phase_end(child, figures, args.metrics_address, "end", planes)
        figures.status_writes = sum(member.status_writes for member in members)
        group.cancel_scope.cancel()


@dataclass
class Planes:
    """The bench's admin clients of every apiserver, and its members' status writers."""

    clients: dict[str, Client]
    """"host" and each member's name → an admin client of that apiserver."""
    members: list[Member] = field(default_factory=list)


async def phase_end(
    child: ControllerManager, figures: Figures, metrics: str | None, label: str, planes: Planes
) -> None:
    """Note the child's RSS, CPU and counters, and every apiserver's requests, at the end of a
    phase."""
    child.sample(label)
    figures.counters[label] = await scrape(metrics)
    figures.requests[label] = {
        name: await scrape_requests(client) for name, client in planes.clients.items()
    }
    figures.member_writes[label] = {member.name: member.status_writes for member in planes.members}


async def run(args: argparse.Namespace) -> None:
    """Run every phase and print the figures."""
    figures = Figures(args.templates, args.members)
    started = time.monotonic()
    names = member_names(args.members)
    async with Environment(members=names, crd_paths=crd_paths()) as env:
        figures.control_planes = time.monotonic() - started
        host_client = await _client(env.host)
        member_clients = {name: await _client(env.members[name]) for name in names}
        try:
            await _prepare(host_client, member_clients, env)
            metrics = args.metrics_address or "0"
            async with controller_manager(
                env.host.kubeconfig, metrics, args.log_level, args.manager_arg
            ) as child:
                await _phases(args, figures, child, host_client, member_clients, started)
                report(figures, child, child.peak_mib())
        finally:
            for client in (host_client, *member_clients.values()):
                await client.close()


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main() -> None:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--templates", type=int, default=100, help="Deployments in the bulk")
    parser.add_argument("--members", type=_positive, default=2, help="member clusters")
    parser.add_argument("--samples", type=int, default=20, help="single creates timed")
    parser.add_argument("--concurrency", type=int, default=20, help="parallel creators")
    parser.add_argument(
        "--no-metrics",
        action="store_true",
        help="run the controller-manager without /metrics (no reconcile counts)",
    )
    parser.add_argument("--log-level", default="WARNING", help="the controller-manager's")
    parser.add_argument(
        "--manager-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="one more flag for the controller-manager, e.g. --manager-arg=--compress-cache=false",
    )
    args = parser.parse_args()
    args.metrics_address = None if args.no_metrics else f"127.0.0.1:{free_port()}"
    configure_logging(level="WARNING")
    anyio.run(run, args)


if __name__ == "__main__":
    main()
