"""WatchEvents reads the events of one watch response: the apiserver's newline-delimited JSON.

A watch answers one JSON object per line ({"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|
"ERROR", "object": {...}}) for as long as the server keeps the stream open. ``Client.watch`` opens
the response and yields a ``WatchEvents`` over it; reflectors consume it through ``ListerWatcher``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final

import aiohttp
import orjson

from reconcile.errors import ResponseTooLarge

__all__ = ["DEFAULT_MAX_WATCH_EVENT_BYTES", "WATCH_READ_GRACE", "WatchEvents"]

WATCH_READ_GRACE: Final = 30.0
"""Seconds of silence beyond ``timeout_seconds`` after which a watch is considered hung."""
WATCH_CHUNK: Final = 1 << 16
DEFAULT_MAX_WATCH_EVENT_BYTES: Final = 16 << 20
"""Bytes of one watch event (one line) read at most: 16 MiB, the cap of apimachinery's streaming
decoder on one event frame (runtime/serializer/streaming, maxBytes), so nothing client-go accepts
is refused. An object is at most 1.5 MiB in etcd (its default --max-request-bytes) and 3 MiB in a
request to the apiserver (MaxRequestBodyBytes); its JSON in an event, even with managedFields,
stays well below 16 MiB."""


class WatchEvents:
    """The events of one watch response: newline-delimited JSON read in chunks.

    Reading chunks and splitting on newlines ourselves (instead of ``readline``) accepts events of
    any size up to ``max_event_bytes``; aiohttp's line reader gives up on lines longer than its
    buffer. A longer line (a server that never ends one) raises ``ResponseTooLarge`` once that
    many bytes of it are held, so what the server sends never grows the reader's memory beyond it.
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        max_event_bytes: int = DEFAULT_MAX_WATCH_EVENT_BYTES,
    ) -> None:
        self._response = response
        self._max = max_event_bytes
        self._lines: deque[bytes] = deque()
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._ended = False

    @property
    def content_encoding(self) -> str:
        """The stream's Content-Encoding ("" when the events come uncompressed)."""
        return str(self._response.headers.get("Content-Encoding", ""))

    @property
    def closed(self) -> bool:
        """Whether the HTTP response was closed (the watch context was exited)."""
        return bool(self._response.closed)

    def __aiter__(self) -> WatchEvents:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while True:
            while self._lines:
                line = self._lines.popleft()
                if len(line) > self._max:
                    raise self._too_large()
                if line.strip():
                    event: dict[str, Any] = orjson.loads(line)
                    return event
            if self._ended:
                raise StopAsyncIteration
            await self._read()

    async def _read(self) -> None:
        chunk = await self._response.content.readany()
        if not chunk:
            self._ended = True
            self._lines.append(b"".join(self._partial))  # a last line without its newline
            self._partial = []
            return
        *complete, rest = chunk.split(b"\n")
        if complete:
            if self._partial_size + len(complete[0]) > self._max:
                raise self._too_large()
            # Joining the pieces once per line keeps long lines linear in their size.
            self._lines.append(b"".join([*self._partial, complete[0]]))
            self._lines.extend(complete[1:])
            self._partial = []
            self._partial_size = 0
        if rest:
            self._partial.append(rest)
            self._partial_size += len(rest)
            if self._partial_size > self._max:
                raise self._too_large()

    def _too_large(self) -> ResponseTooLarge:
        self._partial = []  # the error may be held a while: not the bytes with it
        self._partial_size = 0
        url = self._response.url
        return ResponseTooLarge(f"a watch event from {url.host} on {url.path}", self._max)
