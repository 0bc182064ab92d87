"""Eventually waits for a condition with a deadline: how tests wait, instead of sleeping.

Its counterpart ``consistently`` (Gomega's Consistently) checks that a condition holds over a
whole window: how a test says that something does not happen, where no later marker can tell.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["consistently", "eventually"]

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


async def consistently(
    probe: Callable[[], Awaitable[object]], *, duration: float = 2.0, interval: float = 0.1
) -> None:
    """Call ``probe`` for ``duration`` seconds and fail at its first falsy answer.

    For a negative check ("this event changed nothing"), a marker is better: a later change
    whose effect shows that the earlier one was processed. Where the code under test offers no
    marker, holding the condition over a window at least spans the time the effect would take.

    Raises:
        AssertionError: ``probe`` returned something falsy; the message holds it and when.
    """
    start = anyio.current_time()
    deadline = start + duration
    while True:
        value = await probe()
        if not value:
            elapsed = anyio.current_time() - start
            raise AssertionError(f"condition stopped holding after {elapsed:.2f}s (got {value!r})")
        if anyio.current_time() >= deadline:
            return
        await anyio.sleep(interval)
