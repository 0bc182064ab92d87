"""End to end: a controller-manager process killed (SIGKILL) mid-propagation, then restarted.

The controller-manager runs as its own process (the ``reconcile`` console script), reaching the
members through the Cluster objects and Secrets ``join`` created, as in production. It is killed
while 200 Deployments are on their way to two members; while it is down a few templates are
scaled and a few deleted (testenv runs no garbage collector: the detector deletes their
bindings). Restarted, it must converge: every member Deployment present once with its share of
the replicas, one Applied Work per binding and cluster, one Scheduled binding per template,
nothing orphaned.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from testenv import Environment, eventually
from tests.e2e.convergence import (
    REPLICAS,
    Clusters,
    bounded,
    clusters_of,
    converge,
    delete,
    label_policy,
    labelled_template,
    scaled,
)
from tests.e2e.replicas import log_tail, logged_process
from tests.e2e.stack import DEPLOYMENT

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

TEMPLATES = 200
SCALED = {f"web-{i:03d}" for i in range(0, 200, 40)}
"""Templates scaled to FACTOR x REPLICAS while the controller-manager is down."""
FACTOR = 2
DELETED = {f"web-{i:03d}" for i in range(7, 200, 40)}
"""Templates deleted while the controller-manager is down."""
SELECTED = {"e2e.reconcile.io/crash": "true"}
POLICY_NAME = "crash"
KILL_AFTER = 20
"""Member Deployments (member1) seen before the SIGKILL: propagation is under way."""
CONVERGE_TIMEOUT = 300.0
"""Seconds the restarted controller-manager has to converge (2 shared cores, generous)."""
CHECK_INTERVAL = 1.0
"""Seconds between convergence checks (each lists ~1,000 objects of this namespace)."""
EXIT_TIMEOUT = 60.0
"""Seconds a SIGTERMed controller-manager has to stop."""


def _names() -> list[str]:
    return [f"web-{i:03d}" for i in range(TEMPLATES)]


@asynccontextmanager
async def controller_manager(env: Environment, log: Path) -> AsyncIterator[Process]:
    """``reconcile controller-manager`` against the host, its output appended to ``log``; killed
    and reaped on the way out if still running."""
    script = Path(sys.executable).with_name("reconcile")
    command = [
        str(script),
        "controller-manager",
        "--kubeconfig",
        str(env.host.kubeconfig),
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    ]
    async with logged_process(command, log) as process:
        yield process


async def _exit_status(process: Process, timeout: float) -> int:
    with anyio.fail_after(timeout):
        return await process.wait()


async def test_sigkill_mid_propagation_converges_after_restart(
    joined: Environment, namespace: str, tmp_path: Path
) -> None:
    log = tmp_path / "controller-manager.log"
    try:
        async with clusters_of(joined, namespace) as clusters:
            await _crash_and_converge(joined, clusters, log)
    except BaseException:
        print(f"controller-manager log ({log}), last lines:\n{log_tail(log, 80)}")
        raise


async def _crash_and_converge(env: Environment, clusters: Clusters, log: Path) -> None:
    ns, host = clusters.namespace, clusters.host
    await host.create(label_policy(POLICY_NAME, ns, SELECTED))
    await bounded(partial(host.create, labelled_template(name, ns, SELECTED)) for name in _names())

    async with controller_manager(env, log) as first:
        await _wait_for_propagation_under_way(clusters, first)
        first.send_signal(signal.SIGKILL)
        assert await _exit_status(first, EXIT_TIMEOUT) == -signal.SIGKILL
    at_kill = await clusters.counts()
    print(f"at the SIGKILL: {at_kill}")
    assert at_kill["member1 deployments"] < TEMPLATES, (
        f"propagation had finished before the kill, nothing was interrupted: {at_kill}"
    )

    await _change_while_down(clusters)
    kept = set(_names()) - DELETED
    async with controller_manager(env, log) as second:
        took = await converge(
            clusters, kept, CONVERGE_TIMEOUT, scaled(SCALED, FACTOR), interval=CHECK_INTERVAL
        )
        print(f"converged {took:.1f}s after the restart")
        await clusters.clean_up(kept, POLICY_NAME, CONVERGE_TIMEOUT)
        second.send_signal(signal.SIGTERM)
        assert await _exit_status(second, EXIT_TIMEOUT) == 0


async def _wait_for_propagation_under_way(clusters: Clusters, process: Process) -> None:
    async def under_way() -> bool:
        assert process.returncode is None, f"controller-manager exited: {process.returncode}"
        return len(await clusters.member_deployments("member1")) >= KILL_AFTER

    await eventually(under_way, timeout=CONVERGE_TIMEOUT, interval=0.05)


async def _change_while_down(clusters: Clusters) -> None:
    """Scale some templates and delete others (the restarted detector must find their bindings
    orphaned: it never sees these templates' deletion)."""
    ns, host = clusters.namespace, clusters.host
    for name in sorted(SCALED):
        await host.patch(DEPLOYMENT, name, {"spec": {"replicas": FACTOR * REPLICAS}}, namespace=ns)
    for name in sorted(DELETED):
        await delete(host, DEPLOYMENT, name, ns)
