"""Unjoin is ``reconcile unjoin``: remove a member from the host, undoing ``reconcile join``.

As karmadactl unjoin (``pkg/karmadactl/unjoin``): the Cluster is deleted first and the command
waits (``--wait``, default 60 s) until it is gone. That wait matters: the cluster controller's
finalizer removes the member's Works, and the execution controller deletes their objects in the
member with the Cluster's credentials, so those credentials are removed only afterwards. Then,
on the host, the Cluster's Secret (``spec.secretRef``, and ``impersonatorSecretRef`` if set;
``<cluster-namespace>/<name>`` as join writes it when the Cluster names none), and, given
``--cluster-kubeconfig``, in the member what join created there: the ClusterRoleBinding and
ClusterRole ``karmada-controller-manager:karmada-<name>``, the ServiceAccount ``karmada-<name>``
and its token Secret of the same name if one exists (Karmada's join creates one; ours uses the
TokenRequest API), all in namespace karmada-cluster. Unlike karmadactl the member's karmada-cluster
namespace stays: it may hold the identities of other Clusters joined from the same member (or of
other control planes). Objects already gone are skipped, so running it again finishes a partial
unjoin.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Final, TextIO

import anyio

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE
from controllers.commands.clustertaints import get_cluster
from controllers.commands.errors import CommandError
from controllers.join import cluster_role_name, service_account_name
from reconcile import GVK, Client, NotFound

__all__ = ["DEFAULT_UNJOIN_WAIT", "Target", "member_targets", "run_unjoin"]

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


def _secret_targets(cluster: dict[str, Any], cluster_namespace: str) -> list[Target]:
    spec = cluster.get("spec") or {}
    refs = [
        spec.get("secretRef")
        or {"namespace": cluster_namespace, "name": cluster["metadata"]["name"]}
    ]
    if spec.get("impersonatorSecretRef"):
        refs.append(spec["impersonatorSecretRef"])
    return [Target(SECRET, ref["name"], ref.get("namespace") or cluster_namespace) for ref in refs]


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
        "controller-manager removes them once the member's Works are gone): its Secret and "
        "member objects were left in place; run unjoin again when it is gone"
    )


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

    Raises:
        CommandError: there is no such Cluster, or it is still there after ``wait`` seconds.
        ApiError: a deletion was refused (e.g. Forbidden).
    """
    cluster = await get_cluster(host, name)
    secrets = _secret_targets(cluster, cluster_namespace)
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
