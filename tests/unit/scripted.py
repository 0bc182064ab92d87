"""A scripted ListerWatcher for unit tests of the reflector, informers and cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio

from reconcile.errors import Gone, Invalid
from reconcile.objects import Obj

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


def watch_list_refused() -> Invalid:
    """What kube-apiserver answers a watch-list with its WatchList feature gate off (1.37)."""
    message = (
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    )
    return Invalid(
        {
            "kind": "Status",
            "code": 422,
            "reason": "Invalid",
            "message": f'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: {message}',
            "details": {
                "causes": [{"reason": "FieldValueForbidden", "field": "sendInitialEvents"}]
            },
        }
    )


def initial_events_end(rv: str) -> dict[str, Any]:
    """The BOOKMARK that ends a watch-list's initial events."""
    meta = {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}
    return {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": meta}}


class Script:
    """Answers list and watch calls from queues; records every call.

    Watches with ``send_initial_events`` (watch-lists) are answered from ``watch_lists`` and
    recorded in ``watch_list_calls``; without ``watch_lists`` they are refused as a server with
    the WatchList feature off refuses them, so scripts written for list+watch stay as they are.
    """

    def __init__(
        self, lists: list[Any], watches: list[Any], watch_lists: list[Any] | None = None
    ) -> None:
        self.lists, self.watches, self.watch_lists = lists, watches, watch_lists
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.watch_list_calls: list[dict[str, Any]] = []

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
        if kwargs.get("send_initial_events"):
            self.watch_list_calls.append(kwargs)
            if self.watch_lists is None:
                raise watch_list_refused()
            script = self.watch_lists.pop(0) if self.watch_lists else [HANG]
        else:
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
