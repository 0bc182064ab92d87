"""Run the ConfigMapSync example until Ctrl-C or SIGTERM, members from a folder of kubeconfigs."""

from __future__ import annotations

import argparse

import anyio

from examples.configmapsync.controller import setup
from reconcile import KubeconfigProvider, Manager, ManagerOptions, configure_logging


async def main(kubeconfig: str | None, members: str, metrics: str) -> None:
    manager = await Manager.from_kubeconfig(
        kubeconfig, options=ManagerOptions(metrics_bind_address=metrics)
    )
    manager.add_provider(KubeconfigProvider(members))  # one member per file, reloaded on change
    setup(manager)
    await manager.run_until_signalled()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", help="the host cluster")
    parser.add_argument("--members", required=True, help="a folder of member kubeconfigs")
    parser.add_argument("--metrics-bind-address", default="127.0.0.1:8080")
    args = parser.parse_args()
    configure_logging()
    anyio.run(main, args.kubeconfig, args.members, args.metrics_bind_address)
