"""Cordon is ``reconcile cordon`` and ``uncordon``: mark a Cluster unschedulable, or schedulable.

As karmadactl cordon (``pkg/karmadactl/cordon``): cordoning adds the taint
``cluster.karmada.io/unschedulable:NoSchedule`` to the Cluster's ``spec.taints``, which the
scheduler's TaintToleration filter then keeps new placements away from; uncordoning removes that
taint (that key and effect only). What runs there already stays. Cordoning a cordoned Cluster
(or uncordoning a schedulable one) writes nothing and says ``NAME cluster already cordoned``
(``already uncordoned``); otherwise ``NAME cluster cordoned`` (``uncordoned``). The write is a
read-modify-write (``clustertaints``): every other taint is left as it is.
"""

from __future__ import annotations

from typing import Final, TextIO

from controllers.api import Taint
from controllers.cluster.taints import TAINT_CLUSTER_UNSCHEDULABLE
from controllers.commands.clustertaints import edit_cluster_taints
from reconcile import Client

__all__ = ["UNSCHEDULABLE_TAINT", "run_cordon"]

UNSCHEDULABLE_TAINT: Final = Taint(key=TAINT_CLUSTER_UNSCHEDULABLE, effect="NoSchedule")


def _is_unschedulable(taint: Taint) -> bool:
    return taint.get("key") == TAINT_CLUSTER_UNSCHEDULABLE and taint.get("effect") == "NoSchedule"


def _cordon(taints: list[Taint]) -> tuple[list[Taint], bool]:
    if any(_is_unschedulable(t) for t in taints):
        return taints, False
    return [*taints, Taint(**UNSCHEDULABLE_TAINT)], True


def _uncordon(taints: list[Taint]) -> tuple[list[Taint], bool]:
    kept = [t for t in taints if not _is_unschedulable(t)]
    return kept, len(kept) != len(taints)


async def run_cordon(
    client: Client, name: str, out: TextIO, *, cordon: bool = True, dry_run: bool = False
) -> None:
    """Cordon (or with ``cordon=False`` uncordon) the Cluster ``name``; one line on ``out``.

    Raises:
        CommandError: there is no such Cluster, or it kept changing under the update.
        ApiError: the apiserver refused the update.
    """
    verb = "cordon" if cordon else "uncordon"
    changed = await edit_cluster_taints(
        client, name, _cordon if cordon else _uncordon, dry_run=dry_run
    )
    if not changed:
        print(f"{name} cluster already {verb}ed", file=out)
        return
    suffix = " (dry run)" if dry_run else ""
    print(f"{name} cluster {verb}ed{suffix}", file=out)
