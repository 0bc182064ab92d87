"""Patches are how the fake changes an object by a patch body: merge, JSON and strategic merge.

A JSON merge patch follows RFC 7386 and a JSON patch RFC 6902. A strategic merge patch, and the
body of a server-side apply, is modelled: maps merge, lists whose items are all objects with a
``name`` merge by name (patched items first, in patch order, then the others) and
``$patch: delete`` drops an item; other lists are replaced and other ``$`` directives ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconcile.client import PatchType
from reconcile.store import Obj, deep_copy
from testenv.fake.errors import failure
from testenv.fake.objects import from_wire

__all__ = ["patch_document"]


class _PatchError(ValueError):
    """A patch that cannot be applied to the object (the apiserver answers 422 Invalid)."""


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge recursively, ``null`` deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged


def _strategic_merge(target: Any, patch: Any) -> Any:
    """A strategic merge patch as the fake models it (see the module docstring)."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    if patch.get("$patch") == "replace":
        return {k: deep_copy(v) for k, v in patch.items() if not k.startswith("$")}
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # $setElementOrder/…, $retainKeys, $patch: directives not modelled
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, list):
            current = merged.get(key)
            merged[key] = _merge_list(current if isinstance(current, list) else [], value)
        else:
            merged[key] = _strategic_merge(merged.get(key), value)
    return merged


def _named(items: Sequence[Any]) -> bool:
    return all(isinstance(item, dict) and "name" in item for item in items)


def _merge_list(current: list[Any], patch: list[Any]) -> list[Any]:
    if not (_named(patch) and _named(current)):
        return [_strategic_merge(None, item) for item in patch]
    by_name = {item["name"]: item for item in current}
    merged = [
        _strategic_merge(by_name.get(item["name"]), item)
        for item in patch
        if item.get("$patch") != "delete"
    ]
    patched = {item["name"] for item in patch}
    return merged + [deep_copy(item) for item in current if item["name"] not in patched]


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise _PatchError(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]


def _index(token: str, size: int) -> int:
    if not token.isdigit() or (token != "0" and token.startswith("0")) or int(token) >= size:
        raise _PatchError(f"array index {token!r} is out of range")
    return int(token)


def _resolve(doc: Any, tokens: Sequence[str]) -> Any:
    for token in tokens:
        if isinstance(doc, dict):
            if token not in doc:
                raise _PatchError(f"path /{'/'.join(tokens)} does not exist")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(token, len(doc))]
        else:
            raise _PatchError(f"path /{'/'.join(tokens)} does not exist")
    return doc


def _add(doc: Any, tokens: Sequence[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _resolve(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else _index(last, len(parent) + 1), value)
    else:
        raise _PatchError(f"cannot add to /{'/'.join(tokens)}: the parent is not a container")
    return doc


def _remove(doc: Any, tokens: Sequence[str]) -> Any:
    if not tokens:
        raise _PatchError("cannot remove the whole document")
    parent, last = _resolve(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _PatchError(f"cannot remove /{'/'.join(tokens)}: it does not exist")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, len(parent)))
    raise _PatchError(f"cannot remove /{'/'.join(tokens)}: the parent is not a container")


def _json_patch(doc: Any, operations: Any) -> Any:
    """Apply RFC 6902 operations (add, remove, replace, move, copy, test) to a copy of ``doc``.

    Raises:
        ValueError: an operation failed (a ``test`` mismatch, a missing path…); ``doc`` is intact.
    """
    if not isinstance(operations, list):
        raise _PatchError("a JSON patch is a list of operations")
    result = deep_copy(doc)
    for operation in operations:
        if not isinstance(operation, dict):
            raise _PatchError(f"not an operation: {operation!r}")
        op, path = operation.get("op"), _pointer(operation.get("path"))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise _PatchError(f"{op} at {operation.get('path')} needs a value")
        if op == "add":
            result = _add(result, path, deep_copy(operation["value"]))
        elif op == "remove":
            _remove(result, path)
        elif op == "replace":
            if path:
                _remove(result, path)
            result = _add(result, path, deep_copy(operation["value"]))
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from"))
            if op == "move" and path[: len(source)] == source and path != source:
                raise _PatchError("cannot move a value into one of its own children")
            value = _remove(result, source) if op == "move" else deep_copy(_resolve(result, source))
            result = _add(result, path, value)
        elif op == "test":
            if _resolve(result, path) != operation["value"]:
                raise _PatchError(
                    f"test failed: {operation.get('path')} is not {operation['value']!r}"
                )
        else:
            raise _PatchError(f"unknown operation {op!r}")
    return result


def _patched(doc: Obj, body: Any, patch_type: PatchType) -> Obj:
    """``doc`` with ``body`` applied (``doc`` is not changed).

    Raises:
        ValueError: a JSON patch failed, or the result is not an object.
    """
    result: Any
    if patch_type is PatchType.JSON:
        result = _json_patch(doc, body)
    elif patch_type is PatchType.MERGE:
        result = _merge_patch(deep_copy(doc), body)
    else:
        result = _strategic_merge(deep_copy(doc), body)
    if not isinstance(result, dict) or not isinstance(result.get("metadata"), dict):
        raise _PatchError("the patched document is not an object with metadata")
    return result


def patch_document(doc: Obj, body: Any, patch_type: PatchType) -> Obj:
    """``doc`` with the patch ``body`` a caller sent applied (``doc`` is not changed).

    Raises:
        Invalid: the patch cannot be applied (a JSON patch operation failed, a ``test``
            included), as the apiserver says.
    """
    try:
        return _patched(doc, from_wire(body), patch_type)
    except _PatchError as error:
        raise failure(422, "Invalid", f"the patch could not be applied: {error}") from None
