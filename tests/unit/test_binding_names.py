"""Binding, Work and execution-namespace names are the ones Karmada computes."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
)
from controllers.binding import (
    binding_id_label,
    binding_id_of,
    binding_name,
    cluster_of_execution_namespace,
    execution_namespace,
    fnv32a,
    is_cluster_binding,
    safe_encode_string,
    work_name,
)


# Expected values were computed with Karmada's GenerateWorkName logic in Go (kr/pretty v0.3.1
# "%v" into hash/fnv.New32a, apimachinery's SafeEncodeString alphabet); the first one is also the
# name Karmada's own documentation shows for the nginx quick start.
@pytest.mark.parametrize(
    ("kind", "name", "namespace", "expected"),
    [
        pytest.param(
            "Deployment",
            "nginx",
            "default",
            "nginx-687f7fb96f",
            id="the default/nginx Deployment gets the Work name Karmada's docs show",
        ),
        pytest.param(
            "ClusterRole",
            "system:Controller",
            "",
            "system.controller-f5fdc67d5",
            id="a cluster-scoped name loses its colon and capitals and hashes without namespace",
        ),
        pytest.param(
            "ConfigMap",
            "App-Config",
            "Prod",
            "app-config-56df94fb94",
            id="namespace name and kind are lowered before hashing",
        ),
        pytest.param(
            "Namespace",
            "team-a",
            "",
            "team-a-5cc7c7959b",
            id="a Namespace is named from its name and kind only",
        ),
    ],
)
def test_work_name_matches_karmada(kind: str, name: str, namespace: str, expected: str) -> None:
    assert work_name(kind, name, namespace) == expected


def test_work_names_differ_by_kind_and_namespace() -> None:
    names = {
        work_name("Deployment", "web", "default"),
        work_name("Service", "web", "default"),
        work_name("Deployment", "web", "prod"),
    }
    assert len(names) == 3
    assert all(name.startswith("web-") for name in names)


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        pytest.param("Deployment", "nginx", "nginx-deployment", id="name then kind, lowercased"),
        pytest.param("Pods", "Pod", "pod-pods", id="capitals in name and kind are lowered"),
        pytest.param(
            "ClusterRole",
            "system:aggregate-to-edit",
            "system.aggregate-to-edit-clusterrole",
            id="a colon in an RBAC name becomes a dot",
        ),
    ],
)
def test_binding_name(kind: str, name: str, expected: str) -> None:
    assert binding_name(kind, name) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"", 0x811C9DC5, id="the empty input hashes to the offset basis"),
        pytest.param(b"a", 0xE40C292C, id="a single byte matches the reference vector"),
        pytest.param(b"foobar", 0xBF9CF968, id="a word matches the reference vector"),
    ],
)
def test_fnv32a_reference_vectors(data: bytes, expected: int) -> None:
    assert fnv32a(data) == expected


def test_safe_encoding_maps_digits_into_the_consonant_alphabet() -> None:
    assert safe_encode_string("0123456789") == "456789bcdf"


def test_execution_namespace_round_trips() -> None:
    assert execution_namespace("member1") == "karmada-es-member1"
    assert cluster_of_execution_namespace("karmada-es-member1") == "member1"
    assert cluster_of_execution_namespace("default") is None


@pytest.mark.parametrize(
    ("binding", "cluster_scoped", "label", "binding_id"),
    [
        pytest.param(
            {
                "kind": "ResourceBinding",
                "metadata": {
                    "namespace": "default",
                    "labels": {RESOURCE_BINDING_PERMANENT_ID_LABEL: "rb-id"},
                },
            },
            False,
            RESOURCE_BINDING_PERMANENT_ID_LABEL,
            "rb-id",
            id="a ResourceBinding is identified by its resourcebinding permanent-id label",
        ),
        pytest.param(
            {
                "kind": "ClusterResourceBinding",
                "metadata": {"labels": {CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL: "crb-id"}},
            },
            True,
            CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
            "crb-id",
            id="a ClusterResourceBinding uses the clusterresourcebinding label",
        ),
        pytest.param(
            {"metadata": {"name": "x"}},
            True,
            CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
            None,
            id="without kind or namespace it counts as cluster-scoped and may have no id yet",
        ),
        pytest.param(
            {
                "kind": "ResourceBinding",
                "metadata": {
                    "namespace": "default",
                    "labels": {CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL: "wrong"},
                },
            },
            False,
            RESOURCE_BINDING_PERMANENT_ID_LABEL,
            None,
            id="the other kind's label is not the binding id",
        ),
    ],
)
def test_binding_id(
    binding: dict[str, Any], cluster_scoped: bool, label: str, binding_id: str | None
) -> None:
    assert is_cluster_binding(binding) is cluster_scoped
    assert binding_id_label(binding) == label
    assert binding_id_of(binding) == binding_id
