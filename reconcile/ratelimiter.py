"""ratelimiter decides how long a work queue waits before an item that failed is retried.

A RateLimiter answers ``when(item)`` with a delay in seconds and remembers what it needs to (the
item's failures, the shared token bucket); ``forget(item)`` clears an item's history once it
succeeded. Controllers use them through ``WorkQueue.add_rate_limited``. The limiters follow
client-go's: per-item exponential backoff, a token bucket for the overall retry rate, a fast/slow
two-step backoff and the maximum of several. Clocks are injectable so tests step time exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable
from typing import Final, Protocol

__all__ = [
    "DEFAULT_BASE_DELAY",
    "DEFAULT_BUCKET_BURST",
    "DEFAULT_BUCKET_MAX_DELAY",
    "DEFAULT_BUCKET_QPS",
    "DEFAULT_MAX_DELAY",
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

DEFAULT_BASE_DELAY: Final = 0.005
"""First retry delay of the per-item exponential backoff, in seconds."""
DEFAULT_MAX_DELAY: Final = 1000.0
"""Cap of the per-item exponential backoff, in seconds."""
DEFAULT_BUCKET_QPS: Final = 10.0
"""Overall retry rate of the token bucket, in items per second."""
DEFAULT_BUCKET_BURST: Final = 100
"""Retries the token bucket lets through at once before it starts delaying."""
DEFAULT_BUCKET_MAX_DELAY: Final = 1000.0
"""Cap of the token bucket's delay, in seconds (client-go's bucket has none)."""


class RateLimiter(Protocol):
    """How long to wait before retrying an item, with per-item memory."""

    def when(self, item: Hashable) -> float:
        """The delay in seconds before ``item`` should be retried; records the retry."""
        ...

    def forget(self, item: Hashable) -> None:
        """Clear what is remembered about ``item`` (it succeeded or was given up)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many times ``item`` was rate-limited since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item exponential backoff: ``min(base * 2**n, max_delay)`` where n counts past failures.

    The first ``when(item)`` returns ``base``, the next ``2 * base``, and so on up to
    ``max_delay``; ``forget(item)`` starts the item over at ``base``.

    Raises:
        ValueError: if ``base`` or ``max_delay`` is negative.
    """

    def __init__(
        self, base: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY
    ) -> None:
        if base < 0 or max_delay < 0:
            raise ValueError(f"delays must not be negative (base={base}, max_delay={max_delay})")
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """``min(base * 2**failures, max_delay)``, then count one more failure of ``item``."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        try:
            delay = math.ldexp(self.base, failures)
        except OverflowError:
            # After ~1000 failures 2**n no longer fits a float; the cap applies long before.
            return self.max_delay
        return min(delay, self.max_delay)

    def forget(self, item: Hashable) -> None:
        """Reset ``item``'s failure count."""
        if self._failures:  # every success forgets: skip hashing the key when nothing failed
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """Failures of ``item`` since it was last forgotten."""
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """A token bucket shared by all items: ``qps`` retries per second with bursts of ``burst``.

    The bucket starts full. Each ``when`` takes a token; once the bucket is empty the delay is the
    time until the token taken is refilled. client-go lets that debt grow without bound during a
    retry storm; here the debt stops at ``max_delay`` worth of tokens, so no delay exceeds
    ``max_delay`` and the bucket recovers within ``max_delay`` once the storm ends. The bucket
    keeps no per-item state: ``forget`` does nothing and ``num_requeues`` is always 0.

    Raises:
        ValueError: if ``qps`` is not positive, ``burst`` is below 1 or ``max_delay`` is negative.
    """

    def __init__(
        self,
        qps: float = DEFAULT_BUCKET_QPS,
        burst: int = DEFAULT_BUCKET_BURST,
        *,
        max_delay: float = DEFAULT_BUCKET_MAX_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        if max_delay < 0:
            raise ValueError(f"max_delay must not be negative, got {max_delay}")
        self.qps = qps
        self.burst = burst
        self.max_delay = max_delay
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: Hashable) -> float:
        """Take a token; the delay until it is available, at most ``max_delay``."""
        if math.isinf(self.qps):
            return 0.0
        now = self._clock()
        # A clock that steps back must not drain the bucket.
        elapsed = max(0.0, now - self._last)
        self._last = max(self._last, now)
        tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
        self._tokens = max(tokens, -self.max_delay * self.qps)
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        """Nothing to forget: the bucket is shared by all items."""

    def num_requeues(self, item: Hashable) -> int:
        """Always 0: the bucket does not count per item."""
        return 0


class ItemFastSlowRateLimiter:
    """Per-item two-step backoff: ``fast_delay`` for the first ``max_fast_attempts`` tries, then
    ``slow_delay``.

    Raises:
        ValueError: if a delay or ``max_fast_attempts`` is negative.
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        if fast_delay < 0 or slow_delay < 0 or max_fast_attempts < 0:
            raise ValueError(
                "delays and max_fast_attempts must not be negative "
                f"({fast_delay}, {slow_delay}, {max_fast_attempts})"
            )
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """Count an attempt; ``fast_delay`` while attempts <= ``max_fast_attempts``, then slow."""
        attempts = self._attempts.get(item, 0) + 1
        self._attempts[item] = attempts
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        """Reset ``item``'s attempt count."""
        self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """Attempts of ``item`` since it was last forgotten."""
        return self._attempts.get(item, 0)


class MaxOfRateLimiter:
    """Combines limiters: every one is asked (so each records the retry) and the longest delay wins.

    Raises:
        ValueError: if no limiter is given.
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        """The largest delay of all limiters; each of them is called."""
        # A list, not a generator into max(): every limiter must see the retry.
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        """Forget ``item`` in every limiter."""
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """The largest count reported by any limiter."""
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(
    *, clock: Callable[[], float] = time.monotonic
) -> MaxOfRateLimiter:
    """Controllers' default: per-item backoff from 5 ms to 1000 s, overall 10 qps with burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY),
        BucketRateLimiter(DEFAULT_BUCKET_QPS, DEFAULT_BUCKET_BURST, clock=clock),
    )
