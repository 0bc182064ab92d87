"""Finalizer runs the clean-up of objects being deleted: a registry of finalizers by key.

``Finalizers`` is controller-runtime's ``finalizer.Finalizers``: ``register(key, finalizer)`` once
per finalizer name, then ``await finalizers.finalize(obj)`` in each reconcile. On a live object it
adds every registered key that is missing; on an object being deleted it runs the finalizer of
each registered key the object still has and removes the keys whose finalizer succeeded. It never
adds a key to a deleting object (the apiserver refuses that). The object is changed in place; the
``FinalizeResult`` says whether the object (``updated``) or its status (``status_updated``) must be
written. Finalizers run in registration order (Go's map order is random; ours is not).

A finalizer that fails keeps its key, so it runs again on the next reconcile: finalizers must be
idempotent. Failures are collected, not stopping the others, and raised together as a
``FinalizeError`` that also carries the result so far (the keys of the finalizers that succeeded
are removed: the caller may write that before retrying).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from reconcile.objects import add_finalizer, has_finalizer, is_being_deleted, remove_finalizer

__all__ = ["FinalizeError", "FinalizeFunc", "FinalizeResult", "Finalizer", "Finalizers"]


@dataclass(frozen=True, slots=True)
class FinalizeResult:
    """What a finalize changed in the object, so the caller knows what to write."""

    updated: bool = False
    """The object outside its status changed (a finalizer key added or removed, say)."""
    status_updated: bool = False
    """The object's status changed."""

    def __or__(self, other: FinalizeResult) -> FinalizeResult:
        return FinalizeResult(
            self.updated or other.updated, self.status_updated or other.status_updated
        )


@runtime_checkable
class Finalizer(Protocol):
    """Cleans up after one object being deleted; raising keeps the finalizer key for a retry."""

    async def finalize(self, obj: dict[str, Any]) -> FinalizeResult | None:
        """Release what ``obj`` holds; return what it changed in ``obj`` (None: nothing)."""
        ...


FinalizeFunc = Callable[[dict[str, Any]], Awaitable[FinalizeResult | None]]
"""A finalizer as a plain async function."""


class FinalizeError(Exception):
    """One or more finalizers failed; ``errors`` maps each failed key to what it raised."""

    def __init__(self, errors: Mapping[str, Exception], result: FinalizeResult) -> None:
        self.errors = dict(errors)
        self.result = result
        details = "; ".join(f"finalizer {key!r} failed: {e}" for key, e in self.errors.items())
        super().__init__(details)


class Finalizers:
    """A registry of finalizers by key (the name put in ``metadata.finalizers``)."""

    def __init__(self) -> None:
        self._finalizers: dict[str, FinalizeFunc] = {}

    def register(self, key: str, finalizer: Finalizer | FinalizeFunc) -> None:
        """Run ``finalizer`` for objects with ``key`` in their finalizers once they are deleted.

        Raises:
            ValueError: ``key`` is empty or already registered.
        """
        if not key:
            raise ValueError("a finalizer key must not be empty")
        if key in self._finalizers:
            raise ValueError(f"finalizer for key {key!r} already registered")
        self._finalizers[key] = (
            finalizer.finalize if isinstance(finalizer, Finalizer) else finalizer
        )

    def keys(self) -> tuple[str, ...]:
        """The registered keys, in registration order."""
        return tuple(self._finalizers)

    async def finalize(self, obj: Mapping[str, Any]) -> FinalizeResult:
        """Add missing keys to a live ``obj``, or run and remove the finalizers of a deleting one.

        Changes ``obj`` in place; write it back when the result says so. A typed object (a
        TypedDict) is taken as it is: every object is a dict at run time.

        Raises:
            FinalizeError: some finalizers failed (their keys stay; the others' are removed).
        """
        obj = cast(dict[str, Any], obj)
        result = FinalizeResult()
        errors: dict[str, Exception] = {}
        deleting = is_being_deleted(obj)
        for key, finalize in self._finalizers.items():
            if not deleting:
                result |= FinalizeResult(updated=add_finalizer(obj, key))
            elif has_finalizer(obj, key):
                try:
                    result |= await finalize(obj) or FinalizeResult()
                except Exception as error:  # collected; the caller gets them all
                    errors[key] = error
                    continue
                result |= FinalizeResult(updated=remove_finalizer(obj, key))
        if errors:
            raise FinalizeError(errors, result)
        return result
