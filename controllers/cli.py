"""Cli is the ``reconcile`` command line: controller-manager, join, webhook, interpret, testenv,
demo and the operator commands (taint, cordon, uncordon, register, unjoin, get)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from controllers.agent.cli import add_agent_parser
from controllers.cluster.connection import MemberOptions
from controllers.cluster.health import ClusterHealthOptions
from controllers.cluster.status import ClusterStatusOptions
from controllers.commands.cli import add_command_parsers
from controllers.eviction.options import FailoverOptions
from controllers.flags import go_bool
from controllers.interpreter.cli import add_interpret_parser, lua_workers
from controllers.interpreter.types import InterpreterError
from controllers.manageroptions import (
    LeaderElectionOptions,
    MetricsOptions,
    WebhookServerOptions,
    manager_options,
)
from controllers.run import add_run_parser
from controllers.shardingoptions import ShardingOptions
from reconcile import ConfigError, LeadershipLost, ManagerOptions, configure_logging
from reconcile.gen.cli import add_gen_parser
from reconcile.scaffold.cli import add_scaffold_parsers
from reconcile.webhook import DEFAULT_CERT_DIR

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
    MetricsOptions.add_flags(parser)
    parser.add_argument("--health-probe-bind-address", default=":8081")
    LeaderElectionOptions.add_flags(parser)
    parser.add_argument(
        "--compress-cache",
        type=go_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="keep cached objects deflated against a dictionary of their kind: a tenth of the "
        "memory for a few microseconds per read (default true)",
    )
    parser.add_argument(
        "--member-kubeconfig",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="reach member NAME with a kubeconfig instead of its Cluster's Secret (local use)",
    )
    ClusterStatusOptions.add_flags(parser)
    MemberOptions.add_flags(parser)
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
    # Each options dataclass owns its flags (controllers.flags); --help lists them in this order.
    ClusterHealthOptions.add_flags(parser)
    FailoverOptions.add_flags(parser)
    ShardingOptions.add_flags(parser)
    WebhookServerOptions.add_flags(parser)
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=_controller_manager)


def _controller_manager(args: argparse.Namespace) -> int:
    from controllers.controllermanager import run_controller_manager

    configure_logging(json=args.log_format == "json", level=args.log_level)
    options = manager_options(
        args,
        leader_election_id="reconcile-controller-manager",
        webhook_server=WebhookServerOptions.from_args(args).server(),
        compress_cache=args.compress_cache,
    )
    try:
        cluster_health = ClusterHealthOptions.from_args(args)
        failover = FailoverOptions.from_args(args)
        sharding = ShardingOptions.from_args(args)
        from controllers.interpreter.pool import set_default_pool_size

        set_default_pool_size(args.interpreter_lua_workers)
        anyio.run(
            lambda: run_controller_manager(
                args.kubeconfig,
                context=args.context,
                controllers=[c.strip() for c in args.controllers.split(",") if c.strip()],
                options=options,
                member_kubeconfigs=_member_kubeconfigs(args.member_kubeconfig),
                cluster_status=ClusterStatusOptions.from_args(args),
                members=MemberOptions.from_args(args),
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
    MetricsOptions.add_flags(parser, default=":8080")
    parser.add_argument("--health-probe-bind-address", default=":8000")
    MemberOptions.add_flags(parser)
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
        **MetricsOptions.from_args(args).manager_fields(),
        health_probe_bind_address=args.health_probe_bind_address,
    )
    try:
        anyio.run(
            lambda: run_webhook(
                args.kubeconfig,
                context=args.context,
                webhook=webhook,
                options=options,
                members=MemberOptions.from_args(args),
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
    add_agent_parser(commands)
    _add_join(commands)
    _add_webhook(commands)
    add_interpret_parser(commands)
    add_run_parser(commands)
    add_scaffold_parsers(commands)
    # Only here: controllers reach testenv from the demo and this command alone (lint-imports).
    from testenv.cli import add_testenv_parser, started_host

    add_testenv_parser(commands)
    add_gen_parser(commands, start_apiserver=started_host)
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
