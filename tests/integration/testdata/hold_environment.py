"""Starts an Environment, prints its pids and directory as JSON, then waits to be interrupted."""

from __future__ import annotations

import json
import sys

import anyio

from testenv import Environment


async def main() -> None:
    async with Environment(members=["held"]) as env:
        processes = [p.apiserver.process for p in env.clusters.values()]
        assert env.etcd is not None
        pids = [p.pid for p in [*processes, env.etcd.process]]
        print(json.dumps({"pids": pids, "directory": str(env.directory)}), flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(130)
