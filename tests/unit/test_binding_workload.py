"""A binding's manifest and Work for one cluster carry what Karmada's binding controller writes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.binding import (
    OverrideError,
    build_work,
    build_workload,
    conflict_resolution_for,
)

CLUSTER: dict[str, Any] = {"metadata": {"name": "member1", "labels": {"env": "prod"}}}
TEMPLATE: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "nginx",
        "namespace": "default",
        "uid": "template-uid",
        "resourceVersion": "812",
        "generation": 2,
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "managedFields": [{"manager": "kubectl-client-side-apply"}],
        "finalizers": ["example.io/protect"],
        "labels": {"app": "nginx", "propagationpolicy.karmada.io/permanent-id": "pp-id"},
        "annotations": {
            "deployment.kubernetes.io/revision": "1",
            "propagationpolicy.karmada.io/name": "nginx-propagation",
        },
    },
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
        },
    },
    "status": {"replicas": 3, "readyReplicas": 3},
}
BINDING: dict[str, Any] = {
    "apiVersion": "work.karmada.io/v1alpha2",
    "kind": "ResourceBinding",
    "metadata": {
        "name": "nginx-deployment",
        "namespace": "default",
        "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id"},
    },
    "spec": {
        "resource": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": "default",
            "name": "nginx",
            "uid": "template-uid",
        },
        "conflictResolution": "Overwrite",
        "preserveResourcesOnDeletion": True,
        "clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}],
    },
}
MIRROR: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "OverridePolicy",
    "metadata": {"name": "mirror", "namespace": "default"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
        "overrideRules": [
            {
                "targetCluster": {"clusterNames": ["member1"]},
                "overriders": {
                    "imageOverrider": [
                        {"component": "Registry", "operator": "replace", "value": "mirror.io"}
                    ]
                },
            }
        ],
    },
}


def revised(replicas: int) -> dict[str, Any]:
    """What ReviseReplica returns for the template: a copy with the cluster's replicas."""
    copied = copy.deepcopy(TEMPLATE)
    copied["spec"]["replicas"] = replicas
    return copied


def test_a_deployment_becomes_a_work_for_its_cluster() -> None:
    inputs = copy.deepcopy((TEMPLATE, BINDING, MIRROR))
    workload = build_workload(
        TEMPLATE, BINDING, CLUSTER, revised=revised(2), override_policies=[MIRROR]
    )
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "nginx",
            "namespace": "default",
            "labels": {
                "app": "nginx",
                "propagationpolicy.karmada.io/permanent-id": "pp-id",
                "resourcebinding.karmada.io/permanent-id": "rb-id",
                "karmada.io/managed": "true",
            },
            "annotations": {
                "propagationpolicy.karmada.io/name": "nginx-propagation",
                "resourcebinding.karmada.io/namespace": "default",
                "resourcebinding.karmada.io/name": "nginx-deployment",
                "resourcetemplate.karmada.io/uid": "template-uid",
                "work.karmada.io/name": "nginx-687f7fb96f",
                "work.karmada.io/namespace": "karmada-es-member1",
                "work.karmada.io/conflict-resolution": "overwrite",
                "resourcetemplate.karmada.io/generation": "2",
                "resourcetemplate.karmada.io/managed-annotations": (
                    "propagationpolicy.karmada.io/name,"
                    "resourcebinding.karmada.io/name,"
                    "resourcebinding.karmada.io/namespace,"
                    "resourcetemplate.karmada.io/generation,"
                    "resourcetemplate.karmada.io/managed-annotations,"
                    "resourcetemplate.karmada.io/managed-labels,"
                    "resourcetemplate.karmada.io/uid,"
                    "work.karmada.io/conflict-resolution,"
                    "work.karmada.io/name,"
                    "work.karmada.io/namespace"
                ),
                "resourcetemplate.karmada.io/managed-labels": (
                    "app,karmada.io/managed,propagationpolicy.karmada.io/permanent-id,"
                    "resourcebinding.karmada.io/permanent-id"
                ),
            },
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "mirror.io/nginx:1.25"}]},
            },
        },
    }
    assert workload.manifest == manifest
    assert (workload.cluster, workload.work_name) == ("member1", "nginx-687f7fb96f")
    assert workload.work_namespace == "karmada-es-member1"

    work = build_work(BINDING, workload)
    assert work == {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {
            "name": "nginx-687f7fb96f",
            "namespace": "karmada-es-member1",
            "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id"},
            "annotations": {
                "resourcebinding.karmada.io/namespace": "default",
                "resourcebinding.karmada.io/name": "nginx-deployment",
                "work.karmada.io/conflict-resolution": "overwrite",
                "policy.karmada.io/applied-overrides": (
                    '[{"policyName":"mirror","overriders":{"imageOverrider":'
                    '[{"component":"Registry","operator":"replace","value":"mirror.io"}]}}]'
                ),
            },
            "finalizers": ["karmada.io/execution-controller"],
        },
        "spec": {"workload": {"manifests": [manifest]}, "preserveResourcesOnDeletion": True},
    }
    assert work["spec"]["workload"]["manifests"][0] is not workload.manifest
    assert inputs == (TEMPLATE, BINDING, MIRROR)


def test_another_cluster_gets_no_override_and_the_template_when_not_revised() -> None:
    member2 = {"metadata": {"name": "member2"}}
    workload = build_workload(TEMPLATE, BINDING, member2, override_policies=[MIRROR])
    work = build_work(BINDING, workload)
    containers = workload.manifest["spec"]["template"]["spec"]["containers"]
    assert containers == [{"name": "nginx", "image": "nginx:1.25"}]
    assert workload.manifest["spec"]["replicas"] == 3
    assert work["metadata"]["namespace"] == "karmada-es-member2"
    assert work["metadata"]["name"] == "nginx-687f7fb96f"
    assert "policy.karmada.io/applied-overrides" not in work["metadata"]["annotations"]


def test_a_cluster_scoped_template_goes_through_a_cluster_resource_binding() -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:Controller", "uid": "role-uid"},
        "rules": [],
    }
    binding = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ClusterResourceBinding",
        "metadata": {
            "name": "system.controller-clusterrole",
            "labels": {"clusterresourcebinding.karmada.io/permanent-id": "crb-id"},
        },
        "spec": {"suspension": {"dispatchingOnClusters": {"clusterNames": ["member1"]}}},
    }
    cop = {
        "kind": "ClusterOverridePolicy",
        "metadata": {"name": "tag"},
        "spec": {
            "overrideRules": [
                {"overriders": {"labelsOverrider": [{"operator": "add", "value": {"team": "a"}}]}}
            ]
        },
    }
    workload = build_workload(role, binding, CLUSTER, cluster_override_policies=[cop])
    work = build_work(binding, workload)
    labels = workload.manifest["metadata"]["labels"]
    assert labels == {
        "team": "a",
        "clusterresourcebinding.karmada.io/permanent-id": "crb-id",
        "karmada.io/managed": "true",
    }
    annotations = workload.manifest["metadata"]["annotations"]
    assert annotations["clusterresourcebinding.karmada.io/name"] == "system.controller-clusterrole"
    assert "resourcebinding.karmada.io/namespace" not in annotations
    assert annotations["work.karmada.io/conflict-resolution"] == "abort"
    assert work["metadata"]["name"] == "system.controller-f5fdc67d5"
    assert work["metadata"]["labels"] == {
        "clusterresourcebinding.karmada.io/permanent-id": "crb-id"
    }
    assert work["metadata"]["annotations"]["policy.karmada.io/applied-cluster-overrides"]
    assert work["spec"]["suspendDispatching"] is True
    assert "preserveResourcesOnDeletion" not in work["spec"]


@pytest.mark.parametrize(
    ("template_annotation", "binding_policy", "expected"),
    [
        pytest.param(None, "Overwrite", "overwrite", id="the binding's Overwrite"),
        pytest.param(None, "Abort", "abort", id="the binding's Abort"),
        pytest.param(None, None, "abort", id="abort by default"),
        pytest.param("overwrite", "Abort", "overwrite", id="the template annotation wins"),
        pytest.param("abort", "Overwrite", "abort", id="the template may also insist on abort"),
        pytest.param("Overwrite", "Abort", "abort", id="an invalid template annotation is ignored"),
    ],
)
def test_conflict_resolution(
    template_annotation: str | None, binding_policy: str | None, expected: str
) -> None:
    template: dict[str, Any] = {"metadata": {}}
    if template_annotation is not None:
        template["metadata"]["annotations"] = {
            "work.karmada.io/conflict-resolution": template_annotation
        }
    binding = {"spec": {"conflictResolution": binding_policy} if binding_policy else {}}
    assert conflict_resolution_for(template, binding) == expected


@pytest.mark.parametrize(
    ("suspension", "suspended"),
    [
        pytest.param({"dispatching": True}, True, id="dispatching suspended everywhere"),
        pytest.param(
            {"dispatchingOnClusters": {"clusterNames": ["member2"]}},
            False,
            id="dispatching suspended for another cluster only",
        ),
        pytest.param({}, False, id="no suspension"),
    ],
)
def test_suspended_dispatching(suspension: dict[str, Any], suspended: bool) -> None:
    binding = copy.deepcopy(BINDING)
    binding["spec"]["suspension"] = suspension
    work = build_work(binding, build_workload(TEMPLATE, binding, CLUSTER))
    assert work["spec"].get("suspendDispatching", False) is suspended


def test_a_binding_without_an_id_yet_adds_no_id_label() -> None:
    binding = copy.deepcopy(BINDING)
    del binding["metadata"]["labels"]
    workload = build_workload(TEMPLATE, binding, CLUSTER)
    assert "resourcebinding.karmada.io/permanent-id" not in workload.manifest["metadata"]["labels"]
    assert build_work(binding, workload)["metadata"]["labels"] == {}


def test_an_invalid_override_stops_the_build() -> None:
    broken = copy.deepcopy(MIRROR)
    broken["spec"]["overrideRules"][0]["overriders"] = {
        "plaintext": [{"path": "/spec/paused", "operator": "replace", "value": True}]
    }
    with pytest.raises(OverrideError, match="default/mirror rule 0: plaintext"):
        build_workload(TEMPLATE, BINDING, CLUSTER, override_policies=[broken])
