"""Clustertaints changes the taints of one Cluster by read-modify-write, leaving the rest alone.

The taint controllers (``cluster.karmada.io/not-ready``, ``unreachable``, a ClusterTaintPolicy's)
write the same ``spec.taints`` list, so a command must never write a list it read before their
change: each attempt reads the Cluster, computes the new list from what it read, and replaces the
Cluster with that read's resourceVersion. A Conflict means someone wrote in between: read again
and recompute, as client-go's ``retry.RetryOnConflict`` does with ``retry.DefaultRetry`` (five
attempts about 10 ms apart).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import anyio

from controllers.api import CLUSTER_GVK, Taint
from controllers.commands.errors import CommandError
from reconcile import Client, Conflict, NotFound

__all__ = ["CONFLICT_RETRIES", "edit_cluster_taints", "get_cluster"]

CONFLICT_RETRIES: Final = 5
"""Attempts before giving up on a Cluster that keeps changing (client-go's DefaultRetry.Steps)."""

_RETRY_DELAY: Final = 0.01

R = TypeVar("R")

TaintEdit = Callable[[list[Taint]], tuple[list[Taint], R]]
"""Given the taints read, the taints to write and what to report (e.g. "tainted")."""


async def get_cluster(client: Client, name: str) -> dict[str, Any]:
    """The Cluster ``name``.

    Raises:
        CommandError: there is no such Cluster.
    """
    try:
        return await client.get(CLUSTER_GVK, name)
    except NotFound:
        raise CommandError(f'cluster "{name}" not found') from None


def _taints_of(cluster: dict[str, Any]) -> list[Taint]:
    taints = (cluster.get("spec") or {}).get("taints") or []
    return [cast(Taint, dict(taint)) for taint in taints]


async def edit_cluster_taints(
    client: Client, name: str, edit: TaintEdit[R], *, dry_run: bool = False
) -> R:
    """Apply ``edit`` to Cluster ``name``'s taints and write the result unless it is unchanged
    or ``dry_run``; returns what ``edit`` reported for the list finally written.

    Raises:
        CommandError: no such Cluster, ``edit`` refused the change, or the Cluster kept
            changing for ``CONFLICT_RETRIES`` attempts.
        ApiError: the apiserver refused the update (e.g. Forbidden, Invalid).
    """
    for _ in range(CONFLICT_RETRIES):
        cluster = await get_cluster(client, name)
        current = _taints_of(cluster)
        wanted, report = edit(current)
        if wanted == current or dry_run:
            return report
        spec = cluster.setdefault("spec", {})
        if wanted:
            spec["taints"] = wanted
        else:
            spec.pop("taints", None)
        try:
            await client.update(cluster)
        except Conflict:
            await anyio.sleep(_RETRY_DELAY * random.uniform(1.0, 1.1))
            continue
        return report
    raise CommandError(
        f"cluster {name} kept changing: {CONFLICT_RETRIES} updates in a row hit a Conflict"
    )
