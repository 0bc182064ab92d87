"""Client reads and writes Kubernetes objects, as plain dicts, through the apiserver's REST API.

It is the live half of controller-runtime's client: every call is one HTTP request (paced by a
QPS/burst token bucket, retried after 429 TooManyRequests), objects go out and come back as the
JSON the apiserver speaks, decoded with orjson, and every answer is a new dict the caller owns.
``client.transport`` provides the connection (a pooled aiohttp session with the cluster's TLS
context) and the credentials of each request (rotating tokens, exec plugins). Kinds are mapped to
REST paths by a discovery-backed ``RESTMapper``.

Verbs: ``get``, ``list`` (one page) and ``list_all`` (every page), ``create``, ``update``, ``patch``
(merge, JSON, strategic merge, server-side ``apply``), ``delete``, ``delete_all_of``; the status
(``get_status``, ``update_status``, ``patch_status``) and scale (``get_scale``, ``update_scale``,
``patch_scale``) subresources; ``watch`` and ``lister_watcher`` for reflectors. They and their
docstrings are the interfaces' of ``client.interfaces`` (``Reader``, ``Writer``, ``StatusWriter``,
``SubResourceClient``, ``WithWatch``), which this client, testenv's fake and the cache-backed
client share; this module implements their primitives as HTTP requests.

Objects to write are identified by their own apiVersion, kind and metadata; objects to read (or to
delete or patch without holding them) by a ``GVK``, a name and a namespace. Any non-2xx answer
raises the ``ApiError`` subclass its Status reason names, chained to the HTTP error.

``ListerWatcher`` is what a reflector consumes. The options of a call (selectors, ``PatchType``,
``Preconditions``, ``PropagationPolicy``) live in ``client.options`` and the watch stream reader
``WatchEvents`` in ``client.watch``; they are re-exported here, as are ``Reader`` and
``ListerWatcher``.
"""

from __future__ import annotations

import builtins
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final

import aiohttp
import orjson
from multidict import CIMultiDict, CIMultiDictProxy

from reconcile import __version__
from reconcile.client.config import ClusterConfig
from reconcile.client.interfaces import DEFAULT_PAGE_SIZE, ListerWatcher, ObjectClient, Reader
from reconcile.client.options import (
    DeleteOptions,
    ListOptions,
    PatchOptions,
    PatchType,
    Preconditions,
    PropagationPolicy,
    SelectorLike,
    Target,
    WatchOptions,
    WriteOptions,
    query_params,
    selector_string,
)
from reconcile.client.restmapper import DEFAULT_MIN_REFRESH_INTERVAL, RESTMapper
from reconcile.client.transport import Transport
from reconcile.client.watch import DEFAULT_MAX_WATCH_EVENT_BYTES, WATCH_READ_GRACE, WatchEvents
from reconcile.errors import ResponseTooLarge, api_error
from reconcile.flowcontrol import (
    DEFAULT_CLIENT_BURST,
    DEFAULT_CLIENT_QPS,
    RequestLimiter,
    RetryAfter,
    TokenBucket,
    Unlimited,
    parse_retry_after,
)
from reconcile.gvk import GVK, Resource
from reconcile.objects import (
    METADATA_API_VERSION,
    PARTIAL_OBJECT_METADATA,
    as_partial_object_metadata,
)

__all__ = [
    "Client",
    "DEFAULT_FIELD_MANAGER",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_WATCH_EVENT_BYTES",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_REQUEST_TIMEOUT",
    "ListerWatcher",
    "PatchType",
    "Preconditions",
    "PropagationPolicy",
    "Reader",
    "SelectorLike",
    "WatchEvents",
]

DEFAULT_FIELD_MANAGER: Final = "reconcile"
"""The field manager named on every write unless the client or the call names another."""
DEFAULT_REQUEST_TIMEOUT: Final = 60.0
"""Seconds one request (not a watch) may take in total; None on the client disables it."""
DEFAULT_MAX_RESPONSE_BYTES: Final = 256 << 20
"""Bytes of one answer (not a watch) read at most, decompressed: 256 MiB. Generous: a page of 500
objects at etcd's 1.5 MiB object limit is 750 MiB, but real pages are KBs an object, and a whole
collection from the watch cache at "0" of 50,000 objects of 5 KB is 250 MB; and finite: decoded,
that much JSON is already several times its size in Python objects."""

JSON: Final = "application/json"
_AS_METADATA: Final = ";g=meta.k8s.io;v=v1"
METADATA_ACCEPT: Final = f"{JSON};as=PartialObjectMetadata{_AS_METADATA},{JSON}"
"""Accept of a metadata-only watch: events of PartialObjectMetadata, or whole objects from a server
that cannot (some aggregated APIs), which callers reduce themselves."""
METADATA_LIST_KIND: Final = f"{PARTIAL_OBJECT_METADATA}List"
METADATA_LIST_ACCEPT: Final = f"{JSON};as=PartialObjectMetadataList{_AS_METADATA},{JSON}"
"""Accept of a metadata-only list: a PartialObjectMetadataList."""


USER_AGENT: Final = f"reconcile/{__version__}"


def _transport_error(response: aiohttp.ClientResponse) -> aiohttp.ClientResponseError:
    """The HTTP error behind an ApiError: method and URL, without the request's headers.

    The request headers carry the bearer token; an error chained into tracebacks and logs must not.
    """
    sent = response.request_info
    no_headers: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
    request = aiohttp.RequestInfo(sent.url, sent.method, no_headers, sent.real_url)
    return aiohttp.ClientResponseError(
        request,
        (),
        status=response.status,
        message=response.reason or "",
        headers=response.headers,
    )


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole (decompressed) body of ``response``, but no more than ``limit`` bytes of it.

    Raises:
        ResponseTooLarge: the body is longer (or says it is); the response is left half-read,
            for the caller to close.
    """
    what = f"the answer of {response.url.host} to {response.method} {response.url.path}"
    declared = response.content_length
    # The header counts compressed bytes; gzip never shrinks a body it cannot compress, so a
    # declared length over the cap is a body over it.
    if declared is not None and declared > limit:
        raise ResponseTooLarge(f"{what} (Content-Length {declared})", limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(what, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _decode_error(response: aiohttp.ClientResponse, raw: bytes) -> Any:
    if raw and response.content_type == JSON:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return raw  # plain text, e.g. "404 page not found" for a path the server does not serve


def _fill_items(listing: dict[str, Any], gvk: GVK[Any]) -> dict[str, Any]:
    # The apiserver leaves apiVersion/kind out of built-in list items; items should name themselves.
    for item in listing.get("items") or ():
        item.setdefault("apiVersion", gvk.api_version)
        item.setdefault("kind", gvk.kind)
    return listing


def _metadata_items(listing: dict[str, Any]) -> dict[str, Any]:
    items = listing.get("items") or []
    if listing.get("kind") == METADATA_LIST_KIND:
        for item in items:  # metadata already: typed in place, no copies of 10,000 dicts
            item.setdefault("apiVersion", METADATA_API_VERSION)
            item.setdefault("kind", PARTIAL_OBJECT_METADATA)
        return listing
    # A server that could not answer as PartialObjectMetadataList sent the whole objects.
    listing["items"] = [as_partial_object_metadata(item) for item in items]
    listing["apiVersion"], listing["kind"] = METADATA_API_VERSION, METADATA_LIST_KIND
    return listing


def _limiter(qps: float | None, burst: int | None) -> RequestLimiter:
    if qps is None and burst is None:
        return Unlimited()
    return TokenBucket(qps=qps or DEFAULT_CLIENT_QPS, burst=burst or DEFAULT_CLIENT_BURST)


class Client(ObjectClient):
    """A live client for one cluster: reads and writes go straight to its apiserver.

    Create it inside a running event loop (or with ``await Client.connect()``) and close it with
    ``await client.close()`` or ``async with``. Options:

    - ``field_manager``: the manager named on writes. Defaults to ``"reconcile"``.
    - ``qps`` / ``burst``: a client-side token bucket. Default none: as controller-runtime since
      v0.21, the apiserver's priority and fairness paces clients (its 429s are retried, see
      ``retry``). Either one given enables the bucket (the other then defaults to 20 qps / 30).
    - ``limiter``: replaces the token bucket (e.g. ``Unlimited()``, or one shared by clients).
    - ``retry``: 429 handling. Defaults to ``RetryAfter()`` (10 retries, waits capped at 60 s).
    - ``request_timeout``: total seconds per request, watches excepted. Defaults to 60; None = none.
    - ``discovery_refresh_interval``: minimum seconds between refetches of one group version on a
      mapping miss. Defaults to 2.
    - ``max_response_bytes``: bytes of one answer (watches excepted) read at most, decompressed;
      more raises ``ResponseTooLarge``. Defaults to 256 MiB.
    - ``max_watch_event_bytes``: bytes of one watch event (one line of the stream) read at most;
      more ends the watch with ``ResponseTooLarge``. Defaults to 16 MiB, client-go's cap on one
      event frame.

    The two caps bound what a server (a member cluster among others) can make the client hold.
    """

    def __init__(
        self,
        config: ClusterConfig,
        *,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        qps: float | None = None,
        burst: int | None = None,
        limiter: RequestLimiter | None = None,
        retry: RetryAfter | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        discovery_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_watch_event_bytes: int = DEFAULT_MAX_WATCH_EVENT_BYTES,
    ) -> None:
        self.config = config
        self.field_manager = field_manager
        self.limiter: RequestLimiter = limiter or _limiter(qps, burst)
        self.retry = retry or RetryAfter()
        self.request_timeout = request_timeout
        self.max_response_bytes = max_response_bytes
        self.max_watch_event_bytes = max_watch_event_bytes
        self.mapper = RESTMapper(self._get_json, min_refresh_interval=discovery_refresh_interval)
        self.write_guard: Callable[[str, str], None] | None = None
        """Called before every request that is not a GET; raises to refuse it (non-leaders)."""
        self._transport = Transport(config)

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        **options: Any,
    ) -> Client:
        """A client for ``ClusterConfig.load(kubeconfig, context=context)``; ``options`` as above.

        Raises:
            ConfigError: no usable configuration.
        """
        return cls(await ClusterConfig.load(kubeconfig, context=context), **options)

    def __repr__(self) -> str:
        return f"Client(host={self.config.host!r}, field_manager={self.field_manager!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection pool. Open watches should be exited first."""
        await self._transport.close()

    # Transport: one request over the cluster's pooled session, raw bytes both ways.

    async def _open(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        data: bytes | None,
        content_type: str,
        timeout: aiohttp.ClientTimeout,
        accept: str = JSON,
        *,
        compressed: bool = True,
    ) -> aiohttp.ClientResponse:
        """Send one request once the limiter allows; the caller must release the response.

        ``compressed=False`` asks for an uncompressed answer (``Accept-Encoding: identity``).
        """
        if method != "GET" and self.write_guard is not None:
            self.write_guard(method, path)
        await self.limiter.acquire()
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if not compressed:
            headers["Accept-Encoding"] = "identity"
        if data is not None:
            headers["Content-Type"] = content_type
        return await self._transport.request(
            method, path, params=query, data=data, headers=headers, timeout=timeout
        )

    def _raise_for_status(self, response: aiohttp.ClientResponse, raw: bytes) -> None:
        if response.status < 300:
            return
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        error = api_error(response.status, _decode_error(response, raw), retry_after=retry_after)
        raise error from _transport_error(response)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> Any:
        """One request with a JSON answer, retried after 429.

        Raises:
            ApiError: a non-2xx answer, typed by its Status reason.
        """
        data = None if body is None else orjson.dumps(body)
        timeout = aiohttp.ClientTimeout(total=self.request_timeout)

        async def attempt() -> Any:
            response = await self._open(method, path, query, data, content_type, timeout, accept)
            try:
                raw = await _read_capped(response, self.max_response_bytes)
            except BaseException:
                response.close()  # half-read: the connection cannot go back to the pool
                raise
            self._raise_for_status(response, raw)
            return orjson.loads(raw) if raw else None

        return await self.retry.run(attempt)

    async def _get_json(self, path: str) -> Any:
        return await self._call("GET", path)

    async def create_subresource(
        self,
        gvk: GVK[Any],
        name: str,
        subresource: str,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """POST ``body`` to a subresource that creates something: ``serviceaccounts/token``
        (TokenRequest), ``pods/eviction``, ``pods/binding``; returns the server's answer.

        Raises:
            NotFound: no such object, or the kind has no such subresource.
            ApiError: any other refusal.
        """
        path = await self._path(gvk, namespace, name, subresource)
        answer: dict[str, Any] = await self._call("POST", path, body=body)
        return answer

    async def get_path(self, path: str, *, timeout: float | None = None) -> tuple[int, bytes]:
        """GET any path (``/readyz``, ``/version``, ...): the status code and raw body, never
        raising for a non-2xx answer. For health probes and other non-resource endpoints.

        Raises:
            aiohttp.ClientError, OSError, TimeoutError: the server could not be reached.
            ResponseTooLarge: the body is longer than ``max_response_bytes``.
        """
        limit = aiohttp.ClientTimeout(total=timeout or self.request_timeout)
        response = await self._open("GET", path, (), None, JSON, limit)
        try:
            return response.status, await _read_capped(response, self.max_response_bytes)
        except BaseException:
            response.close()  # half-read: the connection cannot go back to the pool
            raise
        finally:
            response.release()

    async def _path(
        self, gvk: GVK[Any], namespace: str | None, name: str | None = None, subresource: str = ""
    ) -> str:
        resource = await self.mapper.resource_for(gvk)
        if resource.namespaced and not namespace and (name or subresource):
            raise ValueError(f"{gvk.kind} is namespaced: {name!r} needs a namespace")
        path = resource.path(namespace, name)
        return f"{path}/{subresource}" if subresource else path

    async def _target_path(self, target: Target) -> str:
        return await self._path(target.gvk, target.namespace, target.name, target.subresource)

    async def resource_for(self, gvk: GVK[Any]) -> Resource:
        """How the apiserver serves ``gvk`` (plural, scope, subresources, verbs).

        Raises:
            NoKindMatch: the kind is not served, even after refreshing discovery.
        """
        return await self.mapper.resource_for(gvk)

    # Primitives under the interfaces' methods: one request each, arguments already normalised.

    async def _get(self, target: Target, *, metadata_only: bool) -> dict[str, Any]:
        path = await self._target_path(target)
        accept = METADATA_ACCEPT if metadata_only else JSON
        obj: dict[str, Any] = await self._call("GET", path, accept=accept)
        return obj

    async def _list(
        self, gvk: GVK[Any], namespace: str | None, options: ListOptions
    ) -> dict[str, Any]:
        query = query_params(
            labelSelector=selector_string(options.label_selector),
            fieldSelector=selector_string(options.field_selector),
            limit=options.limit,
            resourceVersion=options.resource_version,
            resourceVersionMatch=options.resource_version_match,
            **{"continue": options.continue_ or None},
        )
        path = await self._path(gvk, namespace)
        if options.metadata_only:
            listing = await self._call("GET", path, query=query, accept=METADATA_LIST_ACCEPT)
            return _metadata_items(listing)
        listing = await self._call("GET", path, query=query)
        return _fill_items(listing, gvk)

    def _write_query(self, options: WriteOptions) -> builtins.list[Any]:
        return query_params(
            fieldManager=options.field_manager or self.field_manager,
            dryRun="All" if options.dry_run else None,
        )

    async def _create(
        self, gvk: GVK[Any], namespace: str | None, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        path, query = await self._path(gvk, namespace), self._write_query(options)
        created: dict[str, Any] = await self._call("POST", path, query=query, body=body)
        return created

    async def _update(
        self, target: Target, body: Mapping[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        path, query = await self._target_path(target), self._write_query(options)
        updated: dict[str, Any] = await self._call("PUT", path, query=query, body=body)
        return updated

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> dict[str, Any]:
        query = self._write_query(options) + query_params(force=options.force)
        path = await self._target_path(target)
        accept = METADATA_ACCEPT if options.metadata_only else JSON
        content_type = options.patch_type.value
        patched: dict[str, Any] = await self._call(
            "PATCH", path, query=query, body=body, content_type=content_type, accept=accept
        )
        return patched

    async def _delete(self, target: Target, options: DeleteOptions) -> dict[str, Any]:
        path = await self._target_path(target)
        answer: dict[str, Any] = await self._call("DELETE", path, body=options.to_json())
        return answer

    async def _delete_collection(
        self, gvk: GVK[Any], namespace: str | None, selectors: ListOptions, options: DeleteOptions
    ) -> dict[str, Any]:
        query = query_params(
            labelSelector=selector_string(selectors.label_selector),
            fieldSelector=selector_string(selectors.field_selector),
        )
        path = await self._path(gvk, namespace)
        answer: dict[str, Any] = await self._call(
            "DELETE", path, query=query, body=options.to_json()
        )
        return answer

    def _watch(
        self, gvk: GVK[Any], namespace: str | None, options: WatchOptions
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        initial = options.send_initial_events
        query = query_params(
            watch=True,
            labelSelector=selector_string(options.label_selector),
            fieldSelector=selector_string(options.field_selector),
            resourceVersion=options.resource_version or None,
            timeoutSeconds=options.timeout_seconds,
            allowWatchBookmarks=options.allow_watch_bookmarks,
            sendInitialEvents=initial,
            resourceVersionMatch="NotOlderThan" if initial else None,
        )
        accept = METADATA_ACCEPT if options.metadata_only else JSON
        return self._stream(gvk, namespace, query, options.timeout_seconds, accept)

    @contextlib.asynccontextmanager
    async def _stream(
        self,
        gvk: GVK[Any],
        namespace: str | None,
        query: Sequence[tuple[str, str]],
        timeout_seconds: int,
        accept: str = JSON,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        path = await self._path(gvk, namespace)
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.request_timeout,
            sock_read=timeout_seconds + WATCH_READ_GRACE,
        )

        async def attempt() -> aiohttp.ClientResponse:
            # Uncompressed: kube-apiserver gzips a WatchList stream and then deflates and flushes
            # every live event on it, which costs both sides CPU for little gain on events of a
            # few KB (10 % of a no-op controller's busy time in a py-spy profile of
            # bench/reconcile; client-go asks for gzip here).
            response = await self._open(
                "GET", path, query, None, JSON, timeout, accept, compressed=False
            )
            if response.status >= 300:
                try:
                    raw = await _read_capped(response, self.max_response_bytes)
                finally:
                    response.close()
                self._raise_for_status(response, raw)
            return response

        response = await self.retry.run(attempt)
        try:
            yield WatchEvents(response, self.max_watch_event_bytes)
        finally:
            # Closing (not releasing) drops the connection: the stream was not read to its end.
            response.close()
