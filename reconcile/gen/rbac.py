"""``reconcile gen rbac``: the ClusterRole/Roles that modules' ``PERMISSIONS`` declare."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeAlias

from reconcile.gen.modules import import_module

__all__ = ["add_rbac_parser"]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_rbac_parser(generators: Commands) -> None:
    """Register ``rbac`` on the ``gen`` command's sub-commands."""
    parser = generators.add_parser(
        "rbac",
        help="ClusterRole/Roles granting what the modules' PERMISSIONS declare",
        description="Write the ClusterRole (and a Role per namespace a rule names) granting "
        "every PERMISSIONS of the MODULEs, merged and sorted (controller-gen's rbac generator).",
    )
    parser.add_argument("modules", metavar="MODULE", nargs="+", help="e.g. mycontroller")
    parser.add_argument("--role-name", required=True, help="the roles' name, e.g. manager-role")
    parser.add_argument(
        "--namespace", help="where the controller runs: the Role for rules in OWN_NAMESPACE"
    )
    parser.add_argument(
        "--output", "-o", default="-", help="a directory (writes role.yaml there) or - for stdout"
    )
    parser.set_defaults(func=_rbac)


def _rbac(args: argparse.Namespace) -> int:
    import yaml

    from reconcile.rbac import permissions_of, role_manifests

    try:
        declared = [permissions_of(import_module(module)) for module in args.modules]
        manifests = role_manifests(args.role_name, declared, namespace=args.namespace)
    except (ImportError, ValueError) as error:
        sys.stderr.write(f"gen rbac: {error}\n")
        return 2
    text = yaml.safe_dump_all(manifests, sort_keys=False)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    directory = Path(args.output)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "role.yaml").write_text(text, encoding="utf-8")
    return 0
