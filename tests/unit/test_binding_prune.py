"""Pruning drops what the host filled in, per kind, like Karmada's native prune."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.binding import prune_manifest

SERVER_METADATA: dict[str, Any] = {
    "uid": "1b2c",
    "resourceVersion": "42",
    "generation": 3,
    "creationTimestamp": "2024-01-01T00:00:00Z",
    "deletionTimestamp": "2024-01-02T00:00:00Z",
    "deletionGracePeriodSeconds": 30,
    "selfLink": "/apis/apps/v1/namespaces/default/deployments/web",
    "managedFields": [{"manager": "kubectl"}],
    "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": "x"}],
    "finalizers": ["example.io/keep"],
}


def obj(kind: str, api_version: str = "v1", **fields: Any) -> dict[str, Any]:
    metadata = {"name": "web", "namespace": "default", **fields.pop("metadata", {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


CASES = [
    pytest.param(
        obj(
            "ConfigMap",
            metadata={**SERVER_METADATA, "labels": {"a": "b"}},
            data={"k": "v"},
            status={"x": 1},
        ),
        obj("ConfigMap", metadata={"labels": {"a": "b"}}, data={"k": "v"}),
        id="server-set metadata and status go for every kind",
    ),
    pytest.param(
        obj(
            "Deployment",
            "apps/v1",
            metadata={
                "annotations": {
                    "deployment.kubernetes.io/revision": "3",
                    "deployment.kubernetes.io/revision-history": "1,2",
                    "keep": "me",
                }
            },
            spec={"replicas": 2},
        ),
        obj(
            "Deployment", "apps/v1", metadata={"annotations": {"keep": "me"}}, spec={"replicas": 2}
        ),
        id="Deployment revision annotations go",
    ),
    pytest.param(
        obj(
            "Job",
            "batch/v1",
            spec={
                "ttlSecondsAfterFinished": 100,
                "selector": {
                    "matchLabels": {
                        "controller-uid": "u",
                        "batch.kubernetes.io/controller-uid": "u",
                        "team": "a",
                    }
                },
                "template": {
                    "metadata": {
                        "labels": {
                            "controller-uid": "u",
                            "batch.kubernetes.io/controller-uid": "u",
                            "job-name": "web",
                            "batch.kubernetes.io/job-name": "web",
                            "team": "a",
                        }
                    }
                },
            },
        ),
        obj(
            "Job",
            "batch/v1",
            spec={
                "selector": {"matchLabels": {"team": "a"}},
                "template": {"metadata": {"labels": {"team": "a"}}},
            },
        ),
        id="a Job loses its TTL and generated selector labels",
    ),
    pytest.param(
        obj(
            "Job",
            "batch/v1",
            spec={
                "manualSelector": True,
                "selector": {"matchLabels": {"controller-uid": "mine"}},
                "template": {"metadata": {"labels": {"controller-uid": "mine", "job-name": "web"}}},
            },
        ),
        obj(
            "Job",
            "batch/v1",
            spec={
                "manualSelector": True,
                "selector": {"matchLabels": {"controller-uid": "mine"}},
                "template": {"metadata": {"labels": {"controller-uid": "mine", "job-name": "web"}}},
            },
        ),
        id="a Job with a manual selector keeps its labels",
    ),
    pytest.param(
        obj(
            "Service",
            spec={
                "clusterIP": "10.0.0.7",
                "clusterIPs": ["10.0.0.7"],
                "type": "NodePort",
                "ports": [{"port": 80, "nodePort": 30080}],
                "healthCheckNodePort": 31000,
            },
        ),
        obj(
            "Service",
            spec={
                "type": "NodePort",
                "ports": [{"port": 80, "nodePort": 30080}],
                "healthCheckNodePort": 31000,
            },
        ),
        id="a Service loses its cluster IPs but keeps node ports",
    ),
    pytest.param(
        obj("Service", spec={"clusterIP": "None", "clusterIPs": ["None"]}),
        obj("Service", spec={"clusterIP": "None", "clusterIPs": ["None"]}),
        id="a headless Service keeps clusterIP None",
    ),
    pytest.param(
        obj(
            "ServiceAccount",
            secrets=[
                {"name": "web-token-abcde"},
                {"name": "registry"},
                {"name": "web-token-fghij"},
            ],
        ),
        obj("ServiceAccount", secrets=[{"name": "registry"}]),
        id="a ServiceAccount loses its generated token secrets",
    ),
    pytest.param(
        obj(
            "Secret",
            type="kubernetes.io/service-account-token",
            data={"token": "dA=="},
            metadata={
                "annotations": {
                    "kubernetes.io/service-account.uid": "u",
                    "kubernetes.io/service-account.name": "web",
                }
            },
        ),
        obj(
            "Secret",
            type="kubernetes.io/service-account-token",
            metadata={"annotations": {"kubernetes.io/service-account.name": "web"}},
        ),
        id="a service-account token Secret loses its data and account uid",
    ),
    pytest.param(
        obj("Secret", type="Opaque", data={"password": "cA=="}),
        obj("Secret", type="Opaque", data={"password": "cA=="}),
        id="an ordinary Secret keeps its data",
    ),
    pytest.param(
        obj(
            "PersistentVolumeClaim",
            metadata={"annotations": {"volume.kubernetes.io/selected-node": "node-1"}},
            spec={"volumeName": "pv-1"},
        ),
        obj("PersistentVolumeClaim", metadata={"annotations": {}}, spec={"volumeName": "pv-1"}),
        id="a PVC loses its selected node but keeps its volume name",
    ),
    pytest.param(
        obj("Pod", spec={"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]}),
        obj("Pod", spec={"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]}),
        id="a Pod keeps its node name",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_prune(manifest: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(manifest)
    assert prune_manifest(manifest) == expected
    assert manifest == before


def test_prune_tolerates_missing_and_odd_fields() -> None:
    odd = {"kind": "Service", "spec": None, "metadata": None}
    assert prune_manifest(odd) == odd
    assert prune_manifest({"kind": "Job", "spec": {"selector": None}}) == {
        "kind": "Job",
        "spec": {"selector": None},
    }
