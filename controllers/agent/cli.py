"""Cli is ``reconcile agent``'s command line: karmada-agent's flags, metrics and probes as the
controller-manager's."""

from __future__ import annotations

import argparse
import sys

import anyio

from controllers.agent.registration import AgentError, Registration
from controllers.api import KARMADA_CLUSTER_NAMESPACE
from controllers.cluster.status import ClusterStatusOptions
from controllers.manageroptions import LeaderElectionOptions, MetricsOptions, manager_options
from reconcile import ConfigError, LeadershipLost, configure_logging

__all__ = ["add_agent_parser"]


def add_agent_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``reconcile agent``."""
    parser = commands.add_parser(
        "agent", help="run in a Pull member cluster: apply its Works and report its status"
    )
    parser.add_argument("--cluster-name", required=True, help="the Cluster's name on the host")
    parser.add_argument(
        "--karmada-kubeconfig",
        required=True,
        help="the host's kubeconfig, as `reconcile register NAME` wrote it",
    )
    parser.add_argument("--karmada-context", help="kubeconfig context of the host")
    parser.add_argument(
        "--kubeconfig", help="this member cluster (default: $KUBECONFIG, in-cluster)"
    )
    parser.add_argument("--cluster-api-endpoint", help="set the Cluster's spec.apiEndpoint")
    parser.add_argument("--cluster-provider", help="set the Cluster's spec.provider")
    parser.add_argument("--cluster-region", help="set the Cluster's spec.region")
    parser.add_argument(
        "--cluster-namespace",
        default=KARMADA_CLUSTER_NAMESPACE,
        help="where the Cluster's heartbeat Lease is renewed on the host (default karmada-cluster)",
    )
    MetricsOptions.add_flags(parser)
    parser.add_argument("--health-probe-bind-address", default=":8081")
    LeaderElectionOptions.add_flags(parser)
    ClusterStatusOptions.add_flags(parser)
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=_agent)


def _agent(args: argparse.Namespace) -> int:
    from controllers.agent.run import AgentOptions, agent_lease_name, run_agent

    configure_logging(json=args.log_format == "json", level=args.log_level)
    try:
        options = AgentOptions(
            registration=Registration(
                args.cluster_name,
                api_endpoint=args.cluster_api_endpoint,
                provider=args.cluster_provider,
                region=args.cluster_region,
            ),
            karmada_kubeconfig=args.karmada_kubeconfig,
            karmada_context=args.karmada_context,
            member_kubeconfig=args.kubeconfig,
            cluster_namespace=args.cluster_namespace,
            cluster_status=ClusterStatusOptions.from_args(args),
        )
        base = manager_options(args, leader_election_id=agent_lease_name(args.cluster_name))
        anyio.run(lambda: run_agent(options, base))
    except (AgentError, ConfigError, ValueError) as error:
        print(f"agent: {error}", file=sys.stderr)
        return 2
    except LeadershipLost as error:
        print(f"agent: {error}", file=sys.stderr)
        return 1
    return 0
