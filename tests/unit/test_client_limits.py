"""Byte caps on what an apiserver sends the client: one watch event line, one whole response.

A member cluster's apiserver is not trusted with the controller-manager's memory: a compromised one
could send a watch line that never ends, or a body that never ends. A fake apiserver on 127.0.0.1
(aiohttp) plays that member; each endless answer stops writing (without ending) after a few times
the cap, so a client without the cap waits instead of eating the machine, and the test's deadline
fails it. The real-apiserver side (ordinary watches and lists still work) is covered by
tests/integration/test_watch_encoding.py, test_reflector.py and test_client.py.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import orjson
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from reconcile.cache.reflector import Backoff, Reflector
from reconcile.client.client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_WATCH_EVENT_BYTES,
    Client,
)
from reconcile.client.config import ClusterConfig
from reconcile.errors import InternalError, ResponseTooLarge
from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
MIB = 1 << 20
CAP = MIB
"""The cap the tests set; the defaults are tested as values."""
RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "configmaps",
            "namespaced": True,
            "kind": "ConfigMap",
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        }
    ],
}


def _configmap(name: str, resource_version: str) -> Obj:
    metadata = {"name": name, "namespace": "default", "resourceVersion": resource_version}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


class Member:
    """A fake apiserver serving ConfigMaps; ``lists``, ``watches`` count the requests."""

    def __init__(self) -> None:
        self.list_mode = "normal"
        self.watch_mode = "endless-line"
        self.lists = 0
        self.watches = 0
        self.app = web.Application()
        self.app.router.add_get("/api/v1", self._discovery)
        self.app.router.add_get("/api/v1/configmaps", self._configmaps)
        self.app.router.add_get("/readyz", self._endless_body)

    async def _discovery(self, request: web.Request) -> web.Response:
        return web.json_response(RESOURCES)

    async def _configmaps(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("1", "true"):
            self.watches += 1
            return await self._watch(request)
        self.lists += 1
        if self.list_mode == "endless":
            return await self._endless(request, b'{"kind":"ConfigMapList","items":[{"x":"')
        if self.list_mode == "declared-too-large":
            return await self._endless(request, b"", content_length=2 * CAP)
        listing = {
            "kind": "ConfigMapList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "1"},
            "items": [_configmap("a", "1")],
        }
        return web.json_response(listing)

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        if self.watch_mode == "endless-error":
            return await self._endless(request, b'{"kind":"Status","message":"', status=500)
        added = orjson.dumps({"type": "ADDED", "object": _configmap("b", "2")}) + b"\n"
        return await self._endless(request, added + b'{"type":"MODIFIED","object":{"x":"')

    async def _endless_body(self, request: web.Request) -> web.StreamResponse:
        return await self._endless(request, b"ok")

    async def _endless(
        self,
        request: web.Request,
        prefix: bytes,
        *,
        status: int = 200,
        content_length: int | None = None,
    ) -> web.StreamResponse:
        """``prefix``, then bytes with no newline and no end: 8 times the cap, then silence."""
        response = web.StreamResponse(status=status, headers={"Content-Type": "application/json"})
        if content_length is not None:
            response.content_length = content_length
        await response.prepare(request)
        await response.write(prefix)
        chunk = b"x" * (64 << 10)
        try:
            for _ in range(8 * CAP // len(chunk)):
                await response.write(chunk)
            await anyio.sleep_forever()
        except ConnectionResetError:  # the client gave up: what it should do
            pass
        return response


@pytest_asyncio.fixture(loop_scope="session")
async def member() -> AsyncIterator[Member]:
    yield Member()


@pytest_asyncio.fixture(loop_scope="session")
async def client(member: Member) -> AsyncIterator[Client]:
    async with TestServer(member.app, host="127.0.0.1") as server:
        config = ClusterConfig(str(server.make_url("")), source="fake member")
        async with Client(config) as client:
            client.max_response_bytes = CAP
            client.max_watch_event_bytes = CAP
            yield client


async def test_the_default_caps_are_client_gos_event_frame_and_a_generous_response() -> None:
    # apimachinery's streaming decoder refuses a watch event frame over 16 MiB
    # (runtime/serializer/streaming, maxBytes): nothing client-go accepts is refused here.
    assert DEFAULT_MAX_WATCH_EVENT_BYTES == 16 * MIB
    assert DEFAULT_MAX_RESPONSE_BYTES == 256 * MIB
    config = ClusterConfig("https://127.0.0.1:1", source="test")
    client = Client(config, max_response_bytes=3 * MIB, max_watch_event_bytes=2 * MIB)
    assert (client.max_response_bytes, client.max_watch_event_bytes) == (3 * MIB, 2 * MIB)


async def _too_large(read: Callable[[], Any]) -> ResponseTooLarge:
    """The error ``read`` raises, within a deadline: without a cap it would wait forever."""
    with anyio.fail_after(10), pytest.raises(ResponseTooLarge) as raised:
        await read()
    return raised.value


async def test_an_endless_watch_line_is_refused_with_memory_bounded(client: Client) -> None:
    async def watch() -> None:
        async with client.watch(CONFIGMAP) as events:
            first = await anext(events)
            assert first["object"]["metadata"]["name"] == "b", "lines under the cap pass"
            await anext(events)

    tracemalloc.start()
    try:
        error = await _too_large(watch)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * CAP, f"{peak} bytes held for a cap of {CAP}"
    assert isinstance(error, InternalError), "as client-go reports an event it cannot decode"
    assert error.code == 500
    assert f"{CAP} bytes" in error.message
    assert error.limit == CAP


async def test_an_endless_list_body_is_refused(client: Client, member: Member) -> None:
    member.list_mode = "endless"
    error = await _too_large(lambda: client.list(CONFIGMAP))
    assert "GET /api/v1/configmaps" in error.message


async def test_a_body_declared_larger_than_the_cap_is_refused_unread(
    client: Client, member: Member
) -> None:
    member.list_mode = "declared-too-large"
    error = await _too_large(lambda: client.list(CONFIGMAP))
    assert "Content-Length" in error.message


async def test_an_endless_error_body_of_a_watch_is_refused(client: Client, member: Member) -> None:
    member.watch_mode = "endless-error"

    async def watch() -> None:
        async with client.watch(CONFIGMAP):
            raise AssertionError("a 500 never opens the watch")

    await _too_large(watch)


async def test_an_endless_body_of_a_raw_path_is_refused(client: Client) -> None:
    await _too_large(lambda: client.get_path("/readyz"))


class Sink:
    def __init__(self) -> None:
        self.names: list[str] = []

    def replace(self, items: list[Obj], resource_version: str) -> None:
        self.names = [item["metadata"]["name"] for item in items]

    def apply(self, event_type: str, obj: Obj) -> None:
        self.names.append(obj["metadata"]["name"])


@pytest.mark.parametrize("watch_list", [False, True], ids=["list+watch", "watch-list"])
async def test_a_reflector_takes_an_endless_line_as_a_failed_watch_and_relists(
    client: Client, member: Member, watch_list: bool
) -> None:
    sink = Sink()
    errors: list[BaseException] = []

    def on_state() -> None:
        if reflector.last_error is not None:
            errors.append(reflector.last_error)

    reflector = Reflector(
        client.lister_watcher(CONFIGMAP),
        sink,
        name="member configmaps",
        backoff=Backoff(initial=0.01, maximum=0.05, jitter=0.0),
        on_state=on_state,
        use_watch_list=watch_list,
    )

    async def relisted() -> bool:
        return member.lists >= 3 and len(errors) >= 2

    async with anyio.create_task_group() as group:
        group.start_soon(reflector.run)
        await eventually(relisted, timeout=10)
        group.cancel_scope.cancel()
    assert all(isinstance(error, ResponseTooLarge) for error in errors)
    assert reflector.synced
    assert sink.names[0] == "a", "each round synced from a list"
