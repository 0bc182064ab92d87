"""Metricsauth guards a manager's /metrics with the cluster's own authentication and authorization,
as controller-runtime's ``filters.WithAuthenticationAndAuthorization`` does.

A request's bearer token is checked with a TokenReview (authentication.k8s.io/v1); the user it
names, with a SubjectAccessReview (authorization.k8s.io/v1) for the non-resource URL — path = the
request path, verb = the HTTP method in lower case. A scraper therefore needs a ClusterRole with
``nonResourceURLs: ["/metrics"], verbs: ["get"]``, and the manager ``create`` on ``tokenreviews``
and ``subjectaccessreviews``. Answers: 401 without a token or with one the apiserver does not
authenticate, 403 when the user is not allowed, 500 when a review fails (apiserver unreachable,
the manager lacking its own rights); the reason goes to the log, never to the client.

Decisions are cached as controller-runtime's delegating authenticator and authorizer do: a token
for 1 minute (keyed by its SHA-256, never the token), an allowed user for 5 minutes, a denied one
for 30 seconds. Each cache is bounded (oldest entries go first).

A flood of made-up tokens (each one a cache miss) is bounded where controller-runtime leaves it to
the apiserver: at most 4 reviews run at once and at most 32 requests wait for one of those slots;
a request beyond them is answered 429 with ``Retry-After: 1`` at once, as kube-apiserver answers
when its in-flight limit is reached (``apiserver/pkg/server/filters``' ``tooManyRequests``), and so
is one whose deadline passes while it waits. The deadline, 10 seconds (controller-runtime's
``TokenAccessReviewTimeout``), runs from the request's arrival and covers the wait for a slot and
both reviews, so no request is held longer, however many others are queued.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

import anyio
import structlog
from aiohttp import web

__all__ = [
    "DEFAULT_ALLOW_CACHE_TTL",
    "DEFAULT_DENY_CACHE_TTL",
    "DEFAULT_TOKEN_CACHE_TTL",
    "Filter",
    "FilterProvider",
    "HTTPHandler",
    "ReviewClient",
    "ReviewSlots",
    "ReviewsOverloaded",
    "SubjectAccessReviewAuthorizer",
    "TokenReviewAuthenticator",
    "UserInfo",
    "bearer_token",
    "with_authentication_and_authorization",
]

log = structlog.get_logger("reconcile.serving.auth")

DEFAULT_TOKEN_CACHE_TTL: Final = 60.0
DEFAULT_ALLOW_CACHE_TTL: Final = 300.0
DEFAULT_DENY_CACHE_TTL: Final = 30.0
DEFAULT_CACHE_SIZE: Final = 1024
DEFAULT_REVIEW_TIMEOUT: Final = 10.0
DEFAULT_CONCURRENT_REVIEWS: Final = 4
DEFAULT_WAITING_REVIEWS: Final = 32
RETRY_AFTER: Final = "1"
"""Seconds a refused scraper is told to wait: kube-apiserver's answer to an overloaded client."""

HTTPHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""An aiohttp request handler."""

Filter = Callable[[HTTPHandler], HTTPHandler]
"""Wraps a handler, e.g. to authenticate and authorize each request first."""


class ReviewClient(Protocol):
    """What the reviews are sent with: ``reconcile.Client`` (the manager's own cluster)."""

    async def create(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """POST ``obj`` to its kind's collection and return the answer."""
        ...


FilterProvider = Callable[[ReviewClient], Filter]
"""Builds a manager's metrics filter from a client of its own cluster (controller-runtime's
``metricsserver.Options.FilterProvider``)."""


@dataclass(frozen=True)
class UserInfo:
    """Who a token belongs to, as the TokenReview said (and as a SubjectAccessReview asks)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_review(cls, user: Mapping[str, Any]) -> UserInfo | None:
        """The ``status.user`` of a TokenReview; None without a user name."""
        name = user.get("username")
        if not isinstance(name, str) or not name:
            return None
        extra = user.get("extra")
        extra = extra if isinstance(extra, Mapping) else {}
        return cls(
            name=name,
            uid=str(user.get("uid") or ""),
            groups=_strings(user.get("groups")),
            extra=tuple(sorted((str(key), _strings(value)) for key, value in extra.items())),
        )

    def review_spec(self) -> dict[str, Any]:
        """The user fields of a SubjectAccessReview spec."""
        spec: dict[str, Any] = {"user": self.name, "groups": list(self.groups)}
        if self.uid:
            spec["uid"] = self.uid
        if self.extra:
            spec["extra"] = {key: list(values) for key, values in self.extra}
        return spec


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _TTLCache(Generic[K, V]):
    """At most ``size`` entries, each forgotten ``ttl`` seconds after it was put."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> tuple[bool, V | None]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        if entry[0] <= self._clock():
            del self._entries[key]
            return False, None
        return True, entry[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there is none.

    As Kubernetes' bearer-token authenticator: the scheme is case-insensitive; an empty token, or
    one that is not printable ASCII (no real token is), counts as none.
    """
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    if not token.isascii() or not token.isprintable():
        return None
    return token


class ReviewsOverloaded(Exception):
    """No review slot for this request: the queue is full, or its deadline passed in the queue."""


class ReviewSlots:
    """How many reviews run at once (``concurrent``) and how many requests may wait for a slot
    (``waiting``); one instance is shared by a filter's authenticator and authorizer."""

    def __init__(
        self,
        concurrent: int = DEFAULT_CONCURRENT_REVIEWS,
        waiting: int = DEFAULT_WAITING_REVIEWS,
    ) -> None:
        self._limiter = anyio.CapacityLimiter(concurrent)
        self._max_waiting = waiting

    @property
    def waiting(self) -> int:
        """Requests queued for a slot now."""
        return self._limiter.statistics().tasks_waiting

    @contextlib.asynccontextmanager
    async def slot(self, deadline: float) -> AsyncIterator[None]:
        """Hold a slot for the block.

        Raises:
            ReviewsOverloaded: every slot is taken and ``waiting`` requests already wait, or
                ``deadline`` (event-loop time) passed before a slot came free.
        """
        # The limiter's own queue is what is bounded: a task that got its token but has not yet
        # resumed from acquire() is not waiting any more.
        if self._limiter.available_tokens < 1 and self.waiting >= self._max_waiting:
            raise ReviewsOverloaded(f"{self.waiting} requests already wait for a review slot")
        with anyio.move_on_at(deadline) as scope:
            await self._limiter.acquire()
        if scope.cancelled_caught:
            raise ReviewsOverloaded("the deadline passed waiting for a review slot")
        try:
            yield
        finally:
            self._limiter.release()


class _Reviewer:
    """Sends reviews: each within a deadline that covers its wait for a slot, too."""

    def __init__(self, client: ReviewClient, timeout: float, slots: ReviewSlots):
        self._client = client
        self._timeout = timeout
        self._slots = slots

    async def review(
        self, body: Mapping[str, Any], deadline: float | None = None
    ) -> Mapping[str, Any]:
        if deadline is None:
            deadline = anyio.current_time() + self._timeout
        async with self._slots.slot(deadline):
            with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                answer = await self._client.create(body)
        status = answer.get("status") if isinstance(answer, Mapping) else None
        return status if isinstance(status, Mapping) else {}


class TokenReviewAuthenticator:
    """Authenticates bearer tokens with TokenReviews, caching the answers.

    ``ttl`` defaults to 60 s (controller-runtime's CacheTTL), for authenticated and
    unauthenticated tokens alike; ``size`` to 1024 tokens; ``timeout`` to 10 s per review, its
    wait for one of the ``slots`` included.
    """

    def __init__(
        self,
        client: ReviewClient,
        *,
        ttl: float = DEFAULT_TOKEN_CACHE_TTL,
        size: int = DEFAULT_CACHE_SIZE,
        timeout: float = DEFAULT_REVIEW_TIMEOUT,
        slots: ReviewSlots | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reviewer = _Reviewer(client, timeout, slots or ReviewSlots())
        self._ttl = ttl
        self._cache: _TTLCache[bytes, UserInfo | None] = _TTLCache(size, clock)

    async def authenticate(self, token: str, *, deadline: float | None = None) -> UserInfo | None:
        """The token's user; None when the apiserver does not authenticate it. ``deadline``
        (event-loop time) replaces the timeout, e.g. to count from a request's arrival.

        Raises:
            ReviewsOverloaded: no review slot came free in time.
            ApiError, TimeoutError, OSError, aiohttp.ClientError: the review itself failed.
        """
        key = hashlib.sha256(token.encode()).digest()
        found, user = self._cache.get(key)
        if found:
            return user
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = await self._reviewer.review(body, deadline)
        user = None
        if status.get("authenticated") is True and isinstance(status.get("user"), Mapping):
            user = UserInfo.from_review(status["user"])
        self._cache.put(key, user, self._ttl)
        return user


class SubjectAccessReviewAuthorizer:
    """Authorizes users for non-resource URLs with SubjectAccessReviews, caching the answers.

    ``allow_ttl`` defaults to 5 minutes and ``deny_ttl`` to 30 s (controller-runtime's
    AllowCacheTTL and DenyCacheTTL); ``size`` to 1024 decisions; ``timeout`` to 10 s per review,
    its wait for one of the ``slots`` included.
    """

    def __init__(
        self,
        client: ReviewClient,
        *,
        allow_ttl: float = DEFAULT_ALLOW_CACHE_TTL,
        deny_ttl: float = DEFAULT_DENY_CACHE_TTL,
        size: int = DEFAULT_CACHE_SIZE,
        timeout: float = DEFAULT_REVIEW_TIMEOUT,
        slots: ReviewSlots | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reviewer = _Reviewer(client, timeout, slots or ReviewSlots())
        self._ttls = {True: allow_ttl, False: deny_ttl}
        self._cache: _TTLCache[tuple[UserInfo, str, str], tuple[bool, str]] = _TTLCache(size, clock)

    async def authorize(
        self, user: UserInfo, *, verb: str, path: str, deadline: float | None = None
    ) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource URL ``path``, and the apiserver's reason.
        ``deadline`` as in ``TokenReviewAuthenticator.authenticate``.

        Raises:
            ReviewsOverloaded: no review slot came free in time.
            ApiError, TimeoutError, OSError, aiohttp.ClientError: the review itself failed.
        """
        key = (user, verb, path)
        found, decision = self._cache.get(key)
        if found and decision is not None:
            return decision
        spec = {**user.review_spec(), "nonResourceAttributes": {"path": path, "verb": verb}}
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = await self._reviewer.review(body, deadline)
        decision = (status.get("allowed") is True, str(status.get("reason") or ""))
        self._cache.put(key, decision, self._ttls[decision[0]])
        return decision


def _plain(status: int, text: str, **headers: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=headers)


def with_authentication_and_authorization(
    client: ReviewClient,
    *,
    timeout: float = DEFAULT_REVIEW_TIMEOUT,
    concurrent_reviews: int = DEFAULT_CONCURRENT_REVIEWS,
    waiting_reviews: int = DEFAULT_WAITING_REVIEWS,
) -> Filter:
    """A filter admitting only requests whose bearer token's user the apiserver authorizes.

    Reviews go through ``client`` (the manager's own cluster); see the module docstring for the
    answers, the caching, the rights involved and the bounds: ``timeout`` seconds from a request's
    arrival for its reviews and its wait for a slot, ``concurrent_reviews`` at once and
    ``waiting_reviews`` requests queued for a slot. This is the default ``FilterProvider`` of a
    manager's secure metrics server.
    """
    slots = ReviewSlots(concurrent_reviews, waiting_reviews)
    authenticator = TokenReviewAuthenticator(client, timeout=timeout, slots=slots)
    authorizer = SubjectAccessReviewAuthorizer(client, timeout=timeout, slots=slots)

    async def admit(request: web.Request, deadline: float) -> web.Response | None:
        """The refusal of ``request``; None when it may go on to the handler."""
        token = bearer_token(request.headers.get("Authorization"))
        if token is None:
            return _plain(401, "Unauthorized", **{"WWW-Authenticate": "Bearer"})
        try:
            user = await authenticator.authenticate(token, deadline=deadline)
        except ReviewsOverloaded:
            raise
        except Exception as error:  # the apiserver's failure is not the client's; stay up
            log.error("metrics authentication failed", error=_describe(error))
            return _plain(500, "Authentication failed")
        if user is None:
            return _plain(401, "Unauthorized", **{"WWW-Authenticate": "Bearer"})
        verb = request.method.lower()
        try:
            allowed, reason = await authorizer.authorize(
                user, verb=verb, path=request.path, deadline=deadline
            )
        except ReviewsOverloaded:
            raise
        except Exception as error:
            log.error("metrics authorization failed", user=user.name, error=_describe(error))
            return _plain(500, f"Authorization for user {user.name} failed")
        if not allowed:
            log.debug("metrics authorization denied", user=user.name, reason=reason)
            return _plain(403, f"Authorization denied for user {user.name}")
        return None

    def wrap(handler: HTTPHandler) -> HTTPHandler:
        async def filtered(request: web.Request) -> web.StreamResponse:
            deadline = anyio.current_time() + timeout
            try:
                refusal = await admit(request, deadline)
            except ReviewsOverloaded as error:
                log.warning("metrics request refused", reason=str(error), waiting=slots.waiting)
                return _plain(429, "Too many requests, please try again later.", **_RETRY)
            return refusal if refusal is not None else await handler(request)

        return filtered

    return wrap


_RETRY: Final = {"Retry-After": RETRY_AFTER}


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
