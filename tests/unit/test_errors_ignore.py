"""``ignore_not_found`` / ``ignore_already_exists``: controller-runtime's IgnoreNotFound and
IgnoreAlreadyExists."""

from __future__ import annotations

from reconcile import (
    AlreadyExists,
    ApiError,
    Conflict,
    api_error,
    ignore_already_exists,
    ignore_not_found,
)


def _status(code: int, reason: str) -> ApiError:
    return api_error(code, {"kind": "Status", "code": code, "reason": reason, "message": reason})


def test_not_found_is_ignored_and_anything_else_returned() -> None:
    assert ignore_not_found(_status(404, "NotFound")) is None
    conflict = _status(409, "Conflict")
    assert ignore_not_found(conflict) is conflict
    bug = KeyError("x")
    assert ignore_not_found(bug) is bug


def test_already_exists_is_ignored_but_not_its_sibling_409() -> None:
    assert ignore_already_exists(_status(409, "AlreadyExists")) is None
    conflict = _status(409, "Conflict")
    assert isinstance(conflict, Conflict)
    assert ignore_already_exists(conflict) is conflict
    assert isinstance(_status(409, "AlreadyExists"), AlreadyExists)


def test_collected_errors_keep_only_what_matters() -> None:
    errors: list[Exception] = [_status(404, "NotFound"), ValueError("bad")]
    kept = [e for e in map(ignore_not_found, errors) if e is not None]
    assert [type(e) for e in kept] == [ValueError]
