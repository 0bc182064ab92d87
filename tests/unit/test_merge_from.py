"""``merge_from``: controller-runtime's MergeFrom and MergeFromWithOptimisticLock patches."""

from __future__ import annotations

from typing import Any

import pytest

from reconcile import deep_copy, merge_from


def _obj() -> dict[str, Any]:
    return {
        "metadata": {"name": "a", "resourceVersion": "7", "labels": {"x": "1", "y": "2"}},
        "spec": {"replicas": 1, "paused": True},
    }


def test_only_the_changes_are_in_the_patch_and_a_removed_key_is_null() -> None:
    before = _obj()
    after = deep_copy(before)
    after["spec"]["replicas"] = 3
    del after["metadata"]["labels"]["y"]
    assert merge_from(before, after) == {
        "metadata": {"labels": {"y": None}},
        "spec": {"replicas": 3},
    }


def test_no_change_is_an_empty_patch() -> None:
    assert merge_from(_obj(), _obj()) == {}


def test_the_optimistic_lock_carries_the_read_resource_version() -> None:
    before = _obj()
    after = deep_copy(before)
    after["metadata"]["resourceVersion"] = "9"  # whatever the copy says, the read's counts
    assert merge_from(before, after, optimistic_lock=True) == {"metadata": {"resourceVersion": "7"}}


def test_the_optimistic_lock_needs_a_resource_version() -> None:
    with pytest.raises(ValueError, match="needs before's resourceVersion"):
        merge_from({"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}, optimistic_lock=True)
