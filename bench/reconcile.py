"""Benchmark: a no-op controller over 10,000 ConfigMaps, against a kopf operator in the same run.

The parent starts one testenv control plane, creates the ConfigMaps once (about 2 KB each, with
a round annotation "1") and then runs each contender in a subprocess of its own, one after the
other, against the same kubeconfig:

- ``ours``: a Manager restricted to the namespace with
  ``controller_managed_by(mgr).for_(ConfigMap).complete(reconcile)``; the reconcile reads the
  object from the cache (``mgr.client.get``, a copy, as every real reconcile starts) and notes the
  round annotation it saw. Default options (one worker). ``bench/_reconcile_child.py``: it
  imports only the framework, as kopf's child imports only kopf.
- ``kopf``: ``@kopf.on.event("configmaps")`` with an async handler that notes the round annotation
  of the body it is given (``bench/_kopf_child.py``: standalone, namespace-scoped, posting of k8s
  Events off, kubernetes-asyncio hidden so kopf's memory is that of kopf alone). on.event handlers
  keep no progress or diff-base state, so kopf writes nothing to the objects.

Both log at WARNING. A child prints ``DONE <round> <monotonic time> <calls>`` when it has handled
every object at that round. The parent samples ``/proc/<pid>`` and measures, per contender:

1. start: from spawning the child to every object handled once (the child reports when its
   imports were done, so the time to list and reconcile is shown separately), and RSS then;
2. live touch: the parent touches every object once (a merge patch of the round annotation,
   ``--concurrency`` parallel writers) and measures from the first write to the last object
   handled, and the child's CPU seconds. A contender that keeps up with the writes shows the
   apiserver's write rate, not its own; reconciles per CPU-second does not depend on that;
3. backlog: the same touch with the child stopped (SIGSTOP) during the writes, measured from
   SIGCONT to the last object handled: the rate at which a contender works off a queue of events;
4. memory: RSS after imports, after the initial list, at the end, and the peak (VmHWM).

Each child is stopped with SIGTERM. ``--rounds`` repeats the comparison, alternating which
contender goes first; figures are medians. ``--kubeconfig`` reuses a running cluster.

Run from the repository root: ``.venv/bin/python -m bench.reconcile [--objects N] [--rounds R]``
(kopf must be installed: ``.venv/bin/pip install kopf``).
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:
    # Run as a script, this file's directory comes first on sys.path and its name would shadow
    # the ``reconcile`` package: put the repository root first instead.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import os
import signal
import statistics
import time
from dataclasses import dataclass, field
from typing import Final

import anyio
import anyio.abc

from bench._cluster import CONFIGMAP, create_configmaps, create_namespace, touch_configmaps
from bench._workload import NAMESPACE, ROUND_ANNOTATION, cpu_seconds, rss_kib
from reconcile import (
    Client,
    ClusterConfig,
    Unlimited,
)
from testenv import Environment

__all__ = ["main"]

CONTENDERS: Final = ("ours", "kopf")
ROOT: Final = Path(__file__).resolve().parents[1]
STOP_TIMEOUT: Final = 30.0
ROUND_TIMEOUT: Final = 900.0


# --- parent --------------------------------------------------------------------------------------


@dataclass
class _Child:
    """A running contender and what its DONE lines said, by round."""

    name: str
    process: anyio.abc.Process
    spawned: float
    imported: float = 0.0
    imported_rss_kib: int = 0
    imported_cpu: float = 0.0
    done: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    changed: anyio.Event = field(default_factory=anyio.Event)
    ended: bool = False

    async def read(self) -> None:
        assert self.process.stdout is not None
        pending = b""
        async for chunk in self.process.stdout:
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self._line(line.decode(errors="replace").split())
        self.ended = True
        self.changed.set()

    def _line(self, words: list[str]) -> None:
        if words[:1] == ["IMPORTED"]:
            self.imported = float(words[1])
            self.imported_rss_kib = rss_kib(self.process.pid)[0]
            self.imported_cpu = cpu_seconds(self.process.pid)
        elif words[:1] == ["DONE"]:
            self.done[words[1]] = float(words[2])
            self.calls[words[1]] = int(words[3])
        else:
            return
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_done(self, round_: int) -> float:
        """Wait for the DONE line of ``round_``; returns its time."""
        with anyio.fail_after(ROUND_TIMEOUT):
            while str(round_) not in self.done:
                if self.ended:
                    raise RuntimeError(f"{self.name} exited before finishing round {round_}")
                await self.changed.wait()
        return self.done[str(round_)]

    def calls_in(self, round_: int) -> int:
        """Reconciles (handler calls) between the end of the previous round and this one."""
        previous = self.calls.get(str(round_ - 1), 0)
        return self.calls[str(round_)] - previous


@dataclass
class _Figures:
    """One contender's figures from one run (seconds, CPU seconds, MiB)."""

    import_seconds: float
    import_cpu: float
    import_rss: float
    start_seconds: float
    start_cpu: float
    rss: float
    live_writes: float
    live_seconds: float
    live_lag: float
    live_cpu: float
    backlog_writes: float
    backlog_seconds: float
    backlog_cpu: float
    end_rss: float
    peak_rss: float
    calls: tuple[int, int, int]


def _mib(kib: int) -> float:
    return kib / 1024


async def _contender(
    name: str, kubeconfig: Path, client: Client, objects: int, round_: int, concurrency: int
) -> _Figures:
    """Run one contender: initial list at ``round_``, a live touch, a backlog touch."""
    if name == "kopf":
        argv = [sys.executable, "-m", "bench._kopf_child", str(objects)]
    else:
        argv = [sys.executable, "-m", "bench._reconcile_child", str(kubeconfig), str(objects)]
    # kopf reads the kubeconfig from $KUBECONFIG.
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    spawned = time.monotonic()
    process = await anyio.open_process(argv, cwd=ROOT, env=env, stderr=None)
    child = _Child(name, process, spawned)
    pid = process.pid
    async with process, anyio.create_task_group() as group:
        group.start_soon(child.read)
        try:
            start_seconds = await child.wait_done(round_) - spawned
            start_cpu = cpu_seconds(pid)
            await anyio.sleep(1.0)  # let the initial work settle before reading memory
            rss = _mib(rss_kib(pid)[0])

            cpu_before, live_started = cpu_seconds(pid), time.monotonic()
            live_writes = await touch_configmaps(
                client, objects, round_ + 1, concurrency=concurrency
            )
            live_ended = time.monotonic()
            live_done = await child.wait_done(round_ + 1)
            live_cpu = cpu_seconds(pid) - cpu_before

            process.send_signal(signal.SIGSTOP)
            backlog_writes = await touch_configmaps(
                client, objects, round_ + 2, concurrency=concurrency
            )
            cpu_before, resumed = cpu_seconds(pid), time.monotonic()
            process.send_signal(signal.SIGCONT)
            backlog_done = await child.wait_done(round_ + 2)
            backlog_cpu = cpu_seconds(pid) - cpu_before
            end_rss, peak_rss = rss_kib(pid)
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(STOP_TIMEOUT) as scope:
                await process.wait()
            if scope.cancelled_caught:
                process.kill()
            group.cancel_scope.cancel()
    return _Figures(
        import_seconds=child.imported - spawned,
        import_cpu=child.imported_cpu,
        import_rss=_mib(child.imported_rss_kib),
        start_seconds=start_seconds,
        start_cpu=start_cpu,
        rss=rss,
        live_writes=live_writes,
        live_seconds=live_done - live_started,
        live_lag=live_done - live_ended,
        live_cpu=live_cpu,
        backlog_writes=backlog_writes,
        backlog_seconds=backlog_done - resumed,
        backlog_cpu=backlog_cpu,
        end_rss=_mib(end_rss),
        peak_rss=_mib(peak_rss),
        calls=(child.calls_in(round_), child.calls_in(round_ + 1), child.calls_in(round_ + 2)),
    )


_ROWS: Final = (
    ("start: spawn to all reconciled once, s", "start_seconds"),
    ("  of which interpreter + imports, s", "import_seconds"),
    ("  CPU used by then, s", "start_cpu"),
    ("  of which interpreter + imports, CPU s", "import_cpu"),
    ("live touch: parent's writes took, s", "live_writes"),
    ("live touch: first write to all handled, s", "live_seconds"),
    ("live touch: last write to all handled, s", "live_lag"),
    ("live touch: child CPU, s", "live_cpu"),
    ("backlog: parent's writes took, s", "backlog_writes"),
    ("backlog: SIGCONT to all handled, s", "backlog_seconds"),
    ("backlog: child CPU, s", "backlog_cpu"),
    ("RSS after imports, MiB", "import_rss"),
    ("RSS after the initial list, MiB", "rss"),
    ("RSS at the end, MiB", "end_rss"),
    ("peak RSS (VmHWM), MiB", "peak_rss"),
)


def _report(objects: int, results: dict[str, list[_Figures]]) -> None:
    def median(name: str, key: str) -> float:
        return statistics.median(float(getattr(figures, key)) for figures in results[name])

    def row(label: str, ours: float, kopf: float, digits: int = 2) -> None:
        ratio = f"{ours / kopf:7.2f}" if kopf else ""
        print(f"{label:<44} {ours:9.{digits}f} {kopf:9.{digits}f} {ratio}")

    rounds = len(results["ours"])
    print(f"\n{objects} ConfigMaps, median of {rounds} run(s) per contender")
    print(f"{'':<44} {'ours':>9} {'kopf':>9} {'ratio':>7}")
    for label, key in _ROWS:
        row(label, median("ours", key), median("kopf", key), 1 if "MiB" in label else 2)
    print("throughput (reconciles/s; ratio above 1: ours is faster)")

    def rate(name: str, seconds: str, minus: str | None = None) -> float:
        return objects / (median(name, seconds) - (median(name, minus) if minus else 0.0))

    rates = (
        ("start: objects / (start - imports)", "start_seconds", "import_seconds"),
        ("start: objects / child CPU second after imports", "start_cpu", "import_cpu"),
        ("live touch: objects / first write to done", "live_seconds", None),
        ("live touch: objects / child CPU second", "live_cpu", None),
        ("backlog: objects / SIGCONT to done", "backlog_seconds", None),
        ("backlog: objects / child CPU second", "backlog_cpu", None),
    )
    for label, seconds, minus in rates:
        row(label, rate("ours", seconds, minus), rate("kopf", seconds, minus), 0)
    writes = objects / median("ours", "live_writes")
    print(f"(the parent wrote at {writes:.0f} objects/s: a live rate near it means 'kept up')")
    for name in CONTENDERS:
        calls = [figures.calls for figures in results[name]]
        print(f"{name}: reconciles (initial, live, backlog) per run: {calls}")


async def _compare(kubeconfig: Path, objects: int, rounds: int, concurrency: int) -> None:
    config = await ClusterConfig.from_kubeconfig(kubeconfig)
    results: dict[str, list[_Figures]] = {name: [] for name in CONTENDERS}
    async with Client(config, limiter=Unlimited()) as client:
        listing = await client.list(CONFIGMAP, namespace=NAMESPACE, limit=1)
        if listing["items"]:
            first = listing["items"][0]["metadata"]["annotations"][ROUND_ANNOTATION]
            round_ = int(first)
        else:
            await create_namespace(client)
            seconds = await create_configmaps(client, objects, concurrency=concurrency)
            print(f"created {objects} ConfigMaps in {seconds:.1f} s ({objects / seconds:.0f}/s)")
            round_ = 1
        for index in range(rounds):
            order = CONTENDERS if index % 2 == 0 else CONTENDERS[::-1]
            for name in order:
                figures = await _contender(name, kubeconfig, client, objects, round_, concurrency)
                round_ += 2
                results[name].append(figures)
                print(f"run {index + 1} {name}: {figures}", flush=True)
    _report(objects, results)


async def _run(args: argparse.Namespace) -> None:
    if args.kubeconfig is not None:
        await _compare(args.kubeconfig, args.objects, args.rounds, args.concurrency)
        return
    async with Environment() as env:
        await _compare(env.host.kubeconfig, args.objects, args.rounds, args.concurrency)


def main() -> None:
    """Parse the command line; run the parent, or one child."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20, help="parallel writers")
    parser.add_argument("--rounds", type=int, default=1, help="runs per contender")
    parser.add_argument("--kubeconfig", type=Path, help="use a running cluster (no testenv)")
    args = parser.parse_args()
    anyio.run(_run, args)


if __name__ == "__main__":
    main()
