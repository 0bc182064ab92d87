"""Cli is the argument parsing of the operator commands: taint, cordon, uncordon, register,
unjoin and get.

``add_command_parsers`` adds them to the ``reconcile`` command line (``controllers.cli``); the
commands' modules are imported only when one runs, so the controller-manager starts no heavier.
Every command takes ``--kubeconfig`` and ``--context`` for the host (default ``$KUBECONFIG``, then
in-cluster, then ``~/.kube/config``), and a refusal prints one line ``<command>: <why>`` on stderr
and exits 1 (flag errors are argparse's: usage and exit 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import anyio

from controllers.duration import parse_duration

__all__ = ["add_command_parsers"]


_TAINT_HELP: Final = """\
Update the taints on one or more clusters (karmadactl taint).

  * A taint is key=value:effect; the value is optional (key:effect).
  * The key is a qualified name: letters, digits, '-', '_' and '.', starting and ending with a
    letter or digit, up to 63 characters, optionally after a DNS subdomain prefix and '/'.
  * The value is empty or a label value (the same characters, up to 63).
  * The effect is NoSchedule, PreferNoSchedule or NoExecute.
  * key:effect- removes that taint, key- every taint with that key.
  * Other taints of the cluster are left as they are.

examples:
  reconcile taint foo dedicated=special-user:NoSchedule
  reconcile taint foo dedicated:NoSchedule-
  reconcile taint foo dedicated-
  reconcile taint clusters foo bar:NoExecute
"""


def _host_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="the host cluster (default: $KUBECONFIG, in-cluster)")
    parser.add_argument("--context", help="kubeconfig context of the host")


def _dry_run_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="read and print what would change, write nothing",
    )


def _run(command: str, work: Callable[[], Awaitable[None]]) -> int:
    from controllers.commands.errors import CommandError
    from reconcile import ApiError, ConfigError

    try:
        anyio.run(work)
    except (CommandError, ConfigError, ApiError, OSError) as error:
        sys.stderr.write(f"{command}: {error}\n")
        return 1
    return 0


async def _host(args: argparse.Namespace, command: str) -> Any:
    from reconcile import Client, ClusterConfig

    config = await ClusterConfig.load(args.kubeconfig, context=args.context)
    return Client(config, field_manager=f"reconcile-{command}")


def _taint(args: argparse.Namespace) -> int:
    from controllers.commands.taint import run_taint
    from controllers.commands.taintspec import parse_taint_args

    async def work() -> None:
        names, change = parse_taint_args(args.args)
        async with await _host(args, "taint") as client:
            await run_taint(
                client, names, change, sys.stdout, overwrite=args.overwrite, dry_run=args.dry_run
            )

    return _run("taint", work)


def _add_taint(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "taint",
        help="update the taints on one or more clusters",
        usage="reconcile taint [options] CLUSTER [CLUSTER ...] KEY[=VALUE]:EFFECT[-] ...",
        description=_TAINT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("args", nargs="+", metavar="ARG", help="cluster names, then taint changes")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="allow taints to be overwritten, otherwise reject taint updates that overwrite "
        "existing taints",
    )
    _dry_run_flag(parser)
    _host_flags(parser)
    parser.set_defaults(func=_taint)


def _cordon_command(cordon: bool) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        from controllers.commands.cordon import run_cordon

        verb = "cordon" if cordon else "uncordon"

        async def work() -> None:
            async with await _host(args, verb) as client:
                await run_cordon(
                    client, args.cluster, sys.stdout, cordon=cordon, dry_run=args.dry_run
                )

        return _run(verb, work)

    return command


def _add_cordon(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for verb, cordon, summary in (
        ("cordon", True, "mark cluster as unschedulable (taint cluster.karmada.io/unschedulable)"),
        ("uncordon", False, "mark cluster as schedulable (remove that taint)"),
    ):
        parser = commands.add_parser(
            verb, help=summary, description=summary[0].upper() + summary[1:]
        )
        parser.add_argument("cluster", metavar="CLUSTER", help="the Cluster's name")
        _dry_run_flag(parser)
        _host_flags(parser)
        parser.set_defaults(func=_cordon_command(cordon))


def _register(args: argparse.Namespace) -> int:
    from controllers.commands.register import run_register

    async def work() -> None:
        async with await _host(args, "register") as host:
            await run_register(
                args.name,
                host=host,
                out=sys.stdout,
                err=sys.stderr,
                output=args.output,
                cluster_namespace=args.cluster_namespace,
                api_endpoint=args.cluster_api_endpoint,
                provider=args.cluster_provider,
                region=args.cluster_region,
                server=args.host_endpoint,
                refresh=args.refresh,
            )

    return _run("register", work)


def _add_register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from controllers.api.names import KARMADA_CLUSTER_NAMESPACE

    parser = commands.add_parser(
        "register",
        help="register a Pull cluster and write its agent's host kubeconfig",
        description="Register a cluster in Pull mode (karmadactl register's role), run by an "
        "admin against the host: the Cluster (syncMode Pull) and its execution namespace, a "
        "ServiceAccount for its agent allowed only its own Works, Cluster and Lease, and a "
        "kubeconfig of that ServiceAccount for `reconcile agent --karmada-kubeconfig`. No member "
        "credential is stored on the host. A Push cluster, or a Pull cluster of another agent, "
        "is refused.",
    )
    parser.add_argument("name", metavar="CLUSTER_NAME", help="the member's Cluster name")
    _host_flags(parser)
    parser.add_argument(
        "--cluster-namespace",
        default=KARMADA_CLUSTER_NAMESPACE,
        help="host namespace of the agent's ServiceAccount and Lease (default karmada-cluster; "
        "the controller-manager's --cluster-namespace)",
    )
    parser.add_argument("--cluster-api-endpoint", help="spec.apiEndpoint of the Cluster")
    parser.add_argument("--cluster-provider", help="spec.provider of the Cluster")
    parser.add_argument("--cluster-region", help="spec.region of the Cluster")
    parser.add_argument(
        "--host-endpoint",
        help="the host URL as the agent reaches it (default: the --kubeconfig's server)",
    )
    parser.add_argument(
        "--output",
        "-o",
        type=Path,
        metavar="FILE",
        help="write the agent's kubeconfig here, mode 0600 (default: stdout)",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="only mint a new token for the Cluster's existing agent; write nothing on the host",
    )
    parser.set_defaults(func=_register)


def _unjoin(args: argparse.Namespace) -> int:
    from controllers.commands.unjoin import run_unjoin
    from reconcile import Client, ClusterConfig

    async def work() -> None:
        member = None
        if args.cluster_kubeconfig:
            config = await ClusterConfig.from_kubeconfig(
                args.cluster_kubeconfig, context=args.cluster_context
            )
            member = Client(config, field_manager="reconcile-unjoin")
        try:
            async with await _host(args, "unjoin") as host:
                await run_unjoin(
                    args.name,
                    host=host,
                    member=member,
                    out=sys.stdout,
                    cluster_namespace=args.cluster_namespace,
                    wait=args.wait,
                    dry_run=args.dry_run,
                )
        finally:
            if member is not None:
                await member.close()

    return _run("unjoin", work)


def _add_unjoin(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from controllers.api.names import KARMADA_CLUSTER_NAMESPACE

    parser = commands.add_parser(
        "unjoin",
        help="remove a cluster from the host (what join or register created)",
        description="Remove a cluster from the host: the Cluster (waiting until it is gone), its "
        "Secret (a Pull cluster: what register made, its agent's ServiceAccount, RBAC and "
        "Lease), and with --cluster-kubeconfig the ServiceAccount, token Secret, ClusterRole "
        "and ClusterRoleBinding join created in the member.",
    )
    parser.add_argument("name", metavar="CLUSTER_NAME", help="the member's Cluster name")
    _host_flags(parser)
    parser.add_argument(
        "--cluster-kubeconfig", help="the member, to remove what join created there"
    )
    parser.add_argument("--cluster-context", help="kubeconfig context of the member")
    parser.add_argument(
        "--cluster-namespace",
        default=KARMADA_CLUSTER_NAMESPACE,
        help="host namespace of the member's Secret when the Cluster names none "
        "(default karmada-cluster)",
    )
    parser.add_argument(
        "--wait",
        type=parse_duration,
        default=60.0,
        help="how long to wait for the Cluster to be gone before giving up (default 60s)",
    )
    _dry_run_flag(parser)
    parser.set_defaults(func=_unjoin)


def _get(args: argparse.Namespace) -> int:
    from controllers.commands.get import run_get

    async def work() -> None:
        async with await _host(args, "get") as client:
            namespace = args.namespace or client.config.namespace or "default"
            await run_get(
                client,
                args.kind,
                sys.stdout,
                sys.stderr,
                name=args.name,
                namespace=None if args.all_namespaces else namespace,
                clusters=[c for value in args.clusters for c in value.split(",") if c],
            )

    return _run("get", work)


def _add_get(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "get",
        help="list the member objects of a kind: cluster, ready replicas, applied, health",
        description="List one row per member object of KIND (karmadactl get -C), read from the "
        "Works' status on the host: NAME, CLUSTER, READY, APPLIED, HEALTH.",
    )
    parser.add_argument("kind", metavar="KIND", help="e.g. deployments, deploy, configmaps")
    parser.add_argument("name", metavar="NAME", nargs="?", help="only this object")
    parser.add_argument(
        "-n", "--namespace", help="the namespace (default: the context's, else default)"
    )
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="list every namespace")
    parser.add_argument(
        "-C",
        "--clusters",
        action="append",
        default=[],
        metavar="CLUSTERS",
        help="only these member clusters, e.g. -C member1,member2",
    )
    _host_flags(parser)
    parser.set_defaults(func=_get)


def add_command_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add taint, cordon, uncordon, register, unjoin and get to the ``reconcile`` subcommands."""
    _add_taint(commands)
    _add_cordon(commands)
    _add_register(commands)
    _add_unjoin(commands)
    _add_get(commands)
