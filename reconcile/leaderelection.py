"""Leader election picks one process among replicas to run the leader-only work, through a Lease.

A ``LeaderElector`` competes for a coordination.k8s.io/v1 Lease with client-go's semantics: every
``retry_period`` (with jitter) it tries to take the Lease, which it may do when the Lease does not
exist, was released (empty ``holderIdentity``), or has expired. Expiry is judged by the local
monotonic time at which this elector last saw the Lease's record change, plus the record's
``leaseDurationSeconds``, never by the ``renewTime`` written in it: clocks of different machines
need not agree. Writes are optimistic (the Lease's resourceVersion), so of two contenders only one
wins; the loser's Conflict just fails that attempt.

While leading, ``run()`` runs the leading work next to a renew loop. If renewals keep failing for
``renew_deadline`` the work is cancelled and ``run()`` raises ``LeadershipLost``; the caller should
then exit (a process that lost its Lease must not keep acting as leader). On cancellation (clean
shutdown), the Lease is released when ``release_on_cancel`` is set, so a standby takes over at
once instead of waiting for the Lease to expire.
"""

from __future__ import annotations

import copy
import math
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import aiohttp
import anyio
import structlog

from reconcile.errors import AlreadyExists, ApiError, Conflict, NoKindMatch, NotFound
from reconcile.gvk import GVK

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LEASE",
    "RELEASE_TIMEOUT",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipLost",
    "LeaseClient",
    "default_identity",
    "micro_time",
]

log = structlog.get_logger("reconcile.leaderelection")

LEASE: Final = GVK("coordination.k8s.io", "v1", "Lease")
DEFAULT_LEASE_DURATION: Final = 15.0
"""Seconds a standby waits, after it last saw the Lease change, before taking it over."""
DEFAULT_RENEW_DEADLINE: Final = 10.0
"""Seconds the leader keeps retrying a renewal before it gives leadership up."""
DEFAULT_RETRY_PERIOD: Final = 2.0
"""Seconds between attempts to acquire or renew."""
JITTER_FACTOR: Final = 1.2
"""Acquire attempts wait ``retry_period * (1 + random() * JITTER_FACTOR)`` (client-go's factor)."""
RELEASE_TIMEOUT: Final = 5.0
"""At most this many seconds (and at most ``renew_deadline``) are spent releasing on shutdown."""

_ATTEMPT_ERRORS: Final = (ApiError, NoKindMatch, aiohttp.ClientError, OSError, TimeoutError)
"""What one failed acquire/renew attempt may raise; the attempt fails, the loop goes on."""


def default_identity() -> str:
    """``hostname_uuid``: unique per process, and says which host holds the Lease."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(moment: datetime | None = None) -> str:
    """A Kubernetes MicroTime (``2006-01-02T15:04:05.000000Z``) of ``moment`` (default: now)."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeadershipLost(Exception):
    """The leader could not renew its Lease within ``renew_deadline``; its work was cancelled."""

    def __init__(self, lease: str, identity: str) -> None:
        self.lease = lease
        self.identity = identity
        super().__init__(f"{identity} lost the leader Lease {lease}")


class LeaseClient(Protocol):
    """The three verbs leader election needs; ``reconcile.client.client.Client`` satisfies it."""

    async def get(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The object, as a new dict. Raises NotFound when it does not exist."""
        ...

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create the object. Raises AlreadyExists when the name is taken."""
        ...

    async def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace the object. Raises Conflict when its resourceVersion is stale."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """Which Lease to compete for, as whom, and how fast.

    Raises:
        ValueError: (at construction) an empty name, namespace or identity; a non-positive
            duration; a lease_duration under one second (the Lease stores whole seconds); or
            durations not ordered lease_duration > renew_deadline > JITTER_FACTOR * retry_period.
    """

    lease_name: str
    """The Lease's name."""
    lease_namespace: str
    """The Lease's namespace."""
    identity: str = field(default_factory=default_identity)
    """Who this elector is in ``holderIdentity``. Defaults to ``hostname_<random uuid>``."""
    lease_duration: float = DEFAULT_LEASE_DURATION
    """Seconds standbys wait after the last change they saw before taking over. Defaults to 15."""
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    """Seconds the leader retries a renewal before giving leadership up. Defaults to 10."""
    retry_period: float = DEFAULT_RETRY_PERIOD
    """Seconds between acquire and renew attempts. Defaults to 2."""
    release_on_cancel: bool = True
    """Give the Lease up (empty holderIdentity) when stepping down. Defaults to True."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels the Lease carries, written when it is created or taken (a shard Lease's ring)."""

    def __post_init__(self) -> None:
        for name in ("lease_name", "lease_namespace", "identity"):
            if not getattr(self, name):
                raise ValueError(f"leader election needs a non-empty {name}")
        for name in ("lease_duration", "renew_deadline", "retry_period"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.lease_duration < 1.0:
            raise ValueError(
                f"lease_duration must be at least 1 s (a Lease holds whole seconds), "
                f"got {self.lease_duration}"
            )
        if not self.lease_duration > self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}) must be greater than "
                f"renew_deadline ({self.renew_deadline})"
            )
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}) must be greater than "
                f"{JITTER_FACTOR} * retry_period ({self.retry_period})"
            )

    @property
    def lease(self) -> str:
        """``namespace/name`` of the Lease, for logs and errors."""
        return f"{self.lease_namespace}/{self.lease_name}"


class LeaderElector:
    """Competes for one Lease; ``run(work)`` runs ``work`` only while holding it.

    ``clock`` (default ``time.monotonic``) is the local time expiry is judged by.
    ``on_change(is_leader)`` is called whenever ``is_leader`` flips (it must not block).
    """

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self._clock = clock
        self._on_change = on_change
        self._leading = False
        self._running = False
        self._lease: dict[str, Any] | None = None  # as last read or written: carries the RV
        self._observed: dict[str, Any] | None = None  # the Lease spec last seen or written
        self._observed_at = 0.0  # local time at which _observed last changed
        self._log = log.bind(lease=config.lease, identity=config.identity)

    def __repr__(self) -> str:
        return f"LeaderElector(lease={self.config.lease!r}, identity={self.config.identity!r})"

    @property
    def is_leader(self) -> bool:
        """Whether this elector holds the Lease and runs the leading work now."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder of the Lease as last observed ("" when none or unknown)."""
        return str((self._observed or {}).get("holderIdentity") or "")

    async def run(self, on_started_leading: Callable[[], Awaitable[None]]) -> None:
        """Acquire the Lease, then run ``on_started_leading()`` while renewing it.

        Blocks until cancelled (while waiting or while leading), until the work returns, or
        until leadership is lost. Whenever it stops leading it gives the Lease up if
        ``release_on_cancel`` (best effort, shielded from the cancellation, bounded by
        ``RELEASE_TIMEOUT``). When the work returns, this elector steps down and ``run()``
        returns: a leader with nothing left to do would only keep standbys waiting.

        Raises:
            LeadershipLost: renewals failed for ``renew_deadline``; the work was cancelled.
            Exception: whatever the work raised (unwrapped), after stepping down.
            RuntimeError: ``run()`` is already running on this elector.
        """
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        try:
            await self._acquire()
            await self._lead(on_started_leading)
        finally:
            self._running = False

    async def _acquire(self) -> None:
        """Try every retry_period (with jitter) until the Lease is ours."""
        self._log.info("attempting to acquire leader lease")
        while True:
            with anyio.move_on_after(self.config.renew_deadline):
                if await self.try_acquire_or_renew():
                    self._log.info("acquired leader lease")
                    return
            retry = self.config.retry_period
            await anyio.sleep(retry + random.random() * JITTER_FACTOR * retry)

    async def _lead(self, work: Callable[[], Awaitable[None]]) -> None:
        lost = False
        failure: Exception | None = None
        self._set_leading(True)
        try:
            async with anyio.create_task_group() as group:

                async def renew_until_lost() -> None:
                    nonlocal lost
                    await self._renew_until_lost()
                    lost = True
                    self._set_leading(False)  # before the work winds down: refuse writes now
                    group.cancel_scope.cancel()

                group.start_soon(renew_until_lost)
                try:
                    await work()
                except Exception as exc:  # re-raised below, unwrapped, after stepping down
                    failure = exc
                group.cancel_scope.cancel()
        finally:
            self._set_leading(False)
            if self.config.release_on_cancel:
                await self._release()
        if lost:
            self._log.error("leadership lost: renewals failed for the renew deadline")
            raise LeadershipLost(self.config.lease, self.config.identity) from failure
        if failure is not None:
            raise failure
        self._log.info("leading work returned; stepped down")

    async def _renew_until_lost(self) -> None:
        """Renew every retry_period; return once a renewal did not succeed within the deadline."""
        while True:
            await anyio.sleep(self.config.retry_period)
            if not await self._renew():
                return

    async def _renew(self) -> bool:
        """Retry renewing every retry_period; whether it succeeded within renew_deadline."""
        with anyio.move_on_after(self.config.renew_deadline):
            while not await self.try_acquire_or_renew():
                await anyio.sleep(self.config.retry_period)
            return True
        return False

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the Lease; whether this elector holds it afterwards.

        API and transport errors fail the attempt (logged), they are not raised.
        """
        now = self._clock()
        stamp = micro_time()
        duration = math.ceil(self.config.lease_duration)
        # Fast path: the leader writes over the Lease it last wrote, one request per renewal.
        lease, observed = self._lease, self._observed
        if lease is not None and observed is not None and self._holds(now):
            spec = {**observed, "renewTime": stamp, "leaseDurationSeconds": duration}
            try:
                self._observe(await self.client.update(_with_spec(lease, spec)), now)
                return True
            except _ATTEMPT_ERRORS as exc:
                self._log.debug("optimistic renewal failed, reading the lease", error=str(exc))
        fresh = {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": duration,
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        }
        try:
            lease = await self.client.get(
                LEASE, self.config.lease_name, namespace=self.config.lease_namespace
            )
        except NotFound:
            return await self._create(fresh, now)
        except _ATTEMPT_ERRORS as exc:
            self._log.warning("could not read the leader lease", error=str(exc))
            return False
        self._observe(lease, now)
        holder = self.leader
        if holder and holder != self.config.identity and self._valid(now):
            self._log.debug("lease is held by another and has not expired", holder=holder)
            return False
        spec = dict(lease.get("spec") or {})
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.config.identity:
            fresh["acquireTime"] = spec.get("acquireTime") or stamp
            fresh["leaseTransitions"] = transitions
        else:
            fresh["leaseTransitions"] = transitions + 1
        taken = _with_spec(lease, {**spec, **fresh})
        if self.config.labels:
            metadata = taken["metadata"]
            metadata["labels"] = {**(metadata.get("labels") or {}), **self.config.labels}
        try:
            self._observe(await self.client.update(taken), now)
        except Conflict:
            self._log.debug("lease changed under this attempt")
            return False
        except _ATTEMPT_ERRORS as exc:
            self._log.warning("could not update the leader lease", error=str(exc))
            return False
        return True

    async def _create(self, spec: dict[str, Any], now: float) -> bool:
        lease = {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {
                "name": self.config.lease_name,
                "namespace": self.config.lease_namespace,
                **({"labels": dict(self.config.labels)} if self.config.labels else {}),
            },
            "spec": spec,
        }
        try:
            self._observe(await self.client.create(lease), now)
        except AlreadyExists:
            self._log.debug("lease was created by another")
            return False
        except _ATTEMPT_ERRORS as exc:
            self._log.warning("could not create the leader lease", error=str(exc))
            return False
        return True

    async def release(self) -> None:
        """Give the Lease up if this elector still holds it, without overwriting anyone else.

        For callers that run with ``release_on_cancel=False`` and release only once all their
        work stopped (the manager). Best effort, shielded, bounded by ``RELEASE_TIMEOUT``.
        """
        await self._release()

    async def _release(self) -> None:
        """Give the Lease up if this elector still holds it, without overwriting anyone else."""
        lease, observed = self._lease, self._observed
        if lease is None or observed is None or self.leader != self.config.identity:
            return
        stamp = micro_time()
        spec = {
            **observed,
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": stamp,
            "renewTime": stamp,
        }
        timeout = min(RELEASE_TIMEOUT, self.config.renew_deadline)
        with anyio.move_on_after(timeout, shield=True) as scope:
            try:
                released = await self._released(lease, spec)
            except _ATTEMPT_ERRORS as exc:
                self._log.warning("could not release the leader lease", error=str(exc))
                return
            if released:
                self._log.info("released leader lease")
        if scope.cancelled_caught:
            self._log.warning("could not release the leader lease in time", timeout=timeout)

    async def _released(self, lease: dict[str, Any], spec: dict[str, Any]) -> bool:
        """Write the released record; on a Conflict, again on the live Lease if still ours."""
        try:
            self._observe(await self.client.update(_with_spec(lease, spec)), self._clock())
            return True
        except Conflict:
            # Often our own renewal, cancelled by the stop after the server applied it: the
            # cached resourceVersion is stale though we still hold the Lease. (client-go gives
            # up here, and the standby waits out the whole lease duration.)
            live = await self.client.get(
                LEASE, self.config.lease_name, namespace=self.config.lease_namespace
            )
        if (live.get("spec") or {}).get("holderIdentity") != self.config.identity:
            self._log.info("leader lease already taken over, nothing to release")
            return False
        self._observe(await self.client.update(_with_spec(live, spec)), self._clock())
        return True

    def _observe(self, lease: dict[str, Any], now: float) -> None:
        """Remember ``lease``; restart the expiry clock if its record changed."""
        spec = dict(lease.get("spec") or {})
        self._lease = lease
        if spec == self._observed:
            return
        before = self.leader
        self._observed, self._observed_at = spec, now
        if self.leader != before:
            self._log.info("new leader observed", leader=self.leader or None)

    def _valid(self, now: float) -> bool:
        """Whether the observed record has not expired by local time ``now``."""
        observed = self._observed or {}
        duration = observed.get("leaseDurationSeconds") or self.config.lease_duration
        return self._observed_at + float(duration) > now

    def _holds(self, now: float) -> bool:
        return self.leader == self.config.identity and self._valid(now)

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        self._log.info("started leading" if leading else "stopped leading")
        if self._on_change is not None:
            try:
                self._on_change(leading)
            except Exception:
                self._log.exception("on_change hook failed", leading=leading)


def _with_spec(lease: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``lease`` (metadata, resourceVersion included) with ``spec`` replacing its own."""
    updated = copy.deepcopy(dict(lease))
    updated["spec"] = dict(spec)
    return updated
