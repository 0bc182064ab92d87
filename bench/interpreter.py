"""Benchmark of the resource interpreter: Lua customizations against the native defaults, per call.

Run ``python -m bench.interpreter [calls]`` from the repository root (as a module, because bench/
holds a ``reconcile.py`` that shadows the package when bench/ heads the import path). The same
Deployment is interpreted by the native backend and by a ResourceInterpreterCustomization whose
Lua scripts do the same work (GetReplicas with ``kube.accuratePodRequirements``; AggregateStatus
summing three members' counts with the observedGeneration rule), both through the backends' async
methods in one event loop. Lua runs as the controllers run it, in the worker pool; "in-process"
is the same sandbox called on the event loop's thread, as before the pool (no isolation), to show
what the process boundary costs. Printed per operation: calls per second and µs per call of each,
the Lua/native ratio (goal ≤ 5x) and pool/in-process ratio (goal ≤ 2x), then calls per second
with 4 concurrent callers, and a worker's start time and resident memory. Each figure is the best
of three runs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from controllers.interpreter import (
    AggregatedStatusItem,
    CustomizationSet,
    NativeBackend,
    ReplicaRequirements,
    WorkerPool,
)
from controllers.interpreter.sandbox import Sandbox

__all__ = ["main"]

DEFAULT_CALLS: Final = 5_000
RUNS: Final = 3

DEPLOYMENT: Final[dict[str, Any]] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "shop",
        "namespace": "prod",
        "generation": 7,
        "labels": {"app": "shop", "tier": "web"},
        "annotations": {"deployment.kubernetes.io/revision": "7"},
    },
    "spec": {
        "replicas": 6,
        "selector": {"matchLabels": {"app": "shop"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        "template": {
            "metadata": {"labels": {"app": "shop", "tier": "web"}},
            "spec": {
                "serviceAccountName": "shop",
                "nodeSelector": {"pool": "web"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web"}],
                "containers": [
                    {
                        "name": "app",
                        "image": "registry.example/shop:7",
                        "ports": [{"containerPort": 8080}],
                        "env": [{"name": "MODE", "value": "prod"}],
                        "envFrom": [{"configMapRef": {"name": "shop-config"}}],
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "512Mi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                    },
                    {
                        "name": "proxy",
                        "image": "registry.example/proxy:2",
                        "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                    },
                ],
                "volumes": [{"name": "cache", "emptyDir": {}}],
            },
        },
    },
    "status": {"observedGeneration": 6, "replicas": 6, "readyReplicas": 6},
}

ITEMS: Final = [
    AggregatedStatusItem(
        f"member{i}",
        {
            "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
            "observedGeneration": 3, "generation": 3, "resourceTemplateGeneration": 7,
        },
        applied=True,
    )
    for i in range(1, 4)
]  # fmt: skip

CUSTOMIZATION: Final[dict[str, Any]] = {
    "apiVersion": "config.karmada.io/v1alpha1",
    "kind": "ResourceInterpreterCustomization",
    "metadata": {"name": "bench-deployment"},
    "spec": {
        "target": {"apiVersion": "apps/v1", "kind": "Deployment"},
        "customizations": {
            "replicaResource": {
                "luaScript": """
local kube = require("kube")
function GetReplicas(obj)
  local requires = kube.accuratePodRequirements(obj.spec.template)
  if requires ~= nil then
    requires.namespace = obj.metadata.namespace
  end
  return obj.spec.replicas or 0, requires
end
"""
            },
            "statusAggregation": {
                "luaScript": """
local counts = {"replicas", "readyReplicas", "updatedReplicas", "availableReplicas",
  "unavailableReplicas"}
function AggregateStatus(desiredObj, statusItems)
  local status = desiredObj.status or {}
  local generation = desiredObj.metadata.generation or 0
  local current = 0
  for _, field in ipairs(counts) do status[field] = 0 end
  for _, item in ipairs(statusItems or {}) do
    local member = item.status
    if member ~= nil then
      for _, field in ipairs(counts) do
        status[field] = status[field] + (member[field] or 0)
      end
      if (member.resourceTemplateGeneration or 0) >= generation
          and (member.observedGeneration or 0) >= (member.generation or 0) then
        current = current + 1
      end
    end
  end
  if current == #(statusItems or {}) then status.observedGeneration = generation end
  desiredObj.status = status
  return desiredObj
end
"""
            },
        },
    },
}


async def _per_call(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """Seconds per call, best of RUNS runs."""
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(calls):
            await call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


async def _concurrent(call: Callable[[], Awaitable[Any]], calls: int, callers: int) -> float:
    """Calls per second with ``callers`` tasks calling at once, best of RUNS runs."""

    async def caller() -> None:
        for _ in range(calls // callers):
            await call()

    best = 0.0
    for _ in range(RUNS):
        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(callers):
                group.start_soon(caller)
        best = max(best, calls // callers * callers / (time.perf_counter() - start))
    return best


def _in_process(operation: str) -> Callable[[], Awaitable[Any]]:
    """The sandbox on this thread (no worker), with the typed result built as the pool's is."""
    rules = CUSTOMIZATION["spec"]["customizations"]
    if operation == "GetReplicas":
        replicas = Sandbox(
            rules["replicaResource"]["luaScript"], operation, timeout=1.0, max_memory=64 * 2**20
        )

        async def get_replicas() -> Any:
            replica, requires = replicas.call([DEPLOYMENT])
            return replica, ReplicaRequirements.from_dict(requires)

        return get_replicas
    aggregate = Sandbox(
        rules["statusAggregation"]["luaScript"], operation, timeout=1.0, max_memory=64 * 2**20
    )
    items = [item.to_dict() for item in ITEMS]

    async def aggregate_status() -> Any:
        return aggregate.call([DEPLOYMENT, items])

    return aggregate_status


async def _worker_figures() -> str:
    pool = WorkerPool(1)
    try:
        start = time.perf_counter()
        stats = await pool.stats()  # the first request waits for the worker to start
        started = time.perf_counter() - start
        return f"worker: started in {started * 1000:.0f} ms, {stats['rss_kib'] / 1024:.1f} MiB RSS"
    finally:
        pool.close()


async def main(calls: int = DEFAULT_CALLS) -> None:
    """Print per-call figures of native, Lua in workers and Lua in-process, and ratios."""
    native, lua = NativeBackend(), CustomizationSet([CUSTOMIZATION])
    # The two must agree, or the comparison is meaningless.
    assert await native.get_replicas(DEPLOYMENT) == await lua.get_replicas(DEPLOYMENT)
    native_status = (await native.aggregate_status(DEPLOYMENT, ITEMS))["status"]
    lua_status = (await lua.aggregate_status(DEPLOYMENT, ITEMS))["status"]
    assert {k: v for k, v in lua_status.items() if v} == native_status, (lua_status, native_status)

    print(f"{calls} calls per run, best of {RUNS} runs, one Deployment, 3 member statuses")
    print(
        f"{'operation':<16}{'native':>15}{'lua (pool)':>15}{'in-process':>15}"
        f"{'lua/native':>11}{'pool/in-proc':>13}{'pool x4':>10}"
    )
    operations: dict[str, tuple[Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]] = {
        "GetReplicas": (
            lambda: native.get_replicas(DEPLOYMENT),
            lambda: lua.get_replicas(DEPLOYMENT),
        ),
        "AggregateStatus": (
            lambda: native.aggregate_status(DEPLOYMENT, ITEMS),
            lambda: lua.aggregate_status(DEPLOYMENT, ITEMS),
        ),
    }
    for name, (native_call, lua_call) in operations.items():
        native_time = await _per_call(native_call, calls)
        lua_time = await _per_call(lua_call, calls)
        local_time = await _per_call(_in_process(name), calls)
        parallel = await _concurrent(lua_call, calls, 4)
        cells = [f"{1 / t:>7,.0f}/s{t * 1e6:>4.0f}µs" for t in (native_time, lua_time, local_time)]
        print(
            f"{name:<16}{''.join(f'{c:>15}' for c in cells)}"
            f"{lua_time / native_time:>10.2f}x{lua_time / local_time:>12.2f}x{parallel:>8,.0f}/s"
        )
    print(await _worker_figures())


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CALLS)
