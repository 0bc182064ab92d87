"""InterpreterConfigController keeps the interpreter in step with its configuration objects.

ResourceInterpreterCustomization objects (Lua scripts per kind and operation) and
ResourceInterpreterWebhookConfiguration objects (HTTPS webhooks per rule) are applied to the shared
``Interpreter`` as they are created, changed or deleted. A customization whose Lua does not compile
(checked in an interpreter worker process, so a hostile top level cannot stall this controller)
is refused with a Warning Event on it; the interpreter keeps its previous state for that kind.
One whose check found no free worker in time (``LuaBusy``) is retried with backoff instead. When
the worker pool quarantines one of a customization's scripts (its calls kept running out of time:
see ``controllers.interpreter.pool``), a Warning Event ``Quarantined`` on the customization says
which script, for how long and why.
Each webhook configuration holds a connection pool: the one a change replaces or a deletion drops
is closed then, the rest when the manager stops.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from controllers.api import (
    RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
)
from controllers.context import Context
from controllers.interpreter.facade import Interpreter
from controllers.interpreter.pool import WorkerPool
from controllers.interpreter.types import InterpreterError, LuaBusy
from controllers.interpreter.webhook import WebhookBackend
from controllers.rbac import Permissions, cache
from reconcile import (
    GVK,
    Channel,
    EnqueueRequestForObject,
    NotFound,
    Request,
    Result,
    controller_managed_by,
)

__all__ = ["PERMISSIONS", "QUARANTINED_REASON", "setup"]

QUARANTINED_REASON: Final = "Quarantined"
"""The reason of the Warning Event on a customization whose script the worker pool quarantined."""

PERMISSIONS: Final = Permissions(
    rules=(
        cache(
            "config.karmada.io",
            "resourceinterpretercustomizations",
            "resourceinterpreterwebhookconfigurations",
        ),
    )
)
"""What the interpreter-config controllers do on the host (see controllers.rbac)."""


class _Quarantines:
    """Quarantine notices of the worker pool, by customization, until its reconcile reports them.

    The pool calls ``notice`` in the thread of the call that failed: the controller-manager's one
    event loop. A customization is queued once until reconciled, so the stream holds at most one
    entry per customization.
    """

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.pending: dict[str, list[str]] = {}
        self.send: MemoryObjectSendStream[dict[str, Any]]
        self.receive: MemoryObjectReceiveStream[dict[str, Any]]
        self.send, self.receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)

    def notice(self, script: str, message: str) -> None:
        customization = script.partition("/")[0]
        first = customization not in self.pending
        self.pending.setdefault(customization, []).append(f"{script}: {message}")
        if first:
            # Closed or broken: the manager has stopped, nobody is left to report it.
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self.send.send_nowait({"metadata": {"name": customization}})

    def take(self, customization: str) -> list[str]:
        return self.pending.pop(customization, [])

    async def listen_until_stopped(self) -> None:
        self.pool.subscribe(self.notice)
        try:
            await anyio.sleep_forever()
        finally:
            self.pool.unsubscribe(self.notice)
            self.send.close()


class _ConfigReconciler:
    """Applies one kind of configuration object to the interpreter, or withdraws it."""

    def __init__(
        self,
        context: Context,
        gvk: GVK,
        apply: Callable[[Interpreter, dict[str, Any]], Awaitable[object]],
        remove: Callable[[Interpreter, str], object],
        reason: str,
        quarantines: _Quarantines | None = None,
    ) -> None:
        self.context = context
        self.gvk = gvk
        self.apply = apply
        self.remove = remove
        self.reason = reason
        self.quarantines = quarantines
        self.recorder = context.recorder("interpreter-config")

    async def reconcile(self, request: Request) -> Result | None:
        interpreter = self.context.interpreter
        notices = self.quarantines.take(request.name) if self.quarantines else []
        try:
            obj = await self.context.manager.client.get(self.gvk, request.name)
        except NotFound:
            await _close(self.remove(interpreter, request.name))
            return None
        for notice in notices:
            self.recorder.event(obj, "Warning", QUARANTINED_REASON, notice)
        try:
            await _close(await self.apply(interpreter, obj))
        except LuaBusy:
            raise  # no worker was free to check it: not the object's fault, try again later
        except InterpreterError as error:
            # Bad scripts or webhooks are reported on the object; the process and the other
            # kinds carry on with what they had.
            self.recorder.event(obj, "Warning", self.reason, str(error))
        return None


async def _close(dropped: object) -> None:
    """Close a webhook backend the interpreter no longer uses (anything else is left alone)."""
    if isinstance(dropped, WebhookBackend):
        await dropped.aclose()


async def _close_webhooks_on_stop(interpreter: Interpreter) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        # The controllers have stopped by now (the manager stops them first): nothing asks
        # these backends again, so their pools can go.
        with anyio.CancelScope(shield=True):
            for name in interpreter.webhook_names():
                await _close(interpreter.remove_webhook(name))


async def _add_webhook(interpreter: Interpreter, obj: dict[str, Any]) -> object:
    return interpreter.add_webhook(obj["metadata"]["name"], WebhookBackend([obj]))


def setup(context: Context) -> None:
    """Register the two configuration controllers, and the closing of webhooks on stop."""
    quarantines = _Quarantines(context.interpreter.customizations.worker_pool())
    customizations = _ConfigReconciler(
        context,
        RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
        Interpreter.apply_customization,
        Interpreter.remove_customization,
        "InvalidCustomization",
        quarantines,
    )
    webhooks = _ConfigReconciler(
        context,
        RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
        _add_webhook,
        Interpreter.remove_webhook,
        "InvalidWebhookConfiguration",
    )
    for name, reconciler in (("customization", customizations), ("webhook", webhooks)):
        builder = (
            controller_managed_by(context.manager).for_(reconciler.gvk).named(f"interpreter-{name}")
        )
        if reconciler is customizations:
            builder.watches(Channel(quarantines.receive, EnqueueRequestForObject()))
        # Sharded, every replica's own controllers ask the interpreter: all of it, unguarded.
        context.complete(builder, reconciler, sharded_by=None)
    context.manager.add(lambda: _close_webhooks_on_stop(context.interpreter), leader_only=False)
    context.manager.add(quarantines.listen_until_stopped, leader_only=False)
