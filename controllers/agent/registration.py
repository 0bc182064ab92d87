"""Registration is how ``reconcile agent`` claims its Cluster on the host at start.

As karmada-agent's ``registerWithKarmada``: the Cluster carries ``spec.syncMode: Pull`` and
``spec.id``, the member's cluster ID (the uid of its ``kube-system`` namespace, Karmada's
``obtainClusterID``), and the agent sets ``spec.apiEndpoint``, ``spec.provider`` and
``spec.region`` when told. Unlike karmada-agent it never creates the Cluster: ``reconcile
register NAME`` does, with RBAC that lets the agent's host credential read and update that one
Cluster only, so an agent cannot register clusters of its own choosing.

What stops an agent is said once, clearly, before anything runs (``AgentError``): the Cluster does
not exist (register it first); the host credential may not read it (its Role is missing, or the
kubeconfig is another agent's: ``reconcile register`` binds one credential to one Cluster); the
Cluster is a Push cluster (the controller-manager reaches that member itself); or it holds the
ID of another member (two members under one name would overwrite each other's objects: no
takeover, as Karmada refuses "a different cluster ID").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import CLUSTER_GVK, cluster_spec
from controllers.register import check_cluster_name
from reconcile import GVK, Client, Conflict, Forbidden, NotFound, Unauthorized, deep_copy

__all__ = ["AgentError", "Registration", "claim_cluster", "cluster_id"]

NAMESPACE: Final = GVK("", "v1", "Namespace")
CLUSTER_ID_NAMESPACE: Final = "kube-system"
"""The namespace whose uid identifies a cluster (Karmada's ``obtainClusterID``)."""
PULL: Final = "Pull"
CONFLICT_RETRIES: Final = 5


class AgentError(RuntimeError):
    """The agent cannot serve its Cluster as things stand; the message says what to do."""


@dataclass(frozen=True)
class Registration:
    """What the agent sets in its Cluster's spec (None: left as it is).

    Raises:
        RegisterError: ``name`` is no Cluster name (``register.check_cluster_name``): it goes
            into a field selector and a namespace name, so nothing else may pass.
    """

    name: str
    api_endpoint: str | None = None
    provider: str | None = None
    region: str | None = None

    def __post_init__(self) -> None:
        check_cluster_name(self.name)


async def cluster_id(member: Client) -> str:
    """The member's cluster ID: the uid of its ``kube-system`` namespace.

    Raises:
        AgentError: the member's credential may not read it, or it has none.
    """
    try:
        namespace = await member.get(NAMESPACE, CLUSTER_ID_NAMESPACE)
    except (Forbidden, Unauthorized, NotFound) as error:
        raise AgentError(
            f"cannot read the member's namespace {CLUSTER_ID_NAMESPACE} to learn its cluster ID "
            f"({error.reason}): the agent needs get on that namespace in its own cluster"
        ) from None
    return str(namespace["metadata"]["uid"])


async def claim_cluster(host: Client, member_id: str, registration: Registration) -> dict[str, Any]:
    """Set the agent's fields on its Cluster and return it as written.

    Raises:
        AgentError: the Cluster is missing, unreadable with this credential, a Push cluster, or
            another member's.
    """
    for _ in range(CONFLICT_RETRIES):
        cluster = await _read(host, registration.name)
        wanted = _claimed(cluster, member_id, registration)
        if wanted == cluster:
            return cluster
        try:
            return await host.update(wanted)
        except Conflict:
            continue  # the controller-manager wrote it meanwhile (taints): read it again
        except (Forbidden, Unauthorized) as error:
            raise _not_allowed(registration.name, "update", error) from None
    raise AgentError(f"Cluster {registration.name} kept changing while the agent claimed it")


async def _read(host: Client, name: str) -> dict[str, Any]:
    try:
        return await host.get(CLUSTER_GVK, name)
    except NotFound:
        raise AgentError(
            f"Cluster {name} does not exist on the host: register it first with "
            f"`reconcile register {name}` and start the agent with the kubeconfig it writes"
        ) from None
    except (Forbidden, Unauthorized) as error:
        raise _not_allowed(name, "read", error) from None


def _not_allowed(name: str, verb: str, error: Forbidden | Unauthorized) -> AgentError:
    return AgentError(
        f"the host credential may not {verb} Cluster {name} ({error.reason}): use the kubeconfig "
        f"`reconcile register {name}` wrote for this cluster (each agent's credential reaches its "
        "own Cluster only)"
    )


def _claimed(
    cluster: Mapping[str, Any], member_id: str, registration: Registration
) -> dict[str, Any]:
    spec = cluster_spec(cluster)
    name = registration.name
    if spec.get("syncMode", "Push") != PULL:
        raise AgentError(
            f"Cluster {name} is a Push cluster: the controller-manager reaches that member itself; "
            f"unjoin it, then `reconcile register {name}` it as a Pull cluster"
        )
    held = spec.get("id")
    if held and held != member_id:
        raise AgentError(
            f"Cluster {name} belongs to another member (cluster ID {held}; this member's is "
            f"{member_id}): start this agent with its own --cluster-name; no takeover"
        )
    claimed: dict[str, Any] = deep_copy(dict(cluster))
    fields = {
        "id": member_id,
        "apiEndpoint": registration.api_endpoint,
        "provider": registration.provider,
        "region": registration.region,
    }
    claimed["spec"] = {**spec, **{k: v for k, v in fields.items() if v is not None}}
    return claimed
