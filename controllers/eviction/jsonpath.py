"""Jsonpath evaluates kubectl JSONPath templates, as Karmada's state preservation rules use them.

A template (``{.jobStatus.jobID}``, ``id-{.a}-{.b[0]}``) is literal text with expressions in
braces, as client-go's ``util/jsonpath`` parses it: an optional ``$``, then ``.field`` or
``['field']``, ``..field`` (recursive descent), ``[n]`` (negative counts from the end),
``[start:end]``, ``[*]`` or ``.*``, unions ``[0,2]`` / ``['a','b']`` and filters
``[?(@.path)]`` / ``[?(@.path == "value")]`` (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``).
Results print as kubectl prints them: strings bare, numbers and booleans as JSON, objects and
lists as compact JSON, several results separated by a space. A field that is missing is an error
(Karmada evaluates with ``AllowMissingKeys(false)``); ``range``/``end`` blocks are not supported.

A template comes from a tenant's (namespaced) PropagationPolicy and runs on the controller's
event loop, so both halves are bounded from outside the input. Parsing is a hand-written scan,
linear in the template's length (the filter grammar was a backtracking regex, cubic on
``[?(@`` + spaces + ``==`` + spaces: 30 s for 1,000 spaces), and refuses templates longer than
``MAX_TEMPLATE_LENGTH`` (the CRD's ``maxLength`` and the admission webhook say the same).
Evaluation spends an ``EvaluationBudget``: every value a step visits or produces costs one, so
chained recursive descents (``{..a..a..a}``, ``{..*..*}``), whose results grow as a power of the
status's size, stop at ``MAX_EVALUATION_STEPS``; the printed text stops at ``MAX_OUTPUT_LENGTH``.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "MAX_EVALUATION_STEPS",
    "MAX_OUTPUT_LENGTH",
    "MAX_TEMPLATE_LENGTH",
    "EvaluationBudget",
    "JsonPathError",
    "evaluate",
    "parse",
]

MAX_TEMPLATE_LENGTH: Final = 1024
"""The longest template accepted, in characters. Karmada's CRD sets no bound; a state preservation
rule names a field or two (the value must fit a 63-character label), so 1 KiB is generous."""
MAX_EVALUATION_STEPS: Final = 200_000
"""Values one evaluation may visit or produce (0.3 s of the event loop at most, measured on a
busy 2-core machine): many times what a template over a real status needs, far below what
chained recursive descents can ask for."""
MAX_OUTPUT_LENGTH: Final = 65_536
"""The longest text one evaluation may print, in characters (a label value is 63 at most)."""


class JsonPathError(ValueError):
    """The template does not parse, a field it names is missing, or it costs too much."""


class EvaluationBudget:
    """How many more values evaluations sharing this budget may visit or produce.

    One budget can span several templates (the rules of one state preservation), so their number
    does not multiply the bound.
    """

    def __init__(self, steps: int = MAX_EVALUATION_STEPS) -> None:
        self.steps = steps
        self._left = steps

    def spend(self, count: int = 1) -> None:
        """Take ``count`` steps.

        Raises:
            JsonPathError: the budget is spent.
        """
        self._left -= count
        if self._left < 0:
            raise JsonPathError(f"evaluation needs more than {self.steps} steps")


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

_NAME_CHARACTERS: Final = frozenset(string.ascii_letters + string.digits + "_-/")
_OPERATOR_STARTS: Final = frozenset("=!<>")
# Longest first, so "<=" is not read as "<" followed by a literal "=...".
_OPERATORS: Final = ("==", "!=", "<=", ">=", "<", ">")


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError as error:
        raise JsonPathError(f"unrecognized filter value {text!r}") from error


def _split_filter(body: str) -> tuple[str, str | None, str | None] | None:
    """The path, operator and literal of ``?(@path [op literal])`` (None: not a filter).

    One left-to-right scan. The path runs from ``@`` to the first operator character (it may
    hold none); the literal is what lies between the operator and the closing parenthesis, which
    must end the body, and may not span lines.
    """
    if not body.startswith("?(") or not body.endswith(")") or len(body) < 3:
        return None
    inner = body[2:-1].lstrip()
    if not inner.startswith("@"):
        return None
    rest = inner[1:]
    at = next((i for i, char in enumerate(rest) if char in _OPERATOR_STARTS), len(rest))
    if at == len(rest):
        return rest.rstrip(), None, None
    operator = next((op for op in _OPERATORS if rest.startswith(op, at)), None)
    literal = rest[at + len(operator) :].strip() if operator else ""
    if not literal or "\n" in literal:
        return None
    return rest[:at].rstrip(), operator, literal


def _filter(body: str) -> _Filter:
    parts = _split_filter(body)
    if parts is None:
        raise JsonPathError(f"unrecognized filter [{body}]")
    path, operator, literal = parts
    return _Filter(_segments(path), operator, None if literal is None else _literal(literal))


def _bracket(body: str) -> _Segment:
    body = body.strip()
    if body == "*":
        return _Wildcard()
    if body.startswith("?"):
        return _filter(body)
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


def _name_end(text: str, at: int) -> int:
    """Where the field name starting at ``at`` ends (``at``: there is none)."""
    end = at
    while end < len(text) and text[end] in _NAME_CHARACTERS:
        end += 1
    return end


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
            end = _name_end(text, at)
            if end == at:
                if at >= len(text) and not recursive:
                    break  # "{.}": the current object
                raise JsonPathError(f"unrecognized field at {text[at - 1 :]!r}")
            found.append(_Field(text[at:end], recursive))
            at = end
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
        JsonPathError: longer than ``MAX_TEMPLATE_LENGTH``, unbalanced braces or an expression
            that does not parse.
    """
    if len(template) > MAX_TEMPLATE_LENGTH:
        raise JsonPathError(
            f"the template is {len(template)} characters long, more than {MAX_TEMPLATE_LENGTH}"
        )
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


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        return iter(value.values())
    return iter(value) if isinstance(value, list) else iter(())


def _descendants(value: Any, budget: EvaluationBudget) -> Iterator[Any]:
    """``value`` and everything under it, depth first, each visit paid for.

    A stack of iterators rather than recursion: a status nested deeper than Python's recursion
    limit is a refusal, not a RecursionError.
    """
    stack = [iter((value,))]
    while stack:
        for item in stack[-1]:
            budget.spend()
            yield item
            if isinstance(item, Mapping | list):
                stack.append(_children(item))
                break
        else:
            stack.pop()


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


def _matches(item: Any, segment: _Filter, budget: EvaluationBudget) -> bool:
    # Not strict: a filter's missing field is no match, not an error (so a JsonPathError here
    # is the spent budget, and goes up).
    found = _walk([item], segment.path, strict=False, budget=budget)
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


def _step(value: Any, segment: _Segment, strict: bool, budget: EvaluationBudget) -> list[Any]:
    if isinstance(segment, _Field):
        if not segment.recursive:
            return _field(value, segment.name, strict)
        return [
            v for d in _descendants(value, budget) for v in _field(d, segment.name, strict=False)
        ]
    if isinstance(segment, _Wildcard):
        roots = list(_descendants(value, budget)) if segment.recursive else [value]
        return [child for root in roots for child in _children(root)]
    if isinstance(segment, _Index):
        return _index(value, segment.values, strict)
    if isinstance(segment, _Slice):
        return value[segment.start : segment.end] if isinstance(value, list) else []
    items = value if isinstance(value, list) else [value]
    return [item for item in items if _matches(item, segment, budget)]


def _walk(
    values: list[Any], segments: tuple[_Segment, ...], *, strict: bool, budget: EvaluationBudget
) -> list[Any]:
    for segment in segments:
        out: list[Any] = []
        for value in values:
            found = _step(value, segment, strict, budget)
            # Paid before it joins the results: the next step's work is this list's length.
            budget.spend(len(found))
            out += found
        values = out
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _printed(values: list[Any], room: int) -> str:
    """``values`` printed space-separated; refused past ``room`` characters."""
    texts: list[str] = []
    for value in values:
        texts.append(_text(value))
        room -= len(texts[-1]) + 1
        if room < -1:
            raise JsonPathError(f"the result is longer than {MAX_OUTPUT_LENGTH} characters")
    return " ".join(texts)


def evaluate(template: str, data: Any, budget: EvaluationBudget | None = None) -> str:
    """``template`` executed against ``data``, printed as kubectl prints it.

    ``budget`` bounds the work (default: a fresh ``MAX_EVALUATION_STEPS``); pass one budget to
    several evaluations to bound them together.

    Raises:
        JsonPathError: the template does not parse, a field it names is missing, the budget is
            spent, or the text would be longer than ``MAX_OUTPUT_LENGTH``.
    """
    budget = budget or EvaluationBudget()
    out: list[str] = []
    room = MAX_OUTPUT_LENGTH
    for part in parse(template):
        if isinstance(part, str):
            text = part
        else:
            text = _printed(_walk([data], part, strict=True, budget=budget), room)
        room -= len(text)
        if room < 0:
            raise JsonPathError(f"the result is longer than {MAX_OUTPUT_LENGTH} characters")
        out.append(text)
    return "".join(out)
