"""Jsonpatch applies RFC 6902 JSON Patch documents to JSON values (dicts, lists and scalars).

One implementation for everything that patches with JSON Patch: the fake client (the apiserver's
``application/json-patch+json``), override policies and interpreter webhook answers. The
semantics are those of evanphx/json-patch, which both the apiserver and Karmada use: RFC 6901
pointers; ``add`` needs the parent to exist (no intermediate objects are made) and replaces an
existing member; ``remove`` and ``replace`` need their target; array indices may be negative
(counted from the end) and ``-`` appends; ``move`` cannot move a value into its own child;
``test`` compares as JSON does (``true`` is not ``1``). The document passed in is never changed;
every failure is a ``JsonPatchError`` naming the operation and the pointer.

A patch is often someone else's (an interpreter webhook's answer), so what applying it may cost is
bounded from outside the patch, as kube-apiserver bounds it: ``copy`` operations may together add
at most ``max_copy_bytes`` of JSON (default ``MAX_COPY_BYTES``; eighteen copies of the whole
document into itself are 2**18 times its size), and ``max_operations`` caps the operations
(``MAX_OPERATIONS`` for patches from outside). ``add``, ``replace`` and ``test`` carry their values
in the patch, so the patch's own size bounds them.

``create_json_patch`` goes the other way, as gomodules.xyz/jsonpatch does for controller-runtime's
admission responses: the operations that turn one document into another.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from reconcile.objects import deep_copy

__all__ = [
    "JSON_PATCH_OPERATIONS",
    "MAX_COPY_BYTES",
    "MAX_OPERATIONS",
    "JsonPatchError",
    "apply_json_patch",
    "create_json_patch",
    "parse_pointer",
    "resolve_pointer",
]

JSON_PATCH_OPERATIONS: Final = frozenset({"add", "remove", "replace", "move", "copy", "test"})
"""Every RFC 6902 operation."""
MAX_COPY_BYTES: Final = 3 * 1024 * 1024
"""How much JSON the ``copy`` operations of one patch may add together (3 MiB): kube-apiserver's
``JSONPatchMaxCopyBytes`` default (k8s.io/apiserver/pkg/server/config.go, twice etcd's 1.5 MiB
request limit), which it sets as evanphx/json-patch's ``AccumulatedCopySizeLimit``."""
MAX_OPERATIONS: Final = 10_000
"""The most operations a patch from outside may hold: kube-apiserver's
``maxJSONPatchOperations`` (k8s.io/apiserver/pkg/endpoints/handlers/patch.go)."""


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


def _encoded_size(value: Any, limit: int) -> int:
    """About the length of ``value``'s compact JSON encoding (escapes not counted), counted only
    until it passes ``limit``: sizing a huge value costs no more than the limit."""
    size, pending = 0, [value]
    while pending and size <= limit:
        item = pending.pop()
        if isinstance(item, dict):
            # Braces, and per member its quoted key, a colon and a comma.
            size += 2 + sum(len(key) + 4 for key in item)
            pending.extend(item.values())
        elif isinstance(item, list):
            size += 2 + len(item)
            pending.extend(item)
        elif isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, bool) or item is None:
            size += 5
        elif isinstance(item, int):
            size += item.bit_length() // 3 + 2  # no str(): it refuses ints over 4,300 digits
        else:
            size += len(repr(item))
    return size


class _CopyBudget:
    """What the ``copy`` operations of one patch may still add (None: no bound)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.copied = 0

    def take(self, value: Any) -> None:
        if self.limit is None:
            return
        self.copied += _encoded_size(value, self.limit - self.copied)
        if self.copied > self.limit:
            raise JsonPatchError(
                f"the copy operations add more than {self.limit} bytes (the accumulated copy "
                "size limit)"
            )


def _apply_one(document: Any, operation: Mapping[str, Any], copies: _CopyBudget) -> Any:
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
        if op == "move":
            return _add(document, path, _remove(document, source))
        value = _walk(document, source)
        copies.take(value)  # before the copy is made: it may be what the bound is for
        return _add(document, path, deep_copy(value))
    if op == "test":
        if not _json_equal(_walk(document, path), _operand(operation, "value")):
            raise JsonPatchError(f"the value is not {operation['value']!r}")
        return document
    raise JsonPatchError(f"unknown operation {op!r}")


def apply_json_patch(
    document: Any,
    operations: Any,
    *,
    allowed: Collection[str] = JSON_PATCH_OPERATIONS,
    max_copy_bytes: int | None = MAX_COPY_BYTES,
    max_operations: int | None = None,
) -> Any:
    """A copy of ``document`` with the RFC 6902 ``operations`` applied in order.

    ``allowed`` limits the operations accepted (Karmada's overriders take add, remove and
    replace only). ``max_copy_bytes`` bounds the JSON all ``copy`` operations add together
    (default ``MAX_COPY_BYTES``, kube-apiserver's; None: no bound, evanphx/json-patch's own
    default); ``max_operations`` bounds their number (default: none; ``MAX_OPERATIONS`` is
    kube-apiserver's).

    Raises:
        JsonPatchError: the patch is not a list of operations, has more than ``max_operations``,
            an operation is not allowed or cannot be applied, the copies pass
            ``max_copy_bytes``, or the result nests too deeply to copy; ``document`` is left as
            it was.
    """
    if not isinstance(operations, list):
        raise JsonPatchError(f"a JSON patch is a list of operations, got {_shown(operations)}")
    if max_operations is not None and len(operations) > max_operations:
        raise JsonPatchError(
            f"the patch has {len(operations)} operations, more than {max_operations}"
        )
    try:
        return _apply_all(deep_copy(document), operations, allowed, _CopyBudget(max_copy_bytes))
    except RecursionError:
        # add can nest a value inside another up to any depth; copying it then recurses.
        raise JsonPatchError("the patched document is nested too deeply") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _apply_all(
    result: Any, operations: list[Any], allowed: Collection[str], copies: _CopyBudget
) -> Any:
    for number, operation in enumerate(operations):
        # Numbered only when there is more than one to tell apart.
        where = f"operation {number}: " if len(operations) > 1 else ""
        if not isinstance(operation, Mapping):
            raise JsonPatchError(f"{where}{_shown(operation)} is not an object")
        op = operation.get("op")
        if op not in allowed:
            wanted = ", ".join(sorted(allowed))
            raise JsonPatchError(f"{where}{op!r} is not allowed (want {wanted})")
        try:
            result = _apply_one(result, operation, copies)
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
