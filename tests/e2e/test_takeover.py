"""End to end: a standby that takes over a converged load, or a leader whose watches re-list,
writes nothing to what is already applied (#29 item 3).

TEMPLATES Deployment templates are propagated 2:1 over the two members by two real
controller-manager replicas (``tests/e2e/replicas.py``: leader election, and a record of every
request the manager's write guard let through, with the server it went to). Once converged and
quiet, (1) the host kube-apiserver is restarted: every watch of the leader breaks and its
informers re-list; (2) so is member2's: its member informers re-list; (3) the leader is
SIGKILLed and the standby takes over. Nothing changes in any of these, so the leader after it
must write no member object, Work, ResourceBinding, template or namespace: a takeover or a
re-list costs reads. What it may write is named in ALLOWED: the Lease it holds (renewals), the
Clusters' status (the cluster-status controller's, when a probe finds something new) and Events.

Measured on the 2-core machine shared with other suites (load average 7-9), 2026-12-05: the whole
test in about 2 minutes, 300 templates converged in 38 s.
"""

from __future__ import annotations

import secrets
import signal
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from datetime import datetime
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import anyio
import pytest
import pytest_asyncio

from testenv import Environment, RequestError, eventually
from testenv.ports import free_port
from tests.e2e.conftest import join_members, own_control_plane
from tests.e2e.convergence import (
    Clusters,
    bounded,
    clusters_of,
    converge,
    label_policy,
    labelled_template,
)
from tests.e2e.replicas import Obj, Replica, Timings, leader_of, lease_holder, replica
from tests.e2e.stack import MEMBERS

pytestmark = [
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.multicluster,
    pytest.mark.slow,
]

TEMPLATES = 300
POLICY_NAME = "takeover"
LABELS = {"e2e.reconcile.io/takeover": "true"}
TIMINGS = Timings(lease=20.0, renew=15.0, retry=1.0)
"""A Lease that outlasts a restart of the host apiserver: the re-list is the leader's own."""
QUIET = 6.0
"""Seconds without a write that counts (not in ALLOWED) after which a replica is at rest."""
TIMEOUT = 180.0
ALLOWED = frozenset({"leases", "clusters/status", "events"})
"""Resources a leader writes with nothing changed: its Lease renewals, the Cluster status
heartbeats of the cluster-status controller (Karmada's, every cluster-status-update-frequency)
and the Events of a cluster condition."""

Tally = Counter[tuple[str, str, str]]


@pytest_asyncio.fixture(loop_scope="session")
async def plane() -> AsyncIterator[Environment]:
    """A control plane of the test's own (the replicas reconcile all they see)."""
    async with own_control_plane() as env:
        yield await join_members(env)


async def test_a_takeover_and_a_relist_write_nothing_already_applied(
    plane: Environment, tmp_path: Path
) -> None:
    namespace = f"takeover-{secrets.token_hex(3)}"
    await plane.host.create_namespace(namespace)
    servers = _servers(plane)
    async with AsyncExitStack() as stack:
        ports = {name: free_port() for name in ("r0", "r1")}

        def start(name: str) -> AbstractAsyncContextManager[Replica]:
            metrics = f"--metrics-bind-address=127.0.0.1:{ports[name]}"
            return replica(
                plane,
                name,
                tmp_path,
                lease_namespace=namespace,
                timings=TIMINGS,
                flags=[metrics],
            )

        first = await stack.enter_async_context(start("r0"))
        # The namespace reaches the members by the namespace sync controller's Works, as
        # Karmada's would: made there by the test, it would be a conflict retried for ever.
        await eventually(partial(_synced, plane, namespace), timeout=TIMEOUT, interval=0.5)
        clusters = await stack.enter_async_context(clusters_of(plane, namespace))
        await _leader(clusters, [first])
        second = await stack.enter_async_context(start("r1"))
        try:
            await _propagate(clusters)
            await _settled(first, ports["r0"])

            since = anyio.current_time()
            await plane.host.stop_apiserver()
            await plane.host.start_apiserver()
            relist = await _writes_until_settled(first, ports["r0"], since, servers)
            print(f"re-list after a host apiserver restart, {first.name}: {_shown(relist)}")

            since = anyio.current_time()
            await plane.members["member2"].stop_apiserver()
            await plane.members["member2"].start_apiserver()
            member_relist = await _writes_until_settled(first, ports["r0"], since, servers)
            print(f"re-list after member2's apiserver restart: {_shown(member_relist)}")

            first.kill()
            assert await first.exit_status(TIMEOUT) == -signal.SIGKILL
            new = await _leader(clusters, [second])
            assert new is second
            # Every Work reconciled by the new leader, at least once, before it is counted.
            await eventually(
                partial(_reconciled, ports["r1"], 2 * TEMPLATES), timeout=TIMEOUT, interval=1.0
            )
            await eventually(partial(_idle, ports["r1"]), timeout=TIMEOUT, interval=0.5)
            took = _wall() - (second.led_since() or 0.0)
            takeover = await _writes_until_settled(second, ports["r1"], 0.0, servers)
            print(f"takeover by {second.name}, idle {took:.1f}s after: {_shown(takeover)}")
            await converge(clusters, _names(), TIMEOUT, interval=2.0)
        except BaseException:
            for one in (first, second):
                print(f"replica {one.name} log ({one.log}):\n{one.tail()}")
            raise
        assert not _counted(relist), f"a re-list wrote {_shown(relist)}"
        assert not _counted(member_relist), f"a member's re-list wrote {_shown(member_relist)}"
        assert not _counted(takeover), f"a takeover wrote {_shown(takeover)}"


async def _synced(env: Environment, namespace: str) -> bool:
    for name in MEMBERS:
        try:
            await env.members[name].request("GET", f"/api/v1/namespaces/{namespace}")
        except RequestError:
            return False
    return True


def _names() -> set[str]:
    return {f"web-{i:04d}" for i in range(TEMPLATES)}


async def _propagate(clusters: Clusters) -> None:
    ns, host = clusters.namespace, clusters.host
    started = anyio.current_time()
    await host.create(label_policy(POLICY_NAME, ns, LABELS))
    await bounded(partial(host.create, labelled_template(n, ns, LABELS)) for n in sorted(_names()))
    await converge(clusters, _names(), TIMEOUT, interval=2.0)
    print(f"{TEMPLATES} templates converged in {anyio.current_time() - started:.1f}s")


async def _leader(clusters: Clusters, candidates: list[Replica]) -> Replica:
    async def elected() -> Replica | None:
        return leader_of(candidates, await lease_holder(clusters.host, clusters.namespace))

    return await eventually(elected, timeout=TIMEOUT, interval=0.2)


def _servers(env: Environment) -> dict[str, str]:
    """host:port -> the cluster's name ("host" or a member's)."""
    planes = {"host": env.host, **{name: env.members[name] for name in MEMBERS}}
    return {urlsplit(plane.url).netloc: name for name, plane in planes.items()}


def _resource(path: str) -> str:
    """The resource (and subresource) a request path names, e.g. ``deployments``,
    ``works/status``."""
    parts = path.split("?")[0].strip("/").split("/")
    parts = parts[2:] if parts[0] == "api" else parts[3:]
    if parts[:1] == ["namespaces"] and len(parts) > 2:
        parts = parts[2:]
    return "/".join(parts[:1] + parts[2:3])


def _tally(writes: list[Obj], servers: dict[str, str]) -> Tally:
    """(verb, cluster, resource) -> how many."""
    return Counter(
        (w["method"], servers.get(urlsplit(w["server"] or "").netloc, "?"), _resource(w["path"]))
        for w in writes
    )


def _counted(tally: Tally) -> Tally:
    return Counter({key: n for key, n in tally.items() if key[2] not in ALLOWED})


def _shown(tally: Tally) -> str:
    return ", ".join(f"{v} {c} {r}: {n}" for (v, c, r), n in sorted(tally.items())) or "nothing"


def _writes(one: Replica, since_wall: float) -> list[Obj]:
    return [w for w in one.records("write") if w["allowed"] and float(w["wall"]) >= since_wall]


async def _settled(one: Replica, port: int) -> None:
    """Wait until ``one``'s work queues are empty with nothing in progress, and it has made no
    counted write for QUIET seconds."""

    async def resting() -> bool:
        counted = [w for w in one.records("write") if _resource(w["path"]) not in ALLOWED]
        last = max((float(w["wall"]) for w in counted), default=0.0)
        return _wall() - last >= QUIET and await _idle(port)

    await eventually(resting, timeout=TIMEOUT, interval=0.5)


async def _writes_until_settled(
    one: Replica, port: int, since: float, servers: dict[str, str]
) -> Tally:
    """What ``one`` wrote from ``since`` (monotonic; 0: since it last began leading) until it
    settled."""
    begin = _wall() - (anyio.current_time() - since) if since else (one.led_since() or 0.0)
    await anyio.sleep(QUIET)  # the watches break and re-list, or the informers sync
    await _settled(one, port)
    return _tally(_writes(one, begin), servers)


async def _samples(port: int, family: str) -> list[tuple[str, float]]:
    """(labels, value) of each sample of ``family`` on the /metrics of the replica on ``port``."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as answer,
    ):
        text = await answer.text()
    return [
        (line[len(family) : line.rindex(" ")], float(line.split()[-1]))
        for line in text.splitlines()
        if line.startswith(family + "{")
    ]


async def _idle(port: int) -> bool:
    """No item waits in, or is being processed from, any of the replica's work queues."""
    depth = await _samples(port, "workqueue_depth")
    unfinished = await _samples(port, "workqueue_unfinished_work_seconds")
    return not any(value for _, value in [*depth, *unfinished])


async def _reconciled(port: int, works: int) -> bool:
    """At least ``works`` items were added to the execution controller's queue."""
    adds = await _samples(port, "workqueue_adds_total")
    return sum(v for labels, v in adds if 'controller="execution"' in labels) >= works


def _wall() -> float:
    return datetime.now().timestamp()
