"""Jsonpatch applies RFC 6902 add, remove and replace operations on RFC 6901 JSON pointers to dicts.

It is what the overriders edit objects with, matching Karmada's use of evanphx/json-patch with its
default options: ``add`` needs the parent to exist (it never creates intermediate objects) and
replaces an existing member; ``remove`` and ``replace`` need the target to exist; array indices
may be negative (counted from the end) and ``-`` appends. Every failure is a ``PatchError`` that
says which pointer failed and why; the document passed in is never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["PatchError", "apply_patch", "parse_pointer", "resolve"]

_OPERATORS: Final = frozenset({"add", "remove", "replace"})


class PatchError(ValueError):
    """A JSON pointer or patch operation that cannot be applied to the document."""


def parse_pointer(pointer: str) -> list[str]:
    """The unescaped reference tokens of a JSON pointer ("" is the whole document).

    Raises:
        PatchError: the pointer does not start with "/" or has a "~" not followed by 0 or 1.
    """
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {pointer!r} must start with '/'")
    tokens = pointer[1:].split("/")
    for token in tokens:
        if token.replace("~0", "").replace("~1", "").count("~"):
            raise PatchError(f"JSON pointer {pointer!r} has an invalid '~' escape")
    return [token.replace("~1", "/").replace("~0", "~") for token in tokens]


def _index(token: str, length: int, *, inserting: bool, pointer: str) -> int:
    if inserting and token == "-":
        return length
    digits = token.removeprefix("-")
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        raise PatchError(f"{pointer}: {token!r} is not an array index")
    index = int(token)
    if index < 0:
        index += length
    if index < 0 or index > length or (index == length and not inserting):
        raise PatchError(f"{pointer}: index {token} is out of range (length {length})")
    return index


def _child(node: Any, token: str, pointer: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"{pointer}: no member {token!r}")
        return node[token]
    if isinstance(node, list):
        return node[_index(token, len(node), inserting=False, pointer=pointer)]
    raise PatchError(f"{pointer}: cannot step into a {type(node).__name__} with {token!r}")


def resolve(document: Any, pointer: str) -> Any:
    """The value ``pointer`` designates in ``document``.

    Raises:
        PatchError: the pointer is malformed or designates nothing.
    """
    node = document
    for token in parse_pointer(pointer):
        node = _child(node, token, pointer)
    return node


def _apply_one(document: Any, operation: Mapping[str, Any]) -> Any:
    op, pointer = operation.get("op"), operation.get("path")
    if op not in _OPERATORS:
        raise PatchError(f"unsupported operation {op!r} (want add, remove or replace)")
    if not isinstance(pointer, str):
        raise PatchError(f"{op}: path must be a string, got {pointer!r}")
    tokens = parse_pointer(pointer)
    value = copy.deepcopy(operation.get("value"))
    if not tokens:
        if op == "remove":
            raise PatchError("cannot remove the whole document")
        return value
    parent = document
    for token in tokens[:-1]:
        parent = _child(parent, token, pointer)
    _change(parent, tokens[-1], str(op), value, pointer)
    return document


def _change(parent: Any, key: str, op: str, value: Any, pointer: str) -> None:
    if isinstance(parent, dict):
        if op != "add" and key not in parent:
            raise PatchError(f"{op} {pointer}: no member {key!r}")
        if op == "remove":
            del parent[key]
        else:
            parent[key] = value
    elif isinstance(parent, list):
        index = _index(key, len(parent), inserting=op == "add", pointer=pointer)
        if op == "add":
            parent.insert(index, value)
        elif op == "remove":
            del parent[index]
        else:
            parent[index] = value
    else:
        raise PatchError(f"{op} {pointer}: the parent is a {type(parent).__name__}")


def apply_patch(document: Any, operations: Sequence[Mapping[str, Any]]) -> Any:
    """A copy of ``document`` with ``operations`` ({op, path, value}) applied in order.

    Raises:
        PatchError: an operation is unsupported or its pointer cannot be applied; the input is
            left unchanged.
    """
    result = copy.deepcopy(document)
    for operation in operations:
        result = _apply_one(result, operation)
    return result
