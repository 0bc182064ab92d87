"""Wire is the encoding of messages between the parent and a Lua worker, and what a result holds.

Both sides import it: the parent without the Lua runtime (``sandbox`` loads lupa, which only
workers need), the worker beside its sandbox. Messages are JSON, orjson's where it can.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

__all__ = ["MAX_RESULT_BYTES", "MAX_RESULT_NODES", "dumps", "loads"]

MAX_RESULT_NODES: Final = 100_000
"""Values (tables, strings, numbers...) one result may hold; a shared table counts per reference."""

MAX_RESULT_BYTES: Final = 16 * 2**20
"""Bytes of text (strings, keys, untouched input objects as JSON) one result may hold."""


def dumps(value: Any) -> bytes:
    """JSON for a pipe: orjson (tagged ``o``), or the stdlib for integers past 64 bits (``j``).

    Raises:
        TypeError, ValueError, RecursionError: the value has no JSON form or is nested too deeply.
    """
    try:
        return b"o" + orjson.dumps(value)
    except TypeError as err:
        if "64-bit" not in str(err):
            raise
    return b"j" + json.dumps(value, allow_nan=False, separators=(",", ":")).encode()


def loads(data: bytes | memoryview) -> Any:
    """Decode what ``dumps`` wrote. Raises: ValueError: not such a message."""
    tag, body = bytes(data[:1]), data[1:]
    if tag == b"o":
        return orjson.loads(body)
    if tag == b"j":
        return json.loads(bytes(body))
    raise ValueError(f"not an interpreter message (tag {tag!r})")
