"""The reconcile contender of bench/reconcile.py: ``for_(ConfigMap)`` with a no-op reconcile.

Run by the parent as ``python -m bench._reconcile_child KUBECONFIG OBJECTS``. Like kopf's child,
it imports only what its operator needs (the framework, not testenv nor the parent's
machinery), so "RSS after imports" weighs the framework alone. A Manager restricted to the
namespace, default options (one worker), metrics off; the reconcile reads the object from the
cache (``manager.client.get``, a copy, as every real reconcile starts) and notes the round
annotation it saw. Logs at WARNING.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio

from bench._cluster import CONFIGMAP
from bench._workload import NAMESPACE, Tally, say
from reconcile import (
    ClusterConfig,
    Manager,
    ManagerOptions,
    NotFound,
    Request,
    configure_logging,
    controller_managed_by,
)

__all__ = ["main"]


def main(kubeconfig: Path, objects: int) -> None:
    """Run the manager until SIGTERM."""
    configure_logging(level="WARNING")
    tally = Tally(objects)

    async def run() -> None:
        config = await ClusterConfig.from_kubeconfig(kubeconfig)
        options = ManagerOptions(metrics_bind_address="0", namespace=NAMESPACE)
        manager = Manager(config, options=options)

        async def reconcile(request: Request) -> None:
            try:
                obj = await manager.client.get(CONFIGMAP, request.name, namespace=request.namespace)
            except NotFound:
                return
            tally.note(request.name, obj["metadata"].get("annotations"))

        controller_managed_by(manager).for_(CONFIGMAP).complete(reconcile)
        await manager.run_until_signalled()

    say("IMPORTED", time.monotonic())
    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
