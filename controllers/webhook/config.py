"""Config validates config.karmada.io objects at admission: interpreter customizations and webhooks.

What karmada-webhook's resourceinterpretercustomization and configuration handlers refuse:

- a ResourceInterpreterCustomization that is malformed (no target, a rule without a
  ``luaScript``: ``controllers.interpreter.parse_customization``'s words), whose Lua does not
  compile (checked as the interpreter checks an applied customization, in a sandboxed worker: it
  compiles, defines its function and its top level runs), or that defines an operation another
  customization of the same target already defines (InterpretDependency excepted: several may);
- a ResourceInterpreterWebhookConfiguration with two webhooks of one name, or a webhook the
  interpreter could not call (``controllers.interpreter.webhook.webhooks_from``'s ``problem``: no
  https URL or service, a caBundle without a PEM certificate, a timeout outside 1..30, no
  ``v1alpha1`` among its interpreterContextVersions).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from controllers.interpreter.customization import (
    RULE_FIELDS,
    CustomizationSet,
    parse_customization,
)
from controllers.interpreter.pool import WorkerPool
from controllers.interpreter.types import InterpreterError, Operation
from controllers.interpreter.webhook import webhooks_from
from controllers.webhook.fields import duplicate, new_problems, refuse_if_any

__all__ = [
    "CustomizationValidator",
    "InterpreterWebhookConfigurationValidator",
    "conflict_problems",
    "interpreter_webhook_problems",
]

Obj = dict[str, Any]
ListCustomizations = Callable[[], Awaitable[list[Obj]]]


def conflict_problems(customization: Mapping[str, Any], others: list[Obj]) -> list[str]:
    """The operations of ``customization`` that another customization of its target defines."""
    new = parse_customization(customization)
    problems = []
    for other in sorted(others, key=lambda o: str((o.get("metadata") or {}).get("name"))):
        try:
            existing = parse_customization(other)
        except InterpreterError:
            continue  # a broken one (admitted before the webhook) does not run anyway
        if existing.name == new.name or existing.target != new.target:
            continue
        for operation in new.scripts:
            if operation is not Operation.INTERPRET_DEPENDENCY and operation in existing.scripts:
                problems.append(
                    f"spec.customizations.{RULE_FIELDS[operation]}: conflicting with "
                    f"InterpreterOperation({operation.value}) of existing "
                    f"ResourceInterpreterCustomization({existing.name})"
                )
    return problems


class CustomizationValidator:
    """The CustomValidator of ResourceInterpreterCustomization; raises ``Refused``.

    ``others`` lists the customizations there are (the host's, through the manager's cache);
    ``pool`` runs the Lua checks (default: the process-wide worker pool).
    """

    def __init__(self, others: ListCustomizations, *, pool: WorkerPool | None = None) -> None:
        self.others = others
        self.pool = pool

    async def _problems(self, obj: Obj) -> list[str]:
        try:
            # A throwaway set: apply() checks every script as the interpreter would.
            await CustomizationSet(pool=self.pool).apply(obj)
        except InterpreterError as error:
            return [str(error)]
        return conflict_problems(obj, await self.others())

    async def validate_create(self, obj: Obj) -> list[str]:
        """Admit a customization whose scripts load and conflict with no other's."""
        refuse_if_any(await self._problems(obj))
        return []

    async def validate_update(self, old: Obj, new: Obj) -> list[str]:
        """Admit a change that loads and conflicts with nothing it did not conflict with."""
        before = conflict_problems(old, await self.others()) if _parses(old) else []
        refuse_if_any(new_problems(before, await self._problems(new)))
        return []

    async def validate_delete(self, obj: Obj) -> list[str]:
        """Deleting is always allowed."""
        return []


def _parses(obj: Obj) -> bool:
    try:
        parse_customization(obj)
    except InterpreterError:
        return False
    return True


def interpreter_webhook_problems(configuration: Mapping[str, Any]) -> list[str]:
    """Why the webhook refuses a ResourceInterpreterWebhookConfiguration (empty: it admits it)."""
    problems, seen = [], set()
    for index, hook in enumerate(webhooks_from(configuration)):
        if hook.problem:
            problems.append(f"webhooks[{index}]: {hook.problem}")
        if hook.name in seen:
            problems.append(duplicate(f"webhooks[{index}].name", hook.name))
        seen.add(hook.name)
    return problems


class InterpreterWebhookConfigurationValidator:
    """The CustomValidator of ResourceInterpreterWebhookConfiguration; raises ``Refused``."""

    async def validate_create(self, obj: Obj) -> list[str]:
        """Admit a configuration whose every webhook the interpreter can call."""
        refuse_if_any(interpreter_webhook_problems(obj))
        return []

    async def validate_update(self, old: Obj, new: Obj) -> list[str]:
        """Admit a change that brings no new problem (``fields.new_problems``)."""
        before = interpreter_webhook_problems(old)
        refuse_if_any(new_problems(before, interpreter_webhook_problems(new)))
        return []

    async def validate_delete(self, obj: Obj) -> list[str]:
        """Deleting is always allowed."""
        return []
