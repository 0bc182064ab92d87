"""Run the ReplicaSet example controller until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse

import anyio

from examples.replicaset.controller import setup
from reconcile import Manager, ManagerOptions, configure_logging


async def main(kubeconfig: str | None, metrics: str) -> None:
    manager = await Manager.from_kubeconfig(
        kubeconfig, options=ManagerOptions(metrics_bind_address=metrics)
    )
    setup(manager)
    await manager.run_until_signalled()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig")
    parser.add_argument("--metrics-bind-address", default="127.0.0.1:8080")
    args = parser.parse_args()
    configure_logging()
    anyio.run(main, args.kubeconfig, args.metrics_bind_address)
