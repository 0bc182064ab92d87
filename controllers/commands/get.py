"""Get is ``reconcile get``: one row per member object of a kind, as ``karmadactl get -C`` lists.

The member objects are read through the Works on the host, not from the members: each Work in an
execution namespace ``karmada-es-<cluster>`` carries the manifests applied to that member, and
its status says whether they were applied (condition Applied) and what the execution controller
last reflected from each member object (``manifestStatuses``: the interpreted status and health).
So only the host's kubeconfig is needed (no member credentials, as karmadactl's cluster proxy
avoids), and an unreachable member shows the last state it reported. A member object nobody
propagated (ADOPTION N in karmadactl) is not in any Work and so not listed.

Columns: NAME, CLUSTER, READY (``readyReplicas/spec.replicas`` of the member's copy for kinds
with replicas, as kubectl shows Deployments; ``-`` otherwise), APPLIED (the Work's Applied
status) and HEALTH (Healthy, Unhealthy or Unknown as the interpreter judged it; ``-`` before
the first report); NAMESPACE first with ``--all-namespaces``. KIND is what kubectl accepts
(``deployments``, ``deployment``, ``deploy``, ``deployments.apps``), resolved by the host's
discovery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TextIO

from controllers.api import (
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    cluster_of_execution_namespace,
    execution_namespace,
    manifests_of,
    work_status,
)
from controllers.commands.clustertaints import get_cluster
from controllers.commands.errors import CommandError
from reconcile import GVK, Client, NoKindMatch, Resource, get_condition

__all__ = ["MemberRow", "member_rows", "render_rows", "resolve_kind", "run_get"]

_PADDING: Final = 3
"""Spaces between columns, as kubectl's tabwriter pads them."""


@dataclass(frozen=True)
class MemberRow:
    """One member object as the Works report it."""

    namespace: str
    name: str
    cluster: str
    ready: str
    applied: str
    health: str


async def resolve_kind(client: Client, kind: str) -> Resource:
    """The resource ``kind`` names on the host, as kubectl resolves a resource argument.

    Raises:
        CommandError: the host serves no such resource (kubectl's words).
    """
    try:
        return await client.mapper.resource_for_name(kind)
    except NoKindMatch:
        raise CommandError(f'the server doesn\'t have a resource type "{kind}"') from None


def _same_object(identifier: Mapping[str, Any], manifest: Mapping[str, Any]) -> bool:
    meta = manifest.get("metadata") or {}
    gvk = GVK.of(manifest)
    return (
        identifier.get("group", "") == gvk.group
        and identifier.get("kind") == gvk.kind
        and identifier.get("name") == meta.get("name")
        and (identifier.get("namespace") or "") == (meta.get("namespace") or "")
    )


def _ready(manifest: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    replicas = (manifest.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int):
        return "-"
    return f"{status.get('readyReplicas') or 0}/{replicas}"


def _rows_of_work(work: Mapping[str, Any], cluster: str, wanted: GVK) -> list[MemberRow]:
    applied = get_condition(work, WORK_APPLIED_CONDITION)
    statuses = work_status(work).get("manifestStatuses") or []
    rows = []
    for manifest in manifests_of(work):
        gvk = GVK.of(manifest)
        if (gvk.group, gvk.kind) != (wanted.group, wanted.kind):
            continue
        entry: Mapping[str, Any] = next(
            (s for s in statuses if _same_object(s.get("identifier") or {}, manifest)), {}
        )
        meta = manifest.get("metadata") or {}
        rows.append(
            MemberRow(
                namespace=str(meta.get("namespace") or ""),
                name=str(meta.get("name") or ""),
                cluster=cluster,
                ready=_ready(manifest, entry.get("status") or {}),
                applied=str(applied.get("status", "Unknown")) if applied else "-",
                health=str(entry.get("health") or "-"),
            )
        )
    return rows


async def member_rows(
    client: Client,
    resource: Resource,
    *,
    name: str | None = None,
    namespace: str | None = None,
    clusters: Sequence[str] = (),
) -> list[MemberRow]:
    """The member objects of ``resource`` the host's Works carry, sorted by namespace, name and
    cluster; only ``name``, only in ``namespace`` (None: every namespace; ignored for
    cluster-scoped kinds), only in ``clusters`` (empty: every member).

    Raises:
        CommandError: a cluster of ``clusters`` does not exist.
    """
    for cluster in clusters:
        await get_cluster(client, cluster)
    if clusters:
        works = [
            work
            for cluster in clusters
            for work in await client.list_all(WORK_GVK, namespace=execution_namespace(cluster))
        ]
    else:
        works = await client.list_all(WORK_GVK)
    rows = []
    for work in works:
        member = cluster_of_execution_namespace(work["metadata"].get("namespace", ""))
        if member is not None:
            rows += _rows_of_work(work, member, resource.gvk)
    if resource.namespaced and namespace is not None:
        rows = [row for row in rows if row.namespace == namespace]
    if name is not None:
        rows = [row for row in rows if row.name == name]
    return sorted(rows, key=lambda row: (row.namespace, row.name, row.cluster))


def render_rows(rows: Sequence[MemberRow], *, with_namespace: bool = False) -> list[str]:
    """The table lines kubectl would print for ``rows`` (a header, then one line a row)."""
    table = [["NAME", "CLUSTER", "READY", "APPLIED", "HEALTH"]]
    table += [[r.name, r.cluster, r.ready, r.applied, r.health] for r in rows]
    if with_namespace:
        namespaces = ["NAMESPACE", *(row.namespace for row in rows)]
        table = [[namespace, *line] for namespace, line in zip(namespaces, table, strict=True)]
    widths = [max(len(line[i]) for line in table) + _PADDING for i in range(len(table[0]) - 1)]
    return [
        "".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + line[-1]
        for line in table
    ]


def _plural(resource: Resource) -> str:
    return resource.plural + (f".{resource.gvk.group}" if resource.gvk.group else "")


async def run_get(
    client: Client,
    kind: str,
    out: TextIO,
    err: TextIO,
    *,
    name: str | None = None,
    namespace: str | None = None,
    clusters: Sequence[str] = (),
) -> None:
    """Print the member objects of ``kind`` (see ``member_rows``); ``namespace`` None lists every
    namespace, with a NAMESPACE column. Nothing found prints kubectl's "No resources found" on
    ``err``.

    Raises:
        CommandError: an unknown kind or cluster, or ``name`` is in no member.
    """
    resource = await resolve_kind(client, kind)
    rows = await member_rows(client, resource, name=name, namespace=namespace, clusters=clusters)
    if not rows:
        if name is not None:
            raise CommandError(f'{_plural(resource)} "{name}" not found in any member cluster')
        where = f" in {namespace} namespace" if resource.namespaced and namespace else ""
        print(f"No resources found{where}.", file=err)
        return
    with_namespace = resource.namespaced and namespace is None
    for line in render_rows(rows, with_namespace=with_namespace):
        print(line, file=out)
