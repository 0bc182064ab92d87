"""Jsonpath evaluates kubectl JSONPath templates, as Karmada's state preservation rules use them.

A template (``{.jobStatus.jobID}``, ``id-{.a}-{.b[0]}``) is literal text with expressions in
braces, as client-go's ``util/jsonpath`` parses it: an optional ``$``, then ``.field`` or
``['field']``, ``..field`` (recursive descent), ``[n]`` (negative counts from the end),
``[start:end]``, ``[*]`` or ``.*``, unions ``[0,2]`` / ``['a','b']`` and filters
``[?(@.path)]`` / ``[?(@.path == "value")]`` (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``).
Results print as kubectl prints them: strings bare, numbers and booleans as JSON, objects and
lists as compact JSON, several results separated by a space. A field that is missing is an error
(Karmada evaluates with ``AllowMissingKeys(false)``); ``range``/``end`` blocks are not supported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["JsonPathError", "evaluate", "parse"]


class JsonPathError(ValueError):
    """The template does not parse, or a field it names is missing."""


@dataclass(frozen=True)
class _Field:
    name: str
    recursive: bool = False


@dataclass(frozen=True)
class _Wildcard:
    recursive: bool = False


@dataclass(frozen=True)
class _Index:
    values: tuple[int | str, ...]


@dataclass(frozen=True)
class _Slice:
    start: int | None
    end: int | None


@dataclass(frozen=True)
class _Filter:
    path: tuple[Any, ...]
    operator: str | None
    literal: Any


_Segment = _Field | _Wildcard | _Index | _Slice | _Filter
_Part = str | tuple[_Segment, ...]

_NAME: Final = re.compile(r"[A-Za-z0-9_\-/]+")
_FILTER: Final = re.compile(
    r"\?\(\s*@(?P<path>[^=!<>]*?)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*\)$"
)


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError as error:
        raise JsonPathError(f"unrecognized filter value {text!r}") from error


def _bracket(body: str) -> _Segment:
    body = body.strip()
    if body == "*":
        return _Wildcard()
    if body.startswith("?"):
        match = _FILTER.match(body)
        if match is None:
            raise JsonPathError(f"unrecognized filter [{body}]")
        lit = match.group("lit")
        return _Filter(
            _segments(match.group("path")), match.group("op"), _literal(lit) if lit else None
        )
    if ":" in body:
        start, _, end = body.partition(":")
        try:
            return _Slice(int(start) if start.strip() else None, int(end) if end.strip() else None)
        except ValueError as error:
            raise JsonPathError(f"unrecognized slice [{body}]") from error
    values: list[int | str] = []
    for item in body.split(","):
        item = item.strip()
        if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
            values.append(item[1:-1])
            continue
        try:
            values.append(int(item))
        except ValueError as error:
            raise JsonPathError(f"unrecognized index [{body}]") from error
    return _Index(tuple(values))


def _segments(expression: str) -> tuple[_Segment, ...]:
    text, at = expression.strip(), 0
    found: list[_Segment] = []
    if text.startswith("$"):
        at = 1
    while at < len(text):
        if text.startswith("..", at) or text[at] == ".":
            recursive = text.startswith("..", at)
            at += 2 if recursive else 1
            if text.startswith("*", at):
                found.append(_Wildcard(recursive))
                at += 1
                continue
            match = _NAME.match(text, at)
            if match is None:
                if at >= len(text) and not recursive:
                    break  # "{.}": the current object
                raise JsonPathError(f"unrecognized field at {text[at - 1 :]!r}")
            found.append(_Field(match.group(), recursive))
            at = match.end()
        elif text[at] == "[":
            end = text.find("]", at)
            if end < 0:
                raise JsonPathError(f"unclosed [ in {expression!r}")
            found.append(_bracket(text[at + 1 : end]))
            at = end + 1
        else:
            raise JsonPathError(f"unrecognized character at {text[at:]!r}")
    return tuple(found)


def parse(template: str) -> tuple[_Part, ...]:
    """The literal text and expressions of ``template``.

    Raises:
        JsonPathError: unbalanced braces or an expression that does not parse.
    """
    parts: list[_Part] = []
    at = 0
    while at < len(template):
        start = template.find("{", at)
        if start < 0:
            parts.append(template[at:])
            break
        if start > at:
            parts.append(template[at:start])
        end = template.find("}", start)
        if end < 0:
            raise JsonPathError(f"unclosed action in {template!r}")
        body = template[start + 1 : end].strip()
        if body in ("end",) or body.startswith("range"):
            raise JsonPathError("range/end blocks are not supported")
        parts.append(_segments(body))
        at = end + 1
    return tuple(parts)


def _descendants(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, Mapping) else value
    if isinstance(value, Mapping | list):
        for child in children:
            yield from _descendants(child)


def _compare(left: Any, operator: str, right: Any) -> bool:
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    try:
        return bool(
            {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[
                operator
            ]
        )
    except TypeError:
        return False


def _matches(item: Any, segment: _Filter) -> bool:
    try:
        found = _walk([item], segment.path, strict=False)
    except JsonPathError:
        return False
    if segment.operator is None:
        return bool(found)
    return any(_compare(value, segment.operator, segment.literal) for value in found)


def _field(value: Any, name: str, strict: bool) -> list[Any]:
    if isinstance(value, Mapping) and name in value:
        return [value[name]]
    if strict:
        raise JsonPathError(f"{name} is not found")
    return []


def _index(value: Any, keys: tuple[int | str, ...], strict: bool) -> list[Any]:
    found = []
    for key in keys:
        if isinstance(key, str):
            found += _field(value, key, strict)
        elif isinstance(value, list) and -len(value) <= key < len(value):
            found.append(value[key])
        elif strict:
            raise JsonPathError(f"array index out of bounds: index {key}")
    return found


def _step(value: Any, segment: _Segment, strict: bool) -> list[Any]:
    if isinstance(segment, _Field):
        if not segment.recursive:
            return _field(value, segment.name, strict)
        return [v for d in _descendants(value) for v in _field(d, segment.name, strict=False)]
    if isinstance(segment, _Wildcard):
        roots = list(_descendants(value)) if segment.recursive else [value]
        return [
            child
            for root in roots
            for child in (root.values() if isinstance(root, Mapping) else root)
            if isinstance(root, Mapping | list)
        ]
    if isinstance(segment, _Index):
        return _index(value, segment.values, strict)
    if isinstance(segment, _Slice):
        return value[segment.start : segment.end] if isinstance(value, list) else []
    items = value if isinstance(value, list) else [value]
    return [item for item in items if _matches(item, segment)]


def _walk(values: list[Any], segments: tuple[_Segment, ...], *, strict: bool) -> list[Any]:
    for segment in segments:
        values = [found for value in values for found in _step(value, segment, strict)]
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def evaluate(template: str, data: Any) -> str:
    """``template`` executed against ``data``, printed as kubectl prints it.

    Raises:
        JsonPathError: the template does not parse, or a field it names is missing.
    """
    out = []
    for part in parse(template):
        if isinstance(part, str):
            out.append(part)
        else:
            out.append(" ".join(_text(v) for v in _walk([data], part, strict=True)))
    return "".join(out)
