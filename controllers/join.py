"""Join registers a member cluster with the host, as ``karmadactl join`` does (push mode).

In the member: namespace ``karmada-cluster``, a ServiceAccount ``karmada-<name>`` and a
ClusterRole + binding letting it manage what Works carry. Its token comes from the TokenRequest
API (testenv, like many clusters, runs no controller filling legacy token Secrets). On the host:
the cluster namespace (``karmada-cluster`` unless told otherwise, like ``karmadactl join
--cluster-namespace``), a Secret ``<name>`` there with ``token`` and ``caBundle``, and the Cluster
object pointing at the member's endpoint. Every step is idempotent: joining twice
refreshes the token.

The Secret is bound to its Cluster by a controller ownerReference (the Cluster's name and uid),
as karmadactl join binds it: the controller-manager uses a Secret only for the Cluster it is
bound to (``controllers.cluster.binding``). The Cluster is written first, so the Secret never
exists unbound; a Secret of an earlier Cluster of the same name is bound again to the new one.

Tokens expire: join asks for a year (``TOKEN_SECONDS``) and reports what the member granted
(``status.expirationTimestamp`` of the TokenRequest; a member may cap it with kube-apiserver's
``--service-account-max-token-expiration``). ``refresh_token`` (``reconcile join NAME
--refresh``) asks for a new token and writes it into the Cluster's Secret, leaving the Cluster
and the member's RBAC as they are; the cluster-status controller's ``TokenExpiring`` condition
says when that is due (``controllers.cluster.expiry``).
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE, cluster_spec
from controllers.cluster.binding import cluster_owner, owner_reference
from reconcile import GVK, AlreadyExists, Client, ClusterConfig, Conflict, NotFound

__all__ = [
    "JoinError",
    "JoinResult",
    "cluster_role_name",
    "join_cluster",
    "refresh_token",
    "service_account_name",
]

TOKEN_SECONDS: Final = 365 * 24 * 3600
SERVICE_ACCOUNT: Final = GVK("", "v1", "ServiceAccount")
SECRET: Final = GVK("", "v1", "Secret")


_CONFLICT_RETRIES: Final = 5


class JoinError(ValueError):
    """Join or refresh cannot go on as asked (the message says why and what to do)."""


@dataclass(frozen=True)
class JoinResult:
    """What join wrote: the Cluster's name, the member endpoint and the credential Secret, and
    when the token expires (RFC 3339, '' if the member did not say) and whether the member
    granted less than the lifetime asked for."""

    name: str
    endpoint: str
    secret: str
    expires: str = ""
    capped: bool = False

    def summary(self) -> str:
        """One line for the user, warning when the member shortened the token."""
        line = f"cluster {self.name}: endpoint {self.endpoint}, secret {self.secret}"
        if self.expires:
            line += f", token expires {self.expires}"
        if self.capped:
            line += (
                " (the member caps token lifetimes below the year asked for: renew it before "
                f"then with `reconcile join {self.name} --refresh`)"
            )
        return line


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


@dataclass(frozen=True)
class _Token:
    value: str
    expires: str
    capped: bool


async def _token(member: Client, name: str, seconds: int) -> _Token:
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    answer = await member.create_subresource(
        SERVICE_ACCOUNT,
        service_account_name(name),
        "token",
        request,
        namespace=KARMADA_CLUSTER_NAMESPACE,
    )
    status = answer["status"]
    expires = str(status.get("expirationTimestamp") or "")
    granted = answer.get("spec", {}).get("expirationSeconds")
    # The apiserver answers with the lifetime it granted in spec.expirationSeconds.
    capped = isinstance(granted, int) and granted < seconds
    return _Token(str(status["token"]), expires, capped)


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
    token_seconds: int = TOKEN_SECONDS,
) -> JoinResult:
    """Register the member reached by ``member_kubeconfig`` as Cluster ``name`` on ``host``.

    ``endpoint`` overrides the server URL recorded in the Cluster (when the host reaches the
    member at another address than the kubeconfig's). ``cluster_namespace`` is the host namespace
    of the member's Secret: the controller-manager reads Secrets from its ``--cluster-namespace``
    only (Karmada's flag of the same name; default ``karmada-cluster``). ``token_seconds`` is the
    token lifetime asked for (the member may grant less; its minimum is 600).

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
        token = await _token(member, name, token_seconds)
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
    # The Cluster first: the Secret is then created bound to it, never readable unbound.
    written = await _create_or_update(host, cluster)
    data = {"token": _b64(token.value), "caBundle": ca}
    await _write_secret(host, cluster_namespace, name, data, written)
    secret = f"{cluster_namespace}/{name}"
    return JoinResult(name, endpoint or server, secret, token.expires, token.capped)


async def refresh_token(
    name: str,
    *,
    host: Client,
    member_kubeconfig: str,
    member_context: str | None = None,
    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE,
    token_seconds: int = TOKEN_SECONDS,
) -> JoinResult:
    """Ask the member for a new token of Cluster ``name``'s ServiceAccount and write it into the
    Secret the Cluster names (binding it to the Cluster if it was not), changing nothing else.

    Raises:
        JoinError: the Cluster does not exist, names no Secret in ``cluster_namespace``, or its
            Secret is bound to another Cluster (refreshing would hand this member's token to it).
        ConfigError: the member kubeconfig is unusable.
        ApiError: the member or the host refused a step (NotFound: the ServiceAccount is gone;
            join again without --refresh).
    """
    try:
        cluster = await host.get(CLUSTER_GVK, name)
    except NotFound:
        raise JoinError(f"Cluster {name} not found: join it first (without --refresh)") from None
    secret_name = _secret_of(cluster, cluster_namespace)
    config = await ClusterConfig.from_kubeconfig(member_kubeconfig, context=member_context)
    async with Client(config, field_manager="reconcile-join") as member:
        token = await _token(member, name, token_seconds)
    await _write_secret(host, cluster_namespace, secret_name, {"token": _b64(token.value)}, cluster)
    endpoint = str(cluster_spec(cluster).get("apiEndpoint") or "")
    where = f"{cluster_namespace}/{secret_name}"
    return JoinResult(name, endpoint, where, token.expires, token.capped)


def _secret_of(cluster: dict[str, Any], namespace: str) -> str:
    name = cluster["metadata"]["name"]
    reference = cluster_spec(cluster).get("secretRef") or {}
    secret = reference.get("name") if isinstance(reference, dict) else None
    if not secret or reference.get("namespace") != namespace:
        raise JoinError(
            f"Cluster {name}'s spec.secretRef names no Secret in namespace {namespace} (the "
            "--cluster-namespace): join it again without --refresh"
        )
    return str(secret)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def _write_secret(
    host: Client, namespace: str, name: str, data: dict[str, str], cluster: dict[str, Any]
) -> None:
    """Create or update the Secret with ``data``, bound to ``cluster`` alone.

    A Secret bound to another Cluster is left alone (JoinError). Any older controller reference
    (an earlier Cluster of this name) is replaced: one controller reference per object.
    """
    owner = owner_reference(cluster["metadata"]["name"], cluster["metadata"]["uid"])
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "type": "Opaque",
        "data": data,
    }
    with contextlib.suppress(AlreadyExists):
        await host.create(body)
        return
    for _ in range(_CONFLICT_RETRIES):
        existing = await host.get(SECRET, name, namespace=namespace)
        bound = cluster_owner(existing)
        if bound is not None and bound.name != owner["name"]:
            raise JoinError(
                f"Secret {namespace}/{name} is bound to Cluster {bound.name!r}, not to "
                f"{owner['name']}: not overwritten"
            )
        metadata = existing["metadata"]
        others = [r for r in metadata.get("ownerReferences") or [] if not r.get("controller")]
        metadata["ownerReferences"] = [*others, owner]
        existing["data"] = {**(existing.get("data") or {}), **data}
        try:
            await host.update(existing)
            return
        except Conflict:
            continue  # written meanwhile: read it again
    raise JoinError(f"Secret {namespace}/{name} kept changing: try again")
