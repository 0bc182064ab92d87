"""Demo runs ``reconcile demo``: the project on an embedded default, with nothing to set up.

For now it starts a local host and two member control planes (real kube-apiserver + etcd), creates
a ConfigMap in each through its own apiserver, prints what each answered, and stops cleanly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from testenv import ControlPlane, Environment

__all__ = ["run_demo"]

DEMO_MEMBERS = ("member1", "member2")


async def _exercise(plane: ControlPlane) -> list[str]:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "reconcile-demo", "namespace": "default"},
        "data": {"cluster": plane.name},
    }
    await plane.request("POST", "/api/v1/namespaces/default/configmaps", body)
    read = await plane.request("GET", "/api/v1/namespaces/default/configmaps/reconcile-demo")
    version = await plane.server_version()
    meta = read["metadata"]
    return [plane.name, version, plane.url, meta["name"], read["data"]["cluster"], meta["uid"][:8]]


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )


async def run_demo(members: Sequence[str] = DEMO_MEMBERS) -> int:
    """Start host + members, show each apiserver working, stop; returns the exit code."""
    print(f"starting host + {', '.join(members)}: etcd and one kube-apiserver per cluster ...")
    started = time.monotonic()
    async with Environment(members=members) as env:
        print(f"control planes ready in {time.monotonic() - started:.1f}s")
        header = ["CLUSTER", "VERSION", "SERVER", "CONFIGMAP", "DATA.CLUSTER", "UID"]
        rows = [header] + [await _exercise(plane) for plane in env.clusters.values()]
        print(_table(rows))
    print("control planes stopped cleanly")
    return 0
