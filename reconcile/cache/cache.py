"""Cache owns one cluster's shared informers and answers reads from them.

Which objects it holds of each kind is configured up front, as controller-runtime's
``cache.Options.ByObject`` (``cache.options``): namespaces, label and field selectors and a
transform per kind, with defaults for the rest. There is one informer per kind and configured
namespace, and one more per kind and namespace for its metadata-only view (``metadata_only=True``:
PartialObjectMetadata objects), shared by every controller that asks. Reads use exactly those
informers: a read outside the scope (another namespace, a list whose label selector does not imply
the scope's) raises ``ScopeError`` rather than opening a second, wider informer. The cache is safe
to start by construction, removing client-go's foot-guns:

- an informer requested after the cache started is started at once (never an empty lister);
- ``wait_for_cache_sync`` waits for the cache to be started, then for every informer requested so
  far, so starting in a background task and then waiting works; it fails fast with the cause when a
  reflector is refused (403 Forbidden, unknown resource) instead of hanging;
- reads before start raise ``CacheNotStarted``; reads after start wait for their informer's sync.

Every read returns objects of the caller's own (the store decodes them afresh), so callers may
change what they get. ``by_index`` is the one synchronous read, for a synchronous map function:
what the informers hold now under an index, without waiting for them to sync.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
from anyio.abc import TaskGroup, TaskStatus

from reconcile.cache.informer import SharedInformer, Transform, strip_managed_fields
from reconcile.cache.options import (
    METADATA_API_VERSION,
    PARTIAL_OBJECT_METADATA,
    ByObject,
    CacheOptions,
    KindScope,
    ScopeError,
)
from reconcile.cache.store import LABEL_INDEX_PREFIX, NAMESPACE_INDEX, Indexer, IndexFunc
from reconcile.client.interfaces import ListerWatcher
from reconcile.errors import Forbidden, NoKindMatch, NotFound, Unauthorized
from reconcile.gvk import GVK
from reconcile.labels import Selector, parse_selector
from reconcile.objects import Obj, object_key

__all__ = [
    "DEFAULT_CACHE_SYNC_TIMEOUT",
    "Cache",
    "CacheNotStarted",
    "CacheSyncError",
    "InformerScope",
    "ListerWatcherSource",
    "ScopeError",
]

DEFAULT_CACHE_SYNC_TIMEOUT: Final = 120.0

# Failures that retrying will not cure without someone acting: report them at once.
_DEFINITIVE = (Forbidden, Unauthorized, NotFound, NoKindMatch)


class CacheNotStarted(RuntimeError):
    """A read reached the cache before it was started."""


class CacheSyncError(RuntimeError):
    """An informer did not sync; the message names it and the reflector's last error."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class ListerWatcherSource(Protocol):
    """What the cache needs from a client: a ListerWatcher per scope."""

    def lister_watcher(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> ListerWatcher:
        """The collection of ``gvk`` objects in that scope (as PartialObjectMetadata if asked)."""
        ...


@dataclass(frozen=True)
class InformerScope:
    """Which objects of a kind one informer holds."""

    gvk: GVK[Any]
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False

    def __str__(self) -> str:
        parts = [str(self.gvk)]
        if self.metadata_only:
            parts.append("metadata only")
        if self.namespace:
            parts.append(f"namespace={self.namespace}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector}")
        return ", ".join(parts)


class Cache:
    """Shared informers for one cluster plus a Reader over them.

    Args:
        source: makes ListerWatchers (a ``Client``).
        namespace: shorthand for ``CacheOptions(default_namespaces=(namespace,))``.
        transform: shorthand for ``CacheOptions(default_transform=...)`` (default strips
            managedFields); both are ignored when ``options`` is given.
        options: which objects to hold of each kind (see ``reconcile.cache.options``).
        resync_period: default resync period of handlers (default: none).
        sync_timeout: how long reads and wait_for_cache_sync wait (default 120 s).
        compress: keep every informer's objects deflated against a dictionary of their kind
            (``reconcile.cache.store``): a fraction of the memory for a few microseconds more
            per read and write, for caches of many objects.

    Raises:
        ValueError: both ``namespace`` and ``options``.
    """

    def __init__(
        self,
        source: ListerWatcherSource,
        *,
        namespace: str | None = None,
        transform: Transform | None = strip_managed_fields,
        options: CacheOptions | None = None,
        resync_period: float | None = None,
        sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT,
        compress: bool = False,
    ) -> None:
        if options is None:
            namespaces = (namespace,) if namespace else None
            options = CacheOptions(default_namespaces=namespaces, default_transform=transform)
        elif namespace is not None:
            raise ValueError("give the cache's namespace in options.default_namespaces")
        self._source = source
        self._options = options
        self._by_object: dict[GVK, ByObject] = dict(options.by_object)
        self._scopes: dict[GVK, KindScope] = {}
        self._resync_period = resync_period
        self._compress = compress
        self.sync_timeout = sync_timeout
        self._informers: dict[InformerScope, SharedInformer] = {}
        # Reads' synced informers by (kind, namespace, metadata_only): a read looks them up
        # once, not on every get (a kind's scope is fixed once it has informers; see configure).
        self._readable: dict[tuple[GVK, str | None, bool], builtins.list[SharedInformer]] = {}
        self._indexers: dict[GVK, dict[str, IndexFunc]] = {}
        self._group: TaskGroup | None = None
        self._started = anyio.Event()
        self.scans: dict[GVK, int] = {}
        """Lists with a selector that no index could serve, by kind (each examined every object
        of its namespace or kind); exported as ``reconcile_cache_list_scans_total``."""

    # --- scope ---------------------------------------------------------------------------------

    def configure(self, gvk: GVK[Any], scope: ByObject) -> None:
        """Scope ``gvk`` as ``options.by_object[gvk] = scope`` would have, before its first
        informer: for controllers that declare what they watch when they are set up.

        The same scope again does nothing, so controllers sharing a watch may each declare it.

        Raises:
            ValueError: ``gvk`` has another scope already, or informers (it was read or
                watched before being scoped).
        """
        known = self._by_object.get(gvk)
        if known == scope:
            return
        if known is not None:
            raise ValueError(f"{gvk.kind} is scoped already as {known}, not {scope}")
        if any(key.gvk == gvk for key in self._informers):
            raise ValueError(
                f"{gvk.kind} was read or watched before being scoped: configure it first"
            )
        self._by_object[gvk] = scope
        self._scopes.pop(gvk, None)

    def scope_of(self, gvk: GVK[Any]) -> KindScope:
        """Which objects of ``gvk`` the cache holds (its ByObject over the defaults)."""
        scope = self._scopes.get(gvk)
        if scope is None:
            options = CacheOptions(
                by_object={gvk: self._by_object[gvk]} if gvk in self._by_object else {},
                default_namespaces=self._options.default_namespaces,
                default_label_selector=self._options.default_label_selector,
                default_field_selector=self._options.default_field_selector,
                default_transform=self._options.default_transform,
            )
            scope = self._scopes[gvk] = options.scope_of(gvk)
        return scope

    # --- informers -----------------------------------------------------------------------------

    def get_informer(
        self, gvk: GVK[Any], *, namespace: str | None = None, metadata_only: bool = False
    ) -> SharedInformer:
        """The shared informer of ``gvk`` in its configured scope; created on first request,
        started at once if running. ``namespace`` picks one of a multi-namespace scope.

        Raises:
            ScopeError: ``namespace`` is outside the scope, or none was named and the kind is
                cached in several namespaces (``get_informers`` returns them all).
        """
        scope = self.scope_of(gvk)
        scope.check_namespace("get informer", namespace)
        namespaces = scope.informer_namespaces(namespace)
        if len(namespaces) > 1:
            raise ScopeError(
                f"{gvk.kind} is cached in namespaces {', '.join(map(str, namespaces))}: name one, "
                "or use get_informers"
            )
        return self._informer(scope, namespaces[0], metadata_only)

    def get_informers(
        self, gvk: GVK[Any], *, metadata_only: bool = False
    ) -> builtins.list[SharedInformer]:
        """Every informer of ``gvk``'s configured scope: one per namespace, or one."""
        scope = self.scope_of(gvk)
        return [self._informer(scope, ns, metadata_only) for ns in scope.informer_namespaces(None)]

    def _informer(
        self, scope: KindScope, namespace: str | None, metadata_only: bool
    ) -> SharedInformer:
        key = InformerScope(
            scope.gvk, namespace, scope.informer_label_selector, scope.field_selector, metadata_only
        )
        informer = self._informers.get(key)
        if informer is None:
            informer = self._new_informer(key, scope)
            self._informers[key] = informer
            if self._group is not None:
                self._group.start_soon(informer.run, name=f"informer {key}")
        return informer

    def _new_informer(self, key: InformerScope, scope: KindScope) -> SharedInformer:
        view: dict[str, Any] = {"metadata_only": True} if key.metadata_only else {}
        lister_watcher = self._source.lister_watcher(
            key.gvk,
            namespace=key.namespace,
            label_selector=key.label_selector,
            field_selector=key.field_selector,
            **view,
        )
        return SharedInformer(
            lister_watcher,
            name=str(key),
            indexers=self._indexers.get(key.gvk),
            transform=scope.transform_for(key.metadata_only),
            resync_period=self._resync_period,
            compress=self._compress,
        )

    def informers(self) -> dict[InformerScope, SharedInformer]:
        """Every informer requested so far."""
        return dict(self._informers)

    def index_field(self, gvk: GVK[Any], name: str, func: IndexFunc) -> None:
        """Index every ``gvk`` object under ``func(obj)``; queried by ``list(..., index=...)``.

        Informers that exist already are backfilled; later ones are created with the index.
        Registering the same function under the same name again does nothing, so controllers
        that share an index may each register it.

        Raises:
            ValueError: another function is registered under ``name`` for ``gvk``, or ``name``
                starts with ``label:``, the prefix of the label indexes that answer label
                selectors.
        """
        if name.startswith(LABEL_INDEX_PREFIX):
            raise ValueError(
                f"index name {name!r} is reserved: label:<key> indexes are built by label selectors"
            )
        known = self._indexers.setdefault(gvk, {})
        if name in known:
            if known[name] is not func:
                raise ValueError(f"{gvk.kind} already has an index named {name!r}")
            return
        known[name] = func
        for scope, informer in self._informers.items():
            if scope.gvk == gvk:
                informer.add_indexers({name: func})

    def by_index(
        self, gvk: GVK, index: str, value: str, *, metadata_only: bool = False
    ) -> builtins.list[Obj]:
        """The cached ``gvk`` objects that ``index`` (from ``index_field``) files under
        ``value``, read now without waiting: what ``list(gvk, index=(index, value))`` returns once
        synced, callable where nothing may be awaited (a synchronous map function).

        Only informers that exist are read: the kind must be watched or read already, or the
        answer is empty; before an informer synced it holds what it listed so far. Sorted by key.

        Raises:
            ValueError: ``gvk`` has no index named ``index``.
        """
        if index not in self._indexers.get(gvk, {}):
            known = ", ".join(sorted(self._indexers.get(gvk, {}))) or "none"
            raise ValueError(f"{gvk.kind} has no index {index!r} (registered: {known})")
        found: dict[str, Obj] = {}
        for scope, informer in self._informers.items():
            if scope.gvk == gvk and scope.metadata_only == metadata_only:
                for obj in informer.indexer.by_index(index, value):
                    found.setdefault(object_key(obj), obj)
        return [found[key] for key in sorted(found)]

    # --- running -------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether run() is active."""
        return self._group is not None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run every informer, including ones requested later, until cancelled."""
        if self._group is not None:
            raise RuntimeError("cache is already running")
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                for scope, informer in self._informers.items():
                    group.start_soon(informer.run, name=f"informer {scope}")
                self._started.set()
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._group = None
            self._started = anyio.Event()
            self._readable.clear()

    def has_synced(self) -> bool:
        """Whether the cache runs and every informer requested so far has synced."""
        return self.started and all(i.has_synced() for i in self._informers.values())

    async def wait_for_cache_sync(self, timeout: float | None = None) -> None:
        """Wait for the cache to start and for every informer requested so far to sync.

        Raises:
            CacheSyncError: an informer's reflector was refused for good (403, 401, unknown
                resource), or ``timeout`` (default ``sync_timeout``) passed; names the informer
                and the cause.
        """
        limit = self.sync_timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            await self._started.wait()
            while True:
                pending = [i for i in self._informers.values() if not i.has_synced()]
                if not pending:
                    return
                _raise_definitive(pending)
                await _wait_any_state(pending)
        raise self._timeout_error(limit)

    def _timeout_error(self, limit: float) -> CacheSyncError:
        if not self.started:
            return CacheSyncError(f"cache was not started within {limit:.0f}s")
        pending = [i for i in self._informers.values() if not i.has_synced()]
        causes = "; ".join(f"{i.name}: {i.last_error or 'no answer yet'}" for i in pending)
        last = next((i.last_error for i in pending if i.last_error), None)
        return CacheSyncError(f"caches did not sync within {limit:.0f}s: {causes}", last)

    # --- reading ---------------------------------------------------------------------------------

    async def _synced_informers(
        self, scope: KindScope, namespace: str | None, metadata_only: bool
    ) -> builtins.list[SharedInformer]:
        if not self.started:
            raise CacheNotStarted(f"cache read of {scope.gvk} before the cache was started")
        memo = (scope.gvk, namespace, metadata_only)
        readable = self._readable.get(memo)
        if readable is not None:
            return readable
        # Reads use the kind's configured informers, never one of their own.
        informers = [
            self._informer(scope, ns, metadata_only) for ns in scope.informer_namespaces(namespace)
        ]
        for informer in informers:
            await self.wait_for_informer(informer)
        self._readable[memo] = informers
        return informers

    async def wait_for_informer(
        self, informer: SharedInformer, timeout: float | None = None
    ) -> None:
        """Wait until one informer synced.

        Raises:
            CacheSyncError: its reflector was refused for good, or ``timeout`` (default
                ``sync_timeout``) passed.
        """
        if informer.has_synced():
            return  # the read path: no cancel scope, no waiting
        limit = self.sync_timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while not informer.has_synced():
                _raise_definitive([informer])
                await informer.state.wait()
            return
        raise CacheSyncError(
            f"{informer.name} did not sync within {limit:.0f}s: {informer.last_error}",
            informer.last_error,
        )

    async def get(
        self, gvk: GVK[Any], name: str, *, namespace: str | None = None, metadata_only: bool = False
    ) -> Obj:
        """The cached object (the caller's own copy); its PartialObjectMetadata from the
        metadata-only informer with ``metadata_only``.

        Raises:
            NotFound: not in the cache (nor, then, in its scope's selection).
            ScopeError: ``namespace`` is not one the cache holds ``gvk`` in.
            CacheNotStarted, CacheSyncError: as described on the class.
        """
        scope = self.scope_of(gvk)
        scope.check_namespace("get", namespace, name)
        key = f"{namespace}/{name}" if namespace else name
        for informer in await self._synced_informers(scope, namespace, metadata_only):
            obj = informer.indexer.get(key)
            if obj is not None:
                return obj
        raise NotFound(
            {"code": 404, "reason": "NotFound", "message": f"{gvk.kind} {key!r} not found"}
        )

    async def list(
        self,
        gvk: GVK[Any],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        index: tuple[str, str] | None = None,
        metadata_only: bool = False,
        **_paging: object,
    ) -> Obj:
        """A List object of cached objects, like the apiserver's (``items``, resourceVersion).

        ``namespace`` narrows to one namespace; ``label_selector`` filters as the apiserver
        does; ``field_selector`` supports ``metadata.name``, ``metadata.namespace`` and any
        ``<field>=<value>`` indexed with ``index_field(gvk, "field:<field>", func)`` (as in
        controller-runtime); ``index=(name, value)`` queries any registered index. Paging
        arguments (limit, continue) are accepted and ignored: the whole answer is in memory.
        With ``metadata_only``, a PartialObjectMetadataList from the metadata-only informers.

        Raises:
            ScopeError: the list reaches outside the kind's scope: a namespace it is not
                cached in, a label selector that does not imply the scope's, a field selector
                without the scope's clauses.
            ValueError: an invalid selector, or a field selector without its index.
            CacheNotStarted, CacheSyncError: as described on the class.
        """
        selector = parse_selector(label_selector)
        scope = self.scope_of(gvk)
        scope.check_namespace("list", namespace)
        scope.check_list(label_selector, field_selector)
        fields = _without_clauses(field_selector, scope.field_selector)  # the informer's own
        informers = await self._synced_informers(scope, namespace, metadata_only)
        items: builtins.list[Obj] = []
        for informer in informers:
            labelled = _label_keys(informer.indexer, selector)
            found, narrowed = self._candidates(informer, namespace, fields, index, labelled)
            if (selector or fields) and labelled is None and not narrowed:
                self.scans[gvk] = self.scans.get(gvk, 0) + 1
            items += [o for o in found if selector.matches_object(o)]
        if len(informers) > 1:  # a cluster-scoped kind is in every namespace's informer
            items = builtins.list({object_key(o): o for o in items}.values())
        api_version, kind = (
            (METADATA_API_VERSION, PARTIAL_OBJECT_METADATA)
            if metadata_only
            else (gvk.api_version, gvk.kind)
        )
        return {
            "apiVersion": api_version,
            "kind": f"{kind}List",
            "metadata": {"resourceVersion": informers[0].reflector.last_sync_resource_version},
            "items": items,
        }

    def _candidates(
        self,
        informer: SharedInformer,
        namespace: str | None,
        field_selector: str | None,
        index: tuple[str, str] | None,
        labelled: set[str] | None,
    ) -> tuple[builtins.list[Obj], bool]:
        """The objects a list may return before its label selector is checked, and whether a
        field index narrowed them; ``labelled``: the keys the label indexes allow, if any."""
        indexer = informer.indexer
        if labelled is not None:  # usually few: start from them, not from the namespace
            found = [o for k in sorted(labelled) if (o := indexer.get(k)) is not None]
            if namespace:
                found = [o for o in found if o["metadata"].get("namespace") == namespace]
        elif namespace:
            found = indexer.by_index(NAMESPACE_INDEX, namespace)
        else:
            found = indexer.values()
        narrowed = False
        if index is not None:
            found, narrowed = _only_keys(found, indexer.index_keys(*index)), True
        for field, value in _field_clauses(field_selector):
            if field in ("metadata.name", "metadata.namespace"):
                attribute = field.removeprefix("metadata.")
                found = [o for o in found if o["metadata"].get(attribute) == value]
            elif f"field:{field}" in indexer.index_names():
                found = _only_keys(found, indexer.index_keys(f"field:{field}", value))
                narrowed = True
            else:
                raise ValueError(
                    f"field selector {field!r} needs an index: "
                    f"cache.index_field(gvk, 'field:{field}', func)"
                )
        return found, narrowed


def _label_keys(indexer: Indexer, selector: Selector) -> set[str] | None:
    """The keys the label index allows for the narrowest ``=``/``in`` requirement, or None when
    the selector has none; the selector checks every requirement on them."""
    # Only the narrowest is read: intersecting with a common label's keys would cost that
    # label's bucket, every object of the kind perhaps, on each list.
    equalities = [r for r in selector.requirements if r.operator in ("=", "in")]
    if not equalities:
        return None
    narrowest = min(
        equalities, key=lambda r: sum(indexer.label_count(r.key, value) for value in r.values)
    )
    return {k for value in narrowest.values for k in indexer.label_keys(narrowest.key, value)}


def _only_keys(objects: builtins.list[Obj], keys: builtins.list[str]) -> builtins.list[Obj]:
    wanted = set(keys)
    return [o for o in objects if object_key(o) in wanted]


def _without_clauses(selector: str | None, held: str | None) -> str | None:
    """``selector`` less the clauses of ``held`` (which every cached object meets already)."""
    if not held:
        return selector

    def normal(clause: str) -> str:
        return "".join(clause.replace("==", "=").split())

    drop = {normal(c) for c in held.split(",")}
    kept = [c for c in (selector or "").split(",") if c and normal(c) not in drop]
    return ",".join(kept) or None


def _field_clauses(selector: str | None) -> builtins.list[tuple[str, str]]:
    """``a=b,c==d`` as pairs; only equality is supported by indexes."""
    clauses = []
    for clause in filter(None, (selector or "").split(",")):
        field, operator, value = clause.partition("=")
        if not operator or field.endswith("!"):
            raise ValueError(f"unsupported field selector clause {clause!r} (use field=value)")
        clauses.append((field.strip(), value.removeprefix("=").strip()))
    return clauses


def _raise_definitive(pending: list[SharedInformer]) -> None:
    for informer in pending:
        if isinstance(informer.last_error, _DEFINITIVE):
            raise CacheSyncError(
                f"informer {informer.name} cannot sync: {informer.last_error}", informer.last_error
            )


async def _wait_any_state(informers: list[SharedInformer]) -> None:
    """Return as soon as any of the informers reports a state change."""
    # Take the events now: a change between this check and the waiters starting must still count.
    events = [informer.state.current() for informer in informers]
    async with anyio.create_task_group() as group:

        async def waiter(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(waiter, event)
