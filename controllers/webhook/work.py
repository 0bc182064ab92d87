"""Work defaults the work.karmada.io kinds at admission: the permanent ids of bindings and Works.

What karmada-webhook's resourcebinding, clusterresourcebinding and work handlers give users: a
ResourceBinding, ClusterResourceBinding or Work without a permanent id gets one, a UUID in its
``resourcebinding.karmada.io/permanent-id``, ``clusterresourcebinding.karmada.io/permanent-id`` or
``work.karmada.io/permanent-id`` label; one that has an id keeps it. The binding controller and the
detector give bindings and Works their ids too (for hosts without the webhook); whichever is first
wins, the other finds the label set. Karmada's Work handler also prunes the manifests; here the
binding controller writes them pruned already, so the webhook leaves them alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Final

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
)

__all__ = ["PERMANENT_ID_LABELS", "PermanentIdDefaulter", "default_permanent_id"]

PERMANENT_ID_LABELS: Final = {
    "ResourceBinding": RESOURCE_BINDING_PERMANENT_ID_LABEL,
    "ClusterResourceBinding": CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    "Work": "work.karmada.io/permanent-id",
}
"""The permanent-id label of each work.karmada.io kind."""

Obj = dict[str, Any]


def default_permanent_id(obj: Obj, new_id: Callable[[], str]) -> None:
    """Give a binding or Work the id ``new_id()`` when its permanent-id label is empty, in place.

    Raises:
        ValueError: ``obj`` is of none of the kinds of ``PERMANENT_ID_LABELS``.
    """
    key = PERMANENT_ID_LABELS.get(str(obj.get("kind")))
    if key is None:
        raise ValueError(f"no permanent id for kind {obj.get('kind')!r}")
    labels = obj.setdefault("metadata", {}).setdefault("labels", {})
    if not labels.get(key):
        labels[key] = new_id()


class PermanentIdDefaulter:
    """The CustomDefaulter of ResourceBinding, ClusterResourceBinding and Work."""

    def __init__(self, *, new_id: Callable[[], str] | None = None) -> None:
        self.new_id = new_id or (lambda: str(uuid.uuid4()))

    async def default(self, obj: Obj) -> None:
        """Give the object a permanent id unless it has one (see ``default_permanent_id``)."""
        default_permanent_id(obj, self.new_id)
