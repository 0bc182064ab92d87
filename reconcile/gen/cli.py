"""Cli wires ``reconcile gen`` into a command line: one function per generator adds its
sub-command to the ``gen`` parser (``types`` now; ``crd`` and ``rbac`` join ``_SUBCOMMANDS``).

testenv is out of the framework's reach: a command line that can start a local apiserver passes
``start_apiserver`` (the ``reconcile`` command passes testenv's), used when no kubeconfig is given.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Final, TypeAlias

import anyio

__all__ = ["StartAPIServer", "add_gen_parser"]

StartAPIServer = Callable[[], AbstractAsyncContextManager[Path]]
"""Starts a throwaway apiserver; entering it yields an admin kubeconfig, leaving stops it."""

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

DEFAULT_TYPES_OUTPUT: Final = Path(__file__).resolve().parent.parent / "api"
"""Where ``gen types`` writes by default: this installation's ``reconcile/api``."""


def add_gen_parser(commands: Subparsers, *, start_apiserver: StartAPIServer | None = None) -> None:
    """Register ``gen`` and its sub-commands on a command line's sub-parsers."""
    parser = commands.add_parser("gen", help="generate code and manifests (reconcile gen types)")
    parser.set_defaults(start_apiserver=start_apiserver)
    subcommands = parser.add_subparsers(dest="gen_command", required=True)
    for add in _SUBCOMMANDS:
        add(subcommands)


def _add_types(subcommands: Subparsers) -> None:
    parser = subcommands.add_parser(
        "types", help="write reconcile.api's TypedDicts from an apiserver's OpenAPI v3"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_TYPES_OUTPUT,
        metavar="DIR",
        help="the reconcile/api directory to write (default: this installation's)",
    )
    parser.add_argument(
        "--kubeconfig", help="read the OpenAPI of this cluster (default: start a testenv)"
    )
    parser.add_argument("--context", help="kubeconfig context")
    parser.set_defaults(func=_types)


def _types(args: argparse.Namespace) -> int:
    from reconcile.client import ConfigError
    from reconcile.gen.openapi import OpenAPIError
    from reconcile.gen.types import SchemaError

    if args.kubeconfig is None and args.start_apiserver is None:
        print("gen types: give --kubeconfig (no local apiserver to start)", file=sys.stderr)
        return 2
    try:
        written = anyio.run(_generate_types, args)
    except (ConfigError, OpenAPIError, SchemaError, OSError) as error:
        print(f"gen types: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files under {args.output}")
    return 0


async def _generate_types(args: argparse.Namespace) -> list[Path]:
    from reconcile.client import Client
    from reconcile.gen.types import generate_types

    if args.kubeconfig is not None:
        async with await Client.connect(args.kubeconfig, context=args.context) as client:
            return await generate_types(client, args.output)
    async with args.start_apiserver() as kubeconfig, await Client.connect(kubeconfig) as client:
        return await generate_types(client, args.output)


_SUBCOMMANDS: Final[tuple[Callable[[Subparsers], None], ...]] = (_add_types,)
"""One function per ``gen`` sub-command, each adding its parser."""
