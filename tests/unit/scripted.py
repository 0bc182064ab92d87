"""A scripted ListerWatcher for unit tests of the reflector, informers and cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio

from reconcile.errors import Gone
from reconcile.store import Obj

HANG: Any = object()


def cm(name: str, rv: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def page(rv: str, *items: Obj, token: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    return {"apiVersion": "v1", "kind": "ConfigMapList", "metadata": meta, "items": list(items)}


def gone() -> Gone:
    return Gone({"code": 410, "reason": "Expired", "message": "too old resource version"})


class Script:
    """Answers list and watch calls from queues; records every call."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists, self.watches = lists, watches
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []

    async def list(self, **kwargs: Any) -> dict[str, Any]:
        self.list_calls.append(kwargs)
        if not self.lists:
            await anyio.sleep_forever()
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        result: dict[str, Any] = answer
        return result

    def watch(self, **kwargs: Any) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        self.watch_calls.append(kwargs)
        script = self.watches.pop(0) if self.watches else [HANG]
        if isinstance(script, Exception):
            raise script

        @asynccontextmanager
        async def stream() -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
            async def events() -> AsyncIterator[dict[str, Any]]:
                for event in script:
                    if event is HANG:
                        await anyio.sleep_forever()
                    else:
                        yield event

            yield events()

        return stream()
