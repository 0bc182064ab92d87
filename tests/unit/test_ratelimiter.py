"""Rate limiters return client-go's delays exactly, stepped with a fake clock."""

from __future__ import annotations

import math

import pytest

from reconcile.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from tests.builders import FakeClock


def test_exponential_doubles_from_base_per_item() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert limiter.num_requeues("a") == 5
    assert limiter.when("b") == 0.005, "failures are counted per item"
    assert limiter.num_requeues("b") == 1


def test_exponential_is_capped_at_max_delay() -> None:
    limiter = ItemExponentialFailureRateLimiter(1.0, 10.0)
    assert [limiter.when("a") for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_exponential_survives_more_failures_than_a_float_exponent_holds() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(1200)]
    assert delays[-1] == 1000.0
    assert limiter.num_requeues("a") == 1200


def test_exponential_forget_starts_over() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.5, 100.0)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.5


def test_exponential_defaults_are_the_controller_defaults() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    assert (limiter.base, limiter.max_delay) == (0.005, 1000.0)


def test_bucket_lets_the_burst_through_then_spaces_by_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(4.0, 2, clock=clock)
    assert [limiter.when(i) for i in range(5)] == [0.0, 0.0, 0.25, 0.5, 0.75]


def test_bucket_refills_with_time_up_to_burst() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(4.0, 2, clock=clock)
    assert [limiter.when(i) for i in range(3)] == [0.0, 0.0, 0.25]
    clock.time += 0.5  # two tokens back; one pays the debt
    assert limiter.when("x") == 0.0
    assert limiter.when("y") == 0.25
    clock.time += 100.0  # refills to burst only
    assert [limiter.when(i) for i in range(3)] == [0.0, 0.0, 0.25]


def test_bucket_delay_is_capped_and_recovers_within_the_cap() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(1.0, 1, max_delay=3.0, clock=clock)
    delays = [limiter.when(i) for i in range(10)]
    assert delays == [0.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    clock.time += 4.0  # the debt stopped at 3 tokens, so 4 s leaves one token
    assert limiter.when("x") == 0.0


def test_bucket_ignores_a_clock_stepping_back() -> None:
    clock = FakeClock()
    clock.time = 10.0
    limiter = BucketRateLimiter(1.0, 1, clock=clock)
    assert limiter.when("a") == 0.0
    clock.time = 5.0
    assert limiter.when("b") == 1.0


def test_bucket_keeps_no_per_item_state() -> None:
    limiter = BucketRateLimiter(clock=FakeClock())
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_bucket_with_infinite_qps_never_delays() -> None:
    limiter = BucketRateLimiter(math.inf, 1, clock=FakeClock())
    assert {limiter.when(i) for i in range(100)} == {0.0}


@pytest.mark.parametrize(
    ("qps", "burst", "max_delay"),
    [(0.0, 1, 1.0), (-1.0, 1, 1.0), (1.0, 0, 1.0), (1.0, 1, -1.0)],
    ids=["zero qps", "negative qps", "zero burst", "negative cap"],
)
def test_bucket_rejects_bad_settings(qps: float, burst: int, max_delay: float) -> None:
    with pytest.raises(ValueError, match="must"):
        BucketRateLimiter(qps, burst, max_delay=max_delay)


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.1, 10.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.1, 0.1, 0.1, 10.0, 10.0]
    assert limiter.num_requeues("a") == 5
    assert limiter.when("b") == 0.1
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.1


def test_max_of_returns_the_longest_delay_and_calls_every_limiter() -> None:
    exponential = ItemExponentialFailureRateLimiter(1.0, 100.0)
    fast_slow = ItemFastSlowRateLimiter(3.0, 50.0, 2)
    limiter = MaxOfRateLimiter(exponential, fast_slow)
    assert [limiter.when("a") for _ in range(4)] == [3.0, 3.0, 50.0, 50.0]
    assert exponential.num_requeues("a") == 4, "every limiter records every retry"
    assert fast_slow.num_requeues("a") == 4
    assert limiter.when("a") == 50.0  # exponential: 16
    assert limiter.when("a") == 50.0  # exponential: 32
    assert limiter.when("a") == 64.0


def test_max_of_forgets_everywhere_and_reports_the_largest_count() -> None:
    exponential = ItemExponentialFailureRateLimiter(1.0, 100.0)
    fast_slow = ItemFastSlowRateLimiter(3.0, 50.0, 2)
    limiter = MaxOfRateLimiter(exponential, fast_slow)
    limiter.when("a")
    fast_slow.when("a")
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert (exponential.num_requeues("a"), fast_slow.num_requeues("a")) == (0, 0)


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()


def test_default_controller_rate_limiter_combines_backoff_and_bucket() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    # Per item: 5 ms doubling; the bucket's burst of 100 keeps it out of the way at first.
    assert [limiter.when("a") for _ in range(3)] == [0.005, 0.01, 0.02]
    for i in range(97):
        assert limiter.when(i) == 0.005
    # The burst is spent: 10 qps means 0.1 s per retry, more than a fresh item's 5 ms.
    assert limiter.when("b") == pytest.approx(0.1)
    assert limiter.when("c") == pytest.approx(0.2)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
