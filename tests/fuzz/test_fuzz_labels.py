"""Fuzz label selectors: any text or LabelSelector object parses, or raises ValueError.

Label selectors come from users in two spellings, the ``?labelSelector=`` text and the
LabelSelector objects of policies and affinities. ``parse_selector`` and
``selector_from_label_selector`` must return a Selector or raise their documented ValueError;
``validate_label_selector`` must return the problems, whatever it is given.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from reconcile import (
    Selector,
    parse_selector,
    selector_from_label_selector,
    validate_label_selector,
)
from tests.fuzz.strategies import (
    crd_schema,
    from_schema,
    fuzz_settings,
    label_maps,
    nasty_text,
    within,
)

SELECTOR = crd_schema(
    "policy.karmada.io_propagationpolicies.yaml", "spec", "resourceSelectors", "[]", "labelSelector"
)
texts = st.one_of(
    nasty_text,
    st.lists(
        st.sampled_from(
            ["a", "b=c", "!d", "e in (f,g)", "h notin ()", "i!=j", "k==l", ",", "(", ")", " "]
        ),
        max_size=6,
    ).map("".join),
)


@fuzz_settings(max_examples=100)
@given(text=texts, labels=label_maps)
def test_selector_text_parses_or_raises_value_error(text: str, labels: dict[str, str]) -> None:
    with within(5):
        try:
            selector = parse_selector(text)
        except ValueError:
            event("refused")
            return
        selector.matches(labels)
    assert isinstance(selector, Selector)


@fuzz_settings(max_examples=120)
@given(spec=from_schema(SELECTOR), labels=label_maps)
def test_label_selector_objects_parse_or_raise_value_error(
    spec: Any, labels: dict[str, str]
) -> None:
    with within(5):
        problems = validate_label_selector(spec, "s")
        try:
            selector = selector_from_label_selector(spec)
        except ValueError:
            event("refused")
            return
        selector.matches(labels)
    assert all(isinstance(problem, str) for problem in problems)
