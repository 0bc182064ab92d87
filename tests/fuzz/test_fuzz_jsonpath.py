"""Fuzz the state preservation jsonPath: any template and status, a result or a JsonPathError.

The template is a tenant's (a namespaced PropagationPolicy's) and runs on the controller's event
loop (#26 item 2). Every template, from random text or from JSONPath pieces with long runs of
spaces, must parse and evaluate against any status to a string or raise ``JsonPathError``, within
a wall-time bound. On short filters, where the old backtracking regex is still quick, the
hand-written scan must read exactly what the regex read.
"""

from __future__ import annotations

import re
from typing import Any, Final

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.eviction import jsonpath
from controllers.eviction.jsonpath import MAX_TEMPLATE_LENGTH, JsonPathError, evaluate, parse
from tests.fuzz.strategies import fuzz_settings, json_values, within

# The filter grammar before #26, kept here as the reference the scan must agree with.
_OLD_FILTER: Final = re.compile(
    r"\?\(\s*@(?P<path>[^=!<>]*?)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*\)$"
)

_PIECES: Final = [
    "{", "}", "[", "]", "(", ")", "?", "@", ".", "..", "$", "*", ":", ",", "'", '"', "==", "!=",
    "<", "<=", ">", ">=", "=", "!", " ", "\t", "\n", "-1", "0", "2", "a", "b", "jobID", "range",
    "end", "?(@", "[?(@.a == 1)]", "[*]", "[0:2]", "['a','b']", "true", "null", "\u00e9",
]  # fmt: skip
_SPACES: Final = st.integers(0, 600).map(lambda n: " " * n)

pieces = st.lists(st.one_of(st.sampled_from(_PIECES), _SPACES), max_size=30).map("".join)
templates = st.one_of(
    st.text(max_size=60),
    pieces,
    pieces.map(lambda body: "{" + body + "}"),
    st.tuples(pieces, _SPACES, st.sampled_from(_PIECES), _SPACES, pieces).map(
        lambda parts: "{.a[?(@" + "".join(parts) + ")]}"
    ),
)
STATUS: Final = {
    "jobStatus": {"jobID": "abc", "state": "FAILED"},
    "a": [{"a": 1, "b": [1, 2]}, {"a": "x"}, None, True],
    "conditions": [{"type": "Ready", "status": "True"}],
}


@fuzz_settings(max_examples=600)
@given(template=templates, status=st.one_of(st.just(STATUS), json_values))
def test_every_template_evaluates_or_raises_a_json_path_error_fast(
    template: str, status: Any
) -> None:
    with within(2):
        try:
            text = evaluate(template, status)
        except JsonPathError:
            event("JsonPathError")
            return
    event("evaluated")
    assert isinstance(text, str)
    assert len(template) <= MAX_TEMPLATE_LENGTH


def _old_filter(body: str) -> Any:
    match = _OLD_FILTER.match(body)
    if match is None:
        raise JsonPathError(f"unrecognized filter [{body}]")
    lit = match.group("lit")
    return jsonpath._Filter(
        jsonpath._segments(match.group("path")),
        match.group("op"),
        jsonpath._literal(lit) if lit else None,
    )


def _outcome(read: Any, body: str) -> str:
    try:
        return repr(read(body))
    except JsonPathError:
        return "refused"


short_pieces = st.lists(st.sampled_from(_PIECES), max_size=10).map("".join)
_WS: Final = st.sampled_from(["", " ", "  ", "\t", "\n", " \n "])
well_formed = st.tuples(
    _WS,
    st.sampled_from(["@", "@", "@", "", "$"]),
    st.sampled_from(["", ".a", ".type", ".a.b", "['a']", "..a", "[0]", ".a)", " .a"]),
    _WS,
    st.sampled_from(["", "==", "!=", "<", "<=", ">", ">=", "=", "!", "<<", "=="]),
    _WS,
    st.sampled_from(["", "1", '"x"', "'y'", "true", "null", "=1", "x", '"a)"', "1\n2", "-2.5"]),
    _WS,
    st.sampled_from([")", ")", ")", "", "))", ") "]),
).map(lambda parts: "?(" + "".join(parts))
filters = st.one_of(short_pieces.map(lambda text: "?" + text), well_formed, well_formed)


@fuzz_settings(max_examples=800)
@given(body=filters)
def test_the_filter_scan_reads_what_the_old_regex_read(body: str) -> None:
    body = body.strip()  # as _bracket hands it over
    with within(2):
        old, new = _outcome(_old_filter, body), _outcome(jsonpath._filter, body)
    event("refused" if new == "refused" else "parsed")
    assert new == old


def test_the_issues_filter_is_refused_at_once() -> None:
    with within(2), pytest.raises(JsonPathError):
        parse("{[?(@" + " " * 500 + "==" + " " * 500 + "x]}")
