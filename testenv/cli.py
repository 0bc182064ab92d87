"""Cli implements ``reconcile testenv install|up|down``: binaries and local control planes."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from testenv.binaries import (
    BinaryNotFound,
    BuildError,
    install_binaries,
    install_helm,
    store_dir,
)
from testenv.environment import Environment
from testenv.gomod import update_wrappers
from testenv.process import StartError
from testenv.state import clear_state, save_state, stop_recorded

__all__ = ["add_testenv_parser", "started_host"]

DEFAULT_DIR = Path(".testenv")


def add_testenv_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``testenv`` and its sub-commands on the ``reconcile`` command line."""
    parser = subparsers.add_parser("testenv", help="real kube-apiserver + etcd control planes")
    commands = parser.add_subparsers(dest="testenv_command", required=True)

    install = commands.add_parser("install", help="find or build kube-apiserver, etcd, kubectl")
    install.add_argument("--quiet", action="store_true", help="say nothing when already installed")
    install.add_argument("--force", action="store_true", help="rebuild even when found")
    install.add_argument("--kubernetes-version", help="regenerate the wrappers for this release")
    install.add_argument("--etcd-version", help="etcd release to pair with --kubernetes-version")
    install.add_argument(
        "--helm", action="store_true", help="also find or build helm (pinned in testbin/helm)"
    )
    install.set_defaults(func=_install)

    up = commands.add_parser("up", help="start a host and member clusters until Ctrl-C/SIGTERM")
    up.add_argument("--members", default="", help="comma-separated member names")
    up.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where kubeconfigs are written")
    up.add_argument("--crds", type=Path, action="append", default=[], help="CRD file or dir")
    up.set_defaults(func=_up)

    down = commands.add_parser("down", help="stop a control plane started with `up` or kept")
    down.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    down.set_defaults(func=_down)


def _install(args: argparse.Namespace) -> int:
    if args.kubernetes_version:
        if not args.etcd_version:
            print("--kubernetes-version needs --etcd-version (same minor)", file=sys.stderr)
            return 2
        update_wrappers(args.kubernetes_version, args.etcd_version)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        binaries = install_binaries(progress=progress, force=args.force)
        helm = install_helm(progress=progress) if args.helm else None
    except BuildError as error:
        print(f"testenv install failed: {error}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"kube-apiserver: {binaries.kube_apiserver}")
        print(f"etcd:           {binaries.etcd}")
        print(f"kubectl:        {binaries.kubectl}")
        if helm is not None:
            print(f"helm:           {helm}")
        print(f"store:          {store_dir()}")
    return 0


def _up(args: argparse.Namespace) -> int:
    members = [m.strip() for m in args.members.split(",") if m.strip()]
    try:
        return anyio.run(_serve, members, args.dir, args.crds)
    except (BinaryNotFound, StartError, ValueError) as error:
        print(f"testenv up failed: {error}", file=sys.stderr)
        return 1


async def _serve(members: list[str], directory: Path, crds: list[Path]) -> int:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with Environment(members=members, crd_paths=crds) as env:
            save_state(env, directory, pids=[os.getpid()])
            for name, plane in env.clusters.items():
                version = await plane.server_version()
                print(f"{name:<10} {version:<10} {directory / f'{name}.kubeconfig'}", flush=True)
            print("running; Ctrl-C or `reconcile testenv down` stops it", flush=True)
            async for _ in signals:
                break
            clear_state(directory)
        print("stopped", flush=True)
    return 0


@asynccontextmanager
async def started_host() -> AsyncIterator[Path]:
    """A throwaway host control plane for one command (``reconcile gen types``): yields its admin
    kubeconfig and stops it on exit."""
    async with Environment() as env:
        yield env.host.kubeconfig


def _down(args: argparse.Namespace) -> int:
    try:
        pids = stop_recorded(args.dir)
    except FileNotFoundError:
        print(f"no testenv recorded in {args.dir}", file=sys.stderr)
        return 1
    print(f"stopped {len(pids)} process(es) recorded in {args.dir}")
    return 0
