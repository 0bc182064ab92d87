"""Validator is the typed validating webhook: a CustomValidator accepts or refuses one kind.

controller-runtime's ``CustomValidator``: ``validate_create(obj)``, ``validate_update(old, new)``
and ``validate_delete(obj)`` return warnings (shown to the client, e.g. kubectl's
``Warning: ...``) and raise to refuse, the exception's message being what the client reads. An
``AdmissionError`` carries warnings along with the refusal. CONNECT is admitted unchecked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from reconcile.gvk import GVK
from reconcile.objects import Obj
from reconcile.webhook.admission import (
    CREATE,
    DELETE,
    UPDATE,
    AdmissionRequest,
    AdmissionResponse,
    allowed,
    errored,
)
from reconcile.webhook.defaulter import check_kind

__all__ = ["CustomValidator", "ValidatorHandler"]


class CustomValidator(Protocol):
    """Validates objects of one kind when they are created, updated and deleted."""

    async def validate_create(self, obj: Obj) -> Sequence[str] | None:
        """Warnings about ``obj`` about to be created; raise to refuse it."""
        ...

    async def validate_update(self, old: Obj, new: Obj) -> Sequence[str] | None:
        """Warnings about changing ``old`` into ``new``; raise to refuse the change."""
        ...

    async def validate_delete(self, obj: Obj) -> Sequence[str] | None:
        """Warnings about deleting ``obj``; raise to refuse the deletion."""
        ...


class ValidatorHandler:
    """The admission Handler running a CustomValidator for one GVK."""

    def __init__(self, gvk: GVK[Any], validator: CustomValidator) -> None:
        self.gvk = gvk
        self.validator = validator

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Call the validator method for the request's operation; admit with its warnings."""
        refusal = check_kind(self.gvk, request)
        if refusal is not None:
            return refusal
        new, old = request.object, request.old_object
        if request.operation == CREATE and new is not None:
            warnings = await self.validator.validate_create(new)
        elif request.operation == UPDATE and new is not None and old is not None:
            warnings = await self.validator.validate_update(old, new)
        elif request.operation == DELETE and old is not None:
            warnings = await self.validator.validate_delete(old)
        elif request.operation in (CREATE, UPDATE, DELETE):
            return errored(400, f"{request.operation} request without the objects it needs")
        else:
            return allowed()
        return allowed().with_warnings(*(warnings or ()))
