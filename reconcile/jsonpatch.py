"""Jsonpatch applies RFC 6902 JSON Patch documents to JSON values (dicts, lists and scalars).

One implementation for everything that patches with JSON Patch: the fake client (the apiserver's
``application/json-patch+json``), override policies and interpreter webhook answers. The
semantics are those of evanphx/json-patch, which both the apiserver and Karmada use: RFC 6901
pointers; ``add`` needs the parent to exist (no intermediate objects are made) and replaces an
existing member; ``remove`` and ``replace`` need their target; array indices may be negative
(counted from the end) and ``-`` appends; ``move`` cannot move a value into its own child;
``test`` compares as JSON does (``true`` is not ``1``). The document passed in is never changed;
every failure is a ``JsonPatchError`` naming the operation and the pointer.

``create_json_patch`` goes the other way, as gomodules.xyz/jsonpatch does for controller-runtime's
admission responses: the operations that turn one document into another.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from reconcile.store import deep_copy

__all__ = [
    "JSON_PATCH_OPERATIONS",
    "JsonPatchError",
    "apply_json_patch",
    "create_json_patch",
    "parse_pointer",
    "resolve_pointer",
]

JSON_PATCH_OPERATIONS: Final = frozenset({"add", "remove", "replace", "move", "copy", "test"})
"""Every RFC 6902 operation."""


class JsonPatchError(ValueError):
    """A patch that is malformed, or an operation that cannot be applied to the document."""


def parse_pointer(pointer: Any) -> list[str]:
    """The unescaped reference tokens of an RFC 6901 JSON pointer ("" is the whole document).

    Raises:
        JsonPatchError: not a string, not starting with "/", or a "~" not followed by 0 or 1.
    """
    if not isinstance(pointer, str):
        raise JsonPatchError(f"JSON pointer must be a string, got {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise JsonPatchError(f"JSON pointer {pointer!r} must start with '/'")
    tokens = pointer[1:].split("/")
    if any(token.replace("~0", "").replace("~1", "").count("~") for token in tokens):
        raise JsonPatchError(f"JSON pointer {pointer!r} has an invalid '~' escape")
    return [token.replace("~1", "/").replace("~0", "~") for token in tokens]


def _index(token: str, length: int, *, inserting: bool) -> int:
    if inserting and token == "-":
        return length
    digits = token.removeprefix("-")
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        raise JsonPatchError(f"{token!r} is not an array index")
    index = int(token)
    if index < 0:
        index += length
    if index < 0 or index > length or (index == length and not inserting):
        raise JsonPatchError(f"array index {token} is out of range (length {length})")
    return index


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise JsonPatchError(f"no member {token!r}")
        return node[token]
    if isinstance(node, list):
        return node[_index(token, len(node), inserting=False)]
    raise JsonPatchError(f"cannot step into a {type(node).__name__} with {token!r}")


def _walk(document: Any, tokens: Sequence[str]) -> Any:
    for token in tokens:
        document = _child(document, token)
    return document


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value ``pointer`` designates in ``document`` (not a copy).

    Raises:
        JsonPatchError: the pointer is malformed or designates nothing.
    """
    try:
        return _walk(document, parse_pointer(pointer))
    except JsonPatchError as error:
        raise JsonPatchError(f"{pointer}: {error}") from None


def _add(document: Any, tokens: Sequence[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, key = _walk(document, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list):
        parent.insert(_index(key, len(parent), inserting=True), value)
    else:
        raise JsonPatchError(f"the parent is a {type(parent).__name__}, not an object or array")
    return document


def _remove(document: Any, tokens: Sequence[str]) -> Any:
    """Remove the target and return it."""
    if not tokens:
        raise JsonPatchError("cannot remove the whole document")
    parent, key = _walk(document, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise JsonPatchError(f"no member {key!r}")
        return parent.pop(key)
    if isinstance(parent, list):
        return parent.pop(_index(key, len(parent), inserting=False))
    raise JsonPatchError(f"the parent is a {type(parent).__name__}, not an object or array")


def _replace(document: Any, tokens: Sequence[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, key = _walk(document, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        _child(parent, key)  # the member must exist
        parent[key] = value
    elif isinstance(parent, list):
        parent[_index(key, len(parent), inserting=False)] = value
    else:
        raise JsonPatchError(f"the parent is a {type(parent).__name__}, not an object or array")
    return document


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON has it: Python says ``True == 1``, JSON does not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return bool(a == b)


def _operand(operation: Mapping[str, Any], key: str) -> Any:
    if key not in operation:
        raise JsonPatchError(f"the operation has no {key!r}")
    return operation[key]


def _apply_one(document: Any, operation: Mapping[str, Any]) -> Any:
    op, path = operation.get("op"), parse_pointer(_operand(operation, "path"))
    if op == "add":
        return _add(document, path, deep_copy(_operand(operation, "value")))
    if op == "remove":
        _remove(document, path)
        return document
    if op == "replace":
        return _replace(document, path, deep_copy(_operand(operation, "value")))
    if op in ("move", "copy"):
        source = parse_pointer(_operand(operation, "from"))
        if op == "move" and path[: len(source)] == source and path != source:
            raise JsonPatchError("cannot move a value into one of its own children")
        value = _remove(document, source) if op == "move" else deep_copy(_walk(document, source))
        return _add(document, path, value)
    if op == "test":
        if not _json_equal(_walk(document, path), _operand(operation, "value")):
            raise JsonPatchError(f"the value is not {operation['value']!r}")
        return document
    raise JsonPatchError(f"unknown operation {op!r}")


def apply_json_patch(
    document: Any, operations: Any, *, allowed: Collection[str] = JSON_PATCH_OPERATIONS
) -> Any:
    """A copy of ``document`` with the RFC 6902 ``operations`` applied in order.

    ``allowed`` limits the operations accepted (Karmada's overriders take add, remove and
    replace only).

    Raises:
        JsonPatchError: the patch is not a list of operations, an operation is not allowed, or
            one cannot be applied; ``document`` is left as it was.
    """
    if not isinstance(operations, list):
        raise JsonPatchError(f"a JSON patch is a list of operations, got {operations!r}")
    result = deep_copy(document)
    for number, operation in enumerate(operations):
        # Numbered only when there is more than one to tell apart.
        where = f"operation {number}: " if len(operations) > 1 else ""
        if not isinstance(operation, Mapping):
            raise JsonPatchError(f"{where}{operation!r} is not an object")
        op = operation.get("op")
        if op not in allowed:
            wanted = ", ".join(sorted(allowed))
            raise JsonPatchError(f"{where}{op!r} is not allowed (want {wanted})")
        try:
            result = _apply_one(result, operation)
        except JsonPatchError as error:
            raise JsonPatchError(f"{where}{op} {operation.get('path')}: {error}") from None
    return result


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _diff(original: Any, mutated: Any, path: str, out: list[dict[str, Any]]) -> None:
    if isinstance(original, Mapping) and isinstance(mutated, Mapping):
        for key in original:
            if key not in mutated:
                out.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in mutated.items():
            where = f"{path}/{_escape(key)}"
            if key not in original:
                out.append({"op": "add", "path": where, "value": deep_copy(value)})
            else:
                _diff(original[key], value, where, out)
        return
    if isinstance(original, list) and isinstance(mutated, list) and len(original) == len(mutated):
        for index, (before, after) in enumerate(zip(original, mutated, strict=True)):
            _diff(before, after, f"{path}/{index}", out)
        return
    if not _json_equal(original, mutated):
        # Lists that grew or shrank are replaced whole: shorter than index-shifting operations
        # and never ambiguous about which element moved.
        out.append({"op": "replace", "path": path, "value": deep_copy(mutated)})


def create_json_patch(original: Any, mutated: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn ``original`` into ``mutated`` (empty when equal).

    Members are added, removed or replaced one by one; a list whose length changed is replaced
    whole. ``apply_json_patch(original, create_json_patch(original, mutated)) == mutated``.
    """
    out: list[dict[str, Any]] = []
    _diff(original, mutated, "", out)
    return out
