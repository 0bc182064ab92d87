"""Ratelimit paces a client's requests to the apiserver: a QPS/burst token bucket plus 429 retries.

The bucket is client-go's flowcontrol limiter: ``burst`` requests may go at once, then ``qps`` per
second; a request that finds the bucket empty waits its turn instead of failing. Its defaults are
those controller-runtime gave a rest.Config that left them unset until v0.21 (QPS 20, burst 30).
A Client has no bucket unless asked for one: controller-runtime since v0.21 disables client-side
limiting by default and relies on the apiserver's priority and fairness (APF), as SIG API
Machinery advises; a bucket of 20 QPS would cap a controller-manager at a few objects a second.

``RetryAfter`` is the other half: when the apiserver's priority and fairness still answers 429
TooManyRequests, wait the ``Retry-After`` it sent and try again, a bounded number of times
(client-go retries up to 10 times). Both take an injectable ``Clock`` so tests step time instead
of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TypeVar

import anyio

from reconcile.errors import TooManyRequests

__all__ = [
    "Clock",
    "DEFAULT_CLIENT_BURST",
    "DEFAULT_CLIENT_QPS",
    "DEFAULT_THROTTLE_RETRIES",
    "MonotonicClock",
    "RequestLimiter",
    "RetryAfter",
    "TokenBucket",
    "Unlimited",
    "parse_retry_after",
]

T = TypeVar("T")

DEFAULT_CLIENT_QPS: Final = 20.0
"""Requests per second once the burst is spent (controller-runtime's default before v0.21)."""
DEFAULT_CLIENT_BURST: Final = 30
"""Requests that may go at once after a quiet period (controller-runtime's before v0.21)."""
DEFAULT_THROTTLE_RETRIES: Final = 10
"""How many times a request answered 429 is retried before the error is raised (client-go's)."""
DEFAULT_RETRY_AFTER: Final = 1.0
"""Seconds to wait after a 429 that carried no usable Retry-After header."""
MAX_RETRY_AFTER: Final = 60.0
"""Upper bound on one wait, whatever the server asks: a bad header must not park a client."""


class Clock(Protocol):
    """Where limiters read the time and how they wait: monotonic seconds."""

    def now(self) -> float:
        """The current time in seconds, monotonic."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``anyio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class RequestLimiter(Protocol):
    """Anything that can pace requests: ``acquire`` returns when the next one may go."""

    async def acquire(self) -> None:
        """Wait until a request may be sent."""
        ...


class Unlimited:
    """A limiter that never waits (for tests and for clients throttled elsewhere)."""

    async def acquire(self) -> None:
        return None


class TokenBucket:
    """A token bucket: holds up to ``burst`` tokens, refilled at ``qps`` per second.

    Each request takes one token; when none is left the request reserves the next one and waits
    until it has been refilled, so waiting requests are served in the order they arrived.

    Raises:
        ValueError: ``qps`` is not positive or ``burst`` is below 1 (at construction).
    """

    def __init__(
        self,
        *,
        qps: float = DEFAULT_CLIENT_QPS,
        burst: int = DEFAULT_CLIENT_BURST,
        clock: Clock | None = None,
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock: Clock = clock or MonotonicClock()
        self._tokens = float(burst)
        self._updated = self._clock.now()

    def _refill(self) -> None:
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.qps)
        self._updated = now

    @property
    def tokens(self) -> float:
        """Tokens available now; negative while requests are waiting for reserved ones."""
        self._refill()
        return self._tokens

    def reserve(self) -> float:
        """Take a token now or reserve a future one; returns the seconds until it is available."""
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_acquire(self) -> bool:
        """Take a token if one is available now, without waiting."""
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    async def acquire(self) -> None:
        """Wait for a token. A caller cancelled while waiting gives its reservation back."""
        delay = self.reserve()
        if delay <= 0:
            return
        try:
            await self._clock.sleep(delay)
        except BaseException:
            # The reserved token was never used: return it so later callers do not wait for it.
            self._refill()
            self._tokens = min(float(self.burst), self._tokens + 1.0)
            raise


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (the apiserver sends whole seconds), or None."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: the apiserver never sends one; fall back to the default
    return seconds if seconds >= 0 else None


class RetryAfter:
    """Retries a request answered 429 TooManyRequests after the delay the server asked for.

    ``max_retries`` bounds the retries (the error is raised after that many); each wait is the
    error's ``retry_after`` (``DEFAULT_RETRY_AFTER`` when absent) capped at ``max_delay``.
    """

    def __init__(
        self,
        *,
        max_retries: int = DEFAULT_THROTTLE_RETRIES,
        max_delay: float = MAX_RETRY_AFTER,
        clock: Clock | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.max_delay = max_delay
        self._clock: Clock = clock or MonotonicClock()

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Await ``attempt()`` until it does not raise TooManyRequests, or retries run out.

        Raises:
            TooManyRequests: still throttled after ``max_retries`` retries.
        """
        retries = 0
        while True:
            try:
                return await attempt()
            except TooManyRequests as error:
                if retries >= self.max_retries:
                    raise
                retries += 1
                delay = DEFAULT_RETRY_AFTER if error.retry_after is None else error.retry_after
                await self._clock.sleep(min(delay, self.max_delay))
