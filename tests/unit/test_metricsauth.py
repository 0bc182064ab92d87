"""Metrics authentication and authorization (controller-runtime's filters) on a scripted apiserver.

The reviews go to an in-memory client that answers TokenReviews and SubjectAccessReviews from
tables and records each one, so the answers (401/403/500/200), the review bodies and the caching
(TTL on a fake clock, bounded size) are checked without a cluster; tests/integration/
test_metrics_auth.py runs the same filter against a real kube-apiserver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Any

import anyio
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Counter

from reconcile.errors import Forbidden
from reconcile.serving.auth import (
    ReviewSlots,
    ReviewsOverloaded,
    SubjectAccessReviewAuthorizer,
    TokenReviewAuthenticator,
    UserInfo,
    bearer_token,
    with_authentication_and_authorization,
)
from reconcile.serving.server import HTTPServer
from tests.builders import FakeClock

asyncio_test = pytest.mark.asyncio(loop_scope="session")

ALICE = {"username": "alice", "uid": "u-1", "groups": ["readers"], "extra": {"scope": ["a"]}}


class Reviews:
    """Answers reviews: tokens → users, allowed (user, verb, path); records every body."""

    def __init__(self) -> None:
        self.users: dict[str, Mapping[str, Any]] = {"good": ALICE, "bob": {"username": "bob"}}
        self.allowed: set[tuple[str, str, str]] = {("alice", "get", "/metrics")}
        self.sent: list[dict[str, Any]] = []
        self.fail: Exception | None = None

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append(dict(obj))
        if self.fail is not None:
            raise self.fail
        spec = obj["spec"]
        if obj["kind"] == "TokenReview":
            user = self.users.get(spec["token"])
            return {"status": {"authenticated": True, "user": user} if user else {}}
        attributes = spec["nonResourceAttributes"]
        key = (spec["user"], attributes["verb"], attributes["path"])
        return {"status": {"allowed": key in self.allowed, "reason": "table"}}

    def kinds(self) -> list[str]:
        return [body["kind"] for body in self.sent]


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param(None, None, id="no header"),
        pytest.param("", None, id="empty header"),
        pytest.param("Bearer abc.def", "abc.def", id="bearer"),
        pytest.param("bearer  abc ", "abc", id="scheme in any case, spaces trimmed"),
        pytest.param("Basic YWxpY2U6cHc=", None, id="another scheme"),
        pytest.param("Bearer", None, id="no token"),
        pytest.param("Bearer a b", None, id="two words"),
        pytest.param("Bearer t\u00e9", None, id="not ascii"),
        pytest.param("Bearer a\x01b", None, id="control character"),
    ],
)
def test_bearer_token_reads_bearer_headers(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_user_info_from_a_token_review_keeps_only_well_formed_fields() -> None:
    user = UserInfo.from_review({"username": "x", "groups": ["g", 3], "extra": {"k": ["v", None]}})
    assert user == UserInfo("x", groups=("g",), extra=(("k", ("v",)),))
    assert UserInfo.from_review({"username": ""}) is None
    assert UserInfo.from_review({"groups": ["g"]}) is None


@pytest_asyncio.fixture(loop_scope="session")
async def reviews() -> Reviews:
    return Reviews()


@pytest_asyncio.fixture(loop_scope="session")
async def http(reviews: Reviews) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    registry = CollectorRegistry()
    Counter("scraped_total", "A metric to find in the page.", registry=registry).inc()
    server = HTTPServer(
        "0", registry=registry, metrics_filter=with_authentication_and_authorization(reviews)
    )
    async with TestClient(TestServer(server.app)) as client:
        yield client


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asyncio_test
async def test_no_token_is_401_without_asking_the_apiserver(
    http: TestClient[web.Request, web.Application], reviews: Reviews
) -> None:
    response = await http.get("/metrics")
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert reviews.sent == []


@asyncio_test
async def test_an_unauthenticated_token_is_401(
    http: TestClient[web.Request, web.Application], reviews: Reviews
) -> None:
    response = await http.get("/metrics", headers=_auth("made-up"))
    assert response.status == 401
    assert "scraped_total" not in await response.text()
    assert reviews.kinds() == ["TokenReview"]


@asyncio_test
async def test_an_authenticated_user_without_the_right_is_403(
    http: TestClient[web.Request, web.Application], reviews: Reviews
) -> None:
    response = await http.get("/metrics", headers=_auth("bob"))
    assert response.status == 403
    assert await response.text() == "Authorization denied for user bob\n"
    assert reviews.kinds() == ["TokenReview", "SubjectAccessReview"]


@asyncio_test
async def test_an_allowed_user_gets_the_metrics_after_a_review_of_path_and_verb(
    http: TestClient[web.Request, web.Application], reviews: Reviews
) -> None:
    response = await http.get("/metrics", headers=_auth("good"))
    assert response.status == 200
    assert "scraped_total 1.0" in await response.text()
    token_review, access_review = reviews.sent
    assert token_review["spec"] == {"token": "good"}
    assert access_review["apiVersion"] == "authorization.k8s.io/v1"
    assert access_review["spec"] == {
        "user": "alice",
        "uid": "u-1",
        "groups": ["readers"],
        "extra": {"scope": ["a"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


@asyncio_test
async def test_a_failing_review_is_500_and_the_server_keeps_serving(
    http: TestClient[web.Request, web.Application], reviews: Reviews
) -> None:
    reviews.fail = Forbidden({"code": 403, "message": "tokenreviews is forbidden", "reason": ""})
    response = await http.get("/metrics", headers=_auth("good"))
    assert response.status == 500
    text = await response.text()
    assert text == "Authentication failed\n", "the apiserver's message stays in the log"
    reviews.fail = None
    assert (await http.get("/metrics", headers=_auth("good"))).status == 200


@asyncio_test
async def test_tokens_are_cached_for_the_ttl_by_hash_and_then_reviewed_again() -> None:
    reviews, clock = Reviews(), FakeClock(1000.0)
    authenticator = TokenReviewAuthenticator(reviews, ttl=60, clock=clock)
    assert (await authenticator.authenticate("good")) == UserInfo.from_review(ALICE)
    assert await authenticator.authenticate("made-up") is None
    await authenticator.authenticate("good")
    await authenticator.authenticate("made-up")
    assert len(reviews.sent) == 2, "both answers, the negative one too, come from the cache"
    clock.time += 61
    await authenticator.authenticate("good")
    assert len(reviews.sent) == 3


@asyncio_test
async def test_token_cache_is_bounded_and_forgets_the_oldest_first() -> None:
    reviews = Reviews()
    authenticator = TokenReviewAuthenticator(reviews, size=2, clock=FakeClock(1000.0))
    for token in ("good", "bob", "third"):
        await authenticator.authenticate(token)
    await authenticator.authenticate("bob")
    assert len(reviews.sent) == 3
    await authenticator.authenticate("good")
    assert len(reviews.sent) == 4, "the oldest token was evicted"


@asyncio_test
async def test_allowed_decisions_last_longer_than_denied_ones() -> None:
    reviews, clock = Reviews(), FakeClock(1000.0)
    authorizer = SubjectAccessReviewAuthorizer(reviews, allow_ttl=300, deny_ttl=30, clock=clock)
    alice, bob = UserInfo("alice"), UserInfo("bob")
    assert await authorizer.authorize(alice, verb="get", path="/metrics") == (True, "table")
    assert await authorizer.authorize(bob, verb="get", path="/metrics") == (False, "table")
    clock.time += 31
    reviews.allowed.add(("bob", "get", "/metrics"))
    reviews.allowed.discard(("alice", "get", "/metrics"))
    assert (await authorizer.authorize(bob, verb="get", path="/metrics"))[0] is True
    assert (await authorizer.authorize(alice, verb="get", path="/metrics"))[0] is True
    assert len(reviews.sent) == 3, "alice's allow is still cached, bob's deny expired"
    clock.time += 300
    assert (await authorizer.authorize(alice, verb="get", path="/metrics"))[0] is False


@asyncio_test
async def test_a_review_that_hangs_fails_after_the_timeout() -> None:
    class Hanging:
        async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    authenticator = TokenReviewAuthenticator(Hanging(), timeout=0.05)
    with pytest.raises(TimeoutError):
        await authenticator.authenticate("good")


class Blocked(Reviews):
    """Reviews that wait for ``released`` before answering; counts the ones in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.released = anyio.Event()
        self.in_flight = 0

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.in_flight += 1
        try:
            await self.released.wait()
        finally:
            self.in_flight -= 1
        return await super().create(obj)


@asyncio_test
async def test_a_flood_of_unique_tokens_beyond_the_queue_is_refused_at_once() -> None:
    """The reviews hang; requests beyond the slots and the bounded queue get 429 immediately
    (kube-apiserver's answer when its in-flight limit is reached), and once the apiserver answers
    again a good token is served."""
    reviews = Blocked()
    auth = with_authentication_and_authorization(
        reviews, timeout=60, concurrent_reviews=2, waiting_reviews=3
    )
    server = HTTPServer("0", registry=CollectorRegistry(), metrics_filter=auth)
    flood, refused = 2 + 3 + 10, 10
    answers: list[tuple[int, str | None]] = []

    async def scrape(token: str) -> None:
        response = await scraper.get("/metrics", headers=_auth(token))
        answers.append((response.status, response.headers.get("Retry-After")))

    async with TestClient(TestServer(server.app)) as scraper, anyio.create_task_group() as group:
        for number in range(flood):
            group.start_soon(scrape, f"bogus-{number}")
        with anyio.fail_after(5):  # well before the 60 s review timeout
            while len(answers) < refused:
                await anyio.sleep(0.01)
        assert answers == [(429, "1")] * refused
        assert reviews.in_flight == 2, "the refused requests never reached the apiserver"
        reviews.released.set()
        with anyio.fail_after(5):
            while len(answers) < flood:
                await anyio.sleep(0.01)
        assert answers[refused:] == [(401, None)] * (flood - refused)
        assert (await scraper.get("/metrics", headers=_auth("good"))).status == 200


@asyncio_test
async def test_the_review_deadline_counts_from_the_request_not_from_its_slot() -> None:
    """With the only slot held by a review that hangs, a request waiting for it is answered
    within one timeout of its arrival (before: the wait, then a whole timeout more)."""
    reviews = Blocked()
    auth = with_authentication_and_authorization(reviews, timeout=1.0, concurrent_reviews=1)
    server = HTTPServer("0", registry=CollectorRegistry(), metrics_filter=auth)
    async with TestClient(TestServer(server.app)) as scraper, anyio.create_task_group() as group:
        group.start_soon(partial(scraper.get, "/metrics", headers=_auth("holder")))
        with anyio.fail_after(5):
            while reviews.in_flight < 1:
                await anyio.sleep(0.01)
        started = anyio.current_time()
        response = await scraper.get("/metrics", headers=_auth("waiter"))
        elapsed = anyio.current_time() - started
    assert elapsed < 1.5, f"answered after {elapsed:.2f} s, more than one 1 s deadline"
    # 429 when the slot stays taken past the deadline, 500 when it comes free just before (the
    # holder's own deadline is a moment earlier) and the review has no time left.
    assert response.status in (429, 500)


@asyncio_test
async def test_a_slot_not_free_by_the_deadline_is_overloaded_and_frees_its_place() -> None:
    slots, held, done = ReviewSlots(concurrent=1, waiting=1), anyio.Event(), anyio.Event()

    async def hold() -> None:
        async with slots.slot(anyio.current_time() + 60):
            held.set()
            await done.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(hold)
        await held.wait()
        with pytest.raises(ReviewsOverloaded, match="deadline"):
            async with slots.slot(anyio.current_time() + 0.05):
                raise AssertionError("no slot was free")
        assert slots.waiting == 0
        done.set()
    async with slots.slot(anyio.current_time() + 0.05):
        assert slots.waiting == 0, "a free slot is taken without waiting"
