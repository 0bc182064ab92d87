"""JSON patches apply like evanphx/json-patch, which the apiserver and Karmada use."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconcile import JsonPatchError, apply_json_patch, parse_pointer, resolve_pointer
from reconcile.jsonpatch import MAX_COPY_BYTES, MAX_OPERATIONS

DOCUMENT: dict[str, Any] = {
    "metadata": {"labels": {"app": "web", "app.kubernetes.io/name": "web"}},
    "spec": {"ports": [80, 443], "tilde~key": 1},
}


@pytest.mark.parametrize(
    ("operation", "path", "expected"),
    [
        pytest.param(
            {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
            "/metadata/labels/tier",
            "front",
            id="add creates a member",
        ),
        pytest.param(
            {"op": "add", "path": "/metadata/labels/app", "value": "api"},
            "/metadata/labels/app",
            "api",
            id="add over an existing member replaces it",
        ),
        pytest.param(
            {"op": "add", "path": "/spec/ports/1", "value": 8080},
            "/spec/ports",
            [80, 8080, 443],
            id="add into an array inserts at the index",
        ),
        pytest.param(
            {"op": "add", "path": "/spec/ports/-", "value": 8443},
            "/spec/ports",
            [80, 443, 8443],
            id="add at dash appends",
        ),
        pytest.param(
            {"op": "replace", "path": "/spec/ports/-1", "value": 9443},
            "/spec/ports",
            [80, 9443],
            id="a negative index counts from the end",
        ),
        pytest.param(
            {"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1name"},
            "/metadata/labels",
            {"app": "web"},
            id="remove with an escaped slash in the key",
        ),
        pytest.param(
            {"op": "replace", "path": "/spec/tilde~0key", "value": 2},
            "/spec/tilde~0key",
            2,
            id="replace with an escaped tilde",
        ),
    ],
)
def test_operations(operation: dict[str, Any], path: str, expected: Any) -> None:
    before = copy.deepcopy(DOCUMENT)
    patched = apply_json_patch(DOCUMENT, [operation])
    assert resolve_pointer(patched, path) == expected
    assert before == DOCUMENT


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        pytest.param(
            {"op": "add", "path": "/metadata/annotations/x", "value": "y"},
            "no member 'annotations'",
            id="add does not create missing parents",
        ),
        pytest.param(
            {"op": "remove", "path": "/metadata/labels/missing"},
            "no member 'missing'",
            id="remove of a missing member fails",
        ),
        pytest.param(
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            "no member 'replicas'",
            id="replace of a missing member fails",
        ),
        pytest.param(
            {"op": "replace", "path": "/spec/ports/2", "value": 1},
            "out of range",
            id="replace past the end of an array fails",
        ),
        pytest.param(
            {"op": "add", "path": "/spec/ports/01", "value": 1},
            "not an array index",
            id="leading zeros are not an index",
        ),
        pytest.param(
            {"op": "add", "path": "spec/replicas", "value": 1},
            "must start with '/'",
            id="a pointer without a leading slash",
        ),
        pytest.param(
            {"op": "add", "path": "/spec/a~2b", "value": 1},
            "invalid '~' escape",
            id="an unknown tilde escape",
        ),
        pytest.param(
            {"op": "move", "from": "/spec", "path": "/spec/x"},
            "into one of its own children",
            id="a move into its own child",
        ),
        pytest.param(
            {"op": "test", "path": "/spec/tilde~0key", "value": True},
            "is not True",
            id="test compares as JSON: true is not 1",
        ),
        pytest.param(
            {"op": "copy", "from": "/spec/missing", "path": "/x"},
            "no member 'missing'",
            id="a copy from nowhere",
        ),
        pytest.param({"op": "frobnicate", "path": "/x"}, "is not allowed", id="no such op"),
        pytest.param({"op": "add", "value": 1}, "has no 'path'", id="an operation without path"),
        pytest.param(
            {"op": "add", "path": "/spec/ports/0/x", "value": 1},
            "the parent is a int",
            id="adding a member to a scalar",
        ),
        pytest.param(
            {"op": "add", "path": "/spec/ports/0/x/y", "value": 1},
            "cannot step into a int",
            id="stepping through a scalar",
        ),
        pytest.param({"op": "remove", "path": ""}, "whole document", id="removing the root"),
    ],
)
def test_invalid_operations_raise_and_leave_the_document(
    operation: dict[str, Any], message: str
) -> None:
    before = copy.deepcopy(DOCUMENT)
    with pytest.raises(JsonPatchError, match=message):
        apply_json_patch(DOCUMENT, [operation])
    assert before == DOCUMENT


def test_an_empty_pointer_is_the_whole_document() -> None:
    assert parse_pointer("") == []
    assert apply_json_patch(DOCUMENT, [{"op": "replace", "path": "", "value": {"a": 1}}]) == {
        "a": 1
    }


def test_inserted_values_are_copies() -> None:
    value = {"nested": ["x"]}
    patched = apply_json_patch({}, [{"op": "add", "path": "/v", "value": value}])
    patched["v"]["nested"].append("y")
    assert value == {"nested": ["x"]}


@pytest.mark.parametrize(
    ("operation", "path", "expected"),
    [
        pytest.param(
            {"op": "move", "from": "/spec/ports/0", "path": "/spec/first"}, "/spec/ports", [443]
        ),
        pytest.param(
            {"op": "copy", "from": "/metadata/labels", "path": "/spec/labels"},
            "/spec/labels/app",
            "web",
        ),
        pytest.param(
            {"op": "test", "path": "/spec/ports", "value": [80, 443]}, "/spec/ports/1", 443
        ),
    ],
)
def test_move_copy_and_test(operation: dict[str, Any], path: str, expected: Any) -> None:
    assert resolve_pointer(apply_json_patch(DOCUMENT, [operation]), path) == expected


def test_allowed_limits_the_operations() -> None:
    operation = {"op": "move", "from": "/spec", "path": "/x"}
    with pytest.raises(JsonPatchError, match="'move' is not allowed"):
        apply_json_patch(DOCUMENT, [operation], allowed=("add", "remove", "replace"))


def test_a_patch_is_a_list() -> None:
    with pytest.raises(JsonPatchError, match="list of operations"):
        apply_json_patch(DOCUMENT, {"op": "add"})


# --- bounds: a patch from outside (an interpreter webhook's answer) -----------------------------


def _doubling(copies: int) -> list[dict[str, Any]]:
    # Each copy of /a into itself doubles it: 747 bytes of patch were 6.3 MB after 18.
    return [{"op": "copy", "from": "/a", "path": "/a/-"}] * copies


def test_copies_past_the_accumulated_copy_size_limit_are_refused() -> None:
    document = {"a": ["x" * 24]}
    # 2**16 strings of 26 bytes: under the 3 MiB default.
    assert len(str(apply_json_patch(document, _doubling(16)))) > 1_000_000
    with pytest.raises(JsonPatchError, match="more than 3145728 bytes") as refused:
        apply_json_patch(document, _doubling(22))
    assert str(refused.value).startswith("operation 16: copy /a/-: ")  # the 17th
    assert MAX_COPY_BYTES == 3 * 1024 * 1024  # kube-apiserver's JSONPatchMaxCopyBytes


def test_the_limit_counts_each_copy_as_its_json_encoding() -> None:
    # evanphx/json-patch's own case: a 49-character string is 51 bytes with its quotes.
    document = {"foo": ["A", "A" * 49]}
    once = [{"op": "copy", "path": "/foo/-", "from": "/foo/1"}]
    assert apply_json_patch(document, once, max_copy_bytes=100)["foo"][2] == "A" * 49
    with pytest.raises(JsonPatchError, match="more than 100 bytes"):
        apply_json_patch(document, once * 2, max_copy_bytes=100)
    assert len(apply_json_patch(document, once * 50, max_copy_bytes=None)["foo"]) == 52


def test_max_operations_bounds_the_patch() -> None:
    tests = [{"op": "test", "path": "/spec/tilde~0key", "value": 1}] * (MAX_OPERATIONS + 1)
    assert apply_json_patch(DOCUMENT, tests) == DOCUMENT
    with pytest.raises(JsonPatchError, match="10001 operations, more than 10000"):
        apply_json_patch(DOCUMENT, tests, max_operations=MAX_OPERATIONS)


def test_a_value_nested_past_the_recursion_limit_is_a_patch_error() -> None:
    deep: Any = 1
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(JsonPatchError, match="nested too deeply"):
        apply_json_patch(DOCUMENT, [{"op": "add", "path": "/deep", "value": deep}])
