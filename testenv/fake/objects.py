"""Objects are the fake's stored objects as dicts; these helpers identify, copy and read them.

Stored objects are private to the fake: callers get copies (``served``) and what they send is
copied as the apiserver would decode it (``from_wire``). A stored object's ``Key`` is its
namespace (or "") and name.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from reconcile.gvk import GVK
from reconcile.objects import Obj, deep_copy
from testenv.fake.registry import FakeKind

__all__ = [
    "Key",
    "from_wire",
    "now",
    "object_key",
    "path_get",
    "path_set",
    "served",
]

Key = tuple[str, str]  # (namespace or "", name)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_wire(obj: Any) -> Any:
    """A private copy of what a caller sends, as the apiserver would decode it from JSON.

    Raises:
        TypeError: a value JSON cannot carry (the real client fails the same way).
    """
    return orjson.loads(orjson.dumps(obj))


def served(obj: Mapping[str, Any], gvk: GVK) -> Obj:
    """A copy of a stored object for a caller, in the version the caller asked for."""
    copied: Obj = deep_copy(dict(obj))
    copied["apiVersion"] = gvk.api_version
    copied["kind"] = gvk.kind
    return copied


def object_key(kind: FakeKind, name: str, namespace: str | None) -> Key:
    if not kind.namespaced:
        return ("", name)
    if not namespace:
        raise ValueError(f"{kind.gvk.kind} is namespaced: {name!r} needs a namespace")
    return (namespace, name)


def _path_parts(path: str) -> list[str]:
    return [part for part in path.split(".") if part]


def path_get(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in _path_parts(path):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def path_set(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = _path_parts(path)
    current = obj
    for part in parents:
        child = current.get(part)
        if not isinstance(child, dict):
            child = current[part] = {}
        current = child
    current[last] = value
