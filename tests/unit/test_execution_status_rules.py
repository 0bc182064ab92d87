"""Rules of the execution and status controllers that need no cluster: drift, retention, status."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.api import (
    MANAGED_LABEL,
    MANAGED_LABELS_ANNOTATION,
    WORK_NAME_ANNOTATION,
    AggregatedStatusItem,
    ManifestStatus,
    ObjectReference,
)
from controllers.execution import (
    APPLIED_DIGEST_ANNOTATION,
    Applied,
    contains,
    identifier_of,
    managed_scope,
    manifest_digest,
    needs_update,
    release_patch,
    retain_member_fields,
    status_patch,
    with_digest,
    work_request,
)
from controllers.status import aggregated_items, fully_applied, interpreter_items
from reconcile import Obj, get_condition

DEPLOYMENT: Obj = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "labels": {MANAGED_LABEL: "true"}},
    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "a"}]}}},
}


def _member(**changes: Any) -> Obj:
    """DEPLOYMENT as the member's apiserver returns it: defaults filled, generation 1."""
    member: Obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {MANAGED_LABEL: "true"},
            "generation": 1,
            "resourceVersion": "7",
        },
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "spec": {
                    "containers": [{"name": "c", "image": "a", "imagePullPolicy": "Always"}],
                    "restartPolicy": "Always",
                }
            },
        },
        "status": {"readyReplicas": 1},
    }
    member.update(changes)
    return member


@pytest.mark.parametrize(
    ("observed", "desired", "expected"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        ({}, {"a": []}, True),
        ({}, {"a": None}, True),
        ({"a": [{"x": 1, "y": 2}]}, {"a": [{"x": 1}]}, True),
        ({"a": [1, 2]}, {"a": [1]}, False),
        ({"a": 1}, {"a": True}, False),
        ({"a": "1"}, {"a": 1}, False),
    ],
    ids=[
        "extra fields in the member are fine",
        "a different value is not",
        "an empty list matches an absent one",
        "null matches absent",
        "list elements are compared as objects",
        "lists must have the same length",
        "true is not 1",
        "a string is not a number",
    ],
)
def test_contains_is_a_semantic_subset(observed: Any, desired: Any, expected: bool) -> None:
    assert contains(observed, desired) is expected


def test_no_update_when_only_defaults_and_status_differ() -> None:
    digest = manifest_digest(DEPLOYMENT)
    merged = retain_member_fields(DEPLOYMENT, _member())
    assert not needs_update(merged, _member(), Applied(digest, 1), digest)


@pytest.mark.parametrize(
    ("applied", "observed"),
    [
        (None, _member()),
        (Applied("another manifest", 1), _member()),
        (Applied("", 1), _member(metadata={**_member()["metadata"], "generation": 2})),
        (Applied("", 1), _member(spec={**_member()["spec"], "replicas": 3})),
    ],
    ids=[
        "not written since start",
        "the manifest changed",
        "someone changed the member's spec",
        "a managed value differs",
    ],
)
def test_update_needed(applied: Applied | None, observed: Obj) -> None:
    digest = manifest_digest(DEPLOYMENT)
    if applied is not None and not applied.digest:
        applied = Applied(digest, applied.generation)
    assert needs_update(retain_member_fields(DEPLOYMENT, observed), observed, applied, digest)


def test_retention_keeps_member_metadata_but_drops_keys_karmada_removed() -> None:
    observed = _member()
    observed["metadata"].update(
        {
            "labels": {MANAGED_LABEL: "true", "team": "a", "old": "x"},
            "annotations": {MANAGED_LABELS_ANNOTATION: f"{MANAGED_LABEL},old", "note": "n"},
            "finalizers": ["member/finalizer"],
            "ownerReferences": [{"kind": "Thing", "name": "t", "uid": "u", "apiVersion": "v1"}],
        }
    )
    merged = retain_member_fields(DEPLOYMENT, observed)
    meta = merged["metadata"]
    assert meta["labels"] == {MANAGED_LABEL: "true", "team": "a"}
    assert meta["annotations"]["note"] == "n"
    assert meta["finalizers"] == ["member/finalizer"]
    assert meta["ownerReferences"][0]["name"] == "t"
    assert meta["resourceVersion"] == "7"
    assert DEPLOYMENT["metadata"].get("finalizers") is None, "the manifest is not changed"


def test_release_patch_removes_only_karmada_marks() -> None:
    observed = _member()
    observed["metadata"]["labels"]["team"] = "a"
    observed["metadata"]["annotations"] = {WORK_NAME_ANNOTATION: "w", "note": "n"}
    assert release_patch(observed) == {
        "metadata": {"labels": {MANAGED_LABEL: None}, "annotations": {WORK_NAME_ANNOTATION: None}}
    }
    assert release_patch({"metadata": {"labels": {"team": "a"}}}) is None


def test_a_released_object_loses_the_shard_label_of_a_sharded_replica() -> None:
    observed = _member()
    observed["metadata"]["labels"]["shard.sharding.reconcile.io/karmada"] = "r0"
    patch = release_patch(observed)
    assert patch is not None
    assert patch["metadata"]["labels"] == {
        MANAGED_LABEL: None,
        "shard.sharding.reconcile.io/karmada": None,
    }


def test_a_sharded_replica_holds_only_the_managed_objects_labelled_with_its_shard() -> None:
    assert managed_scope({}).label_selector == "karmada.io/managed=true"
    scope = managed_scope({"shard.sharding.reconcile.io/karmada": "r0"})
    assert scope.label_selector == "karmada.io/managed=true,shard.sharding.reconcile.io/karmada=r0"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"work.karmada.io/namespace": "karmada-es-m1", "work.karmada.io/name": "w"}, ("w",)),
        ({"work.karmada.io/namespace": "karmada-es-m2", "work.karmada.io/name": "w"}, ()),
        ({}, ()),
    ],
    ids=["its own member's Work", "another member's Work", "no Work"],
)
def test_member_objects_map_to_their_work(
    annotations: dict[str, str], expected: tuple[str, ...]
) -> None:
    request = work_request({"metadata": {"name": "o", "annotations": annotations}}, "m1")
    found = (request.name,) if request else ()
    assert found == expected


def _work(cluster: str, *, applied: str | None, message: str = "", ready: int = 0) -> Obj:
    work: Obj = {
        "metadata": {"name": "w", "namespace": f"karmada-es-{cluster}", "generation": 1},
        "spec": {"workload": {"manifests": [DEPLOYMENT]}},
        "status": {},
    }
    if applied is not None:
        condition = {"type": "Applied", "status": applied, "reason": "R", "message": message}
        work["status"]["conditions"] = [condition]
    if ready:
        entry = ManifestStatus(
            identifier=identifier_of(0, DEPLOYMENT),
            status={"readyReplicas": ready},
            health="Healthy",
        )
        work["status"]["manifestStatuses"] = [entry]
    return work


RESOURCE = ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="shop", name="web")


def test_aggregated_items_are_sorted_and_say_what_failed() -> None:
    works = [
        _work("m2", applied="False", message="cluster m2 is not ready"),
        _work("m1", applied="True", ready=2),
        _work("m3", applied=None),
    ]
    assert aggregated_items(works, RESOURCE) == [
        AggregatedStatusItem(
            clusterName="m1", applied=True, status={"readyReplicas": 2}, health="Healthy"
        ),
        AggregatedStatusItem(
            clusterName="m2",
            applied=False,
            appliedMessage="cluster m2 is not ready",
            health="Unknown",
        ),
        AggregatedStatusItem(clusterName="m3", applied=False, health="Unknown"),
    ]
    assert [i.cluster_name for i in interpreter_items(aggregated_items(works, RESOURCE))] == [
        "m1",
        "m2",
        "m3",
    ]


@pytest.mark.parametrize(
    ("targets", "applied", "expected"),
    [
        (["m1", "m2"], ["m1", "m2"], True),
        (["m1", "m2"], ["m1"], False),
        ([], [], False),
        (["m1"], ["m1", "m2"], True),
    ],
    ids=["all applied", "one missing", "not scheduled", "an extra Work being removed"],
)
def test_fully_applied(targets: list[str], applied: list[str], expected: bool) -> None:
    binding = {"spec": {"clusters": [{"name": name} for name in targets]}}
    items = [AggregatedStatusItem(clusterName=name, applied=True) for name in applied]
    assert fully_applied(binding, items) is expected


def test_work_status_is_written_only_when_it_changes() -> None:
    entry = ManifestStatus(identifier=identifier_of(0, DEPLOYMENT), health="Healthy")
    work = _work("m1", applied=None)
    patch = status_patch(work, None, [entry], 1)
    assert patch is not None
    condition = get_condition({"status": patch}, "Applied")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "AppliedSuccessful")
    work["status"] = patch
    assert status_patch(work, None, [entry], 1) is None
    failed = status_patch(work, "cluster m1 is not ready", [], 1)
    assert failed is not None
    assert failed["manifestStatuses"] == [entry], "the last known state is kept"


def test_no_update_without_a_record_when_the_object_says_it_was_written_from_the_manifest() -> None:
    # A restarted process, or a standby taking over: no record, but the object carries it.
    digest = manifest_digest(DEPLOYMENT)
    desired = with_digest(copy.deepcopy(DEPLOYMENT), digest)
    observed = _member()
    observed["metadata"]["annotations"] = {APPLIED_DIGEST_ANNOTATION: digest}
    assert not needs_update(retain_member_fields(desired, observed), observed, None, digest)

    # Written from another manifest, or a value the manifest sets changed: written again.
    observed["metadata"]["annotations"] = {APPLIED_DIGEST_ANNOTATION: "an older manifest"}
    assert needs_update(retain_member_fields(desired, observed), observed, None, digest)
    observed["metadata"]["annotations"] = {APPLIED_DIGEST_ANNOTATION: digest}
    observed["spec"]["replicas"] = 5
    assert needs_update(retain_member_fields(desired, observed), observed, None, digest)


def test_a_released_object_loses_the_digest_annotation_too() -> None:
    observed = _member()
    observed["metadata"]["annotations"] = {APPLIED_DIGEST_ANNOTATION: "d", "theirs": "x"}
    patch = release_patch(observed)
    assert patch is not None
    assert patch["metadata"]["annotations"] == {APPLIED_DIGEST_ANNOTATION: None}
