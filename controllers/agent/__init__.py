"""agent is ``reconcile agent``: karmada-agent's controllers in a Pull member, for it alone."""

from controllers.agent.member import AgentMember
from controllers.agent.registration import AgentError, Registration, claim_cluster, cluster_id
from controllers.agent.run import AgentOptions, agent_lease_name, build_agent, run_agent

__all__ = [
    "AgentError",
    "AgentMember",
    "AgentOptions",
    "Registration",
    "agent_lease_name",
    "build_agent",
    "claim_cluster",
    "cluster_id",
    "run_agent",
]
