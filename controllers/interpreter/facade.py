"""Interpreter answers the resource interpreter's operations for any kind, from the right source.

Controllers ask one ``Interpreter``; for each kind and operation it picks the first source that
handles it, in Karmada's precedence:

1. ResourceInterpreterCustomizations (Lua) applied to this interpreter,
2. webhook backends (ResourceInterpreterWebhookConfigurations), by name,
3. the bundled third-party customizations (``thirdparty/``),
4. the native defaults for Kubernetes kinds.

Customizations and webhooks change at runtime (``apply_customization``, ``add_webhook``...), as the
controllers watching those CRDs see them; ``subscribe`` tells others which kinds a change may
interpret differently (the detector re-reads their replicas: a template seen before its
customization or webhook was loaded is not left with what the native interpreter said). When no
source handles a kind and operation the methods raise ``NotSupported``; callers decide what that
means (no replicas, no retention, health Unknown...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from controllers.api.identity import identity_change, identity_of
from controllers.interpreter.backend import Backend
from controllers.interpreter.customization import (
    Customization,
    CustomizationSet,
    bundled_customizations,
)
from controllers.interpreter.native import NativeBackend
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    IdentityChanged,
    InterpreterError,
    NotSupported,
    Operation,
    ReplicaRequirements,
    unique_dependencies,
)
from reconcile import GVK

__all__ = ["ChangeListener", "Interpreter", "KindFilter"]

KindFilter = Callable[[GVK], bool]
"""Whether a kind is among those a change concerns."""
ChangeListener = Callable[[KindFilter], None]
"""Called, synchronously, after a change with the kinds it concerns."""

Obj = dict[str, Any]
_DEFAULT: Any = object()


def _gvk_of(obj: Mapping[str, Any]) -> GVK:
    try:
        return GVK.of(obj)
    except (ValueError, AttributeError) as err:
        raise InterpreterError(
            f"cannot interpret an object without apiVersion and kind: {err}"
        ) from err


class Interpreter:
    """The resource interpreter: one entry point, sources tried in precedence order.

    ``thirdparty`` defaults to the bundled customizations and ``native`` to the native defaults;
    pass None to leave either out. ``thirdparty`` may be several sources, asked in order (a
    customization directory before the bundled ones: ``directory.thirdparty_backend``). Methods
    mirror ``Backend`` and raise ``NotSupported`` when no
    source handles the object's kind and operation, ``InterpreterError`` (or a subclass such as
    ``LuaError``) when the source fails.
    """

    def __init__(
        self,
        *,
        customizations: CustomizationSet | None = None,
        webhooks: Mapping[str, Backend] | None = None,
        thirdparty: Backend | tuple[Backend, ...] | None = _DEFAULT,
        native: Backend | None = _DEFAULT,
    ) -> None:
        self.customizations = customizations if customizations is not None else CustomizationSet()
        self._webhooks: dict[str, Backend] = dict(webhooks or {})
        if thirdparty is _DEFAULT:
            thirdparty = bundled_customizations()
        self._thirdparty: tuple[Backend, ...] = (
            thirdparty
            if isinstance(thirdparty, tuple)
            else ()
            if thirdparty is None
            else (thirdparty,)
        )
        self._native = NativeBackend() if native is _DEFAULT else native
        self._listeners: list[ChangeListener] = []

    # --- runtime changes ----------------------------------------------------------------------

    async def apply_customization(self, obj: Mapping[str, Any]) -> Customization:
        """Add or replace a ResourceInterpreterCustomization (new scripts are checked in a worker).

        Raises:
            InvalidCustomization: the object is malformed.
            LuaError: a script does not load; the previous version stays in effect.
        """
        name = str((obj.get("metadata") or {}).get("name", ""))
        previous = self.customizations.get(name)
        customization = await self.customizations.apply(obj)
        self._changed(_targets(previous, customization))
        return customization

    def remove_customization(self, name: str) -> bool:
        """Drop a customization by name; False if there was none."""
        previous = self.customizations.get(name)
        removed = self.customizations.remove(name)
        self._changed(_targets(previous))
        return removed

    def add_webhook(self, name: str, backend: Backend) -> Backend | None:
        """Add or replace the backend of a ResourceInterpreterWebhookConfiguration.

        Returns the backend it replaced, if any, for the caller to close.
        """
        previous = self._webhooks.get(name)
        self._webhooks[name] = backend
        self._changed(_handled_by(previous, backend))
        return previous

    def remove_webhook(self, name: str) -> Backend | None:
        """Drop a webhook backend by configuration name; returns it (to close), None if none."""
        removed = self._webhooks.pop(name, None)
        self._changed(_handled_by(removed))
        return removed

    def subscribe(self, listener: ChangeListener) -> None:
        """Call ``listener`` after every customization or webhook change, with its kinds."""
        self._listeners.append(listener)

    def _changed(self, kinds: KindFilter) -> None:
        for listener in self._listeners:
            listener(kinds)

    def webhook_names(self) -> list[str]:
        """The configuration names of the webhook backends, in the order they are asked."""
        return sorted(self._webhooks)

    # --- choosing a source --------------------------------------------------------------------

    def _sources(self) -> Iterator[Backend]:
        yield self.customizations
        for name in sorted(self._webhooks):
            yield self._webhooks[name]
        yield from self._thirdparty
        if self._native is not None:
            yield self._native

    def source_for(self, gvk: GVK, operation: Operation) -> Backend | None:
        """The source that answers ``operation`` for ``gvk``, None when none does."""
        return next((s for s in self._sources() if s.handles(gvk, operation)), None)

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        """Whether any source answers ``operation`` for ``gvk``."""
        return self.source_for(gvk, operation) is not None

    def _pick(self, obj: Mapping[str, Any], operation: Operation) -> Backend:
        gvk = _gvk_of(obj)
        source = self.source_for(gvk, operation)
        if source is None:
            raise NotSupported(gvk, operation)
        return source

    # --- operations ---------------------------------------------------------------------------

    async def get_replicas(self, obj: Obj) -> tuple[int, ReplicaRequirements | None]:
        """InterpretReplica. Raises: NotSupported, InterpreterError."""
        return await self._pick(obj, Operation.INTERPRET_REPLICA).get_replicas(obj)

    async def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        """ReviseReplica. Raises: NotSupported, InterpreterError (IdentityChanged when the
        result is another object)."""
        revised = await self._pick(obj, Operation.REVISE_REPLICA).revise_replica(obj, replicas)
        return _same_identity(Operation.REVISE_REPLICA, obj, revised)

    async def retain(self, desired: Obj, observed: Obj) -> Obj:
        """Retain (chosen by the desired object's kind). Raises: NotSupported, InterpreterError
        (IdentityChanged when the result is another object than ``desired``)."""
        retained = await self._pick(desired, Operation.RETAIN).retain(desired, observed)
        return _same_identity(Operation.RETAIN, desired, retained)

    async def aggregate_status(self, obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        """AggregateStatus. Raises: NotSupported, InterpreterError."""
        return await self._pick(obj, Operation.AGGREGATE_STATUS).aggregate_status(obj, items)

    async def reflect_status(self, obj: Obj) -> Obj | None:
        """InterpretStatus. Raises: NotSupported, InterpreterError."""
        return await self._pick(obj, Operation.INTERPRET_STATUS).reflect_status(obj)

    async def interpret_health(self, obj: Obj) -> bool:
        """InterpretHealth. Raises: NotSupported, InterpreterError."""
        return await self._pick(obj, Operation.INTERPRET_HEALTH).interpret_health(obj)

    async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
        """InterpretDependency, repeats left out as Karmada does.

        Raises:
            NotSupported, InterpreterError.
        """
        source = self._pick(obj, Operation.INTERPRET_DEPENDENCY)
        return unique_dependencies(await source.get_dependencies(obj))

    async def get_components(self, obj: Obj) -> list[Component]:
        """InterpretComponent. Raises: NotSupported, InterpreterError."""
        return await self._pick(obj, Operation.INTERPRET_COMPONENT).get_components(obj)


def _targets(*customizations: Customization | None) -> KindFilter:
    kinds = {c.target for c in customizations if c is not None}
    return kinds.__contains__


def _handled_by(*backends: Backend | None) -> KindFilter:
    def concerned(gvk: GVK) -> bool:
        return any(b.handles(gvk, op) for b in backends if b is not None for op in Operation)

    return concerned


def _same_identity(operation: Operation, given: Obj, result: Obj) -> Obj:
    # Checked here, once for every source (Lua, webhook, bundled, native): what a source
    # returns is written to a member with the controller-manager's rights.
    change = identity_change(identity_of(given), result)
    if change is not None:
        raise IdentityChanged(operation, change)
    return result
