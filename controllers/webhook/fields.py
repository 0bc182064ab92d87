"""Fields words admission problems as apimachinery's field errors, and refuses objects with them.

Karmada's webhook answers with ``field.ErrorList.ToAggregate()``: one ``<path>: <type>: <detail>``
per problem, joined by ``, `` inside brackets when there are several. The detector's checks
(``controllers.detector.validation``) already speak these words; the rules only the webhook
applies use ``invalid``, ``required``, ``forbidden`` and ``duplicate`` to do the same, and a
validator raises ``Refused`` with the whole list, which the webhook server turns into a denial
carrying the message.

Updates ratchet, as the apiserver's CRD validation ratcheting does (KEP-4008): an update is refused
only for problems the object did not have before (``new_problems``), so objects admitted before
the webhook ran, or under older rules, can still get their finalizers and labels from the
controllers, and be fixed one field at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import orjson

__all__ = [
    "Refused",
    "duplicate",
    "forbidden",
    "invalid",
    "new_problems",
    "refuse_if_any",
    "required",
]

# Values longer than this are cut in messages: a policy's whole placement is no help there.
_SHOWN: Final = 80


def _shown(value: object) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def invalid(path: str, value: object, detail: str) -> str:
    """``<path>: Invalid value: <value as JSON>: <detail>`` (field.Invalid)."""
    return f"{path}: Invalid value: {_shown(value)}: {detail}"


def required(path: str, detail: str = "") -> str:
    """``<path>: Required value[: <detail>]`` (field.Required)."""
    return f"{path}: Required value" + (f": {detail}" if detail else "")


def forbidden(path: str, detail: str) -> str:
    """``<path>: Forbidden: <detail>`` (field.Forbidden)."""
    return f"{path}: Forbidden: {detail}"


def duplicate(path: str, value: object) -> str:
    """``<path>: Duplicate value: <value as JSON>`` (field.Duplicate)."""
    return f"{path}: Duplicate value: {_shown(value)}"


class Refused(ValueError):
    """An object the webhook refuses; the message lists every problem, ``problems`` holds them."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = self.problems[0]
        else:
            # ToAggregate's form, so messages read as Karmada's do.
            message = "[" + ", ".join(self.problems) + "]"
        super().__init__(message)


def refuse_if_any(problems: Sequence[str]) -> None:
    """Raise ``Refused`` when ``problems`` is not empty.

    Raises:
        Refused: listing ``problems``.
    """
    if problems:
        raise Refused(problems)


def new_problems(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """The problems of ``after`` that ``before`` did not have (same words, same path)."""
    known = set(before)
    return [problem for problem in after if problem not in known]
