"""Lua runs one luaScript of a ResourceInterpreterCustomization in a sandboxed Lua 5.1 state.

A ``LuaScript`` owns one Lua state, compiles its script once and calls the operation's function
(``GetReplicas``, ``Retain``, ...) with Karmada's arguments. Calls are cheap (tens of µs) and run
on the caller's thread, one at a time per script: in a controller that is the event loop, which a
runaway script can hold for at most the time limit. The state is a sandbox: only the base library
(without loading, environment, metatable and raw-access functions), ``table``, ``string``
(without ``dump``), ``math``, ``os.time/clock/date/difftime`` and ``require("kube")``. Every call
is stopped after ``timeout`` seconds (an instruction hook checks the clock; ``pcall`` cannot
swallow the stop) and the state's memory is capped; after a stop the state is rebuilt, so the
next call starts clean.

Objects cross into Lua lazily: a table is filled from its dict the first time the script touches
it, so a script reading three fields of a Deployment converts three levels, not the whole object,
and ``kube`` helpers given an untouched table read the original dict. On the way back Lua numbers
that are integral become ints, and an empty table becomes ``{}`` or ``[]`` by the shape it had in
the input (tables the script made itself: by the input object at the same path, like Karmada; an
empty table found nowhere in the input is dropped from its object).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import lupa.lua51 as lua51  # type: ignore[import-untyped]

from controllers.interpreter import kube
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    LuaError,
    LuaReturnTypeError,
    LuaRuntimeError,
    LuaSyntaxError,
    LuaTimeout,
    Operation,
    ReplicaRequirements,
)
from reconcile import deep_copy

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
_HOOK_INSTRUCTIONS: Final = 10_000  # clock checks are ~1% of the work, a stop lands within ~1 ms
_MAX_DEPTH: Final = 100
_TIMEOUT_MESSAGE: Final = "__interpreter_timeout__"

_PRELUDE: Final = r"""
local expand, expired, kube_impl, timeout_message, hook_instructions = ...
local G = _G
local rawget, rawset, setmetatable = rawget, rawset, setmetatable
local type, tostring, error = type, tostring, error
local raw_next, raw_ipairs, raw_unpack = next, ipairs, unpack
local raw_pcall, raw_xpcall, loadstring = pcall, xpcall, loadstring
local sethook = debug.sethook

-- Lazy tables: {[LAZY] = python dict} until first touched, then filled and plain.
local LAZY = {}
local LAZY_MT = {}
local SHAPE = setmetatable({}, {__mode = "k"})  -- empty tables that came from input: list/dict

local adopt
local function materialize(t)
  local source = rawget(t, LAZY)
  setmetatable(t, nil)
  rawset(t, LAZY, nil)
  local fields = expand(source)
  if raw_next(fields) == nil then SHAPE[t] = "dict" return end
  for k, v in raw_next, fields do
    local tv = type(v)
    if tv == "userdata" or tv == "table" then v = adopt(v) end
    rawset(t, k, v)
  end
end
adopt = function(v)
  if type(v) == "userdata" then return setmetatable({[LAZY] = v}, LAZY_MT) end
  if raw_next(v) == nil then SHAPE[v] = "list" return v end
  for k, e in raw_next, v do
    local te = type(e)
    if te == "userdata" or te == "table" then v[k] = adopt(e) end
  end
  return v
end
LAZY_MT.__index = function(t, k) materialize(t) return rawget(t, k) end
LAZY_MT.__newindex = function(t, k, v) materialize(t) rawset(t, k, v) end

local function filled(t)
  if type(t) == "table" and rawget(t, LAZY) ~= nil then materialize(t) end
  return t
end
local function adopt_value(v)
  local tv = type(v)
  if tv == "userdata" or tv == "table" then return adopt(v) end
  return v
end

-- The sandbox: the only globals left are safe, and iteration sees lazy tables filled.
local function unavailable(name)
  return function() error(name .. " is not available in the interpreter sandbox", 2) end
end
local function forbidden_library(name)
  return setmetatable({}, {__index = function(_, key)
    error(name .. "." .. tostring(key) .. " is not available in the interpreter sandbox", 2)
  end})
end
for _, name in raw_ipairs({"dofile", "loadfile", "load", "loadstring", "module", "collectgarbage",
    "getfenv", "setfenv", "getmetatable", "setmetatable", "rawequal", "rawget", "rawset",
    "newproxy", "gcinfo"}) do
  G[name] = unavailable(name)
end
for _, name in raw_ipairs({"io", "package", "coroutine"}) do
  G[name] = forbidden_library(name)
end
-- lupa reads debug.traceback (raw, unprotected) as the message handler of every call it makes:
-- keep only that, in a plain table the script cannot replace (see the _G metatable below).
local safe_debug = {traceback = debug.traceback}
G.debug = nil
G.python = nil
G.print = function() end
local safe_os = {time = os.time, clock = os.clock, date = os.date, difftime = os.difftime}
G.os = setmetatable(safe_os, {__index = function(_, key)
  error("os." .. tostring(key) .. " is not available in the interpreter sandbox", 2)
end})
string.dump = nil
G.next = function(t, k) return raw_next(filled(t), k) end
G.pairs = function(t)
  if type(t) ~= "table" then
    error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ")", 2)
  end
  return raw_next, filled(t), nil
end
G.ipairs = function(t) return raw_ipairs(filled(t)) end
G.unpack = function(t, ...) return raw_unpack(filled(t), ...) end
local lazy_table = {}
for name, fn in raw_next, table do
  lazy_table[name] = function(t, ...) return fn(filled(t), ...) end
end
G.table = lazy_table

local function checked(ok, result)
  if not ok then error(result, 3) end
  return result
end
local kube = {}
for name, impl in raw_next, kube_impl do
  kube[name] = function(...) return adopt_value(checked(impl(...))) end
end
local modules = {kube = kube, os = G.os, string = string, table = lazy_table, math = math}
G.require = function(name)
  local module = modules[name]
  if module == nil then
    error("module '" .. tostring(name) .. "' not found: only kube, os, string, table and math", 2)
  end
  return module
end

-- pcall must not swallow the time limit: after the deadline every failure re-raises the stop.
local function rethrow_timeout(ok, ...)
  if not ok and expired() then error(timeout_message, 0) end
  return ok, ...
end
G.pcall = function(f, ...) return rethrow_timeout(raw_pcall(f, ...)) end
G.xpcall = function(f, handler) return rethrow_timeout(raw_xpcall(f, handler)) end

sethook(function() if expired() then error(timeout_message, 0) end end, "", hook_instructions)
setmetatable(G, {__index = {debug = safe_debug}, __newindex = function(t, key, value)
  if key == "debug" then error("debug cannot be replaced in the interpreter sandbox", 2) end
  rawset(t, key, value)
end})

local internals = {}
function internals.compile(source, chunkname)
  return loadstring(source, chunkname)
end
function internals.invoke(name, a, b)
  local fn = rawget(G, name)
  if type(fn) ~= "function" then
    error("the script must define a global function " .. name .. ", found " .. type(fn), 0)
  end
  return fn(adopt_value(a), adopt_value(b))
end
function internals.shape(t) return SHAPE[t] end
return internals
"""


class _Unconvertible(Exception):
    """A Lua value that has no JSON form; ``path`` says where it was found."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str | int] = []

    def where(self) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path) or "result"


class _Box:
    """A dict on its way into Lua, where it becomes a lazy table.

    Each crossing gets a new box because lupa keys its Lua wrappers by object identity and can
    hand out a recycled wrapper for an object it sees again after a garbage collection.
    """

    __slots__ = ("value",)

    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value


class _UnknownEmpty:
    """An empty table the script made: resolved against the inputs after conversion."""


_UNKNOWN: Final = _UnknownEmpty()


def _clean_message(error: BaseException) -> str:
    message = str(error).split("\nstack traceback:", 1)[0].strip()
    return message.removeprefix("error loading code: ") or type(error).__name__


def _lua_type(value: Any) -> str:
    # Tables, functions and other values that stayed in Lua; else a converted Python value.
    return str(lua51.lua_type(value) or kube.type_name(value))


def _ref_shape(refs: Sequence[Any]) -> Any:
    if any(isinstance(r, Mapping) for r in refs):
        return {}
    if any(isinstance(r, list) for r in refs):
        return []
    return _UNKNOWN


def _children(refs: Sequence[Any], key: str | None) -> list[Any]:
    if key is None:  # a list index: like Karmada, any element of the input list at this path
        return [e for r in refs if isinstance(r, list) for e in r]
    return [r[key] for r in refs if isinstance(r, Mapping) and key in r]


def _resolve(value: Any, refs: Sequence[Any]) -> None:
    """Replace the script's own empty tables by the shape found at the same path in ``refs``."""
    if isinstance(value, dict):
        for key in list(value):
            child, child_refs = value[key], _children(refs, key)
            if child is _UNKNOWN:
                shape = _ref_shape(child_refs)
                if shape is _UNKNOWN:
                    del value[key]  # found nowhere in the input: dropped, as Karmada does
                else:
                    value[key] = shape
            else:
                _resolve(child, child_refs)
    elif isinstance(value, list):
        child_refs = _children(refs, None)
        for index, child in enumerate(value):
            if child is _UNKNOWN:
                shape = _ref_shape(child_refs)
                value[index] = {} if shape is _UNKNOWN else shape
            else:
                _resolve(child, child_refs)


class LuaScript:
    """One operation's Lua script, compiled once into its own sandboxed Lua 5.1 state.

    The typed methods (``get_replicas`` ... ``get_components``) call the script's function and
    check what it returns; each accepts only the script's own operation. Arguments are never
    changed and results share nothing with them. Thread-safe (calls are serialized).

    Raises (constructor):
        LuaSyntaxError: the script does not compile or does not define its function.
        LuaRuntimeError: running the script's top level failed.
        LuaTimeout: the top level ran past the time limit.
    """

    def __init__(
        self,
        source: str,
        operation: Operation,
        *,
        name: str = "luaScript",
        timeout: float = DEFAULT_TIMEOUT,
        max_memory: int = DEFAULT_MAX_MEMORY,
    ) -> None:
        self.source = source
        self.operation = operation
        self.function = FUNCTION_NAMES[operation]
        self.name = name
        self.timeout = timeout
        self.max_memory = max_memory
        self._lock = threading.Lock()
        self._deadline = math.inf
        self._timed_out = False
        self._unknown_empties = False
        self._load()

    def __repr__(self) -> str:
        return f"LuaScript({self.name!r}, {self.operation})"

    # --- the Lua state ------------------------------------------------------------------------

    def _load(self) -> None:
        """Build a fresh sandboxed state and run the script's top level in it."""
        lua = lua51.LuaRuntime(
            register_eval=False,
            register_builtins=False,
            unpack_returned_tuples=True,
            attribute_filter=_deny_attributes,
            overflow_handler=float,  # ints past 64 bits cross as floats, like JSON numbers
            max_memory=self.max_memory,
        )
        # The Python callbacks of this state use these while its top level runs.
        self._table_from: Callable[..., Any] = lua.table_from
        self._table_class = type(lua.table())
        kube_impl = lua.table_from({fn: self._kube_function(fn) for fn in kube.KUBE_FUNCTIONS})
        internals = lua.execute(
            _PRELUDE, self._expand, self._expired, kube_impl, _TIMEOUT_MESSAGE, _HOOK_INSTRUCTIONS
        )
        self._shape = internals.shape
        compiled = internals.compile(self.source, "=luaScript")
        if lua51.lua_type(compiled) != "function":
            message = compiled[1] if isinstance(compiled, tuple) else "the script does not compile"
            raise LuaSyntaxError(self.name, str(message))
        self._guarded(compiled, reload=False)
        if lua51.lua_type(lua.globals()[self.function]) != "function":
            raise LuaSyntaxError(
                self.name, f"the script must define a global function {self.function}"
            )
        self._lua, self._invoke = lua, internals.invoke

    def _expired(self) -> bool:
        if time.monotonic() > self._deadline:
            self._timed_out = True
            return True
        return False

    def _expand(self, box: _Box) -> Any:
        """Called by Lua when a lazy table is first touched: its fields, lists as Lua tables."""
        return self._table_from({k: self._to_lua(v) for k, v in box.value.items()})

    def _lua_list(self, items: list[Any]) -> Any:
        return self._table_from([self._to_lua(v) for v in items])

    def _to_lua(self, value: Any) -> Any:
        """A value for Lua: dicts boxed (they become lazy tables there), lists as Lua tables."""
        cls = value.__class__
        if cls is dict:
            return _Box(value)
        if cls is list:
            return self._lua_list(value)
        return value

    def _kube_function(self, function: str) -> Callable[..., tuple[bool, Any]]:
        impl = {
            "accuratePodRequirements": kube.accurate_pod_requirements,
            "getPodDependencies": kube.get_pod_dependencies,
            "getResourceQuantity": kube.get_resource_quantity,
            "resourceAdd": kube.resource_add,
        }[function]

        def call(*args: Any) -> tuple[bool, Any]:
            try:
                converted = [self._to_py(a, copy=False) for a in args]
                converted = [{} if a is _UNKNOWN else a for a in converted]
                return True, self._to_lua(impl(*converted))
            except kube.KubeError as err:
                return False, str(err)
            except _Unconvertible as err:
                return False, f"{function}: argument {err.where()}: {err.message}"

        return call

    def _guarded(self, function: Any, *args: Any, reload: bool = True) -> Any:
        """Call a Lua function under the time limit, mapping Lua failures to LuaError."""
        self._timed_out = False
        self._deadline = time.monotonic() + self.timeout
        try:
            return function(*args)
        except lua51.LuaMemoryError as err:
            failure: LuaError = LuaRuntimeError(
                self.name, f"out of memory (limit {self.max_memory // 2**20} MiB)"
            )
            cause: BaseException = err
        except lua51.LuaError as err:
            if self._timed_out:
                failure = LuaTimeout(
                    self.name, f"{self.function} ran longer than {self.timeout:g} s and was stopped"
                )
            else:
                failure, reload = LuaRuntimeError(self.name, _clean_message(err)), False
            cause = err
        except UnicodeDecodeError as err:
            failure, reload = LuaReturnTypeError(self.name, f"a string is not UTF-8: {err}"), False
            cause = err
        finally:
            self._deadline = math.inf
        if reload:
            self._reload()
        raise failure from cause

    def _reload(self) -> None:
        # A stopped call may leave half-changed globals or a full heap: start from a new state.
        # If that fails (it loaded before, so only a nondeterministic top level can), keep the old.
        previous = (self._lua, self._invoke, self._shape, self._table_from, self._table_class)
        try:
            self._load()
        except LuaError:
            self._lua, self._invoke, self._shape, self._table_from, self._table_class = previous

    def _call(
        self, operation: Operation, convert: Callable[[Any], _T], a: Any, b: Any = None
    ) -> _T:
        """Run the script's function on (a, b) and convert what it returned, holding the state."""
        if operation is not self.operation:
            raise ValueError(f"{self!r} cannot run {operation}")
        with self._lock:
            returned = self._guarded(self._invoke, self.function, self._to_lua(a), self._to_lua(b))
            return convert(returned)

    # --- Lua values back to Python ------------------------------------------------------------

    def _to_py(self, value: Any, *, copy: bool = True, depth: int = 0) -> Any:
        cls = value.__class__
        if cls is str or cls is int or cls is bool or value is None:
            return value
        if cls is float:
            if not math.isfinite(value):
                raise _Unconvertible(f"{value} is not a JSON number")
            return int(value) if value.is_integer() else value
        if cls is not self._table_class:
            raise _Unconvertible(f"a {_lua_type(value)} has no JSON form")
        if depth > _MAX_DEPTH:
            raise _Unconvertible(f"tables nested deeper than {_MAX_DEPTH} levels (a cycle?)")
        items = list(value.items())
        if not items:
            shape = self._shape(value)
            if shape is None:
                self._unknown_empties = True
                return _UNKNOWN
            return {} if shape == "dict" else []
        first_key, first_value = items[0]
        if first_key.__class__ is str:
            return self._to_dict(items, copy, depth)
        if len(items) == 1 and first_value.__class__ is _Box:
            # Only the sandbox's hidden key holds a box: a table the script never touched.
            source = first_value.value
            return deep_copy(source) if copy else source
        return self._to_list(items, copy, depth)

    def _to_dict(self, items: list[tuple[Any, Any]], copy: bool, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in items:
            if key.__class__ is not str:
                raise _Unconvertible("a table mixes string keys with other keys")
            try:
                out[key] = self._to_py(item, copy=copy, depth=depth + 1)
            except _Unconvertible as err:
                err.path.insert(0, key)
                raise
        return out

    def _to_list(self, items: list[tuple[Any, Any]], copy: bool, depth: int) -> list[Any]:
        if not all(key.__class__ is int for key, _ in items):
            raise _Unconvertible("a table mixes number keys with other keys")
        by_index = dict(items)
        if sorted(by_index) != list(range(1, len(by_index) + 1)):
            raise _Unconvertible("a list must have the keys 1..n without holes")
        out = []
        for index in range(1, len(by_index) + 1):
            try:
                out.append(self._to_py(by_index[index], copy=copy, depth=depth + 1))
            except _Unconvertible as err:
                err.path.insert(0, index)
                raise
        return out

    def _result(self, value: Any, expected: type, refs: Sequence[Any] = ()) -> Any:
        """Convert a returned table expected to be a ``dict`` or a ``list``."""
        name = "an object" if expected is dict else "a list"
        if value.__class__ is not self._table_class:
            raise LuaReturnTypeError(
                self.name, f"{self.function} must return {name} (a table), got {_lua_type(value)}"
            )
        self._unknown_empties = False
        try:
            converted = self._to_py(value)
        except _Unconvertible as err:
            raise LuaReturnTypeError(
                self.name, f"{self.function} returned {err.where()}: {err.message}"
            ) from err
        except UnicodeDecodeError as err:
            raise LuaReturnTypeError(self.name, f"{self.function} returned non-UTF-8 text") from err
        if converted is _UNKNOWN:
            return expected()
        if not isinstance(converted, expected):
            other = "a list" if expected is dict else "an object"
            raise LuaReturnTypeError(self.name, f"{self.function} must return {name}, got {other}")
        if self._unknown_empties:
            _resolve(converted, refs)
        return converted

    # --- the operations -----------------------------------------------------------------------

    def get_replicas(self, obj: dict[str, Any]) -> tuple[int, ReplicaRequirements | None]:
        """GetReplicas(obj) → replica, requires. Raises: LuaError (any subclass)."""
        return self._call(Operation.INTERPRET_REPLICA, self._replicas, obj)

    def _replicas(self, returned: Any) -> tuple[int, ReplicaRequirements | None]:
        replica, requires = (
            (*returned, None)[:2] if isinstance(returned, tuple) else (returned, None)
        )
        if isinstance(replica, bool) or not isinstance(replica, int | float):
            raise LuaReturnTypeError(
                self.name, f"GetReplicas must return a number first, got {_lua_type(replica)}"
            )
        if not 0 <= replica < 2**31:  # Karmada's replicas are an int32; NaN fails this too
            raise LuaReturnTypeError(self.name, f"GetReplicas returned {replica} replicas")
        if requires is None:
            return int(replica), None
        data = self._result(requires, dict)
        try:
            return int(replica), ReplicaRequirements.from_dict(data)
        except ValueError as err:
            raise LuaReturnTypeError(self.name, f"GetReplicas requirements: {err}") from err

    def revise_replica(self, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
        """ReviseReplica(obj, desiredReplica) → obj. Raises: LuaError (any subclass)."""
        return self._call(
            Operation.REVISE_REPLICA, lambda r: self._result(r, dict, (obj,)), obj, replicas
        )

    def retain(self, desired: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
        """Retain(desiredObj, observedObj) → obj. Raises: LuaError (any subclass)."""
        refs = (desired, observed)
        return self._call(Operation.RETAIN, lambda r: self._result(r, dict, refs), *refs)

    def aggregate_status(
        self, obj: dict[str, Any], items: Sequence[AggregatedStatusItem]
    ) -> dict[str, Any]:
        """AggregateStatus(desiredObj, statusItems) → obj; no items arrive as nil.

        Raises:
            LuaError: any subclass.
        """
        lua_items = [item.to_dict() for item in items] if items else None
        return self._call(
            Operation.AGGREGATE_STATUS, lambda r: self._result(r, dict, (obj,)), obj, lua_items
        )

    def reflect_status(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """ReflectStatus(observedObj) → status; nil means nothing to collect.

        Raises:
            LuaError: any subclass.
        """
        refs = (obj.get("status"),)
        return self._call(
            Operation.INTERPRET_STATUS,
            lambda r: None if r is None else self._result(r, dict, refs),
            obj,
        )

    def interpret_health(self, obj: dict[str, Any]) -> bool:
        """InterpretHealth(observedObj) → boolean. Raises: LuaError (any subclass)."""
        return self._call(Operation.INTERPRET_HEALTH, self._health, obj)

    def _health(self, returned: Any) -> bool:
        if not isinstance(returned, bool):
            raise LuaReturnTypeError(
                self.name, f"InterpretHealth must return a boolean, got {_lua_type(returned)}"
            )
        return returned

    def get_dependencies(self, obj: dict[str, Any]) -> list[DependentObjectReference]:
        """GetDependencies(desiredObj) → list of references. Raises: LuaError (any subclass)."""
        return self._call(
            Operation.INTERPRET_DEPENDENCY,
            lambda r: self._entries(r, DependentObjectReference.from_dict),
            obj,
        )

    def get_components(self, obj: dict[str, Any]) -> list[Component]:
        """GetComponents(obj) → list of components. Raises: LuaError (any subclass)."""
        return self._call(
            Operation.INTERPRET_COMPONENT, lambda r: self._entries(r, Component.from_dict), obj
        )

    def _entries(self, returned: Any, parse: Callable[[Any], _T]) -> list[_T]:
        entries = self._result(returned, list)
        try:
            return [parse(entry) for entry in entries]
        except ValueError as err:
            raise LuaReturnTypeError(self.name, f"{self.function}: {err}") from err


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    # Scripts never see Python objects, but if one leaked, its attributes stay out of reach.
    raise AttributeError("Python attributes are not accessible from Lua")
