"""Patches are how the fake changes an object by a patch body: merge, JSON and strategic merge.

A JSON merge patch follows RFC 7386 and a JSON patch RFC 6902 (``reconcile.apply_json_patch``).
A strategic merge patch, and the body of a server-side apply, is modelled: maps merge, lists
whose items are all objects with a ``name`` merge by name (patched items first, in patch order,
then the others) and ``$patch: delete`` drops an item; other lists are replaced and other ``$``
directives ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconcile.client.client import PatchType
from reconcile.jsonpatch import JsonPatchError, apply_json_patch
from reconcile.objects import Obj, deep_copy
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


def _patched(doc: Obj, body: Any, patch_type: PatchType) -> Obj:
    """``doc`` with ``body`` applied (``doc`` is not changed).

    Raises:
        ValueError: a JSON patch failed, or the result is not an object.
    """
    result: Any
    if patch_type is PatchType.JSON:
        result = apply_json_patch(doc, body)
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
    except (_PatchError, JsonPatchError) as error:
        raise failure(422, "Invalid", f"the patch could not be applied: {error}") from None
