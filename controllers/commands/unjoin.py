"""Unjoin is ``reconcile unjoin``: remove a member from the host, undoing ``reconcile join``.

As karmadactl unjoin (``pkg/karmadactl/unjoin``): the Cluster is deleted first and the command
waits (``--wait``, default 60 s) until it is gone. That wait matters: the cluster controller's
finalizer removes the member's Works, and the execution controller deletes their objects in the
member with the Cluster's credentials (a Pull cluster's agent with its host identity), so those
credentials are removed only afterwards. Then,
on the host, the Cluster's Secret (``spec.secretRef``, and ``impersonatorSecretRef`` if set;
``<cluster-namespace>/<name>`` as join writes it when a Push Cluster names none), for a Pull
Cluster what ``reconcile register`` made for its agent (``controllers.register``: the
ClusterRole, Roles and their bindings, the Lease, the ServiceAccount), and, given
``--cluster-kubeconfig``, in the member what join created there: the ClusterRoleBinding and
ClusterRole ``karmada-controller-manager:karmada-<name>``, the ServiceAccount ``karmada-<name>``
and its token Secret of the same name if one exists (Karmada's join creates one; ours uses the
TokenRequest API), all in namespace karmada-cluster. Unlike karmadactl the member's karmada-cluster
namespace stays: it may hold the identities of other Clusters joined from the same member (or of
other control planes). Objects already gone are skipped, and once the Cluster is gone a second
run deletes what a first one left (it gave up waiting, say), found by join's and register's
names; with nothing left at all, the name is reported not found.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Final, TextIO

import anyio

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE
from controllers.cluster.lease import LEASE
from controllers.commands.errors import CommandError
from controllers.join import cluster_role_name, service_account_name
from controllers.register import AgentIdentity, agent_targets
from reconcile import GVK, Client, NotFound

__all__ = ["DEFAULT_UNJOIN_WAIT", "Target", "agent_host_targets", "member_targets", "run_unjoin"]

DEFAULT_UNJOIN_WAIT: Final = 60.0
"""Seconds ``--wait`` gives the Cluster to be gone (karmadactl's default)."""

_POLL: Final = 0.5

SECRET: Final = GVK("", "v1", "Secret")
SERVICE_ACCOUNT: Final = GVK("", "v1", "ServiceAccount")
CLUSTER_ROLE: Final = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING: Final = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


@dataclass(frozen=True)
class Target:
    """One object unjoin deletes: kind, name, namespace (None for cluster-scoped ones)."""

    gvk: GVK
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        # kubectl's "kind.group name" wording, with the namespace when there is one.
        kind = self.gvk.kind.lower() + (f".{self.gvk.group}" if self.gvk.group else "")
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f'{kind} "{self.name}"{where}'


def member_targets(name: str) -> list[Target]:
    """What ``reconcile join`` created in the member for Cluster ``name`` (a token Secret as
    Karmada's join makes one too), in deletion order: RBAC first, the identity last."""
    role, account = cluster_role_name(name), service_account_name(name)
    return [
        Target(CLUSTER_ROLE_BINDING, role),
        Target(CLUSTER_ROLE, role),
        Target(SECRET, account, KARMADA_CLUSTER_NAMESPACE),
        Target(SERVICE_ACCOUNT, account, KARMADA_CLUSTER_NAMESPACE),
    ]


def agent_host_targets(name: str, identity: AgentIdentity) -> list[Target]:
    """What ``reconcile register`` made on the host for Pull cluster ``name``'s agent: its
    bindings and roles, its Lease and its ServiceAccount, in deletion order."""
    return [Target(gvk, obj, namespace) for gvk, obj, namespace in agent_targets(name, identity)]


def _is_pull(cluster: dict[str, Any]) -> bool:
    return (cluster.get("spec") or {}).get("syncMode") == "Pull"


def _secret_targets(cluster: dict[str, Any], cluster_namespace: str) -> list[Target]:
    spec = cluster.get("spec") or {}
    name = cluster["metadata"]["name"]
    # A Pull cluster has no Secret unless it names one: none is guessed from its name.
    default = None if _is_pull(cluster) else {"namespace": cluster_namespace, "name": name}
    refs = [spec.get("secretRef") or default, spec.get("impersonatorSecretRef")]
    return [
        Target(SECRET, ref["name"], ref.get("namespace") or cluster_namespace)
        for ref in refs
        if ref
    ]


def _agent_targets(cluster: dict[str, Any], cluster_namespace: str) -> list[Target]:
    name = cluster["metadata"]["name"]
    if not _is_pull(cluster):
        # The heartbeat Lease the cluster-status controller renews for a Push member; a Pull
        # member's is among its agent's objects. Left behind, a second unjoin would find it.
        return [Target(LEASE, name, cluster_namespace)]
    identity = AgentIdentity.recorded(cluster) or AgentIdentity.of(name, cluster_namespace)
    return agent_host_targets(name, identity)


async def _delete(client: Client, target: Target, out: TextIO) -> None:
    with contextlib.suppress(NotFound):
        await client.delete(target.gvk, target.name, namespace=target.namespace)
        print(f"{target} deleted", file=out)


async def _wait_gone(client: Client, name: str, wait: float) -> None:
    left: dict[str, Any] = {"metadata": {}}
    with anyio.move_on_after(wait):
        while True:
            try:
                left = await client.get(CLUSTER_GVK, name)
            except NotFound:
                return
            await anyio.sleep(_POLL)
    finalizers = ", ".join(left["metadata"].get("finalizers") or []) or "none"
    raise CommandError(
        f"cluster {name} still exists after {wait:g}s (finalizers: {finalizers}; the "
        "controller-manager removes them once the member's Works are gone); its Secret and "
        "member objects are left in place: run unjoin again once it is gone"
    )


async def _exists(client: Client, target: Target) -> bool:
    try:
        await client.get(target.gvk, target.name, namespace=target.namespace)
    except NotFound:
        return False
    return True


async def _leftovers(
    name: str, host: Client, member: Client | None, cluster_namespace: str
) -> list[tuple[Client, Target]]:
    # What an unjoin that gave up waiting left behind, found by the names join uses.
    candidates = [(host, Target(SECRET, name, cluster_namespace))]
    identity = AgentIdentity.of(name, cluster_namespace)
    candidates += [(host, target) for target in agent_host_targets(name, identity)]
    if member is not None:
        candidates += [(member, target) for target in member_targets(name)]
    return [(client, target) for client, target in candidates if await _exists(client, target)]


async def _finish(
    name: str,
    host: Client,
    member: Client | None,
    cluster_namespace: str,
    out: TextIO,
    dry_run: bool,
) -> None:
    left = await _leftovers(name, host, member, cluster_namespace)
    if not left:
        raise CommandError(f'cluster "{name}" not found')
    for client, target in left:
        if dry_run:
            print(f"{target} would be deleted (dry run)", file=out)
        else:
            await _delete(client, target, out)
    if not dry_run:
        print(f"cluster {name} unjoined (the Cluster was already gone)", file=out)


async def run_unjoin(
    name: str,
    *,
    host: Client,
    member: Client | None,
    out: TextIO,
    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE,
    wait: float = DEFAULT_UNJOIN_WAIT,
    dry_run: bool = False,
) -> None:
    """Remove Cluster ``name`` and its credentials from ``host``, and with ``member`` what join
    created there; one line on ``out`` per object deleted (or, ``dry_run``, to be deleted).

    A Cluster already gone is no error while something join made for it is left (the Secret
    ``<cluster_namespace>/<name>``, the member objects): those are deleted.

    Raises:
        CommandError: no such Cluster and nothing of it left, or the Cluster is still there
            after ``wait`` seconds.
        ApiError: a deletion was refused (e.g. Forbidden).
    """
    try:
        cluster = await host.get(CLUSTER_GVK, name)
    except NotFound:
        await _finish(name, host, member, cluster_namespace, out, dry_run)
        return
    secrets = _secret_targets(cluster, cluster_namespace) + _agent_targets(
        cluster, cluster_namespace
    )
    in_member = member_targets(name) if member is not None else []
    if dry_run:
        for target in [Target(CLUSTER_GVK, name), *secrets, *in_member]:
            print(f"{target} would be deleted (dry run)", file=out)
        return
    await _delete(host, Target(CLUSTER_GVK, name), out)
    await _wait_gone(host, name, wait)
    for target in secrets:
        await _delete(host, target, out)
    if member is not None:
        for target in in_member:
            await _delete(member, target, out)
    print(f"cluster {name} unjoined", file=out)
