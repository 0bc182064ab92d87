"""A manager whose reconciles take 2 s (or argv[3] s); prints progress so a test can SIGTERM it
mid-reconcile. ``stubborn`` as argv[4]: the reconcile ignores cancellation and the graceful
timeout is 1 s, for the stop's watchdog."""

from __future__ import annotations

import sys

import anyio
from anyio.abc import TaskStatus

from reconcile import GVK, Manager, ManagerOptions, Request, Result, controller_managed_by


async def main(kubeconfig: str, namespace: str, seconds: float, stubborn: bool) -> None:
    grace = 1.0 if stubborn else 20.0
    manager = await Manager.from_kubeconfig(
        kubeconfig,
        options=ManagerOptions(metrics_bind_address="0", graceful_shutdown_timeout=grace),
    )

    async def slow(request: Request) -> Result | None:
        if request.namespace != namespace:
            return None
        print("reconcile started", flush=True)
        with anyio.CancelScope(shield=stubborn):  # stubborn: cancellation never reaches it
            await anyio.sleep(seconds)
        print("reconcile finished", flush=True)
        return None

    controller_managed_by(manager).for_(GVK("", "v1", "ConfigMap")).complete(slow)
    async with anyio.create_task_group() as group:
        await group.start(_announce, manager)
        await manager.run_until_signalled()
        group.cancel_scope.cancel()


async def _announce(manager: Manager, *, task_status: TaskStatus[None]) -> None:
    task_status.started()
    await manager.elected.wait()
    print("manager started", flush=True)


if __name__ == "__main__":
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    anyio.run(main, sys.argv[1], sys.argv[2], seconds, sys.argv[4:5] == ["stubborn"])
