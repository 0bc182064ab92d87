"""Label selectors in both spellings match like the apiserver's."""

from __future__ import annotations

from typing import Any

import pytest

from reconcile.labels import parse_selector, selector_from_label_selector, validate_label_selector

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("env in (prod, staging)", True),
        ("env notin (prod)", False),
        ("missing notin (x)", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("app=web,env in (dev,prod),!legacy", True),
    ],
)
def test_string_selectors(selector: str, expected: bool) -> None:
    assert parse_selector(selector).matches(LABELS) is expected


# apimachinery's parser reads "()" as the set holding "" and keeps the empty value of "(a,)" or
# "(a,,b)" (labels/selector.go parseValues, parseIdentifiersList): an empty value is a value.
@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app in ()", {"app": ""}, True),
        ("app in ()", {"app": "web"}, False),
        ("app notin ()", {"app": ""}, False),
        ("app notin ()", {"app": "web"}, True),
        ("app in (web,)", {"app": ""}, True),
        ("app in (,web)", {"app": ""}, True),
        ("app in (a,,b)", {"app": ""}, True),
        ("app in (a, b)", {"app": ""}, False),
    ],
)
def test_an_empty_value_in_a_set_is_the_empty_string(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    assert parse_selector(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["app=web,=x", "!app=web", "a b c", "env in prod"])
def test_invalid_string_selectors_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid label selector"):
        parse_selector(bad)


def test_label_selector_objects() -> None:
    selector = selector_from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "tier", "operator": "Exists"},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({**LABELS, "legacy": "yes"})
    assert not selector.matches({"app": "web"})


def test_empty_label_selector_object_matches_everything() -> None:
    assert selector_from_label_selector({}).matches({})
    assert selector_from_label_selector(None).matches_object({"metadata": {}})


@pytest.mark.parametrize(
    "expression",
    [{"key": "a", "operator": "Near"}, {"key": "a", "operator": "In", "values": []}],
    ids=["unknown-operator", "in-without-values"],
)
def test_invalid_label_selector_objects_are_rejected(expression: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="operator"):
        selector_from_label_selector({"matchExpressions": [expression]})


# Found by tests/fuzz/test_fuzz_labels.py: KeyError, TypeError and AttributeError escaped.
@pytest.mark.parametrize(
    "spec",
    [
        {"matchExpressions": [{"operator": "Exists"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": [["x"]]}]},
        {"matchExpressions": ["a"]},
        {"matchExpressions": {"key": "a"}},
        {"matchLabels": ["a"]},
        {"matchLabels": {"a": 1}},
        ["a"],
    ],
)
def test_a_label_selector_of_the_wrong_shape_raises_value_error(spec: Any) -> None:
    with pytest.raises(ValueError, match=r"must|unknown"):
        selector_from_label_selector(spec)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ([None], "s: Invalid value: list: must be of type object"),
        ({"matchLabels": "a=b"}, "s.matchLabels: Invalid value: str: must be of type object"),
        ({"matchExpressions": 3}, "s.matchExpressions: Invalid value: int: must be of type array"),
        ({"matchExpressions": [None]}, "s.matchExpressions[0]: Invalid value: NoneType"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": 5}]},
         "s.matchExpressions[0].values: Invalid value: int"),
    ],
)  # fmt: skip
def test_validation_names_a_part_of_the_wrong_type(spec: Any, expected: str) -> None:
    (problem,) = validate_label_selector(spec, "s")
    assert problem.startswith(expected)
