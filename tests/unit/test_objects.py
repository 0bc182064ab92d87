"""Object helpers on plain dicts: keys, accessors, owner references, finalizers, conditions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from reconcile.objects import (
    CONDITION_MESSAGE_LIMIT,
    TRUNCATED_MARKER,
    AlreadyOwned,
    ObjectKey,
    add_finalizer,
    annotations_of,
    controller_of,
    deletion_timestamp_of,
    finalizers_of,
    generation_of,
    get_condition,
    has_finalizer,
    is_being_deleted,
    is_condition_false,
    is_condition_true,
    labels_of,
    name_of,
    namespace_of,
    remove_condition,
    remove_finalizer,
    resource_version_of,
    set_condition,
    set_controller_reference,
    set_owner_reference,
    truncate_message,
    uid_of,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2024, 5, 1, 13, 30, 0, tzinfo=UTC)


def obj(name: str = "web", namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
    }


def owner(
    name: str = "app", uid: str = "uid-1", namespace: str = "default", api_version: str = "apps/v1"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": uid}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": "Deployment", "metadata": metadata}


# ObjectKey.


@pytest.mark.parametrize(
    ("key", "text"),
    [
        pytest.param(ObjectKey(namespace="ns", name="a"), "ns/a", id="namespaced"),
        pytest.param(ObjectKey(name="node-1"), "node-1", id="cluster-scoped"),
    ],
)
def test_object_key_prints_like_a_cache_key_and_parses_back(key: ObjectKey, text: str) -> None:
    assert str(key) == text
    assert ObjectKey.parse(text) == key


def test_object_key_of_an_object_is_hashable_and_ordered() -> None:
    key = ObjectKey.of(obj("b", "ns"))
    assert key == ObjectKey(namespace="ns", name="b")
    assert {key: 1}[ObjectKey(namespace="ns", name="b")] == 1
    assert sorted([key, ObjectKey(namespace="ns", name="a")])[0].name == "a"
    with pytest.raises(AttributeError):
        key.name = "c"  # type: ignore[misc]


# Accessors.


def test_accessors_read_metadata() -> None:
    full = obj(
        uid="u",
        resourceVersion="7",
        generation=3,
        labels={"app": "web"},
        annotations={"note": "x"},
        finalizers=["f"],
        deletionTimestamp="2024-05-01T12:00:00Z",
    )
    assert (name_of(full), namespace_of(full), uid_of(full)) == ("web", "default", "u")
    assert (resource_version_of(full), generation_of(full)) == ("7", 3)
    assert labels_of(full) == {"app": "web"}
    assert annotations_of(full) == {"note": "x"}
    assert finalizers_of(full) == ("f",)
    assert deletion_timestamp_of(full) == "2024-05-01T12:00:00Z"
    assert is_being_deleted(full)


def test_accessors_default_when_fields_are_missing() -> None:
    bare: dict[str, Any] = {"apiVersion": "v1", "kind": "Node"}
    assert (name_of(bare), namespace_of(bare), uid_of(bare), resource_version_of(bare)) == (
        "",
        "",
        "",
        "",
    )
    assert generation_of(bare) == 0
    assert labels_of(bare) == {}
    assert annotations_of(bare) == {}
    assert finalizers_of(bare) == ()
    assert deletion_timestamp_of(bare) is None
    assert not is_being_deleted(bare)
    assert "metadata" not in bare  # reading never adds fields


# Owner references.


def test_set_controller_reference_marks_the_owner_as_controller() -> None:
    child = obj()
    set_controller_reference(owner(), child)
    assert child["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "app",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert controller_of(child) == child["metadata"]["ownerReferences"][0]


def test_set_controller_reference_is_idempotent_across_versions() -> None:
    child = obj()
    set_controller_reference(owner(api_version="apps/v1"), child)
    set_controller_reference(owner(api_version="apps/v1beta1"), child)
    references = child["metadata"]["ownerReferences"]
    assert len(references) == 1
    assert references[0]["apiVersion"] == "apps/v1beta1"


def test_a_second_controller_is_refused() -> None:
    child = obj()
    set_controller_reference(owner("first", "uid-1"), child)
    with pytest.raises(AlreadyOwned, match="first"):
        set_controller_reference(owner("second", "uid-2"), child)
    assert [r["name"] for r in child["metadata"]["ownerReferences"]] == ["first"]


def test_an_owner_that_was_never_created_is_refused() -> None:
    with pytest.raises(ValueError, match="uid"):
        set_controller_reference(owner(uid=""), obj())


@pytest.mark.parametrize(
    ("owner_namespace", "child_namespace", "allowed"),
    [
        pytest.param("default", "default", True, id="same-namespace"),
        pytest.param("", "default", True, id="cluster-scoped-owner"),
        pytest.param("other", "default", False, id="other-namespace"),
        pytest.param("default", "", False, id="namespaced-owner-of-cluster-scoped"),
    ],
)
def test_owner_scope_rules(owner_namespace: str, child_namespace: str, allowed: bool) -> None:
    child = obj(namespace=child_namespace)
    if allowed:
        set_owner_reference(owner(namespace=owner_namespace), child)
        assert child["metadata"]["ownerReferences"][0]["name"] == "app"
    else:
        with pytest.raises(ValueError, match="namespace"):
            set_owner_reference(owner(namespace=owner_namespace), child)


def test_set_owner_reference_adds_without_taking_control() -> None:
    child = obj()
    set_owner_reference(owner("a", "uid-a"), child)
    set_owner_reference(owner("b", "uid-b"), child)
    assert [r["name"] for r in child["metadata"]["ownerReferences"]] == ["a", "b"]
    assert controller_of(child) is None


def test_set_owner_reference_keeps_an_existing_controller_flag() -> None:
    child = obj()
    set_controller_reference(owner(), child)
    set_owner_reference(owner(), child)
    assert controller_of(child) is not None
    assert len(child["metadata"]["ownerReferences"]) == 1


# Finalizers.


def test_finalizers_are_added_once_and_removed() -> None:
    target = obj()
    assert add_finalizer(target, "example.com/cleanup")
    assert not add_finalizer(target, "example.com/cleanup")
    assert has_finalizer(target, "example.com/cleanup")
    assert target["metadata"]["finalizers"] == ["example.com/cleanup"]
    assert remove_finalizer(target, "example.com/cleanup")
    assert not remove_finalizer(target, "example.com/cleanup")
    assert not has_finalizer(target, "example.com/cleanup")
    assert target["metadata"]["finalizers"] == []


def test_remove_finalizer_keeps_the_others_in_order() -> None:
    target = obj(finalizers=["a", "b", "c"])
    assert remove_finalizer(target, "b")
    assert finalizers_of(target) == ("a", "c")


# Conditions.


def test_set_condition_adds_a_new_condition_with_a_transition_time() -> None:
    target = obj(generation=4)
    assert set_condition(target, "Ready", "False", "Starting", "waiting", now=T0)
    assert get_condition(target, "Ready") == {
        "type": "Ready",
        "status": "False",
        "reason": "Starting",
        "message": "waiting",
        "observedGeneration": 4,
        "lastTransitionTime": "2024-05-01T12:00:00Z",
    }
    assert not is_condition_true(target, "Ready")


def test_transition_time_moves_only_when_the_status_changes() -> None:
    target = obj()
    set_condition(target, "Ready", "False", "Starting", now=T0)
    assert set_condition(target, "Ready", "False", "StillStarting", "new message", now=T1)
    condition = get_condition(target, "Ready")
    assert condition is not None
    assert condition["reason"] == "StillStarting"
    assert condition["lastTransitionTime"] == "2024-05-01T12:00:00Z"

    assert set_condition(target, "Ready", True, "Up", now=T1)
    condition = get_condition(target, "Ready")
    assert condition is not None
    assert condition["status"] == "True"
    assert condition["lastTransitionTime"] == "2024-05-01T13:30:00Z"
    assert is_condition_true(target, "Ready")


def test_setting_the_same_condition_again_changes_nothing() -> None:
    target = obj()
    set_condition(target, "Ready", "True", "Up", "fine", observed_generation=2, now=T0)
    before = [dict(c) for c in target["status"]["conditions"]]
    assert not set_condition(target, "Ready", "True", "Up", "fine", observed_generation=2, now=T1)
    assert target["status"]["conditions"] == before


def test_conditions_of_other_types_are_left_alone() -> None:
    target = obj()
    set_condition(target, "Ready", "True", "Up", now=T0)
    set_condition(target, "Degraded", "False", "Fine", now=T0)
    assert [c["type"] for c in target["status"]["conditions"]] == ["Ready", "Degraded"]
    assert remove_condition(target, "Ready")
    assert not remove_condition(target, "Ready")
    assert get_condition(target, "Ready") is None
    assert get_condition(target, "Degraded") is not None


def test_a_condition_is_false_only_when_present_with_status_false() -> None:
    target = obj()
    assert not is_condition_false(target, "Ready")  # absent: neither true nor false
    set_condition(target, "Ready", "Unknown", "Checking", now=T0)
    assert not is_condition_false(target, "Ready")
    assert not is_condition_true(target, "Ready")
    set_condition(target, "Ready", False, "Down", now=T0)
    assert is_condition_false(target, "Ready")


def test_explicit_observed_generation_wins() -> None:
    target = obj(generation=9)
    set_condition(target, "Ready", "Unknown", "Checking", observed_generation=8, now=T0)
    condition = get_condition(target, "Ready")
    assert condition is not None
    assert condition["observedGeneration"] == 8
    assert condition["status"] == "Unknown"


def test_a_condition_message_past_the_apis_limit_is_truncated_with_a_marker() -> None:
    obj: dict[str, Any] = {}
    set_condition(obj, "Applied", False, "AppliedFailed", "x" * (CONDITION_MESSAGE_LIMIT + 1))
    message = obj["status"]["conditions"][0]["message"]
    assert len(message) == CONDITION_MESSAGE_LIMIT
    assert message.endswith(TRUNCATED_MARKER)
    assert message.startswith("x" * 1000)


def test_a_condition_message_at_the_limit_is_kept_whole() -> None:
    obj: dict[str, Any] = {}
    set_condition(obj, "Applied", False, "AppliedFailed", "x" * CONDITION_MESSAGE_LIMIT)
    assert obj["status"]["conditions"][0]["message"] == "x" * CONDITION_MESSAGE_LIMIT


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 20, "short"),
        ("0123456789abcdefghijklmn", 20, "0123" + TRUNCATED_MARKER),
        ("é" * 30, 20, "éééé" + TRUNCATED_MARKER),
    ],
    ids=["fits", "cut", "counted-in-characters"],
)
def test_truncate_message(text: str, limit: int, expected: str) -> None:
    assert truncate_message(text, limit) == expected


def test_truncate_message_by_bytes_never_splits_a_character() -> None:
    cut = truncate_message("é" * 1000, 1024, in_bytes=True)
    assert len(cut.encode()) <= 1024
    assert cut.endswith(TRUNCATED_MARKER)
    assert set(cut.removesuffix(TRUNCATED_MARKER)) == {"é"}
