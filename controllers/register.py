"""Register makes a Pull cluster on the host, as ``karmadactl register``: no member credentials.

In Pull mode the agent in the member reaches the host, so the host stores nothing of the member;
instead the agent gets a host identity allowed only what it needs. Run by an admin against the
host, ``register_cluster`` writes:

- the Cluster (``spec.syncMode: Pull``; apiEndpoint, provider and region only when given, the
  fields karmada-agent sets from its flags) and its execution namespace ``karmada-es-<name>``;
- a ServiceAccount ``karmada-agent-<name>`` in the cluster namespace (``karmada-cluster``);
- RBAC named as Karmada's ``GenerateAgentRBACResources`` names it (``system:karmada:<name>:agent``
  and ``...:agent-work``) but narrower than Karmada's (which lets an agent create and list every
  Cluster and any Lease): a ClusterRole for its own Cluster and its status by ``resourceNames``
  (an apiserver authorizes a list or watch by name only when the request carries the field
  selector ``metadata.name=<name>``), a Role in the execution namespace for Works, their status
  and Events, and a Role ``...:agent-lease`` in the cluster namespace for its heartbeat Lease by
  name (``get``/``update``: register creates the Lease, so the agent needs no ``create``, which
  RBAC cannot restrict by name);
- a kubeconfig for the ServiceAccount: a TokenRequest token, the host's server URL and CA.

The Cluster records its agent's ServiceAccount in the annotation ``AGENT_ANNOTATION``. A Cluster
of that name that is Push, or Pull under another identity (another namespace, or none recorded,
e.g. an agent that registered itself), is refused: registering would hand it to a new agent.
``--refresh`` only mints a new token for the identity the Cluster already has.
"""

from __future__ import annotations

import base64
import contextlib
import re
from dataclasses import dataclass
from typing import Any, Final

import yaml

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE, execution_namespace
from controllers.cluster.connection import MemberConfigError, member_endpoint
from reconcile import GVK, AlreadyExists, Client, NotFound

__all__ = [
    "AGENT_ANNOTATION",
    "TOKEN_SECONDS",
    "AgentIdentity",
    "RegisterError",
    "RegisterResult",
    "agent_objects",
    "agent_role_name",
    "agent_service_account_name",
    "agent_targets",
    "check_cluster_name",
    "kubeconfig",
    "pull_cluster",
    "register_cluster",
]

AGENT_ANNOTATION: Final = "agent.reconcile.io/service-account"
"""On a registered Pull Cluster: ``<namespace>/<name>`` of its agent's ServiceAccount."""

TOKEN_SECONDS: Final = 365 * 24 * 3600
"""Token lifetime asked for (a year, as ``reconcile join``); the apiserver may grant less."""

LEASE_DURATION: Final = 40
"""``leaseDurationSeconds`` of the Lease register creates (Karmada's --cluster-lease-duration)."""

SERVICE_ACCOUNT: Final = GVK("", "v1", "ServiceAccount")
LEASE: Final = GVK("coordination.k8s.io", "v1", "Lease")
ROLE: Final = GVK("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING: Final = GVK("rbac.authorization.k8s.io", "v1", "RoleBinding")
CLUSTER_ROLE: Final = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING: Final = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")

_RBAC: Final = "rbac.authorization.k8s.io"
_NAME_MAX_LENGTH: Final = 48  # Karmada's ValidateClusterName: room for karmada-es- in 63
_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class RegisterError(ValueError):
    """Register cannot go on as asked (the message says why and what to do)."""


def check_cluster_name(name: str) -> None:
    """Refuse a name Karmada refuses for a Cluster (a DNS-1123 label of at most 48 characters:
    its execution namespace ``karmada-es-<name>`` must be a label too).

    Raises:
        RegisterError: saying what is wrong with it.
    """
    if len(name) > _NAME_MAX_LENGTH:
        raise RegisterError(f"cluster name {name!r} is longer than {_NAME_MAX_LENGTH} characters")
    if not _DNS_LABEL.fullmatch(name):
        raise RegisterError(
            f"cluster name {name!r} is not a DNS-1123 label (lower case letters, digits and '-', "
            "starting and ending with a letter or digit)"
        )


def agent_service_account_name(cluster: str) -> str:
    """The host ServiceAccount of Pull cluster ``cluster``'s agent: ``karmada-agent-<cluster>``."""
    return f"karmada-agent-{cluster}"


def agent_role_name(cluster: str, part: str = "") -> str:
    """Karmada's agent RBAC names: ``system:karmada:<cluster>:agent`` (the ClusterRole and its
    binding), ``...:agent-<part>`` for a Role (``work``, ``lease``) and its RoleBinding."""
    return f"system:karmada:{cluster}:agent" + (f"-{part}" if part else "")


@dataclass(frozen=True)
class AgentIdentity:
    """The agent's ServiceAccount: its namespace (the cluster namespace) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, name: str, namespace: str) -> AgentIdentity:
        """The identity register gives Cluster ``name`` in cluster namespace ``namespace``."""
        return cls(namespace, agent_service_account_name(name))

    @classmethod
    def recorded(cls, obj: dict[str, Any]) -> AgentIdentity | None:
        """The identity a Cluster's ``AGENT_ANNOTATION`` records, None without a valid one."""
        value = ((obj.get("metadata") or {}).get("annotations") or {}).get(AGENT_ANNOTATION)
        namespace, sep, name = str(value or "").partition("/")
        return cls(namespace, name) if sep and namespace and name else None


def pull_cluster(
    name: str,
    identity: AgentIdentity,
    *,
    api_endpoint: str | None = None,
    provider: str | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """The Cluster register writes: Pull, annotated with its agent, no credentials."""
    spec: dict[str, Any] = {"syncMode": "Pull"}
    for field, value in (("apiEndpoint", api_endpoint), ("provider", provider), ("region", region)):
        if value:
            spec[field] = value
    return {
        "apiVersion": CLUSTER_GVK.api_version,
        "kind": CLUSTER_GVK.kind,
        "metadata": {"name": name, "annotations": {AGENT_ANNOTATION: str(identity)}},
        "spec": spec,
    }


def _rule(
    group: str, resources: list[str], verbs: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": resources, "verbs": verbs}
    if names:
        rule["resourceNames"] = names
    return rule


def _subjects(identity: AgentIdentity) -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": identity.name, "namespace": identity.namespace}]


def _role(kind: str, name: str, namespace: str | None, rules: list[dict[str, Any]]) -> Any:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": f"{_RBAC}/v1", "kind": kind, "metadata": metadata, "rules": rules}


def _binding(kind: str, role: str, namespace: str | None, identity: AgentIdentity) -> Any:
    metadata = {"name": role} | ({"namespace": namespace} if namespace else {})
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": _RBAC, "kind": kind.removesuffix("Binding"), "name": role},
        "subjects": _subjects(identity),
    }


def agent_objects(name: str, identity: AgentIdentity) -> list[dict[str, Any]]:
    """The ServiceAccount and RBAC register writes for Pull cluster ``name``'s agent."""
    works = execution_namespace(name)
    cluster_rules = [
        _rule(
            "cluster.karmada.io", ["clusters"], ["get", "list", "watch", "update", "patch"], [name]
        ),
        _rule("cluster.karmada.io", ["clusters/status"], ["update", "patch"], [name]),
    ]
    work_rules = [
        _rule("work.karmada.io", ["works"], ["get", "list", "watch", "update", "patch"]),
        _rule("work.karmada.io", ["works/status"], ["update", "patch"]),
        _rule("", ["events"], ["create", "patch"]),
    ]
    lease_rules = [_rule("coordination.k8s.io", ["leases"], ["get", "update"], [name])]
    cluster_role, work_role = agent_role_name(name), agent_role_name(name, "work")
    lease_role = agent_role_name(name, "lease")
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": identity.name, "namespace": identity.namespace},
        },
        _role("ClusterRole", cluster_role, None, cluster_rules),
        _binding("ClusterRoleBinding", cluster_role, None, identity),
        _role("Role", work_role, works, work_rules),
        _binding("RoleBinding", work_role, works, identity),
        _role("Role", lease_role, identity.namespace, lease_rules),
        _binding("RoleBinding", lease_role, identity.namespace, identity),
    ]


def agent_targets(name: str, identity: AgentIdentity) -> list[tuple[GVK, str, str | None]]:
    """What register made for ``name`` (kind, name, namespace), in deletion order: the
    bindings and roles first, then the Lease, the ServiceAccount last."""
    works, namespace = execution_namespace(name), identity.namespace
    cluster_role, work_role = agent_role_name(name), agent_role_name(name, "work")
    lease_role = agent_role_name(name, "lease")
    return [
        (CLUSTER_ROLE_BINDING, cluster_role, None),
        (CLUSTER_ROLE, cluster_role, None),
        (ROLE_BINDING, work_role, works),
        (ROLE, work_role, works),
        (ROLE_BINDING, lease_role, namespace),
        (ROLE, lease_role, namespace),
        (LEASE, name, namespace),
        (SERVICE_ACCOUNT, identity.name, namespace),
    ]


def kubeconfig(
    server: str, ca_data: bytes | None, token: str, user: str, tls_server_name: str | None = None
) -> dict[str, Any]:
    """A kubeconfig reaching ``server`` (trusting ``ca_data``, PEM) as ``user`` with ``token``."""
    cluster: dict[str, Any] = {"server": server}
    if ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(ca_data).decode()
    if tls_server_name:
        cluster["tls-server-name"] = tls_server_name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "karmada-host", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {"name": "karmada-agent", "context": {"cluster": "karmada-host", "user": user}}
        ],
        "current-context": "karmada-agent",
    }


@dataclass(frozen=True)
class RegisterResult:
    """What register wrote: the Cluster's name, its agent's identity, the agent's kubeconfig
    (YAML) and when its token expires (RFC 3339, '' if the apiserver did not say)."""

    name: str
    identity: AgentIdentity
    kubeconfig: str
    expires: str = ""

    def summary(self) -> str:
        """One line for the user."""
        line = f"cluster {self.name} (Pull): agent service account {self.identity}"
        return line + (f", token expires {self.expires}" if self.expires else "")


async def _create_or_apply(client: Client, obj: dict[str, Any]) -> dict[str, Any]:
    try:
        return await client.create(obj)
    except AlreadyExists:
        return await client.apply(obj, force=True)


async def _write_cluster(host: Client, cluster: dict[str, Any], new: bool) -> dict[str, Any]:
    if not new:  # checked as this agent's: apply the fields given
        return await host.apply(cluster, force=True)
    try:
        return await host.create(cluster)
    except AlreadyExists:  # created since it was checked: check it again
        name = cluster["metadata"]["name"]
        raise RegisterError(f"Cluster {name} was created meanwhile: run register again") from None


async def _check_cluster(host: Client, name: str, identity: AgentIdentity) -> dict[str, Any] | None:
    """The existing Cluster ``name`` if register may write it again (None: there is none)."""
    try:
        existing = await host.get(CLUSTER_GVK, name)
    except NotFound:
        return None
    if existing["metadata"].get("deletionTimestamp"):
        raise RegisterError(f"Cluster {name} is being deleted: register it once it is gone")
    mode = (existing.get("spec") or {}).get("syncMode") or "Push"
    if mode != "Pull":
        raise RegisterError(
            f"Cluster {name} exists in {mode} mode: not taken over (unjoin it first)"
        )
    recorded = AgentIdentity.recorded(existing)
    if recorded != identity:
        holder = f"service account {recorded}" if recorded else "an agent register did not make"
        raise RegisterError(
            f"Cluster {name} is a Pull cluster of {holder}, not of {identity}: not taken over "
            "(unjoin it first, or pass the --cluster-namespace it was registered with)"
        )
    return existing


async def _token(host: Client, identity: AgentIdentity, seconds: int) -> tuple[str, str]:
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    answer = await host.create_subresource(
        SERVICE_ACCOUNT, identity.name, "token", request, namespace=identity.namespace
    )
    status = answer["status"]
    return str(status["token"]), str(status.get("expirationTimestamp") or "")


async def _ensure_namespace(host: Client, name: str) -> None:
    with contextlib.suppress(AlreadyExists):
        await host.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def _ensure_lease(host: Client, cluster: dict[str, Any], namespace: str) -> None:
    name, uid = cluster["metadata"]["name"], cluster["metadata"]["uid"]
    owner = {
        "apiVersion": CLUSTER_GVK.api_version,
        "kind": CLUSTER_GVK.kind,
        "name": name,
        "uid": uid,
    }
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        # Owned by the Cluster as Karmada's cluster Lease is; no renewTime: no heartbeat yet.
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION},
    }
    with contextlib.suppress(AlreadyExists):
        await host.create(lease)


def _host_endpoint(server: str) -> str:
    """``server`` as the agent's kubeconfig names it: https only, as member endpoints (the
    agent's token would otherwise cross the network in clear text; ``member_endpoint``).

    Raises:
        RegisterError: it is no https URL, saying why.
    """
    try:
        return member_endpoint(server)
    except MemberConfigError as error:
        raise RegisterError(
            # The value is not echoed: its user info may be a password.
            f"--host-endpoint is refused ({error.reason}): the agent's token "
            "goes there, so it must be https://host[:port][/path], without user info, query "
            "or fragment"
        ) from None


def _result(
    host: Client, name: str, identity: AgentIdentity, token: tuple[str, str], server: str | None
) -> RegisterResult:
    config = host.config
    user = f"system:serviceaccount:{identity.namespace}:{identity.name}"
    document = kubeconfig(
        server or config.host, config.ca_data, token[0], user, config.tls_server_name
    )
    return RegisterResult(name, identity, yaml.safe_dump(document, sort_keys=False), token[1])


async def register_cluster(
    name: str,
    *,
    host: Client,
    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE,
    api_endpoint: str | None = None,
    provider: str | None = None,
    region: str | None = None,
    server: str | None = None,
    refresh: bool = False,
    token_seconds: int = TOKEN_SECONDS,
) -> RegisterResult:
    """Register Pull cluster ``name`` on ``host`` and mint its agent's kubeconfig.

    ``server`` is the host URL written in the kubeconfig (default: ``host``'s own, as the agent
    may reach the host at another address). With ``refresh`` nothing is written: only a new
    token is minted for the agent the Cluster already has. Registering again (without
    ``refresh``) applies the Cluster (server-side apply: a field an earlier register set and
    this one does not is dropped, fields the agent set stay) and the RBAC, and mints a new token.

    Raises:
        RegisterError: ``name`` is no valid Cluster name, the Cluster exists in Push mode,
            belongs to another agent or is being deleted, or (with ``refresh``) does not exist.
        ApiError: the host refused a step (e.g. Forbidden, or NotFound: the ServiceAccount is
            gone; register again without ``refresh``).
    """
    check_cluster_name(name)
    if server is not None:
        server = _host_endpoint(server)
    identity = AgentIdentity.of(name, cluster_namespace)
    existing = await _check_cluster(host, name, identity)
    if refresh:
        if existing is None:
            raise RegisterError(f"Cluster {name} not found: register it first (without --refresh)")
        return _result(host, name, identity, await _token(host, identity, token_seconds), server)
    cluster = pull_cluster(
        name, identity, api_endpoint=api_endpoint, provider=provider, region=region
    )
    written = await _write_cluster(host, cluster, existing is None)
    await _ensure_namespace(host, cluster_namespace)
    await _ensure_namespace(host, execution_namespace(name))
    for obj in agent_objects(name, identity):
        await _create_or_apply(host, obj)
    await _ensure_lease(host, written, cluster_namespace)
    return _result(host, name, identity, await _token(host, identity, token_seconds), server)
