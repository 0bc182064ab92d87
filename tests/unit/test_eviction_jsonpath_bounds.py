"""A state preservation jsonPath is tenant input run on the event loop: its parse is linear and
its evaluation is bounded (steps, printed length, nesting), whatever the template and status."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

from controllers.api import AggregatedStatusItem
from controllers.eviction.jsonpath import (
    MAX_EVALUATION_STEPS,
    MAX_OUTPUT_LENGTH,
    MAX_TEMPLATE_LENGTH,
    EvaluationBudget,
    JsonPathError,
    evaluate,
    parse,
)
from controllers.eviction.preservation import StatePreservationError, preserved_label_state

# Generous: the bounded code finishes these in milliseconds; the unbounded one took 30 s for
# the smallest of them (1,000 spaces) and hours for the rest.
_DEADLINE = 20.0


def _finishes(snippet: str) -> str:
    """The output of ``snippet`` run in a fresh interpreter, killed at the deadline (a
    backtracking regex cannot be interrupted from inside the process)."""
    code = "from controllers.eviction.jsonpath import *\n" + textwrap.dedent(snippet)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=_DEADLINE,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {_DEADLINE} s")
    return done.stdout.strip()


def test_the_issues_filter_is_refused_at_once() -> None:
    # 500 + 500 spaces: 30.8 s in the backtracking regex, on the event loop, every 5 s.
    printed = _finishes(
        """
        hostile = "{[?(@" + " " * 500 + "==" + " " * 500 + "x]}"
        try:
            evaluate(hostile, {})
        except JsonPathError as error:
            print("refused", type(error).__name__)
        """
    )
    assert printed == "refused JsonPathError"


def test_a_filter_is_parsed_in_linear_time_past_the_length_bound_too() -> None:
    # The scan itself is linear, so the length bound is not what makes it fast.
    printed = _finishes(
        """
        from controllers.eviction import jsonpath
        body = "?(@" + " " * 50_000 + "==" + " " * 50_000 + "x"
        try:
            jsonpath._bracket(body)
        except JsonPathError as error:
            print("refused", type(error).__name__)
        """
    )
    assert printed == "refused JsonPathError"


def test_the_same_filter_still_parses_when_it_is_well_formed() -> None:
    spaced = "{.conditions[?(@.type" + " " * 300 + "==" + " " * 300 + '"Ready")].status}'
    assert evaluate(spaced, {"conditions": [{"type": "Ready", "status": "True"}]}) == "True"


def test_a_template_longer_than_the_bound_is_refused() -> None:
    parse("{.a}" + "x" * (MAX_TEMPLATE_LENGTH - 4))
    with pytest.raises(JsonPathError, match=f"more than {MAX_TEMPLATE_LENGTH}"):
        parse("{.a}" + "x" * (MAX_TEMPLATE_LENGTH - 3))


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_chained_recursive_descents_stop_at_the_step_budget() -> None:
    # Each ".." multiplies the results by the depth: 200 ** 6 values without a bound.
    printed = _finishes(
        """
        value = {"leaf": 1}
        for _ in range(200):
            value = {"a": value}
        try:
            evaluate("{..a..a..a..a..a..a.leaf}", value)
        except JsonPathError as error:
            print(error)
        """
    )
    assert printed == f"evaluation needs more than {MAX_EVALUATION_STEPS} steps"


def test_a_status_nested_past_the_recursion_limit_is_walked_without_recursion() -> None:
    deep = _nested(sys.getrecursionlimit() * 2)
    assert evaluate("{..leaf}", deep) == "1"


def test_a_template_printing_more_than_the_output_bound_is_refused() -> None:
    status = {"a": "x" * 1000}
    assert len(evaluate("{.a}" * 60, status)) == 60_000
    with pytest.raises(JsonPathError, match=f"longer than {MAX_OUTPUT_LENGTH}"):
        evaluate("{.a}" * 70, status)
    with pytest.raises(JsonPathError, match=f"longer than {MAX_OUTPUT_LENGTH}"):
        evaluate("{.a[*]}", {"a": ["x" * 1000] * 70})


def test_one_budget_bounds_several_evaluations() -> None:
    status = {"items": list(range(1000)), "id": "x"}
    budget = EvaluationBudget(5_000)
    for _ in range(4):
        assert evaluate("{..id}", status, budget) == "x"
    with pytest.raises(JsonPathError, match="more than 5000 steps"):
        evaluate("{..id}", status, budget)


def test_the_rules_of_one_state_preservation_share_one_budget() -> None:
    # Each rule alone is cheap (a descent over about 10,000 values); the CRD bounds neither the
    # rules' number nor the status, so the product must be bounded where they meet.
    status = {"items": [{"n": n} for n in range(5_000)], "jobID": "abc"}
    rules = [{"aliasLabelName": f"x{n}", "jsonPath": "{..jobID}"} for n in range(40)]
    aggregated = [AggregatedStatusItem(clusterName="member1", status=status)]
    assert preserved_label_state({"rules": rules[:2]}, aggregated, "member1") == {
        "x0": "abc",
        "x1": "abc",
    }
    with pytest.raises(StatePreservationError, match="steps"):
        preserved_label_state({"rules": rules}, aggregated, "member1")
