"""Cli is the ``reconcile`` command line: controller-manager, join, webhook, interpret, testenv,
demo and the operator commands (taint, cordon, uncordon, unjoin, get)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from controllers.cluster.health import ClusterHealthOptions
from controllers.cluster.registry import MemberOptions
from controllers.cluster.status import ClusterStatusOptions
from controllers.commands.cli import add_command_parsers
from controllers.duration import parse_duration
from controllers.eviction.options import FailoverOptions
from controllers.eviction.task import PURGE_MODES
from controllers.interpreter.cli import add_interpret_parser, lua_workers
from controllers.interpreter.types import InterpreterError
from reconcile import (
    DEFAULT_CERT_NAME,
    DEFAULT_KEY_NAME,
    ConfigError,
    LeadershipLost,
    ManagerOptions,
    configure_logging,
)
from reconcile.manager import DEFAULT_METRICS_BIND_ADDRESS
from reconcile.webhook import DEFAULT_CERT_DIR, DEFAULT_WEBHOOK_PORT, WebhookServer

if TYPE_CHECKING:
    from controllers.sharding import ShardingOptions

__all__ = ["main"]


def _member_kubeconfigs(values: Sequence[str]) -> dict[str, Path]:
    members = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise argparse.ArgumentTypeError(f"--member-kubeconfig wants NAME=PATH, got {value!r}")
        members[name] = Path(path)
    return members


def _add_controller_manager(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "controller-manager", help="run the multi-cluster controllers against a host cluster"
    )
    parser.add_argument("--kubeconfig", help="the host cluster (default: $KUBECONFIG, in-cluster)")
    parser.add_argument("--context", help="kubeconfig context of the host")
    parser.add_argument(
        "--controllers",
        default="*",
        help="comma-separated controllers; * for all, -name to leave one out (default *)",
    )
    _add_metrics_flags(parser)
    parser.add_argument("--health-probe-bind-address", default=":8081")
    parser.add_argument("--leader-elect", action="store_true")
    parser.add_argument("--leader-elect-resource-namespace", default="karmada-system")
    # component-base's LeaderElectionConfiguration flags, as Karmada's controller-manager has them.
    parser.add_argument("--leader-elect-lease-duration", type=parse_duration, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=parse_duration, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=parse_duration, default=2.0)
    parser.add_argument(
        "--member-kubeconfig",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="reach member NAME with a kubeconfig instead of its Cluster's Secret (local use)",
    )
    _add_cluster_status_flags(parser)
    _add_member_flags(parser)
    parser.add_argument(
        "--interpreter-customizations",
        metavar="DIR",
        type=Path,
        help="directory of ResourceInterpreterCustomization files (e.g. Karmada's third-party "
        "ones), asked before the bundled customizations; a file that does not load is logged",
    )
    parser.add_argument(
        "--interpreter-lua-workers",
        type=lua_workers,
        default=2,  # controllers.interpreter.pool.DEFAULT_POOL_SIZE, not imported to parse flags
        metavar="N",
        help="worker processes running Lua customization scripts (default 2); one customization's "
        "calls hold at most half of them, rounded up, while another's wait",
    )
    _add_failover_flags(parser)
    _add_sharding_flags(parser)
    _add_webhook_server_flags(parser)
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=_controller_manager)


def _add_webhook_server_flags(parser: argparse.ArgumentParser) -> None:
    # The server controller-runtime's manager makes; the cert flags are kubebuilder's names.
    parser.add_argument(
        "--webhook-port",
        type=int,
        default=DEFAULT_WEBHOOK_PORT,
        help="where webhooks are served, if any (--shard-assignment-webhook, the webhook "
        f"controller; default {DEFAULT_WEBHOOK_PORT})",
    )
    parser.add_argument(
        "--webhook-cert-path",
        default=DEFAULT_CERT_DIR,
        help=f"directory with the webhook certificate and key (default {DEFAULT_CERT_DIR})",
    )
    parser.add_argument("--webhook-cert-name", default=DEFAULT_CERT_NAME)
    parser.add_argument("--webhook-cert-key", default=DEFAULT_KEY_NAME)


def _webhook_server(args: argparse.Namespace) -> WebhookServer:
    """The manager's webhook server; it runs only if a webhook is registered on it."""
    return WebhookServer(
        port=args.webhook_port,
        cert_dir=args.webhook_cert_path,
        cert_name=args.webhook_cert_name,
        key_name=args.webhook_cert_key,
    )


def _add_sharding_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shards",
        choices=["none", "auto"],
        default="none",
        help="auto: spread templates over the replicas (each holds a shard Lease in the leader "
        "election namespace; needs --leader-elect); none (default): one replica does all",
    )
    parser.add_argument(
        "--shard-name",
        default=os.environ.get("POD_NAME") or socket.gethostname(),
        help="this replica's shard (default: $POD_NAME, else the host name)",
    )
    parser.add_argument(
        "--shard-leader-weight",
        type=float,
        help="the leader's shard's share of the templates against 1 for each other replica, "
        "from 0 to 1: it also runs the sharder (default: controllers.sharding.LEADER_WEIGHT; "
        "docs/operations.md)",
    )
    parser.add_argument(
        "--shard-assignment-webhook",
        action="store_true",
        help="with --shards=auto: serve /assign-shard-karmada on the webhook server "
        "(--webhook-port), where the leader labels new templates with their shard as they are "
        "created "
        "(deploy/controller-manager/optional/shard-assignment-webhook.yaml)",
    )


def _sharding(args: argparse.Namespace) -> ShardingOptions | None:
    from controllers.sharding import ShardingOptions  # with the controllers, not for every command

    if args.shards == "none":
        if args.shard_assignment_webhook:
            raise ValueError("--shard-assignment-webhook needs --shards=auto")
        if args.shard_leader_weight is not None:
            raise ValueError("--shard-leader-weight needs --shards=auto")
        return None
    if not args.leader_elect:
        raise ValueError("--shards=auto needs --leader-elect: the leader assigns the shards")
    options = ShardingOptions(
        name=args.shard_name,
        namespace=args.leader_elect_resource_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        admission=args.shard_assignment_webhook,
    )
    if args.shard_leader_weight is not None:
        options = dataclasses.replace(options, leader_weight=args.shard_leader_weight)
    return options


def _bool(text: str) -> bool:
    """A Go flag's boolean: ``--metrics-secure=false`` as with kubebuilder's scaffold."""
    value = text.strip().lower()
    if value in ("1", "t", "true"):
        return True
    if value in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text!r} (true or false)")


def _add_metrics_flags(
    parser: argparse.ArgumentParser, default: str = DEFAULT_METRICS_BIND_ADDRESS
) -> None:
    # Names are kubebuilder's (cmd/main.go); the secure default depends on the address instead.
    parser.add_argument(
        "--metrics-bind-address",
        default=default,
        help=f"where /metrics listens; :8443 for every interface, 0 to disable (default {default})",
    )
    parser.add_argument(
        "--metrics-secure",
        type=_bool,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="serve /metrics over HTTPS to authenticated, authorized callers only; "
        "--metrics-secure=false serves plain HTTP to anyone "
        "(default: secure unless bound to loopback)",
    )
    parser.add_argument(
        "--metrics-cert-path",
        help="directory with the metrics certificate and key (default: self-signed)",
    )
    parser.add_argument("--metrics-cert-name", default=DEFAULT_CERT_NAME)
    parser.add_argument("--metrics-cert-key", default=DEFAULT_KEY_NAME)


def _metrics_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "metrics_bind_address": args.metrics_bind_address,
        "metrics_secure": args.metrics_secure,
        "metrics_cert_dir": args.metrics_cert_path,
        "metrics_cert_name": args.metrics_cert_name,
        "metrics_key_name": args.metrics_cert_key,
    }


def _add_cluster_status_flags(parser: argparse.ArgumentParser) -> None:
    defaults = ClusterStatusOptions()
    parser.add_argument(
        "--cluster-status-update-frequency",
        type=parse_duration,
        default=defaults.update_frequency,
        help="how often each member is probed (default 10s)",
    )
    parser.add_argument(
        "--cluster-failure-threshold",
        type=parse_duration,
        default=defaults.failure_threshold,
        help="how long a member must fail its probes before it is not Ready (default 30s)",
    )
    parser.add_argument(
        "--cluster-success-threshold",
        type=parse_duration,
        default=defaults.success_threshold,
        help="how long a member must pass its probes before it is Ready again (default 30s)",
    )


def _add_member_flags(parser: argparse.ArgumentParser) -> None:
    defaults = MemberOptions()
    parser.add_argument(
        "--cluster-namespace",
        default=defaults.cluster_namespace,
        help="the only namespace Secrets of Clusters are read from (default karmada-cluster)",
    )
    parser.add_argument(
        "--allow-insecure-member-endpoints",
        action="store_true",
        help="accept http:// Cluster endpoints, sending member tokens in clear text "
        "(local testing only)",
    )


def _add_failover_flags(parser: argparse.ArgumentParser) -> None:
    # Karmada's karmada-controller-manager flags, names and defaults.
    health = ClusterHealthOptions()
    parser.add_argument(
        "--cluster-monitor-period",
        type=parse_duration,
        default=health.monitor_period,
        help="how often the cluster controller checks that members are reported on (default 5s)",
    )
    parser.add_argument(
        "--cluster-monitor-grace-period",
        type=parse_duration,
        default=health.grace_period,
        help="how long a member's status and Lease may stand still before Ready is Unknown "
        "(default 40s)",
    )
    parser.add_argument(
        "--cluster-startup-grace-period",
        type=parse_duration,
        default=health.startup_grace_period,
        help="the same for a Cluster that never had a Ready condition, from its creation "
        "(default 1m)",
    )
    failover = FailoverOptions()
    parser.add_argument(
        "--enable-no-execute-taint-eviction",
        type=_bool,
        nargs="?",
        const=True,
        default=failover.enable_no_execute_taint_eviction,
        metavar="BOOL",
        help="evict bindings from members with NoExecute taints they do not tolerate "
        "(default false)",
    )
    parser.add_argument(
        "--no-execute-taint-eviction-purge-mode",
        choices=PURGE_MODES,
        default=failover.no_execute_taint_eviction_purge_mode,
        help="how such an eviction removes the old copy (default Gracefully)",
    )
    parser.add_argument(
        "--graceful-eviction-timeout",
        type=parse_duration,
        default=failover.graceful_eviction_timeout,
        help="how long an eviction task waits for the new placement to be healthy (default 10m)",
    )


def _failover(args: argparse.Namespace) -> tuple[ClusterHealthOptions, FailoverOptions]:
    health = ClusterHealthOptions(
        monitor_period=args.cluster_monitor_period,
        grace_period=args.cluster_monitor_grace_period,
        startup_grace_period=args.cluster_startup_grace_period,
    )
    failover = FailoverOptions(
        enable_no_execute_taint_eviction=args.enable_no_execute_taint_eviction,
        no_execute_taint_eviction_purge_mode=args.no_execute_taint_eviction_purge_mode,
        graceful_eviction_timeout=args.graceful_eviction_timeout,
    )
    return health, failover


def _members(args: argparse.Namespace) -> MemberOptions:
    return MemberOptions(
        cluster_namespace=args.cluster_namespace,
        allow_insecure_endpoints=args.allow_insecure_member_endpoints,
    )


def _cluster_status(args: argparse.Namespace) -> ClusterStatusOptions:
    return ClusterStatusOptions(
        update_frequency=args.cluster_status_update_frequency,
        failure_threshold=args.cluster_failure_threshold,
        success_threshold=args.cluster_success_threshold,
    )


def _controller_manager(args: argparse.Namespace) -> int:
    from controllers.controllermanager import run_controller_manager

    configure_logging(json=args.log_format == "json", level=args.log_level)
    options = ManagerOptions(
        **_metrics_options(args),
        health_probe_bind_address=args.health_probe_bind_address,
        leader_election=args.leader_elect,
        leader_election_id="reconcile-controller-manager",
        leader_election_namespace=args.leader_elect_resource_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        # This process exits right after the stop, so handing the Lease over is safe.
        leader_election_release_on_cancel=True,
        webhook_server=_webhook_server(args),
    )
    try:
        cluster_health, failover = _failover(args)
        sharding = _sharding(args)
        from controllers.interpreter.pool import set_default_pool_size

        set_default_pool_size(args.interpreter_lua_workers)
        anyio.run(
            lambda: run_controller_manager(
                args.kubeconfig,
                context=args.context,
                controllers=[c.strip() for c in args.controllers.split(",") if c.strip()],
                options=options,
                member_kubeconfigs=_member_kubeconfigs(args.member_kubeconfig),
                cluster_status=_cluster_status(args),
                members=_members(args),
                interpreter_customizations=args.interpreter_customizations,
                cluster_health=cluster_health,
                failover=failover,
                sharding=sharding,
            )
        )
    except (ConfigError, ValueError, argparse.ArgumentTypeError, InterpreterError) as error:
        print(f"controller-manager: {error}", file=sys.stderr)
        return 2
    except LeadershipLost as error:
        print(f"controller-manager: {error}", file=sys.stderr)
        return 1
    return 0


def _add_webhook(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Literals, not controllers.webhook's constants: the parser is built on every start.
    parser = commands.add_parser(
        "webhook", help="serve Karmada's admission webhooks (defaults, validation) for the host"
    )
    parser.add_argument("--kubeconfig", help="the host cluster (default: $KUBECONFIG, in-cluster)")
    parser.add_argument("--context", help="kubeconfig context of the host")
    # karmada-webhook's flags and defaults.
    parser.add_argument("--bind-address", default="0.0.0.0")
    parser.add_argument("--secure-port", type=int, default=8443)
    parser.add_argument("--cert-dir", default=DEFAULT_CERT_DIR)
    parser.add_argument("--tls-cert-file-name", default="tls.crt")
    parser.add_argument("--tls-private-key-file-name", default="tls.key")
    _add_metrics_flags(parser, default=":8080")
    parser.add_argument("--health-probe-bind-address", default=":8000")
    _add_member_flags(parser)
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=_webhook)


def _webhook(args: argparse.Namespace) -> int:
    from controllers.webhook.command import WebhookOptions, run_webhook

    configure_logging(json=args.log_format == "json", level=args.log_level)
    webhook = WebhookOptions(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        cert_dir=args.cert_dir,
        cert_name=args.tls_cert_file_name,
        key_name=args.tls_private_key_file_name,
    )
    options = ManagerOptions(
        **_metrics_options(args), health_probe_bind_address=args.health_probe_bind_address
    )
    try:
        anyio.run(
            lambda: run_webhook(
                args.kubeconfig,
                context=args.context,
                webhook=webhook,
                options=options,
                members=_members(args),
            )
        )
    except (ConfigError, ValueError) as error:
        print(f"webhook: {error}", file=sys.stderr)
        return 2
    return 0


def _add_join(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("join", help="register a member cluster with the host")
    parser.add_argument("name", help="the member's Cluster name")
    parser.add_argument("--kubeconfig", help="the host cluster")
    parser.add_argument("--context", help="kubeconfig context of the host")
    parser.add_argument("--cluster-kubeconfig", required=True, help="the member cluster")
    parser.add_argument("--cluster-context", help="kubeconfig context of the member")
    parser.add_argument("--cluster-endpoint", help="the member URL as the host reaches it")
    parser.add_argument(
        "--cluster-namespace",
        default=MemberOptions().cluster_namespace,
        help="host namespace for the member's Secret (default karmada-cluster)",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="only renew the token: a new one from the member into the Cluster's Secret",
    )
    parser.set_defaults(func=_join)


def _join(args: argparse.Namespace) -> int:
    from controllers.join import JoinError, join_cluster, refresh_token
    from reconcile import ApiError, Client, ClusterConfig

    async def run() -> None:
        host = await ClusterConfig.load(args.kubeconfig, context=args.context)
        member = {
            "member_kubeconfig": args.cluster_kubeconfig,
            "member_context": args.cluster_context,
            "cluster_namespace": args.cluster_namespace,
        }
        async with Client(host, field_manager="reconcile-join") as client:
            if args.refresh:
                result = await refresh_token(args.name, host=client, **member)
                print(f"token renewed: {result.summary()}")
                return
            result = await join_cluster(
                args.name, host=client, endpoint=args.cluster_endpoint, **member
            )
        print(f"joined: {result.summary()}")

    try:
        anyio.run(run)
    except (ConfigError, ApiError, OSError, JoinError) as error:
        print(f"join {args.name}: {error}", file=sys.stderr)
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reconcile",
        description="Karmada-style multi-cluster controllers, and real control planes for tests.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_controller_manager(commands)
    _add_join(commands)
    _add_webhook(commands)
    add_interpret_parser(commands)
    # Only here: controllers reach testenv from the demo and this command alone (lint-imports).
    from testenv.cli import add_testenv_parser

    add_testenv_parser(commands)
    add_command_parsers(commands)
    demo = commands.add_parser("demo", help="run everything on a local embedded default")
    demo.set_defaults(func=_demo)
    version = commands.add_parser(
        "version", help="print the version, commit, Python and Karmada API of this reconcile"
    )
    version.add_argument("--output", "-o", choices=("text", "json"), default="text")
    version.set_defaults(func=_version)
    return parser


def _version(args: argparse.Namespace) -> int:
    from controllers.version import version_info

    info = version_info()
    if args.output == "json":
        print(json.dumps(info, indent=2))
        return 0
    api = ", ".join(info["karmadaAPIVersions"])
    print(f"reconcile {info['version']} (commit {info['gitCommit']})")
    print(f"python {info['pythonVersion']}")
    print(f"karmada {info['karmadaVersion']} API: {api}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from controllers.demo import run_demo

    # The demo prints its own progress; the controllers speak up only when something is wrong.
    configure_logging(level="ERROR")
    return anyio.run(run_demo)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reconcile`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
