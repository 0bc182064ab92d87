"""Benchmark of the resource interpreter: Lua customizations against the native defaults, per call.

Run ``python -m bench.interpreter [calls]`` from the repository root (as a module, because bench/
holds a ``reconcile.py`` that shadows the package when bench/ heads the import path). The same
Deployment is interpreted by the native backend and by a ResourceInterpreterCustomization whose
Lua scripts do the same work (GetReplicas with ``kube.accuratePodRequirements``; AggregateStatus
summing three members' counts with the observedGeneration rule), both through the backends' async
methods in one event loop. Printed: calls per second for each, and the Lua/native time ratio per
call (the goal is 5x or less). Each figure is the best of three runs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from controllers.interpreter import AggregatedStatusItem, CustomizationSet, NativeBackend

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

CUSTOMIZATION: Final = {
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


async def main(calls: int = DEFAULT_CALLS) -> None:
    """Print calls per second of native and Lua for GetReplicas and AggregateStatus, and ratios."""
    native, lua = NativeBackend(), CustomizationSet([CUSTOMIZATION])
    # The two must agree, or the comparison is meaningless.
    assert await native.get_replicas(DEPLOYMENT) == await lua.get_replicas(DEPLOYMENT)
    native_status = (await native.aggregate_status(DEPLOYMENT, ITEMS))["status"]
    lua_status = (await lua.aggregate_status(DEPLOYMENT, ITEMS))["status"]
    assert {k: v for k, v in lua_status.items() if v} == native_status, (lua_status, native_status)

    print(f"{calls} calls per run, best of {RUNS} runs, one Deployment, 3 member statuses")
    print(f"{'operation':<18}{'native calls/s':>16}{'lua calls/s':>14}{'lua/native':>12}")
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
        print(
            f"{name:<18}{1 / native_time:>16,.0f}{1 / lua_time:>14,.0f}"
            f"{lua_time / native_time:>11.2f}x"
        )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CALLS)
