"""Admission serves AdmissionReview v1 requests: a Handler decides, the Webhook speaks HTTP.

controller-runtime's ``pkg/webhook/admission`` in Python. A ``Handler`` has one method,
``async handle(request) -> AdmissionResponse``; build the answer with ``allowed()``,
``denied(message)``, ``errored(code, message)`` or ``patched(original, mutated)`` (the JSON patch
is computed from the two objects) and add warnings with ``with_warnings``. ``Webhook`` wraps a
handler as the HTTP endpoint the apiserver calls: it decodes the review, calls the handler with
the request also available as ``current_request()``, and answers the review with the request's
uid. A handler that raises is a denial carrying the exception's message (403, or the code of an
``AdmissionError`` or an apiserver ``ApiError``), never a 500: the apiserver then shows the user
why. A body that is not an AdmissionReview is answered HTTP 400 (with a review whose status says
why), where controller-runtime answers 200 with that status inside.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

import orjson
import structlog
from aiohttp import web

from reconcile.errors import ApiError
from reconcile.gvk import GVK
from reconcile.jsonpatch import create_json_patch
from reconcile.objects import Obj

__all__ = [
    "ADMISSION_REVIEW_VERSION",
    "CONNECT",
    "CREATE",
    "DELETE",
    "UPDATE",
    "AdmissionError",
    "AdmissionRequest",
    "AdmissionResponse",
    "Handler",
    "HandlerFunc",
    "ReviewError",
    "Webhook",
    "allowed",
    "as_handler",
    "current_request",
    "denied",
    "errored",
    "patched",
    "response_for_error",
]

log = structlog.get_logger("reconcile.webhook")

ADMISSION_REVIEW_VERSION: Final = "admission.k8s.io/v1"
CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
CONNECT: Final = "CONNECT"
KIND: Final = "AdmissionReview"
_OPERATIONS: Final = frozenset({CREATE, UPDATE, DELETE, CONNECT})

_current: ContextVar[AdmissionRequest | None] = ContextVar("admission_request", default=None)


class ReviewError(ValueError):
    """The body is not an AdmissionReview v1 request; the message says what is wrong."""


class AdmissionError(Exception):
    """Raise it from a handler, defaulter or validator to deny with this code and reason.

    Any other exception denies too, with 403 and its message; this one also carries warnings.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int = 403,
        reason: str = "Forbidden",
        warnings: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.warnings = tuple(warnings)


def _gvk(value: Any, what: str) -> GVK:
    if not isinstance(value, Mapping) or not value.get("version") or not value.get("kind"):
        raise ReviewError(f"request.{what} must be an object with group, version and kind")
    return GVK(str(value.get("group") or ""), str(value["version"]), str(value["kind"]))


def _object(value: Any, what: str) -> Obj | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"request.{what} must be an object, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class AdmissionRequest:
    """One admission request (admission.k8s.io/v1 AdmissionRequest), with the fields decoded.

    ``object`` is the object being created or updated (None for DELETE), ``old_object`` the
    current one (UPDATE, DELETE). ``kind`` is the kind sent to this webhook, which the
    apiserver may have converted from ``request_kind`` (matchPolicy Equivalent).
    """

    uid: str
    kind: GVK
    operation: str
    name: str = ""
    namespace: str = ""
    resource: Mapping[str, str] = field(default_factory=dict)
    sub_resource: str = ""
    request_kind: GVK | None = None
    object: Obj | None = None
    old_object: Obj | None = None
    dry_run: bool = False
    user_info: Mapping[str, Any] = field(default_factory=dict)
    options: Obj | None = None
    raw: Obj = field(default_factory=dict, repr=False)
    """The request as sent, for fields not decoded here."""

    @classmethod
    def from_review(cls, review: Any) -> AdmissionRequest:
        """The request inside a decoded AdmissionReview.

        Raises:
            ReviewError: not an AdmissionReview v1 with a request (uid, kind, operation).
        """
        if not isinstance(review, Mapping):
            raise ReviewError("the body is not a JSON object")
        if review.get("kind") != "AdmissionReview":
            raise ReviewError(f"kind is {review.get('kind')!r}, want 'AdmissionReview'")
        if review.get("apiVersion") != ADMISSION_REVIEW_VERSION:
            version = review.get("apiVersion")
            raise ReviewError(f"apiVersion is {version!r}, want {ADMISSION_REVIEW_VERSION!r}")
        request = review.get("request")
        if not isinstance(request, dict):
            raise ReviewError("the AdmissionReview has no request")
        uid, operation = request.get("uid"), request.get("operation")
        if not isinstance(uid, str) or not uid:
            raise ReviewError("request.uid is missing")
        if operation not in _OPERATIONS:
            raise ReviewError(f"request.operation is {operation!r}, want one of {_OPERATIONS}")
        requested = request.get("requestKind")
        return cls(
            uid=uid,
            kind=_gvk(request.get("kind"), "kind"),
            operation=operation,
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            resource=dict(request.get("resource") or {}),
            sub_resource=str(request.get("subResource") or ""),
            request_kind=None if requested is None else _gvk(requested, "requestKind"),
            object=_object(request.get("object"), "object"),
            old_object=_object(request.get("oldObject"), "oldObject"),
            dry_run=bool(request.get("dryRun")),
            user_info=dict(request.get("userInfo") or {}),
            options=_object(request.get("options"), "options"),
            raw=request,
        )


@dataclass(frozen=True)
class AdmissionResponse:
    """A handler's answer (admission.k8s.io/v1 AdmissionResponse without the uid).

    ``code``, ``reason`` and ``message`` become the response's ``status``; ``patch`` is a list of
    JSON Patch operations for the object (mutating webhooks only).
    """

    allowed: bool
    code: int = 200
    message: str = ""
    reason: str = ""
    patch: tuple[Mapping[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)

    def with_warnings(self, *warnings: str) -> AdmissionResponse:
        """This response with ``warnings`` added (shown by kubectl as ``Warning: ...``)."""
        return replace(self, warnings=(*self.warnings, *warnings))

    def to_review(self, uid: str) -> Obj:
        """The AdmissionReview v1 answering request ``uid``."""
        response: Obj = {"uid": uid, "allowed": self.allowed}
        status: Obj = {"code": self.code}
        if self.message:
            status["message"] = self.message
        if self.reason:
            status["reason"] = self.reason
        if not self.allowed or self.message or self.code != 200:
            response["status"] = status
        if self.patch:
            response["patchType"] = "JSONPatch"
            # The apiserver wants the patch as base64 of its JSON: bytes encode to that.
            response["patch"] = _base64(orjson.dumps(list(self.patch)))
        if self.warnings:
            response["warnings"] = list(self.warnings)
        if self.audit_annotations:
            response["auditAnnotations"] = dict(self.audit_annotations)
        return {"apiVersion": ADMISSION_REVIEW_VERSION, "kind": KIND, "response": response}


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def allowed(message: str = "") -> AdmissionResponse:
    """Admit the request (controller-runtime's ``Allowed``)."""
    return AdmissionResponse(allowed=True, message=message)


def denied(message: str, *, code: int = 403, reason: str = "Forbidden") -> AdmissionResponse:
    """Refuse the request; the apiserver shows ``message`` to the client (``Denied``)."""
    return AdmissionResponse(allowed=False, code=code, reason=reason, message=message)


def errored(code: int, message: str) -> AdmissionResponse:
    """Refuse the request because it could not be handled (``Errored``), e.g. 400 bad input."""
    return AdmissionResponse(allowed=False, code=code, message=message)


def patched(original: Obj, mutated: Obj, *, message: str = "") -> AdmissionResponse:
    """Admit the request with the JSON patch that turns ``original`` into ``mutated``.

    controller-runtime's ``PatchResponseFromRaw``: with nothing changed, a plain admission.
    """
    patch = create_json_patch(original, mutated)
    return AdmissionResponse(allowed=True, message=message, patch=tuple(patch))


def response_for_error(error: BaseException) -> AdmissionResponse:
    """The denial an exception from a handler turns into, with its message and warnings.

    An ``AdmissionError`` keeps its code and reason, an apiserver ``ApiError`` its Status (as
    controller-runtime does with an ``APIStatus`` error); anything else is a 403 Forbidden.
    """
    if isinstance(error, AdmissionError):
        response = denied(error.message, code=error.code, reason=error.reason)
        return response.with_warnings(*error.warnings)
    if isinstance(error, ApiError):
        return denied(error.message or str(error), code=error.code or 403, reason=error.reason)
    return denied(str(error) or type(error).__name__)


class Handler(Protocol):
    """Decides one admission request."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Allow, deny or patch ``request``; raising denies with the exception's message."""
        ...


HandlerFunc = Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]
"""A plain ``async def handle(request) -> AdmissionResponse`` is a Handler too (``as_handler``)."""


@dataclass(frozen=True)
class _FuncHandler:
    func: HandlerFunc

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        return await self.func(request)


def as_handler(handler: Handler | HandlerFunc) -> Handler:
    """``handler`` as a Handler: objects with ``handle`` as they are, functions wrapped."""
    if hasattr(handler, "handle"):
        return handler
    if callable(handler):
        return _FuncHandler(handler)
    raise TypeError(f"{handler!r} is neither an admission Handler nor an async function")


def current_request() -> AdmissionRequest | None:
    """The admission request being handled in this task (controller-runtime's
    ``RequestFromContext``): defaulters and validators read the user or the operation here."""
    return _current.get()


def _review_response(response: AdmissionResponse, uid: str, status: int = 200) -> web.Response:
    body = orjson.dumps(response.to_review(uid))
    return web.Response(status=status, body=body, content_type="application/json")


class Webhook:
    """The HTTP endpoint of one admission Handler (controller-runtime's ``admission.Webhook``).

    Register it on a WebhookServer; the server bounds the body's size before this reads it.
    """

    def __init__(self, handler: Handler | HandlerFunc) -> None:
        self.handler = as_handler(handler)

    async def __call__(self, http: web.Request) -> web.StreamResponse:
        """Answer one AdmissionReview."""
        body = await http.read()
        if http.content_type != "application/json":
            message = f"contentType={http.content_type}, expected application/json"
            return _review_response(errored(400, message), "", 400)
        try:
            request = AdmissionRequest.from_review(orjson.loads(body))
        except (orjson.JSONDecodeError, ReviewError) as error:
            log.info("bad admission request", path=http.path, error=str(error))
            return _review_response(errored(400, f"malformed AdmissionReview: {error}"), "", 400)
        return _review_response(await self.review(request), request.uid)

    async def review(self, request: AdmissionRequest) -> AdmissionResponse:
        """The handler's answer to ``request``; an exception becomes a denial with its message."""
        token = _current.set(request)
        try:
            return await self.handler.handle(request)
        except Exception as error:
            log.info(
                "admission handler refused with an exception",
                uid=request.uid,
                kind=str(request.kind),
                error=f"{type(error).__name__}: {error}",
            )
            return response_for_error(error)
        finally:
            _current.reset(token)
