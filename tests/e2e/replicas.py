"""Replicas runs controller-manager processes for the e2e failover and chaos tests and reads back
what each of them wrote.

Each replica is ``tests/e2e/manager_process.py``: the real ``reconcile controller-manager`` with
its own field manager and a record of every write-guard decision and leadership change (see that
module). ``replica()`` starts one against the testenv host, its output in a log; ``Replica``
answers who it is (its Lease identity), when it led, and which writes it made when.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import orjson
from anyio.abc import Process

from reconcile import Client, NotFound
from reconcile.leaderelection import LEASE
from testenv import Environment
from tests.e2e.convergence import Clusters
from tests.e2e.stack import DEPLOYMENT

LEASE_NAME = "reconcile-controller-manager"
SCRIPT = Path(__file__).with_name("manager_process.py")

Obj = dict[str, Any]


@dataclass(frozen=True)
class Timings:
    """Leader-election timings of the replicas, in seconds; with ``cluster_success``, how long a
    member that failed must answer again before it is Ready (``--cluster-success-threshold``)."""

    lease: float = 4.0
    renew: float = 3.0
    retry: float = 0.5
    cluster_success: float | None = None

    def flags(self) -> list[str]:
        flags = [
            f"--leader-elect-lease-duration={self.lease}s",
            f"--leader-elect-renew-deadline={self.renew}s",
            f"--leader-elect-retry-period={self.retry}s",
        ]
        if self.cluster_success is not None:
            flags.append(f"--cluster-success-threshold={self.cluster_success}s")
        return flags


@dataclass
class Replica:
    """One controller-manager process and the files it writes."""

    name: str
    process: Process
    record: Path
    log: Path
    killed_at: float | None = field(default=None)
    """Wall time of the SIGKILL this test sent, if any."""

    @property
    def field_manager(self) -> str:
        return f"reconcile-{self.name}"

    def records(self, event: str | None = None) -> list[Obj]:
        """The recorded lines (of one ``event`` kind), in order."""
        try:
            lines = self.record.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        found = [orjson.loads(line) for line in lines if line.strip()]
        return [r for r in found if event is None or r["event"] == event]

    def reconcile_spans(self) -> list[tuple[str, float, float]]:
        """(ring key, begin, end) of every reconcile its shard guard let through, wall times; one
        begun but never ended lasts until this test's SIGKILL, or for ever without one."""
        spans: list[tuple[str, float, float]] = []
        begun: dict[int, tuple[str, float]] = {}
        for record in self.records():
            if record["event"] == "reconcile":
                begun[record["span"]] = (record["key"], float(record["wall"]))
            elif record["event"] == "reconciled" and record["span"] in begun:
                key, begin = begun.pop(record["span"])
                spans.append((key, begin, float(record["wall"])))
        cut = self.killed_at if self.killed_at is not None else float("inf")
        return spans + [(key, begin, cut) for key, begin in begun.values()]

    def identity(self) -> str | None:
        """The Lease identity of this replica (known once it has led, or lost, once)."""
        return next((r["identity"] for r in self.records("leader") if r["identity"]), None)

    def led_since(self) -> float | None:
        """Wall time at which this replica last started leading (None: it does not lead)."""
        changes = self.records("leader")
        if not changes or not changes[-1]["leading"]:
            return None
        return float(changes[-1]["wall"])

    def leader_writes(self) -> list[Obj]:
        """Allowed writes of runnables that need leadership, the Lease's own left out."""
        return [
            r
            for r in self.records("write")
            if r["allowed"] and r["needs_leader"] and "/leases" not in r["path"]
        ]

    def kill(self) -> None:
        self.killed_at = datetime.now().timestamp()
        self.process.send_signal(signal.SIGKILL)

    async def exit_status(self, timeout: float) -> int:
        with anyio.fail_after(timeout):
            return await self.process.wait()

    def tail(self, lines: int = 60) -> str:
        return log_tail(self.log, lines)


def _command(
    env: Environment,
    replica: str,
    lease_namespace: str,
    timings: Timings,
    flags: Sequence[str] = (),
) -> list[str]:
    return [
        sys.executable,
        str(SCRIPT),
        "RECORD",  # replaced by the caller
        f"reconcile-{replica}",
        "--kubeconfig",
        str(env.host.kubeconfig),
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--leader-elect",
        f"--leader-elect-resource-namespace={lease_namespace}",
        *timings.flags(),
        *flags,
    ]


def sharded_flags(name: str, metrics_port: int) -> list[str]:
    """The flags of a replica of the sharded controller-manager: shard ``name``, its /metrics
    (where its shard's objects are counted) on ``127.0.0.1:metrics_port``."""
    return [
        "--shards=auto",
        f"--shard-name={name}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
    ]


@asynccontextmanager
async def replica(
    env: Environment,
    name: str,
    directory: Path,
    *,
    lease_namespace: str,
    timings: Timings = Timings(),
    flags: Sequence[str] = (),
) -> AsyncIterator[Replica]:
    """A controller-manager replica with leader election (its Lease in ``lease_namespace``) and
    ``flags`` besides; killed and reaped on the way out if still running."""
    record, log = directory / f"{name}.records", directory / f"{name}.log"
    command = _command(env, name, lease_namespace, timings, flags)
    command[2] = str(record)
    async with logged_process(command, log) as process:
        yield Replica(name, process, record, log)


@asynccontextmanager
async def logged_process(command: list[str], log: Path) -> AsyncIterator[Process]:
    """``command`` running with its output appended to ``log`` (after a line naming it); killed
    and reaped on the way out if still running."""
    with log.open("ab") as out:
        out.write(f"--- {' '.join(command)}\n".encode())
        out.flush()
        process = await anyio.open_process(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.aclose()


def log_tail(log: Path, lines: int = 60) -> str:
    """The last ``lines`` of ``log``, for a failure message."""
    try:
        text = log.read_text(errors="replace")
    except OSError as error:
        return f"<no log: {error}>"
    return "\n".join(text.splitlines()[-lines:])


async def lease_holder(host: Client, namespace: str) -> str:
    """The Lease's holderIdentity ("" when there is no Lease or it was released)."""
    try:
        lease = await host.get(LEASE, LEASE_NAME, namespace=namespace)
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def leader_of(replicas: Iterable[Replica], holder: str) -> Replica | None:
    """The replica whose identity is ``holder`` and that believes it leads."""
    for candidate in replicas:
        if holder and candidate.identity() == holder and candidate.led_since() is not None:
            return candidate
    return None


def managed_times(obj: Obj) -> dict[str, float]:
    """Field manager -> the latest time (apiserver's clock, whole seconds) it changed ``obj``."""
    times: dict[str, float] = {}
    for entry in obj["metadata"].get("managedFields") or []:
        stamp = entry.get("time")
        if stamp:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            times[entry["manager"]] = max(times.get(entry["manager"], 0.0), moment)
    return times


class Supervisor:
    """Keeps one replica running, as a Deployment would: a replica that exits (e.g. 1 after a
    lost Lease) is started again as a new incarnation, ``<name>-<n>``, with its own record."""

    def __init__(
        self,
        env: Environment,
        name: str,
        directory: Path,
        *,
        lease_namespace: str,
        timings: Timings,
    ) -> None:
        self.env, self.name, self.directory = env, name, directory
        self.lease_namespace, self.timings = lease_namespace, timings
        self.incarnations: list[Replica] = []
        self.exits: list[int] = []
        self._stopping = False

    @property
    def current(self) -> Replica | None:
        return self.incarnations[-1] if self.incarnations else None

    async def run(self) -> None:
        """Run incarnations until ``stop``."""
        while not self._stopping:
            name = f"{self.name}-{len(self.incarnations)}"
            async with replica(
                self.env,
                name,
                self.directory,
                lease_namespace=self.lease_namespace,
                timings=self.timings,
            ) as one:
                self.incarnations.append(one)
                self.exits.append(await one.process.wait())

    async def stop(self, timeout: float) -> int:
        """SIGTERM the current incarnation and return its exit status."""
        self._stopping = True
        current = self.current
        assert current is not None
        current.process.send_signal(signal.SIGTERM)
        return await current.exit_status(timeout)


def writes_without_the_lease(one: Replica) -> list[Obj]:
    """Writes that needed leadership and passed the guard while ``one`` did not lead by its own
    record: before it first led, or after it recorded a loss (until it led again)."""
    leading = False
    found = []
    for entry in one.records():
        if entry["event"] == "leader":
            leading = bool(entry["leading"])
        elif (
            entry["event"] == "write"
            and entry["allowed"]
            and entry["needs_leader"]
            and "/leases" not in entry["path"]
            and not leading
        ):
            found.append(entry)
    return found


async def changed_after_kill(clusters: Clusters, dead: Replica) -> list[str]:
    """Objects of the test's namespaces (templates, bindings, Works, member Deployments) that the
    apiserver's managedFields say the killed replica's field manager changed after the kill
    (their times are whole seconds, rounded down, so this errs towards finding none)."""
    assert dead.killed_at is not None
    ns = clusters.namespace
    objects = [
        *await clusters.host.list_all(DEPLOYMENT, namespace=ns),
        *await clusters.bindings(),
        *[w for found in (await clusters.works()).values() for w in found],
        *[d for c in clusters.members for d in await clusters.member_deployments(c)],
    ]
    return [
        f"{obj['kind']} {obj['metadata']['name']}"
        for obj in objects
        if managed_times(obj).get(dead.field_manager, 0.0) > dead.killed_at
    ]
