"""Pool runs Lua customization scripts in a few worker processes, off the caller's event loop.

A ``WorkerPool`` holds up to ``size`` worker processes (``worker``); ``LuaScript`` sends each call
to an idle one and awaits the reply on a non-blocking pipe (a lone call polls for it for up to
``SPIN`` first), so the event loop keeps serving every other controller meanwhile. The deadline is
enforced from outside the Lua VM: a worker that has not answered ``timeout + KILL_GRACE`` seconds
after a request is SIGKILLed (a C loop in a string pattern never returns to Lua's hook) and the
call fails with ``WorkerFailure``; so does a call whose worker died (a C stack overflow's SIGSEGV,
the ``RLIMIT_AS`` cap). Only that call fails: a replacement is started at once and boots while the
failing call returns.

The pool's time is shared out from the parent, not trusted to the scripts. A call waits for a
worker at most its ``queue_timeout`` (``DEFAULT_QUEUE_TIMEOUT``), then fails with
``WorkerFailure("busy")`` saying so, instead of queueing for ever behind a hostile script. Calls are
counted per customization (a script's ``owner``, the part of its name before ``/``): one whose
customization already holds ``share`` workers (half the pool, rounded up) takes another only while
no call of another customization waits, so one customization's slow or looping calls leave the
other half of the pool to everyone else (and the pool still lends all its workers to one
customization when nobody else waits). A script whose calls ran out of time or lost their worker
``QUARANTINE_STRIKES`` times within ``STRIKE_WINDOW`` seconds (each a killed worker to replace, or
a whole time limit spent) is quarantined: its calls fail at once with
``WorkerFailure("quarantined")`` for ``QUARANTINE_PERIOD`` seconds, twice as long each time it is
quarantined again soon after (up to ``MAX_QUARANTINE``), and the pool's ``subscribe`` listeners are
told, to report it. A changed script is a new script: no quarantine carries over to it.

The pool is bound to no event loop and no thread: its state is behind a lock, a call registers
its pipe with whichever loop awaits it, and a call waiting for a free worker is woken through a
pipe of its own. Workers die with the thread that started them (``PR_SET_PDEATHSIG``), are killed
by ``close`` (registered at exit for ``default_pool``), and are never inherited by a fork.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import orjson

import controllers
from controllers.interpreter.wire import MAX_RESULT_BYTES, MAX_RESULT_NODES, dumps, loads
from controllers.interpreter.worker import HEADER

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_QUEUE_TIMEOUT",
    "DEFAULT_WORKER_MEMORY",
    "KILL_GRACE",
    "MAX_QUARANTINE",
    "MAX_REPLY",
    "QUARANTINE_PERIOD",
    "QUARANTINE_STRIKES",
    "START_TIMEOUT",
    "STRIKE_WINDOW",
    "QuarantineListener",
    "ScriptSpec",
    "WorkerFailure",
    "WorkerPool",
    "default_pool",
    "set_default_pool_size",
]

DEFAULT_POOL_SIZE: Final = 2
"""Worker processes of the default pool (each ~15 MiB resident); the controller-manager's
``--interpreter-lua-workers`` sets it (``set_default_pool_size``)."""

DEFAULT_QUEUE_TIMEOUT: Final = 5.0
"""Seconds a call may wait for a free worker before it fails (its caller retries with backoff)."""

QUARANTINE_STRIKES: Final = 3
"""Calls of one script that ran out of time or lost their worker, within ``STRIKE_WINDOW``,
that quarantine it."""

STRIKE_WINDOW: Final = 60.0
"""Seconds over which a script's strikes are counted."""

QUARANTINE_PERIOD: Final = 30.0
"""Seconds a script is first quarantined for; doubled each time it is quarantined again within
``MAX_QUARANTINE`` seconds of the end of the last one."""

MAX_QUARANTINE: Final = 300.0
"""The longest quarantine."""

DEFAULT_WORKER_MEMORY: Final = 512 * 2**20
"""Address space one worker may map (``RLIMIT_AS``); each script's Lua heap has its own cap."""

KILL_GRACE: Final = 0.1
"""Seconds past a call's time limit before its worker is killed (the in-VM stop comes first)."""

MAX_REPLY: Final = 6 * MAX_RESULT_BYTES + 64 * MAX_RESULT_NODES
"""Bytes of the longest reply the parent reads: a bounded result's worst JSON (every character
escaped as ``\\uXXXX``, every value with its key and punctuation). The worker bounds results itself;
this holds even when the worker does not (a corrupted VM), before the reply is buffered."""

SPIN: Final = 0.0004
"""Seconds a lone call polls for its reply before it waits on the event loop.

Most calls answer within this; waking the caller through the loop costs about as much as the
call itself on a small VM. The loop is held for at most this long (in-process Lua held it for
the whole call); with other calls in flight nobody polls, so they overlap.
"""

START_TIMEOUT: Final = 30.0
"""Seconds a new worker may take to start (not counted in any call's time limit)."""

PENDING: Final = object()
"""What ``_Worker.read_some`` answers while a reply has not arrived."""

_BOOTSTRAP: Final = """
import sys, types
sys.path[:0] = __import__("json").loads(sys.argv[1])
package = types.ModuleType("controllers.interpreter")
package.__path__ = [sys.argv[2]]
sys.modules["controllers.interpreter"] = package
from controllers.interpreter import worker
worker.main(sys.argv[3:])
"""


QuarantineListener = Callable[[str, str], None]
"""Told a script's name and why it was quarantined; called in the thread of the call that failed."""


@dataclass(frozen=True, slots=True)
class ScriptSpec:
    """What a worker needs to compile a script: ``ident`` is unique per script in the process.

    ``name`` is ``<customization>/<rule>``; its customization (``owner``) is what the pool shares
    its workers out by.
    """

    ident: int
    source: str
    function: str
    timeout: float
    max_memory: int
    name: str = ""

    @property
    def owner(self) -> str:
        return self.name.partition("/")[0]


@dataclass(slots=True)
class _Strikes:
    """A script's recent calls that ran out of time or lost their worker, and its quarantine."""

    name: str
    times: list[float] = field(default_factory=list)
    last: str = ""
    until: float = 0.0
    period: float = 0.0


class _Waiter:
    """A call waiting for a worker: its customization, its place in line, its wake-up pipe."""

    def __init__(self, owner: str, seq: int) -> None:
        self.owner = owner
        self.seq = seq
        self.read, self.write = os.pipe()
        os.set_blocking(self.read, False)
        os.set_blocking(self.write, False)

    def wake(self) -> None:
        with contextlib.suppress(OSError):  # full: it is readable already
            os.write(self.write, b"x")

    def drain(self) -> None:
        with contextlib.suppress(OSError):
            os.read(self.read, 4096)

    def close(self) -> None:
        os.close(self.read)
        os.close(self.write)


class WorkerFailure(Exception):
    """A call got no answer: ``reason`` is ``timeout``, ``died`` or ``start`` (its worker),
    ``busy`` (no worker was free in time) or ``quarantined`` (the script was not run)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _import_roots() -> list[str]:
    """Where the worker finds lupa, orjson and this repository (it runs with ``-I -S``)."""
    roots: list[str] = []
    for origin in (controllers.__file__, _origin("lupa"), orjson.__file__):
        root = str(Path(origin or "").resolve().parent.parent)
        if root not in roots:
            roots.append(root)
    return roots


def _origin(package: str) -> str | None:
    # Found, not imported: the Lua runtime is the workers' to load, not the parent's.
    spec = importlib.util.find_spec(package)
    return spec.origin if spec is not None else None


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None under another backend (then anyio's waits are used)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _settle(future: asyncio.Future[Any]) -> None:
    """The deadline passed: the reply is still PENDING."""
    if not future.done():
        future.set_result(PENDING)


def _signal_name(returncode: int) -> str:
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"{signal.Signals(-returncode).name} (signal {-returncode})"
    except ValueError:
        return f"signal {-returncode}"


class _Worker:
    """One worker process and the non-blocking ends of its pipes; used by one call at a time."""

    def __init__(self, memory: int) -> None:
        here = Path(__file__).resolve().parent
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(_import_roots()),
             str(here), str(os.getpid()), str(memory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            close_fds=True,
        )  # fmt: skip
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.requests = self.process.stdin.fileno()
        self.replies = self.process.stdout.fileno()
        os.set_blocking(self.requests, False)
        os.set_blocking(self.replies, False)
        self.pid = self.process.pid
        self.ready = False
        self._buffer = bytearray()

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the process and close the pipes; the pool reaps it later."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def write_some(self, data: memoryview) -> memoryview:
        """Write what the pipe takes now; what is left (all written, or it died: nothing)."""
        try:
            return data[os.write(self.requests, data) :]
        except BlockingIOError:
            return data
        except BrokenPipeError:
            return data[:0]  # it died: the reply's EOF says how

    def read_some(self) -> Any:
        """The next message if it has arrived, ``PENDING`` if not, None at EOF (it is gone)."""
        while True:
            if len(self._buffer) >= HEADER.size:
                (size,) = HEADER.unpack_from(self._buffer)
                if size > MAX_REPLY:
                    self.kill()
                    raise WorkerFailure(
                        "died", f"its worker sent a {size}-byte reply (limit {MAX_REPLY})"
                    )
                end = HEADER.size + size
                if len(self._buffer) >= end:
                    message = loads(memoryview(self._buffer)[HEADER.size : end])
                    del self._buffer[:end]
                    return message
            try:
                chunk = os.read(self.replies, 1 << 16)
            except BlockingIOError:
                return PENDING
            if not chunk:
                return None
            self._buffer += chunk

    async def exchange(self, data: memoryview, limit: float, spin: float = 0.0) -> Any:
        """Send a message and return the reply (None at EOF); PENDING if ``limit`` s passed."""
        # Most replies are there once the write returns (on a busy machine the write hands the
        # CPU to the worker), so the wait, and its cancel scope, is only set up when needed.
        deadline = time.monotonic() + limit
        data = self.write_some(data)
        reply = PENDING if data else self._poll(min(time.monotonic() + spin, deadline))
        if reply is not PENDING:
            return reply
        loop = _asyncio_loop()
        if loop is not None and not data:
            return await self._reply_on(loop, deadline)
        with anyio.move_on_after(deadline - time.monotonic()):
            while data:
                await anyio.wait_writable(self.requests)
                data = self.write_some(data)
            while reply is PENDING:
                await anyio.wait_readable(self.replies)
                reply = self.read_some()
        return reply

    def _poll(self, until: float) -> Any:
        """The reply if it arrives by ``until`` (read at least once), else PENDING."""
        while True:
            reply = self.read_some()
            if reply is not PENDING or time.monotonic() >= until:
                return reply

    async def _reply_on(self, loop: asyncio.AbstractEventLoop, deadline: float) -> Any:
        """The reply (PENDING past ``deadline``), awaited with a reader callback and a timer.

        The same wait as anyio's ``wait_readable`` under ``move_on_after``, for a quarter of the
        event loop's work per call: one future instead of a cancel scope and a wait per read.
        """
        future: asyncio.Future[Any] = loop.create_future()

        def readable() -> None:
            if future.done():  # the timer fired, or the caller was cancelled
                return
            try:
                reply = self.read_some()
            except Exception as err:  # a bad message (WorkerFailure, ValueError) is the caller's
                future.set_exception(err)
                return
            if reply is not PENDING:
                future.set_result(reply)

        loop.add_reader(self.replies, readable)
        timer = loop.call_later(max(0.0, deadline - time.monotonic()), _settle, future)
        try:
            return await future
        finally:
            timer.cancel()
            loop.remove_reader(self.replies)

    async def exit_status(self) -> str:
        """How the process ended, once its pipe said it did (it may take a moment to be reaped)."""
        for _ in range(50):
            if self.process.poll() is not None:
                return _signal_name(self.process.returncode)
            await anyio.sleep(0.002)
        self.kill()
        return "it closed its pipe"


class WorkerPool:
    """Up to ``size`` worker processes running customization scripts, started on demand.

    ``memory`` caps each worker's address space. Thread- and event-loop-safe.
    """

    def __init__(
        self, size: int = DEFAULT_POOL_SIZE, *, memory: int = DEFAULT_WORKER_MEMORY
    ) -> None:
        if size < 1:
            raise ValueError(f"a worker pool needs at least one worker, got {size}")
        self.size = size
        self.memory = memory
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._count = 0  # workers started and not yet discarded: idle or busy
        self._waiters: list[_Waiter] = []  # calls waiting for a worker, in arrival order
        self._line = itertools.count()  # places in that line
        self._running: dict[str, int] = {}  # workers held, by customization
        self._served: dict[str, int] = {}  # by customization: the grant it last got
        self._grants = 0
        self._strikes: dict[int, _Strikes] = {}  # by script ident
        self._listeners: list[QuarantineListener] = []
        self._dead: list[_Worker] = []  # killed, not yet reaped
        self._closed = False
        self._owner = os.getpid()

    @property
    def share(self) -> int:
        """Workers one customization's calls may hold while another's wait: half, rounded up."""
        return (self.size + 1) // 2

    def subscribe(self, listener: QuarantineListener) -> None:
        """Tell ``listener`` each time a script is quarantined."""
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: QuarantineListener) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def pids(self) -> list[int]:
        """The process ids of the idle workers (for tests and the benchmark)."""
        with self._lock:
            return [w.pid for w in self._idle]

    async def run(
        self,
        script: ScriptSpec,
        args: list[Any] | None,
        *,
        queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
    ) -> list[Any]:
        """Call ``script`` on ``args`` in a worker (None: only load it); the worker's reply.

        The reply is ``["ok", value]`` or ``["error", kind, message]`` (see ``worker``). The call
        waits at most ``queue_timeout`` seconds for a worker.

        Raises:
            WorkerFailure: the script is quarantined, no worker was free in time, or the worker
                passed the deadline (killed), died, or did not start.
            TypeError, ValueError: an argument has no JSON form (or is nested too deeply).
        """
        self._refuse_if_quarantined(script)
        load = ["load", script.ident, script.source, script.function, script.timeout,
                script.max_memory]  # fmt: skip
        request = dumps(load if args is None else ["call", script.ident, args])
        worker = await self._acquire(script.owner, queue_timeout)
        healthy = False
        try:
            reply = await self._exchange(worker, request, script.timeout)
            if reply[0] == "need":  # this worker has not compiled the script (or dropped it)
                reply = await self._exchange(worker, dumps(load), script.timeout)
                if reply[0] == "ok":
                    reply = await self._exchange(worker, request, script.timeout)
            healthy = True
        except WorkerFailure as failure:
            if failure.reason in ("timeout", "died"):
                self._strike(script, failure.message)
            raise
        finally:
            self._release(worker, healthy, script.owner)
        if reply[0] == "error" and reply[1] == "timeout":  # stopped by the hook: a limit spent
            self._strike(script, str(reply[2]))
        return reply

    # --- quarantine -----------------------------------------------------------------------------

    def _refuse_if_quarantined(self, script: ScriptSpec) -> None:
        now = time.monotonic()
        with self._lock:
            strikes = self._strikes.get(script.ident)
            if strikes is None or strikes.until <= now:
                return
            message = _quarantine_message(strikes, now)
        raise WorkerFailure("quarantined", message)

    def _strike(self, script: ScriptSpec, message: str) -> None:
        """Count a call that ran out of time or lost its worker; quarantine at the limit."""
        now = time.monotonic()
        with self._lock:
            strikes = self._strikes.setdefault(script.ident, _Strikes(script.name))
            strikes.times = [t for t in strikes.times if now - t < STRIKE_WINDOW] + [now]
            strikes.last = message
            self._forget_old_strikes(now)
            if len(strikes.times) < QUARANTINE_STRIKES:
                return
            # Quarantined again soon after the last one: twice as long.
            again = strikes.period > 0 and now - strikes.until < MAX_QUARANTINE
            strikes.period = min(2 * strikes.period, MAX_QUARANTINE) if again else QUARANTINE_PERIOD
            strikes.until, strikes.times = now + strikes.period, []
            notice, listeners = _quarantine_message(strikes, now), list(self._listeners)
        for listener in listeners:
            listener(script.name, notice)

    def _forget_old_strikes(self, now: float) -> None:
        # Scripts replaced or gone leave their records behind: keep only what can still count.
        self._strikes = {
            ident: s
            for ident, s in self._strikes.items()
            if (s.times and now - s.times[-1] < STRIKE_WINDOW)
            or (s.period and now - s.until < MAX_QUARANTINE)
        }

    async def stats(self) -> dict[str, Any]:
        """One worker's pid, resident memory (``rss_kib``) and imported modules."""
        worker = await self._acquire("", START_TIMEOUT)
        healthy = False
        try:
            reply = await self._exchange(worker, dumps(["stats"]), START_TIMEOUT)
            healthy = True
            result: dict[str, Any] = reply[1]
            return result
        finally:
            self._release(worker, healthy, "")

    async def _exchange(self, worker: _Worker, request: bytes, timeout: float) -> list[Any]:
        if not worker.ready:
            await self._started(worker)
        limit = timeout + KILL_GRACE
        alone = self._count - len(self._idle) <= 1 and not self._waiters  # racy, a heuristic
        message = memoryview(HEADER.pack(len(request)) + request)
        reply = await worker.exchange(message, limit, SPIN if alone else 0.0)
        if reply is None:
            raise WorkerFailure("died", f"its worker died of {await worker.exit_status()}")
        if reply is PENDING:
            raise WorkerFailure("timeout", f"its worker was killed after {limit:g} s")
        return list(reply)

    async def _started(self, worker: _Worker) -> None:
        ready = await worker.exchange(memoryview(b""), START_TIMEOUT)
        if ready is PENDING:
            message = f"the interpreter worker did not start in {START_TIMEOUT:g} s"
            raise WorkerFailure("start", message)
        if ready is None or ready[0] != "ready":
            status = await worker.exit_status() if ready is None else f"it said {ready!r}"
            raise WorkerFailure("start", f"the interpreter worker did not start: {status}")
        worker.ready = True

    # --- workers in and out ---------------------------------------------------------------------

    async def _acquire(self, owner: str, queue_timeout: float) -> _Worker:
        """A worker for a call of ``owner``'s, within ``queue_timeout`` s, in its turn."""
        deadline = time.monotonic() + queue_timeout
        waiter: _Waiter | None = None
        try:
            while True:
                with self._lock:
                    self._check_owner()
                    if self._closed:
                        raise WorkerFailure("start", "the interpreter worker pool is closed")
                    self._reap()
                    if self._first_in_line(owner, waiter):
                        worker = self._take_idle()
                        if worker is not None or self._count < self.size:
                            self._grant(owner, waiter)
                            if worker is not None:
                                return worker
                            self._count += 1
                            break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise WorkerFailure("busy", self._busy_message(owner, queue_timeout))
                    if waiter is None:
                        waiter = _Waiter(owner, next(self._line))
                        self._waiters.append(waiter)
                with anyio.move_on_after(left):
                    await anyio.wait_readable(waiter.read)
                waiter.drain()
        finally:
            if waiter is not None:
                with self._lock:
                    if waiter in self._waiters:  # it gave up: the next in line may be another
                        self._waiters.remove(waiter)
                        self._wake()
                waiter.close()
        try:
            return _Worker(self.memory)
        except BaseException:
            with self._lock:
                self._count -= 1
                self._let_go(owner)
                self._wake()
            raise

    def _first_in_line(self, owner: str, waiter: _Waiter | None) -> bool:
        """Whether this call (waiting, or just come: None) is the next to get a worker.

        Under the lock. Calls of a customization holding its ``share`` wait while another's
        wait; of the others, the customization holding the fewest workers goes first, then the
        one served longest ago (round robin, so even a pool of one is shared), then the call
        that has waited longest.
        """
        line: list[tuple[str, float]] = [(w.owner, w.seq) for w in self._waiters]
        me = (owner, waiter.seq if waiter is not None else math.inf)  # one just come: last
        if waiter is None:
            line.append(me)
        eligible = [call for call in line if self._within_share(call[0])]
        if not eligible:
            return False
        first = min(
            eligible,
            key=lambda call: (
                self._running.get(call[0], 0),
                self._served.get(call[0], -1),
                call[1],
            ),
        )
        return first == me

    def _within_share(self, owner: str) -> bool:
        if self._running.get(owner, 0) < self.share:
            return True
        return all(w.owner == owner for w in self._waiters)

    def _take_idle(self) -> _Worker | None:
        while self._idle:
            worker = self._idle.pop()
            if worker.alive():
                return worker
            # Died idle (its starting thread ended?): not a call's failure, start anew.
            self._discard(worker)
        return None

    def _grant(self, owner: str, waiter: _Waiter | None) -> None:
        """Count a worker as ``owner``'s and take its call out of the line (under the lock)."""
        self._running[owner] = self._running.get(owner, 0) + 1
        self._grants += 1
        self._served[owner] = self._grants
        if waiter is not None:
            self._waiters.remove(waiter)

    def _let_go(self, owner: str) -> None:
        """A worker of ``owner``'s is back (under the lock); forget an owner with nothing left."""
        held = self._running.get(owner, 0) - 1
        if held > 0:
            self._running[owner] = held
            return
        self._running.pop(owner, None)
        if all(w.owner != owner for w in self._waiters):
            self._served.pop(owner, None)

    def _busy_message(self, owner: str, queue_timeout: float) -> str:
        held = self._running.get(owner, 0)
        own = f", {held} of them with calls of {owner}" if held and owner else ""
        return (
            f"no interpreter worker was free within {queue_timeout:g} s "
            f"({self._count - len(self._idle)} of {self.size} busy{own}; "
            f"at most {self.share} serve one customization while others wait)"
        )

    def _release(self, worker: _Worker, healthy: bool, owner: str) -> None:
        """Give a worker back; one whose state is unknown (failed, cancelled) is replaced."""
        replace = False
        with self._lock:
            self._let_go(owner)
            if healthy and not self._closed and os.getpid() == self._owner:
                self._idle.append(worker)
            else:
                self._discard(worker)
                replace = not self._closed and os.getpid() == self._owner
                if replace:
                    self._count += 1
            self._wake()
        if replace:
            # Started now, so it boots while the failed call returns; its first call waits for it.
            try:
                fresh = _Worker(self.memory)
            except OSError:
                with self._lock:
                    self._count -= 1
                return
            with self._lock:
                self._idle.insert(0, fresh)
                self._wake()

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        self._dead.append(worker)
        self._count -= 1

    def _wake(self) -> None:
        # Every waiter looks again: whose turn it is depends on the customizations' workers.
        for waiter in self._waiters:
            waiter.wake()

    def _reap(self) -> None:
        self._dead = [w for w in self._dead if w.process.poll() is None]

    def _check_owner(self) -> None:
        if os.getpid() != self._owner:  # a forked child: these workers are the parent's
            self._idle, self._dead, self._count, self._owner = [], [], 0, os.getpid()
            self._running, self._served, self._waiters = {}, {}, []

    def close(self) -> None:
        """Kill every idle worker and wait for them; busy ones are killed when they return."""
        with self._lock:
            self._closed = True
            workers, self._idle = self._idle, []
            for worker in workers:
                self._discard(worker)
            dead, self._dead = self._dead, []
            self._wake()
        deadline = time.monotonic() + 5
        for worker in dead:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(max(0.0, deadline - time.monotonic()))


def _quarantine_message(strikes: _Strikes, now: float) -> str:
    return (
        f"quarantined for another {strikes.until - now:.0f} s ({strikes.period:g} s): "
        f"{QUARANTINE_STRIKES} of its calls within {STRIKE_WINDOW:g} s ran out of time or lost "
        f"their worker; the last: {strikes.last}"
    )


_default: WorkerPool | None = None
_default_size = DEFAULT_POOL_SIZE
_default_lock = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool every ``LuaScript`` uses unless given one; closed at exit."""
    global _default
    with _default_lock:
        if _default is None or _default._owner != os.getpid():
            _default = WorkerPool(_default_size)
            atexit.register(_default.close)
        return _default


def set_default_pool_size(size: int) -> None:
    """Size the process-wide pool (``--interpreter-lua-workers``); a running one is resized."""
    global _default_size
    if size < 1:
        raise ValueError(f"a worker pool needs at least one worker, got {size}")
    with _default_lock:
        _default_size = size
        if _default is not None:
            # Fewer workers: busy ones beyond the size are not replaced once idle ones run out.
            _default.size = size
