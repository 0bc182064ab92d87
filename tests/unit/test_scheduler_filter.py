"""Cluster filters: affinity, tolerations, API enablement, spread fields, deletion and eviction."""

from __future__ import annotations

from typing import Any

import pytest

import controllers.scheduler.filter as filter_module
from controllers.api import ClusterAffinity, Placement, Taint, Toleration
from controllers.scheduler import (
    DEFAULT_FILTERS,
    api_enabled,
    api_enablement_filter,
    cluster_affinity_filter,
    cluster_eviction_filter,
    cluster_matches,
    deleting_filter,
    filter_clusters,
    spread_field_filter,
    taint_text,
    taint_toleration_filter,
    tolerates,
    untolerated_taint,
)

APPS_V1 = [
    {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
]


def cluster(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    apis: list[dict[str, Any]] | None = None,
    deleting: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels or {}}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": metadata,
        "spec": spec,
        "status": {"apiEnablements": APPS_V1 if apis is None else apis},
    }


def binding(placement: Placement | None = None, **spec: Any) -> dict[str, Any]:
    resource = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": ""}
    return {
        "metadata": {"name": "web-deployment", "namespace": "default"},
        "spec": {"resource": resource, "placement": placement or {}, **spec},
    }


EAST = cluster("east", labels={"env": "prod"}, provider="aws", region="us-east", zone="us-east-1a")
WEST = cluster("west", labels={"env": "dev"}, provider="gcp", region="us-west", zones=["w1", "w2"])
BARE = cluster("bare")


@pytest.mark.parametrize(
    ("affinity", "target", "expected"),
    [
        pytest.param({}, BARE, True, id="an empty affinity matches every cluster"),
        pytest.param({"clusterNames": ["east"]}, EAST, True, id="a listed name matches"),
        pytest.param({"clusterNames": ["east"]}, WEST, False, id="an unlisted name does not"),
        pytest.param(
            {"clusterNames": ["east"], "exclude": ["east"]},
            EAST,
            False,
            id="exclude wins over clusterNames",
        ),
        pytest.param({"exclude": ["west"]}, EAST, True, id="exclude alone keeps the others"),
        pytest.param(
            {"labelSelector": {"matchLabels": {"env": "prod"}}}, EAST, True, id="labels match"
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"env": "prod"}}}, WEST, False, id="labels differ"
        ),
        pytest.param(
            {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]}},
            BARE,
            False,
            id="an Exists expression needs the label",
        ),
        pytest.param(
            {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Bogus"}]}},
            EAST,
            False,
            id="an invalid label selector matches nothing",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "In", "values": ["aws"]}]
                }
            },
            EAST,
            True,
            id="provider In matches",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [
                        {"key": "region", "operator": "NotIn", "values": ["us-east"]}
                    ]
                }
            },
            EAST,
            False,
            id="region NotIn refuses the listed region",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["x"]}]
                }
            },
            BARE,
            True,
            id="region NotIn accepts a cluster without a region",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "region", "operator": "In", "values": ["x"]}]
                }
            },
            BARE,
            False,
            id="region In refuses a cluster without a region",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["w1"]}]
                }
            },
            WEST,
            False,
            id="zone In needs every zone of a multi-zone cluster",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["w1", "w2"]}]
                }
            },
            WEST,
            True,
            id="zone In matches when all zones are listed",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["w2"]}]
                }
            },
            WEST,
            False,
            id="zone NotIn refuses when any zone is listed",
        ),
        pytest.param(
            {
                "clusterNames": ["east", "west"],
                "labelSelector": {"matchLabels": {"env": "prod"}},
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "In", "values": ["aws"]}]
                },
            },
            EAST,
            True,
            id="every non-empty criterion must match and here all do",
        ),
        pytest.param(
            {
                "clusterNames": ["east", "west"],
                "labelSelector": {"matchLabels": {"env": "prod"}},
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "In", "values": ["gcp"]}]
                },
            },
            EAST,
            False,
            id="one failing criterion is enough to refuse",
        ),
    ],
)
def test_cluster_affinity_matching(
    affinity: ClusterAffinity, target: dict[str, Any], expected: bool
) -> None:
    assert cluster_matches(target, affinity) is expected


def test_the_affinity_filter_explains_a_refusal_and_accepts_without_affinity() -> None:
    placement: Placement = {"clusterAffinity": {"clusterNames": ["east"]}}
    assert cluster_affinity_filter(placement, EAST, binding()) is None
    assert "cluster affinity" in (cluster_affinity_filter(placement, WEST, binding()) or "")
    assert cluster_affinity_filter({}, WEST, binding()) is None


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param(
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            True,
            id="Equal with the same key value and effect tolerates",
        ),
        pytest.param(
            {"key": "k", "operator": "Equal", "value": "other"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            False,
            id="Equal with another value does not tolerate",
        ),
        pytest.param(
            {"key": "k", "value": "v"},
            {"key": "k", "value": "v", "effect": "NoExecute"},
            True,
            id="an empty operator means Equal and an empty effect means any",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists"},
            {"key": "k", "value": "anything", "effect": "NoSchedule"},
            True,
            id="Exists tolerates any value of the key",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            {"key": "k", "effect": "NoSchedule"},
            False,
            id="a different effect does not tolerate",
        ),
        pytest.param(
            {"operator": "Exists"},
            {"key": "whatever", "value": "x", "effect": "NoExecute"},
            True,
            id="an empty key with Exists tolerates every taint",
        ),
        pytest.param(
            {"key": "other", "operator": "Exists"},
            {"key": "k", "effect": "NoSchedule"},
            False,
            id="another key does not tolerate",
        ),
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_prefer_no_schedule_taints_never_filter() -> None:
    taints: list[Taint] = [{"key": "soft", "effect": "PreferNoSchedule"}]
    assert untolerated_taint(taints, []) is None


def test_the_first_untolerated_taint_is_reported() -> None:
    taints: list[Taint] = [
        {"key": "a", "effect": "NoSchedule"},
        {"key": "b", "value": "1", "effect": "NoExecute"},
    ]
    assert untolerated_taint(taints, [{"key": "a", "operator": "Exists"}]) == taints[1]
    assert taint_text(taints[1]) == "b=1:NoExecute"
    assert taint_text(taints[0]) == "a:NoSchedule"


def test_the_taint_filter_refuses_untolerated_clusters_unless_already_scheduled() -> None:
    tainted = cluster("tainted", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
    placement: Placement = {}
    reason = taint_toleration_filter(placement, tainted, binding())
    assert reason == "cluster(s) had untolerated taint {gpu=yes:NoSchedule}"
    tolerated: Placement = {"clusterTolerations": [{"key": "gpu", "operator": "Exists"}]}
    assert taint_toleration_filter(tolerated, tainted, binding()) is None
    scheduled = binding(clusters=[{"name": "tainted", "replicas": 1}])
    assert taint_toleration_filter(placement, tainted, scheduled) is None


@pytest.mark.parametrize(
    ("apis", "api_version", "kind", "expected"),
    [
        pytest.param(APPS_V1, "apps/v1", "Deployment", True, id="a served kind is enabled"),
        pytest.param(APPS_V1, "apps/v1", "StatefulSet", False, id="another kind is not"),
        pytest.param(APPS_V1, "apps/v1beta1", "Deployment", False, id="another version is not"),
        pytest.param([], "v1", "ConfigMap", False, id="no enablements means nothing is served"),
    ],
)
def test_api_enablement(
    apis: list[dict[str, Any]], api_version: str, kind: str, expected: bool
) -> None:
    assert api_enabled(cluster("c", apis=apis), api_version, kind) is expected


def test_the_api_filter_skips_clusters_already_in_the_result() -> None:
    without = cluster("old", apis=[])
    assert (
        api_enablement_filter({}, without, binding()) == "cluster(s) did not have the API resource"
    )
    scheduled = binding(clusters=[{"name": "old", "replicas": 2}])
    assert api_enablement_filter({}, without, scheduled) is None


@pytest.mark.parametrize(
    ("constraint", "target", "expected"),
    [
        pytest.param({"spreadByField": "region"}, EAST, None, id="a cluster with a region fits"),
        pytest.param(
            {"spreadByField": "region"},
            BARE,
            "cluster(s) did not have region property",
            id="a cluster without a region is refused",
        ),
        pytest.param(
            {"spreadByField": "provider"},
            BARE,
            "cluster(s) did not have provider property",
            id="a cluster without a provider is refused",
        ),
        pytest.param({"spreadByField": "zone"}, WEST, None, id="zones count as a zone"),
        pytest.param(
            {"spreadByField": "zone"},
            BARE,
            "cluster(s) did not have zone property",
            id="a cluster without any zone is refused",
        ),
        pytest.param(
            {"spreadByField": "cluster"}, BARE, None, id="spreading by cluster needs nothing"
        ),
        pytest.param({"spreadByLabel": "env"}, EAST, None, id="a cluster with the label fits"),
        pytest.param(
            {"spreadByLabel": "env"},
            BARE,
            "cluster(s) did not have label env",
            id="a cluster without the label is refused",
        ),
    ],
)
def test_spread_fields_must_be_present(
    constraint: dict[str, Any], target: dict[str, Any], expected: str | None
) -> None:
    placement: Placement = {"spreadConstraints": [constraint]}  # type: ignore[list-item]
    assert spread_field_filter(placement, target, binding()) == expected


def test_deleting_and_evicted_clusters_are_refused() -> None:
    assert (
        deleting_filter({}, cluster("gone", deleting=True), binding())
        == "cluster(s) is being deleted"
    )
    assert deleting_filter({}, EAST, binding()) is None
    evicting = binding(gracefulEvictionTasks=[{"fromCluster": "east"}])
    assert cluster_eviction_filter({}, EAST, evicting) == "cluster(s) is in the process of eviction"
    assert cluster_eviction_filter({}, WEST, evicting) is None


def test_filter_clusters_keeps_input_order_and_the_first_reason_per_cluster() -> None:
    gone = cluster("gone", deleting=True, taints=[{"key": "x", "effect": "NoSchedule"}])
    tainted = cluster("tainted", taints=[{"key": "x", "effect": "NoSchedule"}])
    placement: Placement = {"clusterAffinity": {"exclude": ["east"]}}
    result = filter_clusters(placement, [WEST, EAST, gone, tainted, BARE], binding())
    assert [c["metadata"]["name"] for c in result.feasible] == ["west", "bare"]
    assert result.rejected == {
        "east": "cluster(s) did not match the placement cluster affinity constraint",
        "gone": "cluster(s) is being deleted",
        "tainted": "cluster(s) had untolerated taint {x:NoSchedule}",
    }
    assert len(DEFAULT_FILTERS) == 7


def test_a_cluster_versions_shape_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    real = filter_module.shape_problems  # type: ignore[attr-defined]

    def counting(value: Any, hint: Any, path: str, *, enums: bool = True) -> list[str]:
        checked.append(path)
        return real(value, hint, path, enums=enums)

    monkeypatch.setattr(filter_module, "shape_problems", counting)
    meta = {"name": "m", "uid": "u-1", "resourceVersion": "5"}
    broken = {"metadata": meta, "spec": {}, "status": {"apiEnablements": "not a list"}}
    for _ in range(3):
        assert filter_module.shape_filter({}, broken, {}) is not None
    assert checked == ["spec", "status"]
    fixed = {"metadata": {**meta, "resourceVersion": "6"}, "spec": {}, "status": {}}
    assert filter_module.shape_filter({}, fixed, {}) is None
    assert len(checked) == 4
    anonymous = {"metadata": {"name": "m"}, "spec": {}, "status": {"apiEnablements": "x"}}
    assert filter_module.shape_filter({}, anonymous, {}) is not None  # no version: not remembered
    assert filter_module.shape_filter({}, anonymous, {}) is not None
    assert len(checked) == 8
