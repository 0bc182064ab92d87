"""Label selectors in both spellings match like the apiserver's."""

from __future__ import annotations

import pytest

from reconcile.labels import parse_selector, selector_from_label_selector

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
