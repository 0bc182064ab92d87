"""A quarantined script is reported on its customization; a busy pool's check is retried (#26).

On the fake client through real informers, as tests/unit/test_interpreterconfig.py.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from controllers import interpreterconfig
from controllers.api import crd_paths
from controllers.cluster import Members
from controllers.context import Context
from controllers.interpreter import (
    CustomizationSet,
    Interpreter,
    LuaQuarantined,
    LuaScript,
    LuaTimeout,
    Operation,
    WorkerPool,
)
from controllers.interpreter.pool import QUARANTINE_STRIKES
from reconcile import GVK, Manager, ManagerOptions
from testenv import FakeClient, eventually, load_crds

pytestmark = pytest.mark.asyncio(loop_scope="session")

WORKLOAD = GVK("workload.example.io", "v1alpha1", "Workload")
EVENT = GVK("", "v1", "Event")
LOOPING = "function InterpretHealth(observedObj) while true do end end"
OBSERVED = {"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload", "spec": {}}


def _customization(name: str, script: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": name},
        "spec": {
            "target": {"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload"},
            "customizations": {"healthInterpretation": {"luaScript": script}},
        },
    }


async def _events(fake: FakeClient, reason: str) -> list[dict[str, Any]]:
    events = (await fake.list(EVENT, namespace="default"))["items"]
    return [e for e in events if e["reason"] == reason]


async def test_a_quarantined_script_is_a_warning_event_on_its_customization() -> None:
    pool = WorkerPool(2)
    fake = FakeClient(crds=load_crds(crd_paths()))
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    interpreter = Interpreter(customizations=CustomizationSet(timeout=0.1, pool=pool))
    context = Context(manager, Members.of(manager), interpreter=interpreter)
    interpreterconfig.setup(context)
    try:
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            await fake.create(_customization("spinning", LOOPING))

            async def handled() -> bool:
                return interpreter.handles(WORKLOAD, Operation.INTERPRET_HEALTH)

            await eventually(handled)
            for _ in range(QUARANTINE_STRIKES):
                with pytest.raises(LuaTimeout):
                    await interpreter.interpret_health(OBSERVED)
            with pytest.raises(LuaQuarantined):
                await interpreter.interpret_health(OBSERVED)

            async def reported() -> list[dict[str, Any]]:
                return await _events(fake, interpreterconfig.QUARANTINED_REASON)

            [event] = await eventually(reported)
            assert event["type"] == "Warning"
            assert event["involvedObject"]["name"] == "spinning"
            assert event["message"].startswith(
                "spinning/healthInterpretation: quarantined for another 30 s (30 s): "
            ), event["message"]
            assert "ran longer than 0.1 s" in event["message"]
            manager.stop()
    finally:
        pool.close()


async def test_a_check_that_found_no_free_worker_is_retried_not_refused() -> None:
    pool = WorkerPool(1)
    fake = FakeClient(crds=load_crds(crd_paths()))
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    # No wait for a worker at all: any check meeting a busy worker fails with LuaBusy.
    interpreter = Interpreter(customizations=CustomizationSet(queue_timeout=0.0, pool=pool))
    context = Context(manager, Members.of(manager), interpreter=interpreter)
    interpreterconfig.setup(context)
    slow = LuaScript(
        "function InterpretHealth(o) local t = os.clock() while os.clock() - t < 0.9 do end "
        "return true end",
        Operation.INTERPRET_HEALTH,
        name="other/healthInterpretation",
        # 0.9 s of CPU inside 1 s of wall time failed whenever another process shared the
        # cores: the busy spell is what matters here, not the script's deadline.
        timeout=10.0,
        pool=pool,
    )
    try:
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            await slow.interpret_health(OBSERVED)  # the worker started

            async def busy() -> None:  # for 2.7 s: the first checks meet a busy worker
                for _ in range(3):
                    await slow.interpret_health(OBSERVED)

            group.start_soon(busy)
            await fake.create(
                _customization("waiting", "function InterpretHealth(o) return true end")
            )

            async def handled() -> bool:
                return interpreter.handles(WORKLOAD, Operation.INTERPRET_HEALTH)

            await eventually(handled, timeout=10)
            assert not await _events(fake, "InvalidCustomization")
            manager.stop()
    finally:
        pool.close()
