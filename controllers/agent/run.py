"""Run is ``reconcile agent``: karmada-agent's part of the controllers, for one Pull member.

The agent runs in its member and reaches the host; nothing on the host holds a credential of the
member. Its manager's own cluster is the host, its cache scoped to what the agent may read there
(the Works of its execution namespace, its own Cluster by name: what ``reconcile register``'s
RBAC allows); its member is engaged by ``AgentMember``. It runs, for that member only (its
scope is ``ClusterScope.only``), what karmada-agent runs: the cluster-status controller (probes,
status, the heartbeat Lease the controller-manager's health monitor reads) and the execution
controller (applies Works, reflects their status, which the controller-manager aggregates).
Replicas elect their leader in the member (the Lease ``karmada-agent-<name>``, karmada-agent's
name), and /metrics authenticates scrapers against the member, where they run.

Before anything runs, the agent claims its Cluster (``registration``): a Cluster that is missing,
not readable with the host credential, a Push cluster or another member's stops it with a clear
error, never a crash loop of stack traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from controllers.agent.member import AgentMember
from controllers.agent.registration import Registration, claim_cluster, cluster_id
from controllers.api import (
    CLUSTER_GVK,
    KARMADA_CLUSTER_NAMESPACE,
    WORK_GVK,
    execution_namespace,
)
from controllers.cluster import ClusterStatusOptions, MemberOptions, Members
from controllers.cluster.status import setup_cluster_status_controller
from controllers.context import Context
from controllers.execution.controller import setup_execution_controller
from reconcile import (
    ByObject,
    Client,
    ClusterConfig,
    Manager,
    ManagerOptions,
    with_authentication_and_authorization,
)

__all__ = ["AgentOptions", "agent_lease_name", "build_agent", "run_agent"]


@dataclass(frozen=True)
class AgentOptions:
    """What ``reconcile agent``'s flags say (karmada-agent's names)."""

    registration: Registration
    karmada_kubeconfig: str | None = None
    """The host's kubeconfig (``--karmada-kubeconfig``): the one ``reconcile register`` wrote."""
    karmada_context: str | None = None
    member_kubeconfig: str | None = None
    """The member's (``--kubeconfig``); None: ``$KUBECONFIG``, else in-cluster."""
    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE
    cluster_status: ClusterStatusOptions = field(default_factory=ClusterStatusOptions)


def agent_lease_name(cluster: str) -> str:
    """The leader-election Lease of a cluster's agent replicas (karmada-agent's)."""
    return f"karmada-agent-{cluster}"


def build_agent(
    host: ClusterConfig | Client, member: ClusterConfig, options: AgentOptions, base: ManagerOptions
) -> tuple[Manager, Context]:
    """The agent's manager over ``host`` (a config, or a client for tests), its member engaged
    from ``member``, with the cluster-status and execution controllers for that member only."""
    name = options.registration.name
    # The host is scoped per kind (below), not with ManagerOptions.namespace: each kind
    # exactly as register's RBAC allows it.
    manager_options = replace(
        base,
        leader_election_id=agent_lease_name(name),
        leader_election_config=base.leader_election_config or member,
    )
    if isinstance(host, Client):
        manager = Manager(client=host, options=manager_options)
    else:
        manager = Manager(host, options=manager_options)
    # What RBAC lets the agent list and watch on the host: the Works of its execution
    # namespace, its one Cluster by name.
    manager.cache.configure(WORK_GVK, ByObject(namespaces=(execution_namespace(name),)))
    manager.cache.configure(CLUSTER_GVK, ByObject(field_selector=f"metadata.name={name}"))
    provider = AgentMember(name, member, MemberOptions(cluster_namespace=options.cluster_namespace))
    members = Members(manager, provider)
    context = Context(manager, members, cluster_status=options.cluster_status)
    setup_cluster_status_controller(manager, members, options.cluster_status)
    setup_execution_controller(context)
    return manager, context


async def run_agent(options: AgentOptions, base: ManagerOptions) -> None:
    """Claim the Cluster, then run the agent until SIGTERM/SIGINT.

    Raises:
        AgentError: the Cluster cannot be claimed (see ``registration``).
        ConfigError: a kubeconfig is unusable.
    """
    host = await ClusterConfig.from_kubeconfig(
        options.karmada_kubeconfig, context=options.karmada_context
    )
    member = await ClusterConfig.load(options.member_kubeconfig)
    async with Client(member) as member_client, Client(host) as host_client:
        await claim_cluster(host_client, await cluster_id(member_client), options.registration)
        # Scrapers run in the member and authenticate there, not on the host.
        base = replace(
            base,
            metrics_filter_provider=lambda _host: with_authentication_and_authorization(
                member_client
            ),
        )
        manager, _ = build_agent(host, member, options, base)
        await manager.run_until_signalled()
