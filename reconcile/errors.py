"""Errors are the typed failures the apiserver reports, chosen by the Status reason it sends.

::

    ApiError                      any non-2xx answer; .status is the apiserver's Status object
    ├── BadRequest                400
    ├── Unauthorized              401
    ├── Forbidden                 403
    ├── NotFound                  404
    ├── MethodNotAllowed          405
    ├── AlreadyExists             409, reason AlreadyExists
    ├── Conflict                  409, reason Conflict (stale resourceVersion, failed precondition)
    ├── Gone                      410, reasons Gone / Expired ("too old resource version")
    ├── Invalid                   422
    ├── TooManyRequests           429, .retry_after from the Retry-After header
    ├── InternalError             500
    │   └── ResponseTooLarge      the client's own: an answer, or one watch event, over its cap
    ├── ServiceUnavailable        503
    └── ServerTimeout             504, reasons Timeout / ServerTimeout
    NoKindMatch                   the apiserver serves no resource for a kind (a LookupError)

Two 409s differ only by reason, so the class follows the reason first and the HTTP code second.
``ignore_not_found`` and ``ignore_already_exists`` are controller-runtime's
``client.IgnoreNotFound`` and ``IgnoreAlreadyExists``; around a single call,
``contextlib.suppress(NotFound)`` says the same.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NoKindMatch",
    "NotFound",
    "ResponseTooLarge",
    "ServerTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "api_error",
    "ignore_already_exists",
    "ignore_not_found",
]

E = TypeVar("E", bound=BaseException)


class ApiError(Exception):
    """The apiserver refused a request; carries its Status (code, reason, message, details)."""

    def __init__(self, status: dict[str, Any], *, retry_after: float | None = None) -> None:
        self.status = status
        self.code: int = int(status.get("code") or 0)
        self.reason: str = str(status.get("reason") or "")
        self.message: str = str(status.get("message") or "")
        self.retry_after = retry_after
        super().__init__(f"{self.code} {self.reason or 'Error'}: {self.message}")

    @property
    def details(self) -> dict[str, Any]:
        """The Status details (name, kind, causes), empty when the server sent none."""
        details: dict[str, Any] = self.status.get("details") or {}
        return details


class BadRequest(ApiError):
    """400: the request was malformed."""


class Unauthorized(ApiError):
    """401: no valid credentials."""


class Forbidden(ApiError):
    """403: RBAC denied the verb on the resource."""


class NotFound(ApiError):
    """404: no such object (or no such resource path)."""


class MethodNotAllowed(ApiError):
    """405: the resource does not support the verb."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: create of a name that is taken."""


class Conflict(ApiError):
    """409 Conflict: a stale resourceVersion or a failed precondition; re-read and retry."""


class Gone(ApiError):
    """410: the requested resourceVersion was compacted away; list again."""


class Invalid(ApiError):
    """422: validation failed; ``details["causes"]`` names the fields."""


class TooManyRequests(ApiError):
    """429: throttled by API priority and fairness; wait ``retry_after`` seconds."""


class InternalError(ApiError):
    """500: the apiserver failed."""


class ResponseTooLarge(InternalError):
    """The client stopped reading an answer (or one watch event) longer than its cap of ``limit``
    bytes: the server, e.g. a compromised member cluster, is not trusted with the reader's memory.

    A 500 InternalError, as client-go reports a watch event its decoder refuses (apimachinery's
    streaming decoder caps one at 16 MiB; the watch then ends with an InternalError Status, cause
    ``ClientWatchDecoding``), so callers that handle an apiserver's failure handle this one.
    """

    def __init__(self, what: str, limit: int) -> None:
        message = f"{what} exceeded {limit} bytes, the client's cap: not read further"
        cause = {"type": "ResponseTooLarge", "message": message}
        status = {"code": 500, "reason": "InternalError", "message": message}
        super().__init__({**status, "details": {"causes": [cause]}})
        self.limit = limit


class ServiceUnavailable(ApiError):
    """503: the apiserver (or an aggregated API behind it) is not available."""


class ServerTimeout(ApiError):
    """504 or reason Timeout/ServerTimeout: the server gave up; retrying may succeed."""


class NoKindMatch(LookupError):
    """The apiserver serves no resource for this group/version/kind (e.g. a CRD not installed)."""


_BY_REASON: Final[dict[str, type[ApiError]]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}

_BY_CODE: Final[dict[int, type[ApiError]]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def api_error(code: int, body: Any, *, retry_after: float | None = None) -> ApiError:
    """The typed error for an answer with HTTP ``code`` and decoded ``body``.

    ``body`` is the Status the apiserver sent, or anything else (plain text from a proxy), which
    becomes the message of a synthesized Status.
    """
    if isinstance(body, dict) and body.get("kind") == "Status":
        status = {**body, "code": body.get("code") or code}
    else:
        text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
        status = {"kind": "Status", "status": "Failure", "code": code, "message": text.strip()}
    cls = _BY_REASON.get(str(status.get("reason") or "")) or _BY_CODE.get(code, ApiError)
    return cls(status, retry_after=retry_after)


def ignore_not_found(error: E) -> E | None:
    """None if ``error`` is a ``NotFound``, else ``error`` (controller-runtime's IgnoreNotFound),
    for code that collects errors; around one call, ``contextlib.suppress(NotFound)``."""
    return None if isinstance(error, NotFound) else error


def ignore_already_exists(error: E) -> E | None:
    """None if ``error`` is an ``AlreadyExists``, else ``error`` (IgnoreAlreadyExists)."""
    return None if isinstance(error, AlreadyExists) else error
