"""Helpers shared by the test suites: waiting on conditions with a deadline, never on time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float = 10.0, interval: float = 0.05
) -> T:
    """Call ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    last: T | None = None
    try:
        with anyio.fail_after(timeout):
            while True:
                last = await probe()
                if last:
                    return last
                await anyio.sleep(interval)
    except TimeoutError:
        raise AssertionError(
            f"condition not met within {timeout}s (last value: {last!r})"
        ) from None
