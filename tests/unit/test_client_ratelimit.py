"""The client's request pacing on a fake clock: the QPS/burst token bucket (off by default) and
429 retries."""

from __future__ import annotations

import anyio
import pytest

from reconcile.client.client import Client
from reconcile.client.config import ClusterConfig
from reconcile.errors import NotFound, TooManyRequests, api_error
from reconcile.flowcontrol import (
    DEFAULT_CLIENT_BURST,
    DEFAULT_CLIENT_QPS,
    RetryAfter,
    TokenBucket,
    Unlimited,
    parse_retry_after,
)
from tests.builders import FakeClock

asyncio_test = pytest.mark.asyncio(loop_scope="session")


class StoppedClock(FakeClock):
    """Time stands still; sleepers wait until cancelled."""

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await anyio.sleep_forever()


def throttled(retry_after: str | None) -> TooManyRequests:
    body = {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow down"}
    error = api_error(429, body, retry_after=parse_retry_after(retry_after))
    assert isinstance(error, TooManyRequests)
    return error


def test_bucket_defaults_are_controller_runtimes_before_v0_21() -> None:
    bucket = TokenBucket()
    assert (bucket.qps, bucket.burst) == (DEFAULT_CLIENT_QPS, DEFAULT_CLIENT_BURST) == (20.0, 30)


@asyncio_test
async def test_burst_goes_at_once_then_qps_paces() -> None:
    clock = FakeClock(sleeps_advance=True)
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    for _ in range(3):
        await bucket.acquire()
    assert clock.sleeps == []
    await bucket.acquire()
    await bucket.acquire()
    assert clock.sleeps == pytest.approx([0.1, 0.1])


def test_reservations_queue_up_in_order() -> None:
    bucket = TokenBucket(qps=2, burst=1, clock=FakeClock(sleeps_advance=True))
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.5, 1.0, 1.5])


def test_tokens_refill_up_to_the_burst() -> None:
    clock = FakeClock(sleeps_advance=True)
    bucket = TokenBucket(qps=5, burst=2, clock=clock)
    assert bucket.try_acquire()
    assert bucket.try_acquire()
    assert not bucket.try_acquire()
    clock.time += 0.2
    assert bucket.try_acquire()
    clock.time += 100
    assert bucket.tokens == 2


@asyncio_test
async def test_a_cancelled_waiter_returns_its_token() -> None:
    clock = StoppedClock()
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    await bucket.acquire()
    with anyio.move_on_after(0.01):
        await bucket.acquire()
    assert clock.sleeps == [1.0]
    # Without the refund the next caller would wait 2 s, behind the abandoned reservation.
    assert bucket.reserve() == 1.0


@pytest.mark.parametrize(
    ("qps", "burst"),
    [pytest.param(0, 1, id="zero-qps"), pytest.param(1, 0, id="zero-burst")],
)
def test_nonsense_settings_are_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        TokenBucket(qps=qps, burst=burst)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        pytest.param("3", 3.0, id="seconds"),
        pytest.param(" 1 ", 1.0, id="spaces"),
        pytest.param(None, None, id="absent"),
        pytest.param("Wed, 21 Oct 2015 07:28:00 GMT", None, id="http-date"),
        pytest.param("-1", None, id="negative"),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


@asyncio_test
async def test_429_waits_the_servers_retry_after_then_succeeds() -> None:
    clock = FakeClock(sleeps_advance=True)
    answers: list[TooManyRequests | str] = [throttled("2"), throttled(None), "ok"]

    async def attempt() -> str:
        answer = answers.pop(0)
        if isinstance(answer, TooManyRequests):
            raise answer
        return answer

    assert await RetryAfter(clock=clock).run(attempt) == "ok"
    assert clock.sleeps == [2.0, 1.0]  # the header, then the default when it is missing


@asyncio_test
async def test_429_retries_are_bounded_and_capped() -> None:
    clock = FakeClock(sleeps_advance=True)
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise throttled("3600")

    with pytest.raises(TooManyRequests):
        await RetryAfter(max_retries=3, max_delay=60, clock=clock).run(attempt)
    assert calls == 4
    assert clock.sleeps == [60, 60, 60]


@asyncio_test
async def test_other_errors_are_not_retried() -> None:
    clock = FakeClock(sleeps_advance=True)
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise api_error(404, {"kind": "Status", "reason": "NotFound"})

    with pytest.raises(NotFound):
        await RetryAfter(clock=clock).run(attempt)
    assert (calls, clock.sleeps) == (1, [])


def test_a_client_has_no_bucket_unless_given_qps_or_burst() -> None:
    # controller-runtime since v0.21: no client-side limit by default, APF paces instead.
    config = ClusterConfig("https://127.0.0.1:1", source="test")
    assert isinstance(Client(config).limiter, Unlimited)
    paced = Client(config, qps=5).limiter
    assert isinstance(paced, TokenBucket)
    assert (paced.qps, paced.burst) == (5, DEFAULT_CLIENT_BURST)
    assert isinstance(Client(config, burst=7).limiter, TokenBucket)
