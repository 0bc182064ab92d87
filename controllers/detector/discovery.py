"""Discovery is the detector's source of resource templates: every kind the host serves.

At start and then every ``interval`` seconds (default 30, as Karmada) it reads the host's discovery
documents (the preferred version of each group) and watches each new kind that can be listed and
watched and that this process may use as templates, through the shared informer of the manager's
cache (one per kind) and a ``reconcile.Kind`` source on the detector's queue; CRDs installed later
(and kinds RBAC allows later) are picked up on the next round. Before a kind is watched, the
apiserver is asked (SelfSubjectAccessReview, ``AccessReview``) whether this process may get, list,
watch and patch it in every namespace: a kind it may not is left out, logged once, and asked about
again next round, so a least-privilege role never leaves an informer failing on 403 (and /readyz
false); new kinds are first reviewed as ``*`` in ``*``, so a process allowed everything asks
nothing more. Skipped: events (core and events.k8s.io), leases (coordination.k8s.io), the Karmada
API groups (``*.karmada.io``: policies, bindings, Works, Clusters, interpreter configuration) and
apiregistration.k8s.io. Discovery failures are logged and retried on the next round; the
controller never waits for a kind that cannot sync.

Each round's answer (kinds watched, kinds denied with the verb refused) is published to a
``controllers.permittedkinds.PermittedKinds`` when one is given, so other controllers (the
dependencies distributor) know what this process may read without asking again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import orjson
import structlog
from anyio.abc import TaskGroup

from controllers.permittedkinds import Denial, PermittedKinds
from reconcile import (
    GVK,
    Cache,
    Client,
    EventHandler,
    Kind,
    NoKindMatch,
    Predicate,
    Request,
    Resource,
    WorkQueue,
)

__all__ = [
    "ACCESS_REVIEW",
    "DEFAULT_DISCOVERY_INTERVAL",
    "TEMPLATE_VERBS",
    "AccessReview",
    "Discovery",
    "is_skipped",
    "watchable_resources",
]

DEFAULT_DISCOVERY_INTERVAL: Final = 30.0
FIRST_SYNC_TIMEOUT: Final = 30.0
"""Seconds the detector waits at start for discovery and each kind's first list."""

_SKIPPED_GROUPS: Final = frozenset(
    {"events.k8s.io", "coordination.k8s.io", "apiregistration.k8s.io", "karmada.io"}
)
_REQUIRED_VERBS: Final = frozenset({"list", "watch"})
ACCESS_REVIEW: Final = GVK("authorization.k8s.io", "v1", "SelfSubjectAccessReview")
TEMPLATE_VERBS: Final = ("get", "list", "watch", "patch")
"""What the detector does with templates: watch (list + watch), read live, claim (patch)."""
_PARALLEL_REVIEWS: Final = 8

log = structlog.get_logger("controllers.detector")


def is_skipped(gvk: GVK) -> bool:
    """Whether the detector ignores a kind (events, leases, Karmada's own API, API services)."""
    if gvk.group in _SKIPPED_GROUPS or gvk.group.endswith(".karmada.io"):
        return True
    return gvk.group == "" and gvk.kind == "Event"


def _resources(group: str, version: str, document: Any) -> list[Resource]:
    found = []
    for entry in (document or {}).get("resources") or []:
        plural = str(entry.get("name", ""))
        verbs = frozenset(entry.get("verbs") or ())
        if "/" in plural or not verbs >= _REQUIRED_VERBS:
            continue
        gvk = GVK(group, version, str(entry.get("kind", "")))
        if gvk.kind and not is_skipped(gvk):
            found.append(Resource(gvk, plural, bool(entry.get("namespaced")), verbs=verbs))
    return found


async def _document(client: Client, path: str) -> Any:
    code, body = await client.get_path(path)
    if code != 200:
        raise RuntimeError(f"GET {path}: HTTP {code}")
    return orjson.loads(body)


def _preferred(groups: Any) -> list[tuple[str, str]]:
    found = []
    for group in (groups or {}).get("groups") or []:
        versions = [v.get("version") for v in group.get("versions") or []]
        version = (group.get("preferredVersion") or {}).get("version") or next(iter(versions), None)
        if version:
            found.append((str(group.get("name", "")), str(version)))
    return found


async def watchable_resources(client: Client) -> list[Resource]:
    """Every kind the server serves in a preferred version that the detector should watch.

    A group version whose document cannot be read is left out (logged), like client-go's
    partial discovery.

    Raises:
        RuntimeError, OSError, aiohttp.ClientError: the group lists could not be read.
    """
    core = await _document(client, "/api")
    versions = [("", str(v)) for v in (core.get("versions") or [])[:1]]
    versions += _preferred(await _document(client, "/apis"))
    found: list[Resource] = []
    for group, version in versions:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            found += _resources(group, version, await _document(client, path))
        except Exception as error:  # one broken aggregated API must not hide the others
            log.warning("discovery failed", group_version=path, error=str(error))
    return found


@dataclass
class AccessReview:
    """Asks the apiserver which kinds this process may use as templates (``verbs`` on each, in
    every namespace), with SelfSubjectAccessReviews: authoritative, unlike a rules review."""

    client: Client
    verbs: tuple[str, ...] = TEMPLATE_VERBS

    async def allowed(self, verb: str, group: str, resource: str) -> bool:
        """Whether ``verb`` on ``resource`` of ``group`` is allowed in every namespace.

        Raises:
            ApiError: the review was refused.
        """
        attributes = {"verb": verb, "group": group, "resource": resource}
        review = {
            "apiVersion": ACCESS_REVIEW.api_version,
            "kind": ACCESS_REVIEW.kind,
            "spec": {"resourceAttributes": attributes},
        }
        answer = await self.client.create(review)
        return bool((answer.get("status") or {}).get("allowed"))

    async def denied_verb(self, group: str, resource: str) -> str | None:
        """The first of ``verbs`` not allowed on ``resource`` of ``group``, None when all are."""
        for verb in self.verbs:
            if not await self.allowed(verb, group, resource):
                return verb
        return None

    async def partition(self, resources: list[Resource]) -> tuple[list[Resource], dict[GVK, str]]:
        """The resources every verb is allowed on, and the others with the verb denied.

        Raises:
            ApiError: a review was refused.
        """
        try:
            if not resources or await self.denied_verb("*", "*") is None:
                return resources, {}
        except NoKindMatch:
            return resources, {}  # no authorization API, so no RBAC to honour
        denied: dict[GVK, str] = {}
        limit = anyio.CapacityLimiter(_PARALLEL_REVIEWS)

        async def review(resource: Resource) -> None:
            async with limit:
                verb = await self.denied_verb(resource.gvk.group, resource.plural)
            if verb is not None:
                denied[resource.gvk] = verb

        async with anyio.create_task_group() as group:
            for resource in resources:
                group.start_soon(review, resource)
        return [r for r in resources if r.gvk not in denied], denied


@dataclass
class Discovery:
    """A Source that watches every discovered kind; ``resources`` says which ones it watches.

    ``handler_for(gvk)`` maps a kind's events to Requests; ``predicates`` filter every kind's.
    """

    client: Client
    cache: Cache
    handler_for: Callable[[GVK], EventHandler]
    predicates: tuple[Predicate, ...] = ()
    interval: float = DEFAULT_DISCOVERY_INTERVAL
    access: AccessReview | None = None
    """Which kinds may be watched; None: every kind (e.g. a fake client without reviews)."""
    resources: dict[GVK, Resource] = field(default_factory=dict)
    denied: dict[GVK, str] = field(default_factory=dict)
    """Kinds left out because RBAC does not allow them, with the first verb denied."""
    permitted_kinds: PermittedKinds | None = None
    """Where each round's answer is published (told at once that rounds will come)."""
    before_watch: Callable[[GVK], None] | None = None
    """Called with each new kind before its informer opens (a sharded replica scopes it); a
    kind it raises for is not watched, and is tried again next round."""
    _kinds: dict[GVK, Kind] = field(default_factory=dict, repr=False)
    _first_round: anyio.Event | None = field(default=None, repr=False)
    _denials: dict[GVK, Denial] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.permitted_kinds is not None:
            # Set up now, before any controller starts: readers wait for the first round.
            self.permitted_kinds.expect()

    def resource(self, gvk: GVK) -> Resource | None:
        """How the host serves a watched kind, None when it is not watched."""
        return self.resources.get(gvk)

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Discover now and then every ``interval`` seconds, in ``task_group``."""
        self._first_round = anyio.Event()
        task_group.start_soon(self._loop, queue, task_group, name="detector discovery")

    async def _loop(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        while True:
            try:
                await self.refresh(queue, task_group)
            except Exception as error:  # the next round retries; the detector keeps running
                log.error("resource discovery failed", error=str(error))
                if self.permitted_kinds is not None and not self.permitted_kinds.published:
                    # Readers waiting for a first answer get what is known (nothing denied).
                    self.permitted_kinds.publish(self._kinds, self._denials)
            finally:
                if self._first_round is not None:
                    self._first_round.set()
            await anyio.sleep(self.interval)

    async def refresh(self, queue: WorkQueue[Request], task_group: TaskGroup) -> list[GVK]:
        """Discover once; start watching new kinds; return them.

        Raises:
            as watchable_resources.
        """
        added = []
        for resource in await self._permitted(await watchable_resources(self.client)):
            if resource.gvk not in self._kinds and not self._prepared(resource.gvk):
                continue
            self.resources[resource.gvk] = resource
            if resource.gvk not in self._kinds:
                handler = self.handler_for(resource.gvk)
                kind = Kind(self.cache, resource.gvk, handler, self.predicates)
                await kind.start(queue, task_group)
                self._kinds[resource.gvk] = kind
                added.append(resource.gvk)
        if added:
            log.info("watching resource templates", kinds=sorted(str(g) for g in added))
        if self.permitted_kinds is not None:
            # After the informers exist: a reader told a kind is permitted finds it cached.
            self.permitted_kinds.publish(self._kinds, self._denials)
        return added

    def _prepared(self, gvk: GVK) -> bool:
        if self.before_watch is None:
            return True
        try:
            self.before_watch(gvk)
        except Exception as error:  # one kind fails, the round and the others go on
            log.error("cannot watch resource templates", kind=str(gvk), error=str(error))
            return False
        return True

    async def _permitted(self, found: list[Resource]) -> list[Resource]:
        """The watched kinds among ``found``, and those of the others RBAC allows now."""
        watched = [r for r in found if r.gvk in self._kinds]
        if self.access is None:
            return found
        fresh, denied = await self.access.partition([r for r in found if r.gvk not in self._kinds])
        news = {gvk: verb for gvk, verb in denied.items() if self.denied.get(gvk) != verb}
        if news:
            # Once per kind (and verb): the role is a deployment choice, not an error.
            log.info(
                "not watching resource templates: RBAC does not allow it",
                kinds={str(gvk): verb for gvk, verb in sorted(news.items(), key=str)},
            )
        self.denied = denied
        plurals = {r.gvk: r.plural for r in found}
        self._denials = {gvk: Denial(gvk.group, plurals[gvk], verb) for gvk, verb in denied.items()}
        return watched + fresh

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait for the first round and for the kinds it found; kinds that cannot sync are logged
        and skipped (their informers keep retrying), so one broken API never blocks the detector.
        """
        if self._first_round is None:
            raise RuntimeError("detector discovery was not started")
        limit = min(timeout, FIRST_SYNC_TIMEOUT)
        with anyio.move_on_after(limit):
            await self._first_round.wait()
        await _wait_all(self._kinds.values(), limit)

    def __str__(self) -> str:
        return "detector discovery"


async def _wait_all(kinds: Iterable[Kind], timeout: float) -> None:
    async def one(kind: Kind) -> None:
        try:
            await kind.wait_for_sync(timeout)
        except Exception as error:
            log.warning("resource template informer did not sync", kind=str(kind.gvk), error=error)

    async with anyio.create_task_group() as group:
        for kind in list(kinds):
            group.start_soon(one, kind)
