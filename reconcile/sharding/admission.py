"""Admission assigns a ring's new objects to their shard as they are created: a mutating webhook
in front of the sharder's first-sight assignment (timebertt's "sharder webhook").

An object created without its ring's shard label is labelled with the shard the sharder would
give it, so no label patch follows its creation and its shard's watch sees it in its first event.
Only the leader decides (``Sharder.admission_shard``): its sharder's cache knows the key's other
objects, and a key whose objects are not all settled on their owner is left to the sharder's
queue, as is every object a non-leader is asked about. Any answer but a patch admits the object
unchanged, and the sharder assigns it on first sight: the webhook saves work, it is never needed
(register it with ``failurePolicy: Ignore``).
"""

from __future__ import annotations

from typing import Final

import structlog

from reconcile.objects import Obj
from reconcile.sharding.metrics import SharderMetrics
from reconcile.sharding.sharder import Sharder
from reconcile.webhook.admission import (
    CREATE,
    AdmissionRequest,
    AdmissionResponse,
    allowed,
    patched,
)

__all__ = ["ASSIGN_PATH_PREFIX", "ShardAssigner"]

log = structlog.get_logger("reconcile.sharding")

ASSIGN_PATH_PREFIX: Final = "/assign-shard-"
"""``ShardAssigner.path``: this prefix and the ring's name."""


class ShardAssigner:
    """The admission handler that labels new objects of ``sharder``'s ring with their shard.

    Register it on the manager's webhook server at ``path`` on every replica (the apiserver may
    call any of them; only the leader's answer carries a label).
    """

    def __init__(self, sharder: Sharder) -> None:
        self.sharder = sharder
        self._metrics = SharderMetrics.for_registry(sharder.manager.registry)

    @property
    def path(self) -> str:
        """Where the webhook server serves it: ``/assign-shard-<ring>``."""
        return ASSIGN_PATH_PREFIX + self.sharder.ring.name

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Label a created object of the ring that has no shard yet; admit anything else as it
        is, whatever it holds: a webhook that denies would block creates it only saves work on."""
        ring, obj = self.sharder.ring, request.object
        if request.operation != CREATE or obj is None or not ring.has(request.kind):
            return allowed()
        try:
            labelled = self._labelled(request, obj)
        except Exception as error:  # a malformed object, a key function that fails on it
            log.info("shard left to first sight", kind=str(request.kind), error=repr(error))
            return allowed()
        return allowed() if labelled is None else patched(obj, labelled)

    def _labelled(self, request: AdmissionRequest, obj: Obj) -> Obj | None:
        """``obj`` with its shard label (shallow copies: the patch is computed from the two),
        or None to leave it to the sharder."""
        ring, metadata = self.sharder.ring, obj.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if not metadata.get("name") or ring.shard_label in labels:
            return None  # generateName: the key is not known before the name is
        # The namespace is not always in the object on create: the request's path carries it.
        named = {
            **obj,
            "metadata": {**metadata, "namespace": request.namespace or metadata.get("namespace")},
        }
        shard = self.sharder.admission_shard(ring.kind(request.kind), named)
        if shard is None:
            return None
        self._metrics.admitted.labels(ring.name, shard).inc()
        return {**obj, "metadata": {**metadata, "labels": {**labels, ring.shard_label: shard}}}
