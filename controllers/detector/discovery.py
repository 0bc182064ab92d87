"""Discovery is the detector's source of resource templates: every kind the host serves.

At start and then every ``interval`` seconds (default 30, as Karmada) it reads the host's discovery
documents (the preferred version of each group) and watches each new kind that can be listed and
watched, through the shared informer of the manager's cache (one per kind) and a
``reconcile.Kind`` source on the detector's queue; CRDs installed later are picked up on the next
round. Skipped: events (core and events.k8s.io), leases (coordination.k8s.io), the Karmada API
groups (``*.karmada.io``: policies, bindings, Works, Clusters, interpreter configuration) and
apiregistration.k8s.io. Discovery failures are logged and retried on the next round; the
controller never waits for a kind that cannot sync.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import orjson
import structlog
from anyio.abc import TaskGroup

from reconcile import (
    GVK,
    Cache,
    Client,
    EventHandler,
    Kind,
    Predicate,
    Request,
    Resource,
    WorkQueue,
)

__all__ = ["DEFAULT_DISCOVERY_INTERVAL", "Discovery", "is_skipped", "watchable_resources"]

DEFAULT_DISCOVERY_INTERVAL: Final = 30.0
FIRST_SYNC_TIMEOUT: Final = 30.0
"""Seconds the detector waits at start for discovery and each kind's first list."""

_SKIPPED_GROUPS: Final = frozenset(
    {"events.k8s.io", "coordination.k8s.io", "apiregistration.k8s.io", "karmada.io"}
)
_REQUIRED_VERBS: Final = frozenset({"list", "watch"})

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
class Discovery:
    """A Source that watches every discovered kind; ``resources`` says which ones it watches.

    ``handler_for(gvk)`` maps a kind's events to Requests; ``predicates`` filter every kind's.
    """

    client: Client
    cache: Cache
    handler_for: Callable[[GVK], EventHandler]
    predicates: tuple[Predicate, ...] = ()
    interval: float = DEFAULT_DISCOVERY_INTERVAL
    resources: dict[GVK, Resource] = field(default_factory=dict)
    _kinds: dict[GVK, Kind] = field(default_factory=dict, repr=False)
    _first_round: anyio.Event | None = field(default=None, repr=False)

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
        for resource in await watchable_resources(self.client):
            self.resources[resource.gvk] = resource
            if resource.gvk not in self._kinds:
                handler = self.handler_for(resource.gvk)
                kind = Kind(self.cache, resource.gvk, handler, self.predicates)
                await kind.start(queue, task_group)
                self._kinds[resource.gvk] = kind
                added.append(resource.gvk)
        if added:
            log.info("watching resource templates", kinds=sorted(str(g) for g in added))
        return added

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
