"""RESTMapper maps a kind to the resource the apiserver serves it as, using discovery.

The client asks it how to reach a ``GVK``: the plural path segment, whether the resource is
namespaced, its subresources and verbs (a ``Resource``). Answers come from the apiserver's discovery
documents (``/api/v1``, ``/apis/{group}/{version}``), fetched lazily one group version at a time
(as controller-runtime's lazy mapper does) and cached.

A kind that is not in the cache makes the mapper fetch its group version again before it raises
``NoKindMatch``, so a CRD installed after the client started is found without a restart. Refetches
of one group version are rate-limited (at most one per ``min_refresh_interval``) so a controller
looping on a kind that truly does not exist cannot flood discovery.

Lookup by name (plural, singular or short name, optionally ``name.group``, as kubectl accepts)
needs every group: it reads ``/api`` and ``/apis`` and the preferred version of each group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import structlog

from reconcile.errors import ApiError, NoKindMatch, NotFound
from reconcile.flowcontrol import Clock, MonotonicClock
from reconcile.gvk import GVK, Resource

__all__ = [
    "DEFAULT_MIN_REFRESH_INTERVAL",
    "DiscoveryFetch",
    "RESTMapper",
    "parse_resource_list",
]

DiscoveryFetch = Callable[[str], Awaitable[Any]]
"""GET one discovery path, return the decoded JSON; raise ``NotFound`` when it is not served."""

DEFAULT_MIN_REFRESH_INTERVAL: Final = 2.0
"""Seconds before one group version may be fetched again because of a miss."""

_log = structlog.get_logger("reconcile.client.restmapper")


@dataclass
class _GroupVersion:
    """What discovery said about one group version, and when."""

    fetched_at: float
    served: bool = True
    by_kind: dict[str, Resource] = field(default_factory=dict)
    by_name: dict[str, Resource] = field(default_factory=dict)


def _path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def parse_resource_list(group: str, version: str, document: Any) -> list[tuple[Resource, set[str]]]:
    """The resources of an APIResourceList, each with the names it answers to.

    Entries like ``deployments/scale`` become subresources of their parent; the names are the
    plural, the singular (the lowercase kind when the server omits it) and the short names.
    """
    entries = (document.get("resources") or []) if isinstance(document, dict) else []
    top: dict[str, dict[str, Any]] = {}
    subresources: dict[str, set[str]] = {}
    for entry in entries:
        plural, _, sub = str(entry.get("name", "")).partition("/")
        if sub:
            subresources.setdefault(plural, set()).add(sub)
        elif plural:
            top[plural] = entry
    parsed: list[tuple[Resource, set[str]]] = []
    for plural, entry in top.items():
        kind = str(entry.get("kind", ""))
        resource = Resource(
            gvk=GVK(group, version, kind),
            plural=plural,
            namespaced=bool(entry.get("namespaced")),
            subresources=frozenset(subresources.get(plural, ())),
            verbs=frozenset(entry.get("verbs") or ()),
        )
        names = {plural, str(entry.get("singularName") or kind).lower()}
        names.update(str(short).lower() for short in entry.get("shortNames") or ())
        parsed.append((resource, names))
    return parsed


class RESTMapper:
    """Discovery-backed, cached GVK → Resource mapping, refreshed on a miss.

    ``fetch`` performs the discovery GETs (the client passes its own request function, so
    discovery is paced by the same limiter). ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        fetch: DiscoveryFetch,
        *,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        clock: Clock | None = None,
    ) -> None:
        self._fetch = fetch
        self.min_refresh_interval = min_refresh_interval
        self._clock: Clock = clock or MonotonicClock()
        self._cache: dict[tuple[str, str], _GroupVersion] = {}
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        # Full discovery, for lookups by name: preferred group versions, in the server's order.
        self._preferred: list[tuple[str, str]] = []
        self._preferred_at: float | None = None
        self._preferred_lock = anyio.Lock()
        self._unavailable: list[str] = []  # group versions whose discovery failed last time

    async def resource_for(self, gvk: GVK[Any]) -> Resource:
        """How the apiserver serves ``gvk``.

        Raises:
            NoKindMatch: discovery (refreshed if the cache missed) has no such kind.
            ApiError: discovery itself failed (other than 404, which means "not served").
        """
        found = self._cached(gvk)
        if found is None:
            await self._refresh(gvk.group, gvk.version)
            found = self._cached(gvk)
        if found is None:
            raise NoKindMatch(f"no resource is served for {gvk}")
        return found

    def _cached(self, gvk: GVK[Any]) -> Resource | None:
        entry = self._cache.get((gvk.group, gvk.version))
        return entry.by_kind.get(gvk.kind) if entry else None

    def _fresh(self, fetched_at: float | None) -> bool:
        if fetched_at is None:
            return False
        return self._clock.now() - fetched_at < self.min_refresh_interval

    async def _refresh(self, group: str, version: str) -> None:
        key = (group, version)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            # Also covers a concurrent miss: whoever waited here uses the fetch just made.
            entry = self._cache.get(key)
            if entry is not None and self._fresh(entry.fetched_at):
                return
            self._cache[key] = await self._fetch_group_version(group, version)

    async def _fetch_group_version(self, group: str, version: str) -> _GroupVersion:
        fetched_at = self._clock.now()
        try:
            document = await self._fetch(_path(group, version))
        except NotFound:
            return _GroupVersion(fetched_at, served=False)
        entry = _GroupVersion(fetched_at)
        for resource, names in parse_resource_list(group, version, document):
            entry.by_kind.setdefault(resource.gvk.kind, resource)
            for name in names:
                entry.by_name.setdefault(name, resource)
        return entry

    async def resource_for_name(self, name: str) -> Resource:
        """The resource kubectl would pick for ``name``: a plural, singular or short name, or
        ``name.group`` (``deploy``, ``deployments.apps``); core and then groups in server order.

        Raises:
            NoKindMatch: no served resource answers to that name.
            ApiError: reading the group lists failed.
        """
        found = self._by_name(name)
        if found is None:
            await self._refresh_all()
            found = self._by_name(name)
        if found is None:
            failed = ", ".join(self._unavailable)
            unavailable = f" (discovery failed for {failed})" if failed else ""
            raise NoKindMatch(f"no resource is served as {name!r}{unavailable}")
        return found

    def _by_name(self, name: str) -> Resource | None:
        wanted = name.lower()
        short, _, group = wanted.partition(".")
        for key in self._preferred:
            entry = self._cache.get(key)
            if entry is None:
                continue
            if wanted in entry.by_name:
                return entry.by_name[wanted]
            if group and key[0] == group and short in entry.by_name:
                return entry.by_name[short]
        return None

    async def _refresh_all(self) -> None:
        async with self._preferred_lock:
            if self._fresh(self._preferred_at):
                return
            self._preferred_at = self._clock.now()
            self._preferred = await self._preferred_group_versions()
            self._unavailable = await self._refresh_many(self._preferred)

    async def _preferred_group_versions(self) -> list[tuple[str, str]]:
        core = await self._fetch("/api")
        found = [("", str(v)) for v in (core.get("versions") or ())[:1]]
        groups = await self._fetch("/apis")
        for group in groups.get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("version")
            versions = [v.get("version") for v in group.get("versions") or ()]
            version = preferred or (versions[0] if versions else None)
            if version:
                found.append((str(group.get("name", "")), str(version)))
        return found

    async def _refresh_many(self, keys: Iterable[tuple[str, str]]) -> list[str]:
        failed: list[str] = []

        async def one(group: str, version: str) -> None:
            try:
                await self._refresh(group, version)
            except ApiError as error:
                # One broken aggregated API must not hide every other group (client-go: partial).
                _log.warning("discovery failed", group_version=_path(group, version), error=error)
                failed.append(_path(group, version))

        async with anyio.create_task_group() as tasks:
            for group, version in keys:
                tasks.start_soon(one, group, version)
        return sorted(failed)

    def invalidate(self) -> None:
        """Forget everything discovered (e.g. after a CRD changed scope); refetched on demand."""
        self._cache.clear()
        self._preferred = []
        self._preferred_at = None
        self._unavailable = []
