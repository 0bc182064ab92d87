"""Sandbox is one customization script's Lua 5.1 state, as an interpreter worker process runs it.

A ``Sandbox`` compiles a script once and calls its operation's function (``GetReplicas``,
``Retain``, ...) on decoded JSON, returning plain JSON values: ``worker`` runs sandboxes in child
processes and ``lua.LuaScript`` builds the typed results in the controller-manager. It imports only
lupa, the standard library and ``kube`` (whose imports are stdlib-only), so a worker starts fast.

The state holds only the base library (without loading, environment, metatable and raw-access
functions), ``table``, ``string`` (without ``dump``), ``math``, ``os.time/clock/date/difftime`` and
``require("kube")``. An instruction hook stops a call after ``timeout`` seconds (the fast path:
the state is rebuilt, the process lives on); ``pcall`` cannot swallow the stop, an ``xpcall``
handler is not run once the time is up (Lua 5.1 runs no hook inside a hook, so a looping handler
would never be stopped) and ``debug`` is read-only (lupa calls ``debug.traceback`` as the message
handler of every call). Lua allocations are capped at ``max_memory``. What the hook cannot stop
(C loops in string patterns, a C stack overflow) is the worker's parent's job: it kills the
process at the deadline.

Objects cross into Lua lazily: a table is filled from its dict the first time the script touches
it, so a script reading three fields of a Deployment converts three levels, not the whole object.
On the way back Lua numbers that are integral become ints, and empty tables are settled the way
Karmada's luavm settles them (its JSON encoder cannot tell ``{}`` from ``[]``): an empty table at
a path where a reference input holds an empty object becomes ``{}``, else where one holds an empty
list ``[]``, else it is dropped from its object or list; list indices do not count in a path, and
the result itself, when empty, takes its operation's shape. The references are Karmada's:
the object for ReviseReplica, desired and observed for Retain, none for the other operations (so
their empty tables are all dropped). The result is bounded: at most ``MAX_RESULT_NODES`` values
and ``MAX_RESULT_BYTES`` of text, a table referenced many times counting each time (it is copied
each time in JSON).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import lupa.lua51 as lua51  # type: ignore[import-untyped]

from controllers.interpreter import empties, kube
from controllers.interpreter.wire import MAX_RESULT_BYTES, MAX_RESULT_NODES, dumps

__all__ = ["Sandbox", "SandboxError"]

_HOOK_INSTRUCTIONS: Final = 10_000  # clock checks are ~1% of the work, a stop lands within ~1 ms
_MAX_DEPTH: Final = 100
_TIMEOUT_MESSAGE: Final = "__interpreter_timeout__"

# What each function returns: "replicas" (a number, then maybe an object), "object", "list",
# "status" (nil or an object), "boolean"; and which arguments hold the input shapes of empties.
_RETURNS: Final = {
    "GetReplicas": "replicas",
    "ReviseReplica": "object",
    "Retain": "object",
    "AggregateStatus": "object",
    "ReflectStatus": "status",
    "InterpretHealth": "boolean",
    "GetDependencies": "list",
    "GetComponents": "list",
}

_PRELUDE: Final = r"""
local expand, expired, kube_impl, timeout_message, hook_instructions = ...
local G = _G
local rawget, rawset, setmetatable = rawget, rawset, setmetatable
local type, tostring, error = type, tostring, error
local raw_next, raw_ipairs, raw_unpack = next, ipairs, unpack
local raw_pcall, raw_xpcall, loadstring = pcall, xpcall, loadstring
local sethook, traceback = debug.sethook, debug.traceback

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
local function read_only(name, fields)
  return setmetatable({}, {
    __index = function(_, key)
      local value = fields[key]
      if value == nil then
        error(name .. "." .. tostring(key) .. " is not available in the interpreter sandbox", 2)
      end
      return value
    end,
    __newindex = function(_, key)
      error(name .. "." .. tostring(key) .. " cannot be changed in the interpreter sandbox", 2)
    end,
    __metatable = false,
  })
end
for _, name in raw_ipairs({"dofile", "loadfile", "load", "loadstring", "module", "collectgarbage",
    "getfenv", "setfenv", "getmetatable", "setmetatable", "rawequal", "rawget", "rawset",
    "newproxy", "gcinfo"}) do
  G[name] = unavailable(name)
end
for _, name in raw_ipairs({"io", "package", "coroutine"}) do
  G[name] = read_only(name, {})
end
-- lupa reads debug.traceback as the message handler of every call it makes: the script may read
-- it, never replace it (a looping handler would run outside any time limit).
local safe_debug = read_only("debug", {traceback = traceback})
G.debug = nil
G.python = nil
G.print = function() end
G.os = read_only("os", {time = os.time, clock = os.clock, date = os.date, difftime = os.difftime})
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
-- The stop is raised inside the hook, where Lua 5.1 runs no further hook: a handler called then
-- could loop for ever, so once the time is up the script's handler is not called at all.
G.xpcall = function(f, handler)
  local function guarded(e)
    if expired() then return timeout_message end
    return handler(e)
  end
  return rethrow_timeout(raw_xpcall(f, guarded))
end

sethook(function() if expired() then error(timeout_message, 0) end end, "", hook_instructions)
setmetatable(G, {__index = {debug = safe_debug}, __newindex = function(t, key, value)
  if key == "debug" then error("debug cannot be replaced in the interpreter sandbox", 2) end
  rawset(t, key, value)
end, __metatable = false})

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


class SandboxError(Exception):
    """A script failed; ``kind`` says how (the parent maps it to a ``LuaError`` subclass).

    Kinds: ``syntax`` (does not load), ``runtime`` (raised), ``timeout`` (stopped by the hook),
    ``memory`` (hit ``max_memory``), ``return`` (wrong result), ``limit`` (result too big).
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _Unconvertible(Exception):
    """A Lua value that has no JSON form; ``path`` says where it was found."""

    def __init__(self, message: str, kind: str = "return") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
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
    """An empty table the script made, of unknown shape: settled with the others (``empties``)."""


_UNKNOWN: Final = _UnknownEmpty()


class _Budget:
    """What is left of one result's node and byte limits; untouched inputs are sized once."""

    __slots__ = ("bytes", "empties", "nodes", "sizes")

    def __init__(self) -> None:
        self.nodes = MAX_RESULT_NODES
        self.bytes = MAX_RESULT_BYTES
        self.sizes: dict[int, int] = {}
        self.empties = False  # whether the result may hold an empty table to settle

    def spend(self, nodes: int, size: int) -> None:
        self.nodes -= nodes
        self.bytes -= size
        if self.nodes < 0:
            raise _Unconvertible(f"the result has more than {MAX_RESULT_NODES} values", "limit")
        if self.bytes < 0:
            limit = MAX_RESULT_BYTES // 2**20
            raise _Unconvertible(f"the result holds more than {limit} MiB of text", "limit")

    def spend_source(self, source: dict[str, Any]) -> None:
        size = self.sizes.get(id(source))
        if size is None:
            text = dumps(source)
            size = self.sizes[id(source)] = len(text)
            # Cheaper than a walk; text that merely looks empty costs a needless walk, no more.
            self.empties = self.empties or b"{}" in text or b"[]" in text
        self.spend(1, size)


def _clean_message(error: BaseException) -> str:
    message = str(error).split("\nstack traceback:", 1)[0].strip()
    return message.removeprefix("error loading code: ") or type(error).__name__


def _lua_type(value: Any) -> str:
    # Tables, functions and other values that stayed in Lua; else a converted Python value.
    return str(lua51.lua_type(value) or kube.type_name(value))


class Sandbox:
    """One script compiled into its own sandboxed Lua 5.1 state; calls run one at a time.

    A call stopped by the time or memory limit may leave half-changed globals or a full heap:
    the state is then rebuilt (the top level run again) before the call's error is raised, or,
    with ``reload=False``, ``spent`` is set and rebuilding is left to the owner (the worker drops
    the script, so its next call reloads it as a request of its own, under its own time limit).

    Raises (constructor):
        SandboxError: ``syntax`` (does not compile, or lacks ``function``), ``runtime``,
            ``timeout`` or ``memory`` (its top level failed).
    """

    def __init__(
        self, source: str, function: str, *, timeout: float, max_memory: int, reload: bool = True
    ) -> None:
        if function not in _RETURNS:
            raise SandboxError("syntax", f"no interpreter operation calls {function}")
        self.source = source
        self.function = function
        self.timeout = timeout
        self.max_memory = max_memory
        self._deadline = math.inf
        self._timed_out = False
        self._reload_when_stopped = reload
        self.spent = False
        self._load()

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
            raise SandboxError("syntax", str(message))
        self._guarded(compiled, reload=False)
        if lua51.lua_type(lua.globals()[self.function]) != "function":
            raise SandboxError(
                "syntax", f"the script must define a global function {self.function}"
            )
        self._lua, self._invoke = lua, internals.invoke

    def _expired(self) -> bool:
        if time.monotonic() > self._deadline:
            self._timed_out = True
            return True
        return False

    def _expand(self, box: _Box) -> Any:
        """Called by Lua when a lazy table is first touched: its fields, lists as Lua tables."""
        fields = box.value.copy()
        for key, value in fields.items():  # scalars, most fields, are passed as they are
            cls = value.__class__
            if cls is dict:
                fields[key] = _Box(value)
            elif cls is list:
                fields[key] = self._to_lua(value)
        return self._table_from(fields)

    def _to_lua(self, value: Any) -> Any:
        """A value for Lua: dicts boxed (they become lazy tables there), lists as Lua tables."""
        cls = value.__class__
        if cls is dict:
            return _Box(value)
        if cls is list:
            return self._table_from([self._to_lua(v) for v in value])
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
                converted = [self._to_py(a, _Budget()) for a in args]
                converted = [{} if a is _UNKNOWN else a for a in converted]
                return True, self._to_lua(impl(*converted))
            except kube.KubeError as err:
                return False, str(err)
            except _Unconvertible as err:
                return False, f"{function}: argument {err.where()}: {err.message}"
            except (ValueError, RecursionError, UnicodeDecodeError, OverflowError) as err:
                # Python's own limits (e.g. a 5,000-digit quantity) are the script's error too.
                return False, f"{function}: {err}"

        return call

    def _guarded(self, function: Any, *args: Any, reload: bool = True) -> Any:
        """Call a Lua function under the time limit, mapping Lua failures to SandboxError."""
        self._timed_out = False
        self._deadline = time.monotonic() + self.timeout
        try:
            return function(*args)
        except lua51.LuaMemoryError as err:
            limit = self.max_memory // 2**20
            failure = SandboxError("memory", f"out of memory (limit {limit} MiB)")
            cause: BaseException = err
        except lua51.LuaError as err:
            if self._timed_out:
                failure = SandboxError(
                    "timeout", f"{self.function} ran longer than {self.timeout:g} s and was stopped"
                )
            else:
                failure, reload = SandboxError("runtime", _clean_message(err)), False
            cause = err
        except UnicodeDecodeError as err:
            failure, reload = SandboxError("return", f"a string is not UTF-8: {err}"), False
            cause = err
        except (ValueError, RecursionError, OverflowError, TypeError) as err:
            # Raised by lupa converting a value (or by Python under a callback): the script's
            # error, never the process's.
            failure, reload = SandboxError("runtime", f"{type(err).__name__}: {err}"), False
            cause = err
        finally:
            self._deadline = math.inf
        if reload and self._reload_when_stopped:
            self._reload()
        elif reload:
            self.spent = True
        raise failure from cause

    def _reload(self) -> None:
        # A stopped call may leave half-changed globals or a full heap: start from a new state.
        # If that fails (it loaded before, so only a nondeterministic top level can), keep the old.
        previous = (self._lua, self._invoke, self._shape, self._table_from, self._table_class)
        try:
            self._load()
        except SandboxError:
            self._lua, self._invoke, self._shape, self._table_from, self._table_class = previous

    def call(self, args: Sequence[Any]) -> Any:
        """Run the script's function on ``args`` (at most two); its result as plain JSON values.

        ``GetReplicas`` answers ``[replicas, requirements or None]``. Raises: SandboxError.
        """
        a = args[0] if args else None
        b = args[1] if len(args) > 1 else None
        returned = self._guarded(self._invoke, self.function, self._to_lua(a), self._to_lua(b))
        kind = _RETURNS[self.function]
        if kind == "replicas":
            return self._replicas(returned)
        if kind == "boolean":
            if not isinstance(returned, bool):
                raise self._wrong(f"must return a boolean, got {_lua_type(returned)}")
            return returned
        if kind == "status" and returned is None:
            return None
        expected = list if kind == "list" else dict
        return self._result(returned, expected, empties.references(self.function, args))

    def _wrong(self, message: str) -> SandboxError:
        return SandboxError("return", f"{self.function} {message}")

    def _replicas(self, returned: Any) -> list[Any]:
        replica, requires = (
            (*returned, None)[:2] if isinstance(returned, tuple) else (returned, None)
        )
        if isinstance(replica, bool) or not isinstance(replica, int | float):
            raise self._wrong(f"must return a number first, got {_lua_type(replica)}")
        if not 0 <= replica < 2**31:  # Karmada's replicas are an int32; NaN fails this too
            raise self._wrong(f"returned {replica} replicas")
        return [int(replica), None if requires is None else self._result(requires, dict, ())]

    # --- Lua values back to Python ------------------------------------------------------------

    def _result(self, value: Any, expected: type, refs: Sequence[Any]) -> Any:
        """Convert a returned table expected to be a ``dict`` or a ``list``."""
        name = "an object" if expected is dict else "a list"
        if value.__class__ is not self._table_class:
            raise self._wrong(f"must return {name} (a table), got {_lua_type(value)}")
        budget = _Budget()
        try:
            converted = self._to_py(value, budget)
        except _Unconvertible as err:
            raise SandboxError(
                err.kind, f"{self.function} returned {err.where()}: {err.message}"
            ) from err
        except UnicodeDecodeError as err:
            raise self._wrong("returned non-UTF-8 text") from err
        if empties.is_empty(converted, _UNKNOWN):
            return expected()  # Lua's one empty table: whichever shape the operation wants
        if not isinstance(converted, expected):
            other = "a list" if expected is dict else "an object"
            raise self._wrong(f"must return {name}, got {other}")
        if budget.empties:
            return empties.settle(converted, refs, marker=_UNKNOWN)
        return converted

    def _to_py(self, value: Any, budget: _Budget, depth: int = 0) -> Any:
        cls = value.__class__
        if cls is str:
            budget.spend(1, len(value))
            return value
        if cls is int or cls is bool or value is None:
            budget.spend(1, 0)
            return value
        if cls is float:
            budget.spend(1, 0)
            if not math.isfinite(value):
                raise _Unconvertible(f"{value} is not a JSON number")
            return int(value) if value.is_integer() else value
        if cls is not self._table_class:
            raise _Unconvertible(f"a {_lua_type(value)} has no JSON form")
        if depth > _MAX_DEPTH:
            raise _Unconvertible(f"tables nested deeper than {_MAX_DEPTH} levels (a cycle?)")
        items = list(value.items())
        if not items:
            budget.spend(1, 0)
            budget.empties = True
            shape = self._shape(value)
            if shape is None:
                return _UNKNOWN
            return {} if shape == "dict" else []
        first_key, first_value = items[0]
        if first_key.__class__ is str:
            return self._to_dict(items, budget, depth)
        if len(items) == 1 and first_value.__class__ is _Box:
            # Only the sandbox's hidden key holds a box: a table the script never touched.
            source = first_value.value
            budget.spend_source(source)
            return source
        return self._to_list(items, budget, depth)

    def _to_dict(self, items: list[tuple[Any, Any]], budget: _Budget, depth: int) -> dict[str, Any]:
        budget.spend(1, 0)
        out: dict[str, Any] = {}
        for key, item in items:
            if key.__class__ is not str:
                raise _Unconvertible("a table mixes string keys with other keys")
            budget.spend(0, len(key))
            try:
                out[key] = self._to_py(item, budget, depth + 1)
            except _Unconvertible as err:
                err.path.insert(0, key)
                raise
        return out

    def _to_list(self, items: list[tuple[Any, Any]], budget: _Budget, depth: int) -> list[Any]:
        budget.spend(1, 0)
        if not all(key.__class__ is int for key, _ in items):
            raise _Unconvertible("a table mixes number keys with other keys")
        by_index = dict(items)
        if sorted(by_index) != list(range(1, len(by_index) + 1)):
            raise _Unconvertible("a list must have the keys 1..n without holes")
        out = []
        for index in range(1, len(by_index) + 1):
            try:
                out.append(self._to_py(by_index[index], budget, depth + 1))
            except _Unconvertible as err:
                err.path.insert(0, index)
                raise
        return out


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    # Scripts never see Python objects, but if one leaked, its attributes stay out of reach.
    raise AttributeError("Python attributes are not accessible from Lua")
