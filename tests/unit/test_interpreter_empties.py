"""Empty tables of Lua results are settled as Karmada's luavm settles them (lua_convert.go).

The cases with a Karmada name carry over the inputs and expected outputs of Karmada's own
lua_convert_test.go; the others pin down what its algorithm implies.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.interpreter.empties import is_empty, references, settle

MARK = object()

CASES: list[tuple[str, Any, list[Any], Any]] = [
    # Karmada: "convert empty object back to empty slice"
    ("karmada-desired-and-observed",
     {"spec": [{"aa": [], "bb": [], "cc": ["x"], "dd": {"ee": [], "ff": []}}]},
     [{"kind": "demo", "spec": [{"aa": {}, "bb": []}]},
      {"kind": "demo", "spec": [{"dd": {"ee": {}}}]}],
     {"spec": [{"aa": {}, "bb": [], "cc": ["x"], "dd": {"ee": {}}}]}),
    # Karmada: "convert unstructured with empty field not referring to references"
    ("karmada-no-references",
     {"kind": "demo", "spec": {"EmptyMap": {}, "NonEmptyMap": {"k": "v"}, "EmptySlice": [],
                               "NonEmptySlice": ["x"], "OtherField": '"trap-string":[]'}},
     [],
     {"kind": "demo", "spec": {"NonEmptyMap": {"k": "v"}, "NonEmptySlice": ["x"],
                               "OtherField": '"trap-string":[]'}}),
    # Karmada: "convert unstructured with empty field referring to references"
    ("karmada-references",
     {"kind": "demo", "spec": {"EmptyMap": [], "EmptySlice": [], "NonEmptySlice": ["x"]}},
     [{"kind": "demo", "spec": {"EmptySlice": [], "EmptyMap": {}}}],
     {"kind": "demo", "spec": {"EmptyMap": {}, "EmptySlice": [], "NonEmptySlice": ["x"]}}),
    ("an-object-wins-over-a-list", {"a": []}, [{"a": []}, {"a": {}}], {"a": {}}),
    ("a-non-empty-reference-says-nothing", {"a": {}, "b": []}, [{"a": {"x": 1}, "b": [1]}], {}),
    ("empty-list-elements-are-dropped", {"a": [{}, 1, []]}, [], {"a": [1]}),
    ("list-elements-share-their-list-path", {"a": [{}]}, [{"a": {}}], {"a": [{}]}),
    ("the-marker-is-an-empty-table", {"a": MARK, "b": MARK}, [{"a": []}], {"a": []}),
    ("a-parent-left-empty-stays", {"a": {"b": []}}, [], {"a": {}}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "refs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_settle_follows_karmada(value: Any, refs: list[Any], expected: Any) -> None:
    before = copy.deepcopy(refs)
    assert settle(value, refs, marker=MARK) == expected
    assert refs == before


def test_settle_shares_what_it_does_not_change_and_never_changes_its_input() -> None:
    untouched = {"x": [1, {"y": 2}]}
    value = {"keep": untouched, "drop": {}}
    settled = settle(value, [])
    assert settled == {"keep": untouched}
    assert settled["keep"] is untouched
    assert value == {"keep": untouched, "drop": {}}
    assert settle(untouched, []) is untouched


def test_an_empty_root_is_left_to_the_caller() -> None:
    assert settle({}, []) == {}
    assert settle([], []) == []
    assert is_empty(MARK, MARK)
    assert is_empty({})
    assert is_empty([])
    assert not is_empty({"a": 1})
    assert not is_empty(0)
    assert not is_empty("")


@pytest.mark.parametrize(
    ("function", "count"),
    [("ReviseReplica", 1), ("Retain", 2), ("AggregateStatus", 0), ("ReflectStatus", 0),
     ("GetDependencies", 0), ("GetReplicas", 0)],
)  # fmt: skip
def test_references_are_the_arguments_karmada_passes(function: str, count: int) -> None:
    assert list(references(function, ["a", "b"])) == ["a", "b"][:count]
