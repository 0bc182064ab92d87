"""Join registers a member cluster with the host, as ``karmadactl join`` does (push mode).

In the member: namespace ``karmada-cluster``, a ServiceAccount ``karmada-<name>`` and a
ClusterRole + binding letting it manage what Works carry. Its token comes from the TokenRequest
API (testenv, like many clusters, runs no controller filling legacy token Secrets). On the host:
the cluster namespace (``karmada-cluster`` unless told otherwise, like ``karmadactl join
--cluster-namespace``), a Secret ``<name>`` there with ``token`` and ``caBundle``, and the Cluster
object pointing at the member's endpoint. Every step is idempotent: joining twice
refreshes the token.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE
from reconcile import GVK, AlreadyExists, Client, ClusterConfig, Conflict

__all__ = ["JoinResult", "cluster_role_name", "join_cluster", "service_account_name"]

TOKEN_SECONDS: Final = 365 * 24 * 3600
SERVICE_ACCOUNT: Final = GVK("", "v1", "ServiceAccount")
SECRET: Final = GVK("", "v1", "Secret")


@dataclass(frozen=True)
class JoinResult:
    """What join wrote: the Cluster's name, the member endpoint and the credential Secret."""

    name: str
    endpoint: str
    secret: str


def service_account_name(cluster: str) -> str:
    """The member-side ServiceAccount of Cluster ``cluster``, as Karmada's
    names.GenerateServiceAccountName: ``karmada-<cluster>`` in namespace karmada-cluster."""
    return f"karmada-{cluster}"


def cluster_role_name(cluster: str) -> str:
    """The member-side ClusterRole (and ClusterRoleBinding) of Cluster ``cluster``, as Karmada's
    names.GenerateRoleName: ``karmada-controller-manager:karmada-<cluster>``."""
    return f"karmada-controller-manager:{service_account_name(cluster)}"


def _member_objects(name: str) -> list[dict[str, Any]]:
    account = service_account_name(name)
    role = cluster_role_name(name)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KARMADA_CLUSTER_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": KARMADA_CLUSTER_NAMESPACE},
        },
        {
            # Works may carry any kind, so the member-side identity manages any kind (as Karmada's).
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": account, "namespace": KARMADA_CLUSTER_NAMESPACE}
            ],
        },
    ]


async def _create_or_update(client: Client, obj: dict[str, Any]) -> dict[str, Any]:
    try:
        return await client.create(obj)
    except AlreadyExists:
        return await client.apply(obj, force=True)


async def _token(member: Client, name: str) -> str:
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    }
    answer = await member.create_subresource(
        SERVICE_ACCOUNT,
        service_account_name(name),
        "token",
        request,
        namespace=KARMADA_CLUSTER_NAMESPACE,
    )
    return str(answer["status"]["token"])


def _endpoint_and_ca(kubeconfig: dict[str, Any], context: str | None) -> tuple[str, str]:
    current = context or kubeconfig.get("current-context")
    contexts = {c["name"]: c["context"] for c in kubeconfig.get("contexts", [])}
    clusters = {c["name"]: c["cluster"] for c in kubeconfig.get("clusters", [])}
    cluster = clusters[contexts[str(current)]["cluster"]]
    ca = cluster.get("certificate-authority-data", "")
    if not ca and cluster.get("certificate-authority"):
        ca = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    return str(cluster["server"]), str(ca)


async def join_cluster(
    name: str,
    *,
    host: Client,
    member_kubeconfig: str,
    member_context: str | None = None,
    endpoint: str | None = None,
    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE,
) -> JoinResult:
    """Register the member reached by ``member_kubeconfig`` as Cluster ``name`` on ``host``.

    ``endpoint`` overrides the server URL recorded in the Cluster (when the host reaches the
    member at another address than the kubeconfig's). ``cluster_namespace`` is the host namespace
    of the member's Secret: the controller-manager reads Secrets from its ``--cluster-namespace``
    only (Karmada's flag of the same name; default ``karmada-cluster``).

    Raises:
        ConfigError: the member kubeconfig is unusable.
        ApiError: the member or the host refused a step (e.g. missing RBAC).
    """
    document = yaml.safe_load(Path(member_kubeconfig).read_text())  # noqa: ASYNC240 - tiny file
    server, ca = _endpoint_and_ca(document, member_context)
    config = await ClusterConfig.from_kubeconfig(member_kubeconfig, context=member_context)
    async with Client(config, field_manager="reconcile-join") as member:
        for obj in _member_objects(name):
            await _create_or_update(member, obj)
        token = await _token(member, name)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": cluster_namespace},
        "type": "Opaque",
        "data": {"token": base64.b64encode(token.encode()).decode(), "caBundle": ca},
    }
    cluster = {
        "apiVersion": CLUSTER_GVK.api_version,
        "kind": CLUSTER_GVK.kind,
        "metadata": {"name": name},
        "spec": {
            "apiEndpoint": endpoint or server,
            "syncMode": "Push",
            "secretRef": {"namespace": cluster_namespace, "name": name},
        },
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster_namespace}}
    with contextlib.suppress(AlreadyExists):
        await host.create(namespace)
    for obj in (secret, cluster):
        with contextlib.suppress(Conflict):
            await _create_or_update(host, obj)
    return JoinResult(name, endpoint or server, f"{cluster_namespace}/{name}")
