"""Benchmark: how fast testenv control planes get ready and how much memory they hold.

Measures, with the binaries already installed (warm):
- time to ready of the host alone, and of host + 2 members on one shared etcd;
- RSS of every etcd and kube-apiserver process once ready;
- the peer in the same run: three independent environments (one etcd each) started in parallel,
  which is what host + 2 members would cost without the shared etcd.

Run: ``.venv/bin/python bench/controlplane.py [--rounds N]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterable
from pathlib import Path

import anyio

from testenv import Environment
from testenv.process import ControlPlaneProcess


def _rss_mib(process: ControlPlaneProcess) -> float:
    status = Path(f"/proc/{process.pid}/status").read_text()
    kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return kib / 1024


def _processes(env: Environment) -> Iterable[tuple[str, ControlPlaneProcess]]:
    assert env.etcd is not None
    yield "etcd", env.etcd.process
    for name, plane in env.clusters.items():
        yield f"kube-apiserver[{name}]", plane.apiserver.process


async def _shared(members: list[str]) -> tuple[float, dict[str, float]]:
    started = time.perf_counter()
    async with Environment(members=members) as env:
        elapsed = time.perf_counter() - started
        return elapsed, {label: _rss_mib(p) for label, p in _processes(env)}


async def _independent(count: int) -> tuple[float, float]:
    envs = [Environment() for _ in range(count)]
    started = time.perf_counter()
    try:
        async with anyio.create_task_group() as group:
            for env in envs:
                group.start_soon(env.start)
        elapsed = time.perf_counter() - started
        rss = sum(_rss_mib(p) for env in envs for _, p in _processes(env))
        return elapsed, rss
    finally:
        for env in envs:
            await env.stop()


async def main(rounds: int) -> None:
    host_times, multi_times, peer_times = [], [], []
    multi_rss: dict[str, float] = {}
    peer_rss = 0.0
    for _ in range(rounds):
        host_times.append((await _shared([]))[0])
        elapsed, multi_rss = await _shared(["member1", "member2"])
        multi_times.append(elapsed)
        elapsed, peer_rss = await _independent(3)
        peer_times.append(elapsed)
    median = statistics.median
    print(f"rounds: {rounds} (median time to ready)")
    print(f"host alone:                      {median(host_times):6.2f} s")
    print(f"host + 2 members, shared etcd:   {median(multi_times):6.2f} s")
    print(f"peer: 3 clusters, 3 etcds:       {median(peer_times):6.2f} s")
    print(f"ratio shared/peer (time):        {median(multi_times) / median(peer_times):6.2f}")
    print("RSS once ready, host + 2 members:")
    for label, rss in multi_rss.items():
        print(f"  {label:<26} {rss:7.1f} MiB")
    total = sum(multi_rss.values())
    print(f"  {'total':<26} {total:7.1f} MiB")
    print(f"peer total RSS (3 etcds):        {peer_rss:7.1f} MiB")
    print(f"ratio shared/peer (RSS):         {total / peer_rss:6.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    anyio.run(main, parser.parse_args().rounds)
