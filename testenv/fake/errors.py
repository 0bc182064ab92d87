"""Errors are the failures a FakeClient raises, worded as the apiserver words them.

Each builds the Status the apiserver would answer and raises it as the ``ApiError`` subclass its
reason names, so callers see the same classes, codes and messages as with a live cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconcile.errors import ApiError, api_error
from testenv.fake.registry import FakeKind

__all__ = [
    "bad_request",
    "conflict",
    "details_of",
    "expired",
    "expired_status",
    "failure",
    "invalid",
    "no_subresource",
    "not_found",
]


def failure(
    code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> ApiError:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": dict(details or {}),
        "code": code,
    }
    return api_error(code, status)


def details_of(kind: FakeKind, name: str) -> dict[str, Any]:
    details = {"name": name, "kind": kind.plural}
    if kind.gvk.group:
        details["group"] = kind.gvk.group
    return details


def not_found(kind: FakeKind, name: str) -> ApiError:
    return failure(404, "NotFound", f'{kind.qualified} "{name}" not found', details_of(kind, name))


def no_subresource() -> ApiError:
    # What the apiserver answers for a path it does not serve, e.g. configmaps/x/status.
    return failure(404, "NotFound", "the server could not find the requested resource")


def conflict(
    kind: FakeKind,
    name: str,
    why: str = "the object has been modified; please apply your changes to the latest version "
    "and try again",
) -> ApiError:
    message = f'Operation cannot be fulfilled on {kind.qualified} "{name}": {why}'
    return failure(409, "Conflict", message, details_of(kind, name))


def invalid(
    kind: FakeKind, name: str, field: str, detail: str, reason: str = "FieldValueInvalid"
) -> ApiError:
    subject = kind.qualified if kind.custom else kind.gvk.kind
    details = {
        **details_of(kind, name),
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }
    return failure(422, "Invalid", f'{subject} "{name}" is invalid: {field}: {detail}', details)


def bad_request(message: str) -> ApiError:
    return failure(400, "BadRequest", message)


def expired(message: str) -> ApiError:
    return failure(410, "Expired", message)


def expired_status(requested: int, oldest: int) -> dict[str, Any]:
    error = expired(f"too old resource version: {requested} ({oldest})")
    return error.status
