"""Cli is ``reconcile gen``: one sub-command per generator, each a function of its own, listed
in ``_GENERATORS``.

``reconcile gen crd MODULE [MODULE...] --output DIR`` imports the modules (names, with the current
directory importable as for ``python -m``, or paths to ``.py`` files; a package with every module
under it, as controller-gen's ``paths=./...``), finds the
``reconcile.markers.Kind`` declarations their globals name (a Kind, a Version of one or its GVK,
declared there or imported) and writes one CRD per kind to
``DIR/<group>_<plural>.yaml`` (``-``: all to stdout). Bad input exits 2 with the reason.
``reconcile gen rbac MODULE [MODULE...] --role-name NAME`` writes the roles the modules'
``PERMISSIONS`` need (``reconcile.gen.rbac``).

``reconcile gen types [--output DIR] [--kubeconfig K]`` writes ``reconcile.api``'s TypedDicts from
an apiserver's OpenAPI v3. Without a kubeconfig it starts a throwaway apiserver through
``start_apiserver``, which a command line able to start one passes (the ``reconcile`` command
passes testenv's); the framework itself never reaches testenv.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Final, TypeAlias

import anyio

from reconcile.gen.modules import import_modules
from reconcile.gen.rbac import add_rbac_parser

__all__ = ["StartAPIServer", "add_gen_parser"]

StartAPIServer = Callable[[], AbstractAsyncContextManager[Path]]
"""Starts a throwaway apiserver; entering it yields an admin kubeconfig, leaving stops it."""

Generators: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

DEFAULT_TYPES_OUTPUT: Final = Path(__file__).resolve().parent.parent / "api"
"""Where ``gen types`` writes by default: this installation's ``reconcile/api``."""


def add_gen_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    start_apiserver: StartAPIServer | None = None,
) -> None:
    """Register ``reconcile gen`` and its generators; ``start_apiserver`` serves ``gen types``
    when no kubeconfig is given."""
    parser = commands.add_parser("gen", help="generate CRDs and code from Python declarations")
    parser.set_defaults(start_apiserver=start_apiserver)
    generators = parser.add_subparsers(dest="generator", required=True)
    for add in _GENERATORS:
        add(generators)


def _add_crd(generators: Generators) -> None:
    parser = generators.add_parser(
        "crd", help="CustomResourceDefinitions of the reconcile.markers.Kind declarations"
    )
    parser.add_argument("modules", nargs="+", metavar="MODULE", help="a module name or .py file")
    parser.add_argument(
        "--output", "-o", required=True, metavar="DIR", help="directory of the YAML files, or -"
    )
    parser.set_defaults(func=_crd)


def _crd(args: argparse.Namespace) -> int:
    from reconcile.gen.crd import CRDError, crd_file_name, crd_for, crd_yaml, find_kinds

    try:
        modules = [module for target in args.modules for module in import_modules(target)]
        kinds = find_kinds(vars(module) for module in modules)
        if not kinds:
            raise CRDError(f"no reconcile.markers.Kind in {', '.join(args.modules)}")
        documents = {crd_file_name(kind): crd_yaml(crd_for(kind)) for kind in kinds}
    except (CRDError, ImportError) as error:
        print(f"reconcile gen crd: {error}", file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write("".join(documents.values()))
        return 0
    directory = Path(args.output)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in documents.items():
        (directory / name).write_text(text, encoding="utf-8")
        print(f"wrote {directory / name}", file=sys.stderr)
    return 0


def _add_types(generators: Generators) -> None:
    parser = generators.add_parser(
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


_GENERATORS: Final[tuple[Callable[[Generators], None], ...]] = (
    _add_crd,
    add_rbac_parser,
    _add_types,
)
"""One function per generator, each adding its sub-command to ``gen``."""
