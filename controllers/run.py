"""Run is ``reconcile run MODULE:FUNCTION``: a user's controllers in a Manager, without a main.

``FUNCTION(manager)`` (plain or ``async``) sets controllers up on a ``reconcile.Manager`` built
from the flags (kubeconfig, metrics, probes, leader election, logging: the flags a kubebuilder
project's main takes); the command then runs the manager until SIGTERM or SIGINT and stops it
gracefully, as ``Manager.run_until_signalled`` does. The current directory is importable, as
for ``python -m``, so ``reconcile run mycontroller:setup`` finds ``./mycontroller.py``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import anyio

from controllers.manageroptions import (
    LeaderElectionOptions,
    MetricsOptions,
    WebhookServerOptions,
    manager_options,
)
from reconcile import ConfigError, LeadershipLost, Manager, ManagerOptions, configure_logging

__all__ = ["add_run_parser", "load_setup"]

SetupFunc = Callable[[Manager], Any]


def add_run_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``reconcile run``."""
    parser = commands.add_parser(
        "run", help="run your controllers: MODULE:FUNCTION sets them up on a Manager"
    )
    parser.add_argument("target", metavar="MODULE:FUNCTION", help="e.g. mycontroller:setup")
    parser.add_argument("--kubeconfig", help="the cluster (default: $KUBECONFIG, in-cluster)")
    parser.add_argument("--context", help="kubeconfig context")
    MetricsOptions.add_flags(parser)
    parser.add_argument("--health-probe-bind-address", default=":8081")
    LeaderElectionOptions.add_flags(parser)
    WebhookServerOptions.add_flags(parser)
    parser.add_argument("--leader-election-id", default="", help="the Lease's name")
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=_run)


def load_setup(target: str) -> SetupFunc:
    """The function ``MODULE:FUNCTION`` names, imported with the current directory on the path.

    Raises:
        ValueError: ``target`` is not ``MODULE:FUNCTION``, or names nothing callable.
        ImportError: the module does not import.
    """
    module_name, sep, function_name = target.partition(":")
    if not sep or not module_name or not function_name:
        raise ValueError(f"{target!r} is not MODULE:FUNCTION (e.g. mycontroller:setup)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"{module_name} has no function {function_name!r}")
    setup: SetupFunc = function
    return setup


def _run(args: argparse.Namespace) -> int:
    configure_logging(json=args.log_format == "json", level=args.log_level)
    try:
        setup = load_setup(args.target)
        options = manager_options(
            args,
            leader_election_id=args.leader_election_id,
            webhook_server=WebhookServerOptions.from_args(args).server(),
        )
        anyio.run(_serve, args, options, setup)
    except (ConfigError, ValueError, ImportError) as error:
        print(f"run: {error}", file=sys.stderr)
        return 2
    except LeadershipLost as error:
        print(f"run: {error}", file=sys.stderr)
        return 1
    return 0


async def _serve(args: argparse.Namespace, options: ManagerOptions, setup: SetupFunc) -> None:
    manager = await Manager.from_kubeconfig(args.kubeconfig, context=args.context, options=options)
    set_up = setup(manager)
    if inspect.isawaitable(set_up):
        await set_up
    await manager.run_until_signalled()
