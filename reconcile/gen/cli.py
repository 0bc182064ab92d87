"""The ``reconcile gen`` command: one sub-command per kind of generated manifest."""

from __future__ import annotations

import argparse
from typing import TypeAlias

from reconcile.gen.rbac import add_rbac_parser

__all__ = ["add_gen_parser"]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_gen_parser(commands: Commands) -> None:
    """Register ``reconcile gen`` and its sub-commands on ``commands``."""
    parser = commands.add_parser("gen", help="generate manifests from your Python declarations")
    generators = parser.add_subparsers(dest="generator", required=True)
    add_rbac_parser(generators)
