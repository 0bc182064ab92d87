"""Taint is ``reconcile taint``: add, overwrite and remove taints of Clusters, as karmadactl taint.

The change applies to each named Cluster's ``spec.taints`` by read-modify-write
(``clustertaints``), so taints the command was not asked about stay exactly as they are: the
taint controllers' ``cluster.karmada.io/not-ready`` / ``unreachable`` included. Rules are
karmadactl's (``pkg/karmadactl/taint``, from kubectl): a taint is identified by key and effect;
adding one that exists needs ``--overwrite`` (which then replaces its value); removing one that
does not exist fails and writes nothing; the report is ``cluster/NAME tainted``, ``untainted`` or
``modified``. NoExecute taints get ``timeAdded`` (core/v1: "only written for NoExecute taints"),
which an unchanged re-added taint keeps, so re-applying it does not restart tolerationSeconds.
One difference from karmadactl: existing taints keep their place in the list and new ones are
appended (karmadactl puts the added ones first), so a re-run never reorders what others wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TextIO

from controllers.api import Taint
from controllers.commands.clustertaints import edit_cluster_taints
from controllers.commands.errors import CommandError
from controllers.commands.taintspec import TaintChange, taint_string
from reconcile import Client

__all__ = ["MODIFIED", "TAINTED", "UNTAINTED", "reorganize_taints", "run_taint"]

MODIFIED = "modified"
TAINTED = "tainted"
UNTAINTED = "untainted"


def _same(a: Taint, b: Taint) -> bool:
    # core/v1 Taint.MatchTaint: key and effect identify a taint; a removal without effect
    # matches every taint of its key.
    return a.get("key") == b.get("key") and (
        not b.get("effect") or a.get("effect") == b.get("effect")
    )


def _stamped(taint: Taint, previous: Taint | None, now: str) -> Taint:
    added = Taint(**taint)
    if added.get("effect") != "NoExecute":
        return added
    unchanged = previous is not None and previous.get("value", "") == added.get("value", "")
    kept = previous.get("timeAdded") if previous is not None and unchanged else None
    added["timeAdded"] = kept or now
    return added


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def reorganize_taints(
    cluster: str,
    existing: Sequence[Taint],
    change: TaintChange,
    *,
    overwrite: bool = False,
    now: str | None = None,
) -> tuple[list[Taint], str]:
    """The taints of ``cluster`` after ``change``, and the report word (tainted, untainted,
    modified) as karmadactl's reorganizeTaints decides it.

    Raises:
        CommandError: an added taint exists and not ``overwrite``; a removed one does not exist.
    """
    if not overwrite:
        taken = [t["key"] for t in change.add for old in existing if _same(old, t)]
        if taken:
            raise CommandError(
                f"cluster {cluster} already has {','.join(taken)} taint(s) with same effect(s) "
                "and --overwrite is false"
            )
    stamp = now or _now()
    taints = list(existing)
    added = False
    for taint in change.add:
        index = next((i for i, old in enumerate(taints) if _same(old, taint)), None)
        if index is None:
            taints.append(_stamped(taint, None, stamp))
            added = True
        else:
            taints[index] = _stamped(taint, taints[index], stamp)
    missing = []
    for removal in change.remove:
        kept = [t for t in taints if not _same(t, removal)]
        if len(kept) == len(taints):
            missing.append(f'taint "{taint_string(removal)}" not found')
        taints = kept
    if missing:
        raise CommandError("; ".join(missing))
    deleted = bool(change.remove)
    word = MODIFIED if (added and deleted) or overwrite else TAINTED if added else UNTAINTED
    return taints, word


def _edit(
    name: str, change: TaintChange, overwrite: bool, taints: list[Taint]
) -> tuple[list[Taint], str]:
    return reorganize_taints(name, taints, change, overwrite=overwrite)


async def run_taint(
    client: Client,
    names: Sequence[str],
    change: TaintChange,
    out: TextIO,
    *,
    overwrite: bool = False,
    dry_run: bool = False,
) -> None:
    """Apply ``change`` to each Cluster of ``names`` in turn; one report line each on ``out``.

    Raises:
        CommandError: a Cluster does not exist or refuses the change (see ``reorganize_taints``);
            the Clusters before it were changed, those after it were not tried.
        ApiError: the apiserver refused a read or the update.
    """
    for name in names:
        edit = partial(_edit, name, change, overwrite)
        word = await edit_cluster_taints(client, name, edit, dry_run=dry_run)
        suffix = " (dry run)" if dry_run else ""
        print(f"cluster/{name} {word}{suffix}", file=out)
