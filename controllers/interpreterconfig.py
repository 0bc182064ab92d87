"""InterpreterConfigController keeps the interpreter in step with its configuration objects.

ResourceInterpreterCustomization objects (Lua scripts per kind and operation) and
ResourceInterpreterWebhookConfiguration objects (HTTPS webhooks per rule) are applied to the shared
``Interpreter`` as they are created, changed or deleted. A customization whose Lua does not compile
(checked in an interpreter worker process, so a hostile top level cannot stall this controller)
is refused with a Warning Event on it; the interpreter keeps its previous state for that kind.
Each webhook configuration holds a connection pool: the one a change replaces or a deletion drops
is closed then, the rest when the manager stops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from controllers.api import (
    RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
)
from controllers.context import Context
from controllers.interpreter.facade import Interpreter
from controllers.interpreter.types import InterpreterError
from controllers.interpreter.webhook import WebhookBackend
from controllers.rbac import Permissions, Rule
from reconcile import GVK, NotFound, Request, Result, controller_managed_by

__all__ = ["PERMISSIONS", "setup"]

PERMISSIONS: Final = Permissions(
    rules=(
        Rule(
            ("config.karmada.io",),
            ("resourceinterpretercustomizations", "resourceinterpreterwebhookconfigurations"),
            ("list", "watch"),
            "its cache",
        ),
    )
)
"""What the interpreter-config controllers do on the host (see controllers.rbac)."""


class _ConfigReconciler:
    """Applies one kind of configuration object to the interpreter, or withdraws it."""

    def __init__(
        self,
        context: Context,
        gvk: GVK,
        apply: Callable[[Interpreter, dict[str, Any]], Awaitable[object]],
        remove: Callable[[Interpreter, str], object],
        reason: str,
    ) -> None:
        self.context = context
        self.gvk = gvk
        self.apply = apply
        self.remove = remove
        self.reason = reason
        self.recorder = context.recorder("interpreter-config")

    async def reconcile(self, request: Request) -> Result | None:
        interpreter = self.context.interpreter
        try:
            obj = await self.context.manager.client.get(self.gvk, request.name)
        except NotFound:
            await _close(self.remove(interpreter, request.name))
            return None
        try:
            await _close(await self.apply(interpreter, obj))
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
    customizations = _ConfigReconciler(
        context,
        RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
        Interpreter.apply_customization,
        Interpreter.remove_customization,
        "InvalidCustomization",
    )
    webhooks = _ConfigReconciler(
        context,
        RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
        _add_webhook,
        Interpreter.remove_webhook,
        "InvalidWebhookConfiguration",
    )
    for name, reconciler in (("customization", customizations), ("webhook", webhooks)):
        (
            controller_managed_by(context.manager)
            .for_(reconciler.gvk)
            .named(f"interpreter-{name}")
            # Sharded, every replica's own controllers ask the interpreter.
            .with_options(context.workers())
            .complete(reconciler)
        )
    context.manager.add(lambda: _close_webhooks_on_stop(context.interpreter), leader_only=False)
