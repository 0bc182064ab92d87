"""Shape checks that an object's fields have the types this package's TypedDicts declare.

The apiserver validates custom resources against their CRD schema, but the controllers also read
objects it never checked (an older CRD, a fake client, a file given to the CLI), and one field of
the wrong type must be refused with a message, not crash a reconcile with a TypeError.
``shape_problems`` walks a value along a TypedDict (or ``list[...]``, ``dict[str, ...]``,
``Literal[...]``, a union, a scalar type) and names each field whose JSON type differs, in the
words of apimachinery's field errors. As the apiserver prunes them, null fields count as absent
and unknown fields are ignored (a null list item or map value is a wrong type); ``Any`` accepts
everything. ``object_field`` reads a part that must be an object, empty when it is not;
``nested_deeper_than`` bounds nesting before recursive code meets it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, Final, Literal, Union, get_args, get_origin, is_typeddict

__all__ = ["nested_deeper_than", "object_field", "shape_problems"]

_JSON_TYPES: Final = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (Mapping, "object"),
)
# Literal values shown in a message; more would make it hard to read.
_SHOWN_VALUES: Final = 8


def _json_type(value: object) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "unknown")


@cache
def _fields(typed_dict: type) -> dict[str, Any]:
    # Resolving string annotations is slow; the TypedDicts never change.
    return typing.get_type_hints(typed_dict)


def _wrong(path: str, value: object, expected: str) -> list[str]:
    return [f'{path}: Invalid value: "{_json_type(value)}": must be of type {expected}']


def _scalar(value: object, hint: type, path: str) -> list[str]:
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = isinstance(value, hint)
    return [] if ok else _wrong(path, value, _json_type_of(hint))


def _json_type_of(hint: Any) -> str:
    origin = get_origin(hint) or hint
    if origin is Literal:
        return "string"
    if origin in (Union, types.UnionType):
        return " or ".join(_json_type_of(arm) for arm in get_args(hint) if arm is not type(None))
    if is_typeddict(origin) or origin in (dict, Mapping):
        return "object"
    for kind, name in _JSON_TYPES:
        if isinstance(origin, type) and issubclass(origin, kind):
            return name
    return "unknown"


def _literal(value: object, hint: Any, path: str, enums: bool) -> list[str]:
    allowed = get_args(hint)
    if not enums:
        return [] if isinstance(value, str) else _wrong(path, value, "string")
    if value in allowed and type(value) in {type(a) for a in allowed}:
        return []
    shown = ", ".join(f'"{a}"' for a in allowed[:_SHOWN_VALUES])
    return [f"{path}: Unsupported value: {str(value)[:64]!r}: supported values: {shown}"]


def _union(value: object, hint: Any, path: str, enums: bool) -> list[str]:
    arms = [arm for arm in get_args(hint) if arm is not type(None)]
    if any(not shape_problems(value, arm, path, enums=enums) for arm in arms):
        return []
    return _wrong(path, value, _json_type_of(hint))


def _typed_dict(value: object, hint: type, path: str, enums: bool) -> list[str]:
    if not isinstance(value, Mapping):
        return _wrong(path, value, "object")
    problems = []
    for key, field in _fields(hint).items():
        if key in value:
            problems += shape_problems(value[key], field, f"{path}.{key}", enums=enums)
    return problems


def _entry(value: object, hint: Any, path: str, enums: bool) -> list[str]:
    # Only object fields are pruned when null; a null list item or map value is a wrong type.
    if value is None and hint is not Any and type(None) not in get_args(hint):
        return _wrong(path, value, _json_type_of(hint))
    return shape_problems(value, hint, path, enums=enums)


def _list(value: object, hint: Any, path: str, enums: bool) -> list[str]:
    if not isinstance(value, list):
        return _wrong(path, value, "array")
    (item,) = get_args(hint) or (Any,)
    problems = []
    for index, entry in enumerate(value):
        problems += _entry(entry, item, f"{path}[{index}]", enums)
    return problems


def _dict(value: object, hint: Any, path: str, enums: bool) -> list[str]:
    if not isinstance(value, Mapping):
        return _wrong(path, value, "object")
    _, item = get_args(hint) or (str, Any)
    problems = []
    for key, entry in value.items():
        if not isinstance(key, str):
            problems += _wrong(f"{path}[{key!r}]", key, "string (a key)")
        else:
            problems += _entry(entry, item, f"{path}[{key}]", enums)
    return problems


def shape_problems(value: object, hint: Any, path: str, *, enums: bool = True) -> list[str]:
    """Where ``value`` (found at ``path``) does not have the shape of the type ``hint``.

    One message per wrong field, e.g. ``spec.placement.clusterTolerations: Invalid value:
    "string": must be of type array``; empty when the shape fits. A None field fits (absent).
    ``enums=False`` accepts any string for a ``Literal``, for kinds whose CRD has no enums there
    (the apiserver then lets any text through, and the readers treat unknown values as such).
    """
    if value is None or hint is Any:
        return []
    origin = get_origin(hint)
    if origin is Literal:
        return _literal(value, hint, path, enums)
    if origin in (Union, types.UnionType):
        return _union(value, hint, path, enums)
    if origin is list:
        return _list(value, hint, path, enums)
    if origin in (dict, Mapping):
        return _dict(value, hint, path, enums)
    if is_typeddict(hint):
        return _typed_dict(value, hint, path, enums)
    if isinstance(hint, type):
        return _scalar(value, hint, path)
    return []


def object_field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is an object, else an empty one (``shape_problems`` reports why).

    The accessors of this package read specs and statuses through it, so a field of the wrong
    type reads as absent instead of raising where it is used.
    """
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` has more than ``limit`` levels of lists and objects.

    Iterative: the recursive code that copies, patches and serialises objects fails near
    Python's recursion limit (about 500 levels for copy.deepcopy), the client's JSON decoder
    accepts 1,024.
    """
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
