"""Empties settles the empty tables of a Lua script's result the way Karmada's luavm settles them.

Lua has one empty table for JSON's ``{}`` and ``[]``; Karmada's luavm encodes it as ``[]`` and
then consults *references*, inputs of the call (``ConvertLuaResultInto`` in
pkg/resourceinterpreter/customized/declarative/luavm/lua_convert.go). For every empty value at
a path of the result, list indices left out of the path:

- some reference holds an empty object at that path: it becomes ``{}`` (objects win);
- else some reference holds an empty list there: it stays ``[]``;
- else it is dropped, from its object or from its list.

A non-empty value in a reference says nothing, and the result itself (the root) is never
dropped: the sandbox gives an empty result its operation's shape. The references are the ones
Karmada passes: the object for ReviseReplica, desired and observed for Retain, none for the other
operations, whose empty tables are therefore all dropped. ``sandbox`` calls ``settle`` in the
interpreter workers; it imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

__all__ = ["DROPPED", "is_empty", "references", "settle"]

Path = tuple[str, ...]


class _Dropped:
    """What ``settle`` answers for an empty root found in no reference."""

    def __repr__(self) -> str:
        return "DROPPED"


DROPPED: Final = _Dropped()

_WITH_REFERENCES: Final = {"ReviseReplica": 1, "Retain": 2}
"""How many leading arguments Karmada passes as references, per function."""


def references(function: str, args: Sequence[Any]) -> Sequence[Any]:
    """The arguments of a call whose empty values decide the result's (Karmada's choice)."""
    return args[: _WITH_REFERENCES.get(function, 0)]


def is_empty(value: Any, marker: Any = None) -> bool:
    """Whether a converted value is an empty object or list, or the sandbox's ``marker``."""
    if marker is not None and value is marker:
        return True
    cls = value.__class__
    return (cls is dict or cls is list) and not value


def _empty_paths(refs: Sequence[Any]) -> tuple[set[Path], set[Path]]:
    """The paths (indices left out) holding an empty object, and those holding an empty list."""
    objects: set[Path] = set()
    lists: set[Path] = set()
    stack: list[tuple[Any, Path]] = [(ref, ()) for ref in refs]
    while stack:
        value, path = stack.pop()
        if value.__class__ is dict:
            children = [(child, (*path, key)) for key, child in value.items()]
        elif value.__class__ is list:
            children = [(child, path) for child in value]
        else:
            continue
        for child, child_path in children:
            if child.__class__ is dict and not child:
                objects.add(child_path)
            elif child.__class__ is list and not child:
                lists.add(child_path)
            else:
                stack.append((child, child_path))
    return objects, lists


class _Settler:
    """One result's walk; containers are copied only where something changes (inputs stay)."""

    def __init__(self, refs: Sequence[Any], marker: Any) -> None:
        self.objects, self.lists = _empty_paths(refs)
        self.marker = marker

    def empty(self, value: Any, path: Path) -> Any:
        """What an empty value at ``path`` becomes: ``{}``, ``[]`` or ``DROPPED``."""
        if path in self.objects:
            return value if value.__class__ is dict else {}
        if path in self.lists:
            return value if value.__class__ is list else []
        return DROPPED

    def child(self, value: Any, path: Path) -> Any:
        if is_empty(value, self.marker):
            return self.empty(value, path)
        if value.__class__ is dict:
            return self.object(value, path)
        if value.__class__ is list:
            return self.list(value, path)
        return value

    def object(self, value: dict[str, Any], path: Path) -> dict[str, Any]:
        out: dict[str, Any] | None = None
        for index, (key, child) in enumerate(value.items()):
            settled = self.child(child, (*path, key))
            if settled is not child and out is None:
                out = dict(list(value.items())[:index])
            if out is not None and settled is not DROPPED:
                out[key] = settled
        return value if out is None else out

    def list(self, value: list[Any], path: Path) -> list[Any]:
        out: list[Any] | None = None
        for index, child in enumerate(value):
            settled = self.child(child, path)
            if settled is not child and out is None:
                out = value[:index]
            if out is not None and settled is not DROPPED:
                out.append(settled)
        return value if out is None else out


def settle(value: Any, refs: Sequence[Any], *, marker: Any = None) -> Any:
    """``value`` with its empty objects and lists (and ``marker`` values) settled from ``refs``.

    Returns ``value`` itself when nothing changes; otherwise new containers wherever a change
    is (the rest is shared). An empty root is returned as it is.
    """
    if is_empty(value, marker):
        return value
    settler = _Settler(refs, marker)
    return settler.child(value, ())
