"""Defaulter is the typed mutating webhook: a CustomDefaulter fills in fields of one kind.

controller-runtime's ``CustomDefaulter``: ``async default(obj) -> None`` changes the object in
place; ``DefaulterHandler`` answers CREATE and UPDATE with the JSON patch from the object as sent
to the object as defaulted, and admits DELETE and CONNECT untouched (controller-runtime skips
DELETE). An exception denies the request with its message (see ``admission.response_for_error``).
The handler serves one GVK: a request for another kind is refused with 400, since the object
would not have the fields the defaulter expects.
"""

from __future__ import annotations

from typing import Any, Protocol

from reconcile.gvk import GVK
from reconcile.objects import Obj, deep_copy
from reconcile.webhook.admission import (
    CREATE,
    UPDATE,
    AdmissionRequest,
    AdmissionResponse,
    allowed,
    errored,
    patched,
)

__all__ = ["CustomDefaulter", "DefaulterHandler", "check_kind"]


class CustomDefaulter(Protocol):
    """Sets defaults on objects of one kind."""

    async def default(self, obj: Obj) -> None:
        """Fill in ``obj``'s unset fields in place; raise to refuse the request."""
        ...


def check_kind(gvk: GVK[Any], request: AdmissionRequest) -> AdmissionResponse | None:
    """A 400 refusal when ``request`` is not for ``gvk`` (a configuration that sends the
    webhook another kind or version), else None."""
    if request.kind == gvk:
        return None
    return errored(400, f"this webhook serves {gvk}, not {request.kind}")


class DefaulterHandler:
    """The admission Handler running a CustomDefaulter for one GVK."""

    def __init__(self, gvk: GVK[Any], defaulter: CustomDefaulter) -> None:
        self.gvk = gvk
        self.defaulter = defaulter

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Default the request's object and answer with the patch that does it."""
        if request.operation not in (CREATE, UPDATE):
            return allowed()
        refusal = check_kind(self.gvk, request)
        if refusal is not None:
            return refusal
        if request.object is None:
            return errored(400, f"{request.operation} request without an object")
        obj = deep_copy(request.object)
        await self.defaulter.default(obj)
        return patched(request.object, obj)
