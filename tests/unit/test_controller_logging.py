"""One line per problem: expected failures are logged without tracebacks, repeats at debug."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
import structlog

from reconcile import (
    Channel,
    Controller,
    ControllerOptions,
    EnqueueRequestForObject,
    ExpectedError,
    FinalizeError,
    FinalizeResult,
    ItemExponentialFailureRateLimiter,
    NotFound,
    Request,
    Result,
    configure_logging,
)
from reconcile.objects import Obj
from testenv import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

FAILED = "reconcile failed, requeued with backoff"


class Unmanaged(ExpectedError):
    reason = "Unmanaged"


@asynccontextmanager
async def _failing(failures: list[BaseException]) -> AsyncIterator[list[str]]:
    """A controller whose reconciles of key ``ns/a`` raise ``failures`` in turn, then succeed."""
    calls: list[str] = []

    async def reconcile(request: Request) -> Result | None:
        calls.append(request.name)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return None

    fast = ControllerOptions(rate_limiter=ItemExponentialFailureRateLimiter(base=0.001))
    controller = Controller("logging", reconcile, options=fast)
    send, receive = anyio.create_memory_object_stream[Obj](10)
    controller.watch(Channel(receive, EnqueueRequestForObject()))
    async with anyio.create_task_group() as group:
        await group.start(controller.run)
        await send.send({"metadata": {"name": "a", "namespace": "ns"}})
        yield calls
        await eventually(lambda: _done(calls, len(failures) + 1), timeout=10)
        group.cancel_scope.cancel()


async def _done(calls: list[str], expected: int) -> bool:
    return len(calls) >= expected


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
async def test_a_repeated_expected_failure_is_one_line_per_retry_and_one_warning(
    level: int, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(level=level)
    try:
        capsys.readouterr()
        async with _failing([Unmanaged("exists, not managed by Karmada")] * 6):
            pass
        err = capsys.readouterr().err
    finally:
        structlog.reset_defaults()
    failed = [line for line in _lines(err) if FAILED in line]
    assert "Traceback" not in err
    assert all("reason=Unmanaged" in line and "not managed" in line for line in failed)
    assert all("name=a" in line and "namespace=ns" in line for line in failed)
    warnings = [line for line in failed if "warning" in line]
    assert len(warnings) == 1, failed
    # At debug level every retry has its line, one each; at info only the first is shown.
    assert len(failed) == (6 if level == logging.DEBUG else 1), failed


async def test_a_changed_failure_is_news_and_a_bug_keeps_its_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging()
    try:
        capsys.readouterr()
        failures: list[BaseException] = [
            Unmanaged("first"),
            Unmanaged("first"),
            Unmanaged("second"),
            KeyError("bug"),
            KeyError("bug"),
        ]
        async with _failing(failures):
            pass
        err = capsys.readouterr().err
    finally:
        structlog.reset_defaults()
    failed = [line for line in _lines(err) if FAILED in line]
    assert len(failed) == 4, failed  # first, second, and each bug
    assert err.count("Traceback (most recent call last):") == 2
    assert err.count("KeyError: 'bug'") == 2


async def test_finalizers_failing_only_with_api_errors_log_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The finalizer race: the object went away between the read and a finalizer's write.
    gone = NotFound({"code": 404, "reason": "NotFound", "message": 'configmaps "a" not found'})
    configure_logging()
    try:
        capsys.readouterr()
        async with _failing([FinalizeError({"example.com/copies": gone}, FinalizeResult())]):
            pass
        err = capsys.readouterr().err
    finally:
        structlog.reset_defaults()
    failed = [line for line in _lines(err) if FAILED in line]
    assert "Traceback" not in err
    assert len(failed) == 1, failed
    assert "reason=FinalizeError" in failed[0]
    assert "not found" in failed[0]


async def test_a_finalizer_bug_keeps_its_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging()
    try:
        capsys.readouterr()
        async with _failing([FinalizeError({"k": KeyError("bug")}, FinalizeResult())]):
            pass
        err = capsys.readouterr().err
    finally:
        structlog.reset_defaults()
    assert err.count("Traceback (most recent call last):") == 1
