"""The kopf contender of bench/reconcile.py: a no-op ``@kopf.on.event("configmaps")`` operator.

Run by the parent as ``python -m bench._kopf_child OBJECTS`` with ``$KUBECONFIG`` set. It imports
neither reconcile nor kubernetes-asyncio: kopf would import kubernetes-asyncio to log in through it
whenever it can (about 37 MiB of generated models); hidden, kopf logs in with its own minimal
kubeconfig reader, as in an installation of kopf alone. Standalone (no peering), watching one
namespace, posting of k8s Events off; on.event handlers keep no progress or diff-base state, so
kopf writes nothing to the objects. Logs at WARNING.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from bench._workload import NAMESPACE, Tally, say

__all__ = ["main"]


def main(objects: int) -> None:
    """Run the operator until SIGTERM."""
    sys.modules["kubernetes_asyncio"] = None  # type: ignore[assignment]  # import fails
    import kopf

    tally = Tally(objects)

    @kopf.on.startup()
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.peering.standalone = True
        settings.posting.enabled = False

    @kopf.on.event("configmaps")
    async def handle(
        *, type: str | None, name: str, annotations: Mapping[str, str], **_: Any
    ) -> None:
        if type != "DELETED":  # None: from the initial list
            tally.note(name, annotations)

    kopf.configure(quiet=True)
    logging.getLogger("kopf").setLevel(logging.WARNING)
    say("IMPORTED", time.monotonic())
    kopf.run(standalone=True, namespaces=[NAMESPACE])


if __name__ == "__main__":
    main(int(sys.argv[1]))
