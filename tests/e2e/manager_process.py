"""Manager_process runs ``reconcile controller-manager`` with every write decision recorded.

Usage: ``python tests/e2e/manager_process.py RECORD FIELD_MANAGER [controller-manager flags]``.

It is the real CLI (``controllers.cli.main``, same flags, same exit status) with two test hooks:
the manager's writes carry the field manager FIELD_MANAGER (so member and host objects say in
their managedFields which process last wrote them, with the apiserver's time), and every call of
the manager's write guard — made right before a non-GET request leaves through any of its
clients, host or member — appends one JSON line to RECORD: the wall time, method, path, the
server it goes to (the client's ``config.host``: the host's or a member's), whether it was
allowed, whether the writing runnable needs leadership, and whether the manager believed it led.
Leadership changes are recorded too, with the elector's identity (the Lease's holderIdentity).
A sharded replica (``--shards``) also records every reconcile its shard guard
lets through: the ring key, and the wall times it began and ended (``reconcile`` and
``reconciled`` lines; a SIGKILL leaves a last ``reconcile`` without its end). Lines are written
with one unbuffered ``write`` each, so a SIGKILL loses none.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import orjson

from controllers import cli
from reconcile import manager as manager_module
from reconcile.client.client import Client
from reconcile.manager import Manager, ManagerOptions, NotLeader
from reconcile.sharding import shard as shard_module


class Recorder:
    """Appends one JSON object per line to a file, unbuffered."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **fields: Any) -> None:
        os.write(self._fd, orjson.dumps({"wall": time.time(), **fields}) + b"\n")


def instrument(recorder: Recorder) -> None:
    """Record every decision of the manager's write guard, and every leadership change."""
    guard = Manager._refuse_unless_leader
    set_leader = Manager._set_leader

    def recording_guard(self: Manager, method: str, path: str) -> None:
        needs = manager_module._needs_leader.get()
        fields = {
            "method": method,
            "path": path,
            "server": _SERVER.get(),
            "needs_leader": needs,
            "leading": self._leading,
        }
        try:
            guard(self, method, path)
        except NotLeader:
            recorder.write(event="write", allowed=False, **fields)
            raise
        recorder.write(event="write", allowed=True, **fields)

    def recording_set_leader(self: Manager, leading: bool) -> None:
        identity = self._elector.config.identity if self._elector else None
        recorder.write(event="leader", leading=leading, identity=identity, pid=os.getpid())
        set_leader(self, leading)

    setattr(Manager, "_refuse_unless_leader", recording_guard)  # noqa: B010 - a test hook
    open_request = Client._open

    async def recording_open(self: Client, method: str, path: str, *args: Any, **kw: Any) -> Any:
        # The guard is called at once by _open, in this context: it reads the server from it.
        token = _SERVER.set(self.config.host)
        try:
            return await open_request(self, method, path, *args, **kw)
        finally:
            _SERVER.reset(token)

    setattr(Client, "_open", recording_open)  # noqa: B010
    setattr(Manager, "_set_leader", recording_set_leader)  # noqa: B010
    reconciling = shard_module._Keys.reconciling

    @contextlib.asynccontextmanager
    async def recording_reconciling(self: Any, key: str) -> AsyncIterator[None]:
        span = next(_SPANS)
        recorder.write(event="reconcile", key=key, span=span)
        try:
            async with reconciling(self, key):
                yield
        finally:
            recorder.write(event="reconciled", key=key, span=span)

    setattr(shard_module._Keys, "reconciling", recording_reconciling)  # noqa: B010


_SPANS = itertools.count()
_SERVER: ContextVar[str | None] = ContextVar("server", default=None)


def main(argv: list[str]) -> int:
    record, field_manager, *flags = argv
    recorder = Recorder(record)
    instrument(recorder)
    setattr(cli, "ManagerOptions", functools.partial(ManagerOptions, field_manager=field_manager))  # noqa: B010
    recorder.write(event="start", pid=os.getpid(), field_manager=field_manager)
    status = cli.main(["controller-manager", *flags])
    recorder.write(event="exit", pid=os.getpid(), status=status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
