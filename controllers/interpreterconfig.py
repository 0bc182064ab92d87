"""InterpreterConfigController keeps the interpreter in step with its configuration objects.

ResourceInterpreterCustomization objects (Lua scripts per kind and operation) and
ResourceInterpreterWebhookConfiguration objects (HTTPS webhooks per rule) are applied to the shared
``Interpreter`` as they are created, changed or deleted. A customization whose Lua does not compile
is refused with a Warning Event on it; the interpreter keeps its previous state for that kind.
"""

from __future__ import annotations

from controllers.api import (
    RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
)
from controllers.context import Context
from controllers.interpreter.types import InterpreterError
from controllers.interpreter.webhook import WebhookBackend
from reconcile import NotFound, Request, Result, controller_managed_by

__all__ = ["setup"]


class _Customizations:
    def __init__(self, context: Context) -> None:
        self.context = context
        self.recorder = context.recorder("interpreter-config")

    async def reconcile(self, request: Request) -> Result | None:
        interpreter = self.context.interpreter
        try:
            obj = await self.context.manager.client.get(
                RESOURCE_INTERPRETER_CUSTOMIZATION_GVK, request.name
            )
        except NotFound:
            interpreter.remove_customization(request.name)
            return None
        try:
            interpreter.apply_customization(obj)
        except InterpreterError as error:
            self.recorder.event(obj, "Warning", "InvalidCustomization", str(error))
        return None


class _Webhooks:
    def __init__(self, context: Context) -> None:
        self.context = context
        self.recorder = context.recorder("interpreter-config")

    async def reconcile(self, request: Request) -> Result | None:
        interpreter = self.context.interpreter
        try:
            obj = await self.context.manager.client.get(
                RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK, request.name
            )
        except NotFound:
            interpreter.remove_webhook(request.name)
            return None
        try:
            interpreter.add_webhook(request.name, WebhookBackend([obj]))
        except InterpreterError as error:
            self.recorder.event(obj, "Warning", "InvalidWebhookConfiguration", str(error))
        return None


def setup(context: Context) -> None:
    """Register the two configuration controllers."""
    manager = context.manager
    (
        controller_managed_by(manager)
        .for_(RESOURCE_INTERPRETER_CUSTOMIZATION_GVK)
        .named("interpreter-customization")
        .complete(_Customizations(context))
    )
    (
        controller_managed_by(manager)
        .for_(RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK)
        .named("interpreter-webhook")
        .complete(_Webhooks(context))
    )
