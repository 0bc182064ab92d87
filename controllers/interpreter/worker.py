"""Worker is the interpreter worker process: it runs customization scripts for ``pool.WorkerPool``.

The pool starts ``python -I -S -c BOOTSTRAP`` (see ``pool``), which imports this module without
the ``controllers.interpreter`` package and calls ``main``. The worker then ties its life to its
parent (``PR_SET_PDEATHSIG``), caps its address space (``RLIMIT_AS``) and disables core dumps,
imports ``sandbox`` (whose ``kube`` library takes only ``reconcile``'s stdlib-only quantities and
GVKs: ``reconcile`` loads its names lazily, so the worker starts in tens of milliseconds, not the
framework's second) and answers requests on its stdin/stdout until stdin closes.

Messages are length-prefixed (4 bytes, little-endian) JSON from ``wire.dumps``; each request gets
one reply::

    ["load", id, source, function, timeout, max_memory] → ["ok", null] | ["error", kind, message]
    ["call", id, [args]]                  → ["ok", value] | ["need"] | ["error", kind, message]
    ["stats"]                             → ["ok", {"pid", "rss_kib", "modules"}]

``need`` asks for a ``load`` of a script this worker does not hold (new worker, or evicted: it keeps
the ``MAX_SCRIPTS`` most recently used, and drops one whose call was stopped by a limit, so its
top level runs again as a ``load`` of its own, under the pool's kill deadline for that request,
not inside the failed call's). A worker answers ``["ready", pid]`` once it has started.
Failures of a script are replies; only what kills the process (a signal, the address-space cap in
C code) is left for the parent to see.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any, Final

__all__ = ["HEADER", "MAX_FRAME", "MAX_SCRIPTS", "main"]

HEADER: Final = struct.Struct("<I")
"""The length prefix of every message."""

MAX_FRAME: Final = 256 * 2**20
"""The longest message either side accepts."""

MAX_SCRIPTS: Final = 256
"""Compiled scripts one worker keeps (least recently used dropped first)."""

_PR_SET_PDEATHSIG: Final = 1


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent goes (set first: the parent may already be gone)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _limit(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing script leaves no core file
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


class _Server:
    """The request loop: scripts by id, least recently used first."""

    def __init__(self, requests: int, replies: int) -> None:
        from controllers.interpreter import sandbox, wire

        self.sandbox = sandbox
        self.wire = wire
        self.requests = requests
        self.replies = replies
        self.scripts: OrderedDict[int, Any] = OrderedDict()
        self.buffer = bytearray()

    def send(self, message: Any) -> None:
        try:
            body = self.wire.dumps(message)
        except (TypeError, ValueError, RecursionError) as err:
            body = self.wire.dumps(["error", "return", f"the result has no JSON form: {err}"])
        data = HEADER.pack(len(body)) + body
        while data:
            data = data[os.write(self.replies, data) :]

    def receive(self) -> Any:
        """The next request, None once stdin is closed (one read per request, usually)."""
        buffer = self.buffer
        while True:
            if len(buffer) >= HEADER.size:
                (size,) = HEADER.unpack_from(buffer)
                if size > MAX_FRAME:
                    raise SystemExit(f"interpreter worker: a {size}-byte request is too long")
                if len(buffer) >= HEADER.size + size:
                    request = self.wire.loads(memoryview(buffer)[HEADER.size : HEADER.size + size])
                    del buffer[: HEADER.size + size]
                    return request
            chunk = os.read(self.requests, 1 << 16)
            if not chunk:
                return None
            buffer += chunk

    def handle(self, request: list[Any]) -> list[Any]:
        sandbox = self.sandbox
        try:
            if request[0] == "call":
                return self.call(request[1], request[2])
            if request[0] == "load":
                _, ident, source, function, timeout, max_memory = request
                self.scripts[ident] = sandbox.Sandbox(
                    source, function, timeout=timeout, max_memory=max_memory, reload=False
                )
                while len(self.scripts) > MAX_SCRIPTS:
                    self.scripts.popitem(last=False)
                return ["ok", None]
            if request[0] == "stats":
                return ["ok", self.stats()]
            return ["error", "runtime", f"unknown request {request[0]!r}"]
        except sandbox.SandboxError as err:
            return ["error", err.kind, err.message]
        except MemoryError:
            return ["error", "memory", "the interpreter worker ran out of memory"]
        except Exception as err:  # whatever a script provokes is its failure, not the worker's
            return ["error", "runtime", f"{type(err).__name__}: {err}"]

    def call(self, ident: int, args: list[Any]) -> list[Any]:
        script = self.scripts.get(ident)
        if script is None:
            return ["need"]
        self.scripts.move_to_end(ident)
        try:
            return ["ok", script.call(args)]
        finally:
            if script.spent:  # stopped by a limit: the next call loads it afresh
                del self.scripts[ident]

    def stats(self) -> dict[str, Any]:
        # /proc, not getrusage: ru_maxrss keeps the peak of the image before exec (the parent's).
        status = Path("/proc/self/status").read_text().split("VmRSS:", 1)[1]
        rss = int(status.split()[0])
        return {"pid": os.getpid(), "rss_kib": rss, "modules": sorted(sys.modules)}

    def serve(self) -> None:
        self.send(["ready", os.getpid()])
        while True:
            try:
                request = self.receive()
            except ValueError as err:  # not a message from the pool: nothing sane to answer
                raise SystemExit(f"interpreter worker: bad request: {err}") from err
            if request is None:
                return
            self.send(self.handle(request))


def main(argv: list[str]) -> None:
    """Run a worker: ``argv`` is the parent's pid and the address-space cap in bytes."""
    _die_with_parent(int(argv[0]))
    _limit(int(argv[1]))
    # The protocol owns stdin/stdout; anything else printing goes to stderr.
    requests, replies = os.dup(0), os.dup(1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    _Server(requests, replies).serve()
