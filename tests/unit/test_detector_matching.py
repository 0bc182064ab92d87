"""Which policy a template belongs to, how the claim is written, and the binding built for it."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import TEMPLATE_FINGERPRINT_ANNOTATION, template_fingerprint
from controllers.detector import (
    ObjectRef,
    apply_changes,
    candidates,
    choose,
    claim_changes,
    claim_of,
    claimed_by,
    desired_binding,
    ensure_policy_metadata,
    implicit_priority,
    merge_patch,
    pending_changes,
    preempts,
    release_changes,
    spec_changed,
    template_event_filter,
)
from controllers.detector.discovery import is_skipped
from reconcile import GVK, Event, EventType, Request

PP_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_ID = "clusterpropagationpolicy.karmada.io/permanent-id"


def template(
    name: str = "nginx",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = labels or {"app": "nginx"}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {}}


def selector(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", **fields}


def policy(
    name: str,
    *selectors: dict[str, Any],
    namespace: str = "default",
    cluster: bool = False,
    priority: int = 0,
    preemption: str = "Never",
    identifier: str | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if not cluster:
        metadata["namespace"] = namespace
    label = CPP_ID if cluster else PP_ID
    metadata["labels"] = {label: identifier or f"id-{name}"}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec = {
        "resourceSelectors": list(selectors) or [selector()],
        "priority": priority,
        "preemption": preemption,
        "placement": {"clusterAffinity": {"clusterNames": ["member1"]}},
    }
    kind = "ClusterPropagationPolicy" if cluster else "PropagationPolicy"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    }


def names(policies: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in policies]


@pytest.mark.parametrize(
    ("rule", "obj", "expected"),
    [
        pytest.param(selector(name="nginx"), template(), 3, id="by name"),
        pytest.param(
            selector(labelSelector={"matchLabels": {"app": "nginx"}}), template(), 2, id="by labels"
        ),
        pytest.param(selector(), template(), 1, id="by kind only"),
        pytest.param(
            selector(name="nginx", labelSelector={"matchLabels": {"app": "other"}}),
            template(),
            3,
            id="a name makes the label selector ignored",
        ),
        pytest.param(selector(name="other"), template(), 0, id="another name"),
        pytest.param(
            selector(labelSelector={"matchLabels": {"app": "other"}}), template(), 0, id="labels"
        ),
        pytest.param({"apiVersion": "v1", "kind": "Service"}, template(), 0, id="another kind"),
        pytest.param(selector(namespace="other"), template(), 0, id="another namespace"),
    ],
)
def test_implicit_priority_follows_the_best_selector(
    rule: dict[str, Any], obj: dict[str, Any], expected: int
) -> None:
    assert implicit_priority(policy("p", rule), obj) == expected


def test_a_propagation_policy_selects_only_in_its_own_namespace() -> None:
    assert implicit_priority(policy("p", namespace="other"), template()) == 0
    assert implicit_priority(policy("p"), template(namespace="")) == 0, "never cluster-scoped"
    assert implicit_priority(policy("c", cluster=True), template(namespace="elsewhere")) == 1
    scoped = policy("c", selector(namespace="default"), cluster=True)
    assert implicit_priority(scoped, template(namespace="elsewhere")) == 0


def test_candidates_are_ranked_namespaced_first_then_priority_implicit_priority_name() -> None:
    ranked = candidates(
        template(),
        [
            policy("cpp-high", cluster=True, priority=100),
            policy("b-kind"),
            policy("a-kind"),
            policy("by-name", selector(name="nginx")),
            policy("high", priority=5),
            policy("gone", priority=50, deleting=True),
            policy("other-ns", namespace="other", priority=50),
            policy("cpp-low", cluster=True),
        ],
    )
    assert names(ranked) == ["high", "by-name", "a-kind", "b-kind", "cpp-high", "cpp-low"]


@pytest.mark.parametrize(
    ("candidate", "claimed", "expected"),
    [
        pytest.param(
            policy("a", priority=5, preemption="Always"), policy("b", priority=1), True, id="higher"
        ),
        pytest.param(policy("a", priority=5), policy("b", priority=1), False, id="never preempts"),
        pytest.param(
            policy("a", priority=1, preemption="Always"), policy("b", priority=1), False, id="equal"
        ),
        pytest.param(
            policy("a", preemption="Always"),
            policy("c", cluster=True, priority=9),
            True,
            id="a namespaced policy preempts any cluster policy",
        ),
        pytest.param(
            policy("c", cluster=True, priority=9, preemption="Always"),
            policy("a"),
            False,
            id="a cluster policy never preempts a namespaced one",
        ),
        pytest.param(
            policy("a", priority=9, preemption="Always"),
            policy("a", priority=1),
            False,
            id="itself",
        ),
    ],
)
def test_preemption(candidate: dict[str, Any], claimed: dict[str, Any], expected: bool) -> None:
    assert preempts(candidate, claimed) is expected


def test_a_claimed_template_stays_with_its_policy_unless_preempted() -> None:
    low = policy("low", priority=1)
    high = policy("high", priority=5)
    assert choose(template(), None, [low, high]) is high
    assert choose(template(), low, [low, high]) is low, "no preemption: the claim stands"
    preemptor = policy("preemptor", priority=3, preemption="Always")
    assert choose(template(), low, [low, high, preemptor]) is preemptor
    cpp = policy("cpp", cluster=True, priority=10)
    assert choose(template(), cpp, [cpp, low]) is cpp, "a later PP does not take it by itself"
    assert choose(template(), None, []) is None


def test_claims_are_written_and_recognised() -> None:
    pp = policy("nginx-pp", identifier="pp-uuid")
    changes = claim_changes(pp, "pp-uuid")
    obj = template(labels={"app": "nginx", CPP_ID: "cpp-uuid"})
    obj["metadata"]["annotations"] = {"clusterpropagationpolicy.karmada.io/name": "cpp"}
    assert merge_patch(changes) == {
        "metadata": {
            "labels": {PP_ID: "pp-uuid", CPP_ID: None},
            "annotations": {
                "propagationpolicy.karmada.io/namespace": "default",
                "propagationpolicy.karmada.io/name": "nginx-pp",
                "clusterpropagationpolicy.karmada.io/name": None,
            },
        }
    }
    apply_changes(obj, changes)
    assert obj["metadata"]["labels"] == {"app": "nginx", PP_ID: "pp-uuid"}
    claim = claim_of(obj)
    assert claim is not None
    assert (claim.cluster, claim.namespace, claim.name, claim.id) == (
        False,
        "default",
        "nginx-pp",
        "pp-uuid",
    )
    assert claimed_by(claim, pp)
    assert not claimed_by(claim, policy("nginx-pp", identifier="recreated"))
    assert pending_changes(obj, changes) is None, "already claimed: nothing to write"
    release = pending_changes(obj, release_changes(cluster=False))
    assert release is not None
    apply_changes(obj, release)
    assert claim_of(obj) is None
    assert obj["metadata"]["labels"] == {"app": "nginx"}


def test_a_policy_gets_a_permanent_id_and_a_finalizer_once() -> None:
    pp = policy("p")
    del pp["metadata"]["labels"]
    assert ensure_policy_metadata(pp, "fresh")
    assert pp["metadata"]["labels"] == {PP_ID: "fresh"}
    assert pp["metadata"]["finalizers"] == ["karmada.io/propagation-policy-controller"]
    assert not ensure_policy_metadata(pp, "other"), "the id is permanent"
    cpp = policy("c", cluster=True)
    assert ensure_policy_metadata(cpp, "x")
    assert cpp["metadata"]["finalizers"] == ["karmada.io/cluster-propagation-policy-controller"]


def test_only_specification_changes_count() -> None:
    old = template()
    old["status"] = {"replicas": 1}
    status_only = template()
    status_only["status"] = {"replicas": 2}
    status_only["metadata"]["resourceVersion"] = "8"
    assert not spec_changed(old, status_only)
    relabelled = template(labels={"app": "web"})
    assert spec_changed(old, relabelled)
    scaled = template()
    scaled["spec"] = {"replicas": 4}
    assert spec_changed(old, scaled)


def test_template_events_in_reserved_namespaces_are_ignored() -> None:
    for namespace, passed in [("default", True), ("kube-system", False), ("karmada-es-m1", False)]:
        event = Event(EventType.CREATE, template(namespace=namespace))
        assert template_event_filter(event) is passed, namespace
    old, new = template(), template()
    new["status"] = {"readyReplicas": 1}
    assert not template_event_filter(Event(EventType.UPDATE, new, old))


@pytest.mark.parametrize(
    ("gvk", "skipped"),
    [
        (GVK("", "v1", "Event"), True),
        (GVK("events.k8s.io", "v1", "Event"), True),
        (GVK("coordination.k8s.io", "v1", "Lease"), True),
        (GVK("policy.karmada.io", "v1alpha1", "PropagationPolicy"), True),
        (GVK("work.karmada.io", "v1alpha2", "ResourceBinding"), True),
        (GVK("apiregistration.k8s.io", "v1", "APIService"), True),
        (GVK("apps", "v1", "Deployment"), False),
        (GVK("", "v1", "ConfigMap"), False),
        (GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), False),
    ],
    ids=str,
)
def test_discovery_skips_events_leases_and_karmadas_own_api(gvk: GVK, skipped: bool) -> None:
    assert is_skipped(gvk) is skipped


@pytest.mark.parametrize(
    "ref",
    [
        ObjectRef(GVK("apps", "v1", "Deployment"), "default", "nginx"),
        ObjectRef(GVK("", "v1", "ConfigMap"), "default", "cm"),
        ObjectRef(GVK("rbac.authorization.k8s.io", "v1", "ClusterRole"), "", "system:view"),
        ObjectRef(GVK("policy.karmada.io", "v1alpha1", "PropagationPolicy"), "ns", "pp"),
    ],
    ids=str,
)
def test_requests_carry_the_kind(ref: ObjectRef) -> None:
    assert ObjectRef.from_request(ref.request()) == ref


def test_a_request_without_a_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="does not name a kind"):
        ObjectRef.from_request(Request("nginx", "default"))


def test_the_binding_carries_the_template_the_policy_and_keeps_the_schedulers_result() -> None:
    pp = policy("nginx-pp", identifier="pp-uuid")
    pp["spec"]["suspension"] = {"dispatching": True}
    pp["spec"]["propagateDeps"] = True
    new = desired_binding(
        template(),
        pp,
        "pp-uuid",
        replicas=3,
        requirements={"resourceRequest": {"cpu": "100m"}},
        existing=None,
        new_id="rb-uuid",
    )
    metadata = new["metadata"]
    assert (new["kind"], metadata["name"], metadata["namespace"]) == (
        "ResourceBinding",
        "nginx-deployment",
        "default",
    )
    assert metadata["labels"] == {
        PP_ID: "pp-uuid",
        "resourcebinding.karmada.io/permanent-id": "rb-uuid",
    }
    assert metadata["finalizers"] == ["karmada.io/binding-controller"]
    assert metadata["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "nginx",
            "uid": "uid-nginx",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    spec = new["spec"]
    assert spec["resource"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "default",
        "name": "nginx",
        "uid": "uid-nginx",
        "resourceVersion": "7",
    }
    assert spec["replicas"] == 3
    assert spec["placement"] == pp["spec"]["placement"]
    assert spec["conflictResolution"] == "Abort"
    assert spec["propagateDeps"] is True
    assert spec["suspension"] == {"dispatching": True}
    assert "clusters" not in spec

    scheduled = {**new, "spec": {**spec, "clusters": [{"name": "member1", "replicas": 3}]}}
    scheduled["spec"]["suspension"] = {"scheduling": True}
    scheduled["status"] = {"conditions": [{"type": "Scheduled", "status": "True"}]}
    cpp = policy("cpp", cluster=True, identifier="cpp-uuid")
    again = desired_binding(
        template(), cpp, "cpp-uuid", replicas=0, requirements=None, existing=scheduled, new_id="x"
    )
    assert again["spec"]["clusters"] == [{"name": "member1", "replicas": 3}]
    assert again["status"] == scheduled["status"]
    assert "replicas" not in again["spec"]
    assert "replicaRequirements" not in again["spec"]
    assert again["spec"]["suspension"] == {"scheduling": True}, "the binding's own stays"
    assert again["metadata"]["labels"] == {
        CPP_ID: "cpp-uuid",
        "resourcebinding.karmada.io/permanent-id": "rb-uuid",
    }
    assert again["metadata"]["annotations"] == {
        "clusterpropagationpolicy.karmada.io/name": "cpp",
        TEMPLATE_FINGERPRINT_ANNOTATION: template_fingerprint(template()),
    }


def test_a_cluster_scoped_template_gets_a_cluster_resource_binding() -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:view", "uid": "u", "resourceVersion": "1"},
    }
    cpp = policy(
        "cpp", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}, cluster=True
    )
    binding = desired_binding(
        role, cpp, "id", replicas=0, requirements=None, existing=None, new_id="crb-uuid"
    )
    assert binding["kind"] == "ClusterResourceBinding"
    assert binding["metadata"]["name"] == "system.view-clusterrole"
    assert "namespace" not in binding["metadata"]
    assert binding["metadata"]["finalizers"] == ["karmada.io/cluster-resource-binding-controller"]
    assert (
        binding["metadata"]["labels"]["clusterresourcebinding.karmada.io/permanent-id"]
        == "crb-uuid"
    )
    assert "namespace" not in binding["spec"]["resource"]


def test_a_stored_policy_version_is_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # After a relist every template is reconciled, each asking about every policy several times.
    from controllers.detector import matching, validation

    validated: list[str] = []
    real = validation.spec_shape_problems

    def counting(obj: Any) -> list[str]:
        validated.append(obj["metadata"]["resourceVersion"])
        return real(obj)

    monkeypatch.setattr(matching, "spec_shape_problems", counting)
    stored = policy("web", selector(labelSelector={"matchLabels": {"app": "nginx"}}))
    stored["metadata"].update(uid="uid-memo", resourceVersion="41")
    templates = [template(f"t{i}") for i in range(50)]
    assert all(implicit_priority(stored, t) == 2 for t in templates)
    assert [names(candidates(t, [stored])) for t in templates] == [["web"]] * 50
    assert validated == ["41"]

    # A new version is validated again, and its verdict counts: now it selects nothing.
    stored["metadata"]["resourceVersion"] = "42"
    stored["spec"]["resourceSelectors"] = "not a list"
    assert implicit_priority(stored, templates[0]) == 0
    assert validated == ["41", "42"]


def test_a_policy_without_a_stored_version_is_validated_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from controllers.detector import matching, validation

    validated: list[str] = []
    real = validation.spec_shape_problems

    def counting(obj: Any) -> list[str]:
        validated.append("x")
        return real(obj)

    monkeypatch.setattr(matching, "spec_shape_problems", counting)
    built = policy("web")  # no uid, no resourceVersion: edited in memory, nothing to key on
    assert implicit_priority(built, template()) == 1
    built["spec"]["resourceSelectors"] = [selector(kind="StatefulSet")]
    assert implicit_priority(built, template()) == 0
    assert validated == ["x", "x"]
