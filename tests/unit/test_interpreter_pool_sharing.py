"""The worker pool shares its time out from outside the workers (issue #26 item 8).

A hostile customization (a C-level ``string.find`` pattern loop, which Lua's hook cannot stop: the
pool kills its worker at the time limit + grace) must not starve the others: it holds at most half
of the pool while another customization's calls wait, a call that cannot get a worker within its
queue deadline fails saying so, a script that keeps running out of time is quarantined (its calls
fail at once, listeners told), a customization is checked within ``CHECK_TIMEOUT`` however busy the
pool is, and a stopped call's top level is not re-run inside that call's deadline. The
controller-manager's ``--interpreter-lua-workers`` sizes the process-wide pool.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

import anyio
import pytest

from controllers import cli
from controllers.interpreter import (
    CustomizationSet,
    LuaBusy,
    LuaQuarantined,
    LuaScript,
    LuaTimeout,
    Operation,
    WorkerPool,
)
from controllers.interpreter import pool as pool_module
from controllers.interpreter.customization import CHECK_TIMEOUT
from testenv import eventually

asyncio_test = pytest.mark.asyncio(loop_scope="session")

OBJ: Final[dict[str, Any]] = {"apiVersion": "v1", "kind": "X", "spec": {"replicas": 2}}
FINE: Final = "function GetReplicas(obj) return obj.spec.replicas end"
# Minutes of C in Lua 5.1's matcher: only the pool's kill (1.1 s) ends it.
PATTERN: Final = (
    'function GetReplicas(obj) string.find(string.rep("a", 350), "a-a-a-a-b") return 1 end'
)


def script(source: str, name: str, pool: WorkerPool, **options: Any) -> LuaScript:
    return LuaScript(source, Operation.INTERPRET_REPLICA, name=name, pool=pool, **options)


def customization(name: str, source: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": name},
        "spec": {
            "target": {"apiVersion": "v1", "kind": "X"},
            "customizations": {"replicaResource": {"luaScript": source}},
        },
    }


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    pool = WorkerPool(2)
    yield pool
    pool.close()


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """What a call returned or raised, and how long it took (under a deadline past any bound)."""
    start = time.monotonic()
    with anyio.fail_after(30):
        try:
            result = await call()
        except Exception as err:  # returned for the test to check
            result = err
    return result, time.monotonic() - start


async def hog(pool: WorkerPool, calls: int, group: anyio.abc.TaskGroup) -> None:
    """Start ``calls`` looping calls of customization ``hog``; return once they hold every
    worker the pool has started (``warm`` it first to have them all)."""
    hostile = script(PATTERN, "hog/replicaResource", pool)

    async def one() -> None:
        with contextlib.suppress(LuaTimeout, LuaBusy, LuaQuarantined):
            await hostile.get_replicas(OBJ)

    for _ in range(calls):
        group.start_soon(one)

    async def holding() -> bool:
        return not pool.pids()

    await eventually(holding, timeout=10, interval=0.005)


async def warm(pool: WorkerPool) -> None:
    """Start every worker of the pool (overlapping calls), so no start is measured."""
    busy = (
        "function GetReplicas(obj) local t = os.clock() while os.clock() - t < 0.2 do end "
        "return 1 end"
    )
    async with anyio.create_task_group() as group:
        for index in range(pool.size):
            group.start_soon(script(busy, f"warm{index}/replicaResource", pool).get_replicas, OBJ)
    assert len(pool.pids()) == pool.size


@asyncio_test
async def test_a_hogging_customization_leaves_another_its_turn(pool: WorkerPool) -> None:
    fine = script(FINE, "fine/replicaResource", pool)
    await warm(pool)
    async with anyio.create_task_group() as group:
        # Nobody else waits: the hog may have both workers, and two more calls queued.
        await hog(pool, 4, group)
        result, elapsed = await timed(lambda: fine.get_replicas(OBJ))
        group.cancel_scope.cancel()
    # The first worker freed (a loop killed at 1.1 s, a worker started) is this call's, not the
    # hog's next: before the fair share it waited behind the hog's queued calls (2.2 s and more).
    assert result == (2, None)
    assert elapsed < 1.8, f"waited {elapsed:.2f} s behind the hog's loops"


@asyncio_test
async def test_a_call_that_waits_past_its_queue_deadline_fails_saying_so() -> None:
    single = WorkerPool(1)
    try:
        other = script(FINE, "other/replicaResource", single, queue_timeout=0.2)
        async with anyio.create_task_group() as group:
            await warm(single)
            await hog(single, 1, group)
            failure, elapsed = await timed(lambda: other.get_replicas(OBJ))
            group.cancel_scope.cancel()
        assert isinstance(failure, LuaBusy), failure
        assert str(failure) == (
            "other/replicaResource: GetReplicas was not run: no interpreter worker was free "
            "within 0.2 s (1 of 1 busy; at most 1 serve one customization while others wait)"
        )
        assert elapsed < 0.8
    finally:
        single.close()


@asyncio_test
async def test_a_customization_is_checked_in_time_while_another_hogs_the_pool() -> None:
    single = WorkerPool(1)
    try:
        customizations = CustomizationSet(pool=single)
        async with anyio.create_task_group() as group:
            await warm(single)
            await hog(single, 10, group)  # 11 s of loops queued before the check
            result, elapsed = await timed(lambda: customizations.apply(customization("late", FINE)))
            group.cancel_scope.cancel()
        # Its turn comes after the running loop's kill: the hog's queued calls wait behind it.
        assert not isinstance(result, Exception), result
        assert elapsed < CHECK_TIMEOUT, elapsed
        assert "late" in customizations
    finally:
        single.close()


@asyncio_test
async def test_a_script_that_keeps_running_out_of_time_is_quarantined(
    pool: WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "QUARANTINE_PERIOD", 1.0)
    told: list[tuple[str, str]] = []
    pool.subscribe(lambda name, message: told.append((name, message)))
    looping = "function GetReplicas(obj) while true do end end"
    hostile = script(looping, "spin/replicaResource", pool, timeout=0.1)
    fine = script(FINE, "spin/statusReflection", pool)
    for _ in range(pool_module.QUARANTINE_STRIKES):
        with pytest.raises(LuaTimeout):
            await hostile.get_replicas(OBJ)
    failure, elapsed = await timed(lambda: hostile.get_replicas(OBJ))
    assert isinstance(failure, LuaQuarantined), failure
    assert elapsed < 0.05  # not run at all
    assert str(failure).startswith(
        "spin/replicaResource: GetReplicas was not run: quarantined for another 1 s (1 s): "
        "3 of its calls within 60 s ran out of time or lost their worker; the last: "
        "GetReplicas ran longer than 0.1 s and was stopped"
    ), failure
    assert [name for name, _ in told] == ["spin/replicaResource"]
    assert "quarantined" in told[0][1]
    # Only that script: another of its customization, and a changed version of it, still run.
    assert await fine.get_replicas(OBJ) == (2, None)
    assert await script(FINE, "spin/replicaResource", pool).get_replicas(OBJ) == (2, None)

    async def released() -> bool:
        try:
            await hostile.get_replicas(OBJ)
        except LuaQuarantined:
            return False
        except LuaTimeout:
            return True
        return False

    await eventually(released, timeout=5, interval=0.1)


@asyncio_test
async def test_workers_killed_by_a_pattern_loop_quarantine_it(pool: WorkerPool) -> None:
    hostile = script(PATTERN, "pattern/replicaResource", pool)
    for _ in range(pool_module.QUARANTINE_STRIKES):
        with pytest.raises(LuaTimeout, match=r"its worker was killed after 1\.1 s"):
            await hostile.get_replicas(OBJ)
    with pytest.raises(LuaQuarantined, match=r"the last: its worker was killed after 1\.1 s"):
        await hostile.get_replicas(OBJ)


@asyncio_test
async def test_a_stopped_call_does_not_rerun_a_slow_top_level_inside_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A top level of 0.3 s: run again inside the stopped call, it outlived the 0.15 s grace and
    # the worker was killed; reloaded as a request of its own, it is bounded like a call. (0.3 s
    # of CPU leaves the 1 s deadline room for a machine whose cores are shared.)
    monkeypatch.setattr(pool_module, "KILL_GRACE", 0.15)
    single = WorkerPool(1)
    try:
        source = (
            "local t = os.clock() while os.clock() - t < 0.3 do end\n"
            "function GetReplicas(obj)\n"
            "  if obj.spec.loop then while true do end end\n"
            "  return obj.spec.replicas\n"
            "end"
        )
        slow = script(source, "slow/replicaResource", single)
        assert await slow.get_replicas(OBJ) == (2, None)
        [pid] = single.pids()
        looping = {**OBJ, "spec": {"loop": True}}
        failure, _ = await timed(lambda: slow.get_replicas(looping))
        assert isinstance(failure, LuaTimeout), failure
        assert str(failure) == (
            "slow/replicaResource: GetReplicas ran longer than 1 s and was stopped"
        )
        assert single.pids() == [pid]  # the same worker: nothing killed
        assert await slow.get_replicas(OBJ) == (2, None)  # reloaded first, then called
    finally:
        single.close()


def test_the_flag_sizes_the_process_wide_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    import controllers.controllermanager

    async def run(*args: Any, **kwargs: Any) -> None:
        pass

    monkeypatch.setattr(controllers.controllermanager, "run_controller_manager", run)
    try:
        assert cli.main(["controller-manager", "--interpreter-lua-workers=3"]) == 0
        assert pool_module.default_pool().size == 3
        assert pool_module.default_pool().share == 2
    finally:
        pool_module.set_default_pool_size(pool_module.DEFAULT_POOL_SIZE)
    assert pool_module.default_pool().size == pool_module.DEFAULT_POOL_SIZE
    parsed = cli._parser().parse_args(["controller-manager"])
    assert parsed.interpreter_lua_workers == pool_module.DEFAULT_POOL_SIZE
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["controller-manager", "--interpreter-lua-workers=0"])
