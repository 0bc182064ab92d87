"""What ``reconcile agent`` asks of its member cluster, as grants: deploy/agent's and
charts/reconcile-agent's RBAC are checked against it (besides the Works' broad role)."""

from __future__ import annotations

from controllers.agent.registration import CLUSTER_ID_NAMESPACE
from controllers.agent.run import agent_lease_name
from reconcile.rbac import Grant, manager_permissions

AGGREGATE_TO_AGENT = "reconcile.io/aggregate-to-agent"
"""The label of the ClusterRoles that say what the agent may apply for its Works."""


def agent_member_grants(namespace: str, cluster: str | None = None) -> set[Grant]:
    """The agent's own requests in its member, its Lease in ``namespace``: named after ``cluster``
    when given (the chart knows it), any Lease of the namespace otherwise (deploy/ does not).

    The manager's (leader election in the member, the metrics server's reviews) without Events,
    which its recorder writes on the host; registration's get of the cluster ID's namespace; the
    cluster-status controller's lists of nodes and pods."""
    lease = agent_lease_name(cluster or "any")
    manager = manager_permissions(lease_name=lease, lease_namespace=namespace).grants()
    own = {g._replace(name="" if cluster is None else g.name) for g in manager}
    return {g for g in own if g.resource != "events"} | {
        Grant("", "", "namespaces", "get", CLUSTER_ID_NAMESPACE),
        Grant("", "", "nodes", "list"),
        Grant("", "", "pods", "list"),
    }
