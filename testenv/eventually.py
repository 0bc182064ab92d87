"""Eventually waits for a condition with a deadline: how tests wait, instead of sleeping."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["eventually"]

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float = 10.0, interval: float = 0.05
) -> T:
    """Call ``probe`` until it returns something truthy and return that; like Gomega's Eventually.

    Raises:
        AssertionError: still falsy after ``timeout`` seconds; the message holds the last value.
    """
    last: T | None = None
    try:
        with anyio.fail_after(timeout):
            while True:
                last = await probe()
                if last:
                    return last
                await anyio.sleep(interval)
    except TimeoutError:
        raise AssertionError(f"condition not met within {timeout}s (last: {last!r})") from None
