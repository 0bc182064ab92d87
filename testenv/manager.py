"""Manager runs a reconcile Manager in a test: made for a control plane, started inside the test.

``manager_for(plane)`` gives a Manager of ``plane`` as its admin (metrics on an ephemeral
loopback port, so tests can scrape them and never collide), and ``async with running(manager)``
starts it (caches synced, controllers running) and stops it gracefully on exit. A manager that
outlives its test cannot be started in a fixture: anyio's task groups must be entered and left
in one task, and pytest runs a fixture's setup and teardown in different ones. The ``manager``
fixture therefore hands the test a Manager not yet started, and the test runs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio

from reconcile import ClusterConfig, Manager, ManagerOptions
from testenv.controlplane import ControlPlane

__all__ = ["manager_for", "running"]


async def manager_for(plane: ControlPlane, **options: Any) -> Manager:
    """A Manager of ``plane`` as admin; ``options`` are ``ManagerOptions`` fields.

    Metrics default to an ephemeral port on loopback, health probes stay off.
    """
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    defaults: dict[str, Any] = {"metrics_bind_address": "127.0.0.1:0"}
    return Manager(config, options=ManagerOptions(**{**defaults, **options}))


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[Manager]:
    """``manager`` started (its caches synced, its controllers running); stopped on exit."""
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        try:
            yield manager
        finally:
            manager.stop()
