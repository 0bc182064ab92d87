"""A template relabelled by the sharder (a new resourceVersion, nothing new that reaches a member)
leaves its binding as it is; any other change refreshes the binding's resourceVersion."""

from __future__ import annotations

import copy
from typing import Any

from controllers.api import TEMPLATE_FINGERPRINT_ANNOTATION, built_from, template_fingerprint
from controllers.detector import desired_binding
from reconcile.sharding import DRAIN_PREFIX, SHARD_PREFIX

SHARD = SHARD_PREFIX + "karmada"
DRAIN = DRAIN_PREFIX + "karmada"


def template(resource_version: str = "7", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "uid-web",
            "resourceVersion": resource_version,
            "generation": 1,
            "labels": {"app": "web", **labels},
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 2},
    }


def policy() -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "pp", "namespace": "default", "uid": "pp-uid"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1"]}},
        },
    }


def bound(obj: dict[str, Any], existing: dict[str, Any] | None = None) -> dict[str, Any]:
    return desired_binding(
        obj, policy(), "pp-id", replicas=2, requirements=None, existing=existing, new_id="rb-id"
    )


def test_a_template_moved_between_shards_leaves_its_binding_unchanged() -> None:
    binding = bound(template("7", **{SHARD: "r0"}))
    moved = template("9", **{SHARD: "r1", DRAIN: "true"})
    again = bound(moved, existing=copy.deepcopy(binding))
    assert again == binding, "only sharding labels and the resourceVersion changed"
    assert again["spec"]["resource"]["resourceVersion"] == "7"
    assert built_from(binding, moved)


def test_any_other_change_refreshes_the_binding() -> None:
    binding = bound(template("7", **{SHARD: "r0"}))
    for changed in (
        template("9", tier="front", **{SHARD: "r0"}),
        {**template("9", **{SHARD: "r0"}), "spec": {"replicas": 3}},
    ):
        again = bound(changed, existing=copy.deepcopy(binding))
        assert again["spec"]["resource"]["resourceVersion"] == "9"
        annotations = again["metadata"]["annotations"]
        assert annotations[TEMPLATE_FINGERPRINT_ANNOTATION] == template_fingerprint(changed)
        assert not built_from(binding, changed)


def test_status_generation_and_managed_fields_are_not_in_the_fingerprint() -> None:
    one = template("7")
    other = copy.deepcopy(one)
    other["status"] = {"replicas": 0}
    other["metadata"].update(generation=5, managedFields=[], resourceVersion="8")
    assert template_fingerprint(one) == template_fingerprint(other)


def test_a_binding_without_a_fingerprint_is_built_from_its_resource_version_only() -> None:
    binding = bound(template("7"))
    del binding["metadata"]["annotations"][TEMPLATE_FINGERPRINT_ANNOTATION]
    assert built_from(binding, template("7"))
    assert not built_from(binding, template("8"))
    assert bound(template("8"), existing=binding)["spec"]["resource"]["resourceVersion"] == "8"


def test_a_forged_or_garbled_fingerprint_only_refreshes_the_binding() -> None:
    """A value that is not the template's hash makes the detector do what Karmada's does for any
    change: take the template's resourceVersion, and record the right fingerprint."""
    changed = template("9", tier="front")
    for value in ("", "not-a-hash", "0" * 32, "\u2603" * 1000, template_fingerprint(template("7"))):
        binding = bound(template("7"))
        binding["metadata"]["annotations"][TEMPLATE_FINGERPRINT_ANNOTATION] = value
        assert not built_from(binding, changed), value
        again = bound(changed, existing=binding)
        assert again["spec"]["resource"]["resourceVersion"] == "9"
        recorded = again["metadata"]["annotations"][TEMPLATE_FINGERPRINT_ANNOTATION]
        assert recorded == template_fingerprint(changed)
