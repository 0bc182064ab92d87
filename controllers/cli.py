"""Cli is the ``reconcile`` command line: testenv control planes and the demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import anyio

from testenv.cli import add_testenv_parser

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reconcile", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add_testenv_parser(commands)
    demo = commands.add_parser("demo", help="run everything on a local embedded default")
    demo.set_defaults(func=_demo)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from controllers.demo import run_demo

    return anyio.run(run_demo)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reconcile`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
