"""Lua runs one luaScript of a ResourceInterpreterCustomization, isolated in a worker process.

A ``LuaScript`` is the controller-manager's handle on one operation's script: it sends each call
(``GetReplicas``, ``Retain``, ...) with Karmada's arguments to a ``pool.WorkerPool`` worker, where
a ``sandbox.Sandbox`` compiles the script once and runs it, and builds the typed result from the
plain JSON the worker answers. The event loop waits on a pipe meanwhile, so a slow script holds up
no controller. Each call has two limits on its time: the sandbox's instruction hook stops it after
``timeout`` seconds (the fast path: the worker lives on), and the pool kills the worker at
``timeout + KILL_GRACE`` when the hook could not (C loops in string patterns); a worker that dies
(a C stack overflow, the address-space cap) fails only the call it was running. Lua's heap is
capped at ``max_memory`` per script, a result at ``wire.MAX_RESULT_NODES`` values.

Every failure is a ``LuaError`` subclass naming the script (``<customization>/<rule>``) and, for a
limit, the limit: ``LuaSyntaxError``, ``LuaRuntimeError``, ``LuaReturnTypeError``, ``LuaTimeout``,
``LuaLimitExceeded`` (memory, result size), ``LuaWorkerDied``; and from the pool's sharing out of
its workers, ``LuaBusy`` (no worker free within ``queue_timeout``) and ``LuaQuarantined`` (the
script kept running out of time: see ``pool``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from controllers.interpreter.pool import (
    DEFAULT_QUEUE_TIMEOUT,
    ScriptSpec,
    WorkerFailure,
    WorkerPool,
)
from controllers.interpreter.pool import default_pool as _default_pool
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    LuaBusy,
    LuaError,
    LuaLimitExceeded,
    LuaQuarantined,
    LuaReturnTypeError,
    LuaRuntimeError,
    LuaSyntaxError,
    LuaTimeout,
    LuaWorkerDied,
    Operation,
    ReplicaRequirements,
)

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_TIMEOUT",
    "FUNCTION_NAMES",
    "LuaScript",
]

DEFAULT_TIMEOUT: Final = 1.0
"""Seconds one call of a script may run (Karmada's limit)."""

DEFAULT_MAX_MEMORY: Final = 64 * 2**20
"""Bytes one script's Lua state may allocate."""

FUNCTION_NAMES: Final = {
    Operation.INTERPRET_REPLICA: "GetReplicas",
    Operation.REVISE_REPLICA: "ReviseReplica",
    Operation.RETAIN: "Retain",
    Operation.AGGREGATE_STATUS: "AggregateStatus",
    Operation.INTERPRET_STATUS: "ReflectStatus",
    Operation.INTERPRET_HEALTH: "InterpretHealth",
    Operation.INTERPRET_DEPENDENCY: "GetDependencies",
    Operation.INTERPRET_COMPONENT: "GetComponents",
}
"""The global function each operation's script must define."""

_T = TypeVar("_T")
_IDENTS = itertools.count(1)
_ERRORS: Final[dict[str, type[LuaError]]] = {
    "syntax": LuaSyntaxError,
    "runtime": LuaRuntimeError,
    "timeout": LuaTimeout,
    "memory": LuaLimitExceeded,
    "limit": LuaLimitExceeded,
    "return": LuaReturnTypeError,
}


class LuaScript:
    """One operation's Lua script; each call runs in a worker process of ``pool``.

    The typed methods (``get_replicas`` ... ``get_components``) call the script's function and
    check what it returns; each accepts only the script's own operation. Arguments are never
    changed and results share nothing with them. ``check`` compiles the script and runs its top
    level once, to refuse a broken customization when it is applied; calls compile it too (in
    each worker, once). Safe to call from any event loop or thread, concurrently.
    """

    def __init__(
        self,
        source: str,
        operation: Operation,
        *,
        name: str = "luaScript",
        timeout: float = DEFAULT_TIMEOUT,
        max_memory: int = DEFAULT_MAX_MEMORY,
        queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
        pool: WorkerPool | None = None,
    ) -> None:
        self.source = source
        self.operation = operation
        self.function = FUNCTION_NAMES[operation]
        self.name = name
        self.timeout = timeout
        self.max_memory = max_memory
        self.queue_timeout = queue_timeout
        self._pool = pool
        self._spec = ScriptSpec(next(_IDENTS), source, self.function, timeout, max_memory, name)

    def __repr__(self) -> str:
        return f"LuaScript({self.name!r}, {self.operation})"

    async def check(self, queue_timeout: float | None = None) -> None:
        """Compile the script and run its top level in a worker (which keeps it for calls).

        ``queue_timeout`` (default: the script's) bounds the wait for a worker.

        Raises:
            LuaSyntaxError: it does not compile or does not define its function.
            LuaRuntimeError, LuaTimeout, LuaLimitExceeded, LuaWorkerDied: its top level failed.
            LuaBusy: no worker was free in time.
        """
        self._raise(await self._run(None, queue_timeout))

    async def _run(self, args: list[Any] | None, queue_timeout: float | None = None) -> list[Any]:
        """The worker's reply to a call on ``args`` (None: a load); process failures raised."""
        pool = self._pool or _default_pool()
        wait = self.queue_timeout if queue_timeout is None else queue_timeout
        try:
            return await pool.run(self._spec, args, queue_timeout=wait)
        except WorkerFailure as failure:
            raise self._failure(failure) from failure
        except (TypeError, ValueError, RecursionError) as err:
            raise LuaRuntimeError(
                self.name, f"the object cannot be passed to {self.function}: {_input_problem(err)}"
            ) from err

    def _failure(self, failure: WorkerFailure) -> LuaError:
        if failure.reason == "timeout":
            return LuaTimeout(
                self.name,
                f"{self.function} ran longer than {self.timeout:g} s and was stopped "
                f"({failure.message})",
            )
        if failure.reason == "died":
            return LuaWorkerDied(self.name, f"{self.function} did not return: {failure.message}")
        if failure.reason == "busy":
            return LuaBusy(self.name, f"{self.function} was not run: {failure.message}")
        if failure.reason == "quarantined":
            return LuaQuarantined(self.name, f"{self.function} was not run: {failure.message}")
        return LuaWorkerDied(self.name, failure.message)

    async def _call(self, operation: Operation, convert: Callable[[Any], _T], *args: Any) -> _T:
        """Run the script's function on ``args`` and convert what it returned."""
        if operation is not self.operation:
            raise ValueError(f"{self!r} cannot run {operation}")
        reply = await self._run(list(args))
        self._raise(reply)
        return convert(reply[1])

    def _raise(self, reply: list[Any]) -> None:
        if reply[0] != "ok":
            raise _ERRORS.get(reply[1], LuaRuntimeError)(self.name, str(reply[2]))

    # --- the operations -----------------------------------------------------------------------

    async def get_replicas(self, obj: dict[str, Any]) -> tuple[int, ReplicaRequirements | None]:
        """GetReplicas(obj) → replica, requires. Raises: LuaError (any subclass)."""
        return await self._call(Operation.INTERPRET_REPLICA, self._replicas, obj)

    def _replicas(self, returned: list[Any]) -> tuple[int, ReplicaRequirements | None]:
        replica, requires = returned
        if requires is None:
            return replica, None
        try:
            return replica, ReplicaRequirements.from_dict(requires)
        except ValueError as err:
            raise LuaReturnTypeError(self.name, f"GetReplicas requirements: {err}") from err

    async def revise_replica(self, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
        """ReviseReplica(obj, desiredReplica) → obj. Raises: LuaError (any subclass)."""
        return await self._call(Operation.REVISE_REPLICA, _same, obj, replicas)

    async def retain(self, desired: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
        """Retain(desiredObj, observedObj) → obj. Raises: LuaError (any subclass)."""
        return await self._call(Operation.RETAIN, _same, desired, observed)

    async def aggregate_status(
        self, obj: dict[str, Any], items: Sequence[AggregatedStatusItem]
    ) -> dict[str, Any]:
        """AggregateStatus(desiredObj, statusItems) → obj; no items arrive as nil.

        Raises:
            LuaError: any subclass.
        """
        lua_items = [item.to_dict() for item in items] if items else None
        return await self._call(Operation.AGGREGATE_STATUS, _same, obj, lua_items)

    async def reflect_status(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """ReflectStatus(observedObj) → status; nil means nothing to collect.

        Raises:
            LuaError: any subclass.
        """
        return await self._call(Operation.INTERPRET_STATUS, _same, obj)

    async def interpret_health(self, obj: dict[str, Any]) -> bool:
        """InterpretHealth(observedObj) → boolean. Raises: LuaError (any subclass)."""
        return await self._call(Operation.INTERPRET_HEALTH, bool, obj)

    async def get_dependencies(self, obj: dict[str, Any]) -> list[DependentObjectReference]:
        """GetDependencies(desiredObj) → list of references. Raises: LuaError (any subclass)."""
        return await self._call(
            Operation.INTERPRET_DEPENDENCY,
            lambda r: self._entries(r, DependentObjectReference.from_dict),
            obj,
        )

    async def get_components(self, obj: dict[str, Any]) -> list[Component]:
        """GetComponents(obj) → list of components. Raises: LuaError (any subclass)."""
        return await self._call(
            Operation.INTERPRET_COMPONENT, lambda r: self._entries(r, Component.from_dict), obj
        )

    def _entries(self, entries: list[Any], parse: Callable[[Any], _T]) -> list[_T]:
        try:
            return [parse(entry) for entry in entries]
        except ValueError as err:
            raise LuaReturnTypeError(self.name, f"{self.function}: {err}") from err


def _same(value: _T) -> _T:
    return value


def _input_problem(error: BaseException) -> str:
    message = str(error)
    if isinstance(error, RecursionError) or "Recursion limit" in message:
        return "it is nested too deeply"
    return message or type(error).__name__
