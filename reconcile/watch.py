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

__all__ = ["WATCH_READ_GRACE", "WatchEvents"]

WATCH_READ_GRACE: Final = 30.0
"""Seconds of silence beyond ``timeout_seconds`` after which a watch is considered hung."""
WATCH_CHUNK: Final = 1 << 16


class WatchEvents:
    """The events of one watch response: newline-delimited JSON read in chunks.

    Reading chunks and splitting on newlines ourselves (instead of ``readline``) accepts events of
    any size; aiohttp's line reader gives up on lines longer than its buffer.
    """

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self._lines: deque[bytes] = deque()
        self._partial: list[bytes] = []
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
            # Joining the pieces once per line keeps long lines linear in their size.
            self._lines.append(b"".join([*self._partial, complete[0]]))
            self._lines.extend(complete[1:])
            self._partial = []
        if rest:
            self._partial.append(rest)
