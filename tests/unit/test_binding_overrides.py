"""Override policies are selected, ordered and recorded like Karmada's override manager."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controllers.api import APPLIED_CLUSTER_OVERRIDES_ANNOTATION, APPLIED_OVERRIDES_ANNOTATION
from controllers.binding import (
    PRIORITY_MATCH_ALL,
    PRIORITY_MATCH_LABEL_SELECTOR,
    PRIORITY_MATCH_NAME,
    PRIORITY_MISMATCH,
    OverrideError,
    apply_overrides,
    cluster_matches,
    selector_priority,
)

CLUSTER: dict[str, Any] = {
    "apiVersion": "cluster.karmada.io/v1alpha1",
    "kind": "Cluster",
    "metadata": {"name": "member1", "labels": {"env": "prod"}},
    "spec": {"provider": "aws", "region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
    "spec": {"replicas": 2},
}
BY_KIND = {"apiVersion": "apps/v1", "kind": "Deployment"}
BY_LABEL = {**BY_KIND, "labelSelector": {"matchLabels": {"app": "nginx"}}}
BY_NAME = {**BY_KIND, "name": "nginx"}


def label(value: str) -> dict[str, Any]:
    """Overriders that set the label ``winner``: the last policy applied wins."""
    return {"labelsOverrider": [{"operator": "add", "value": {"winner": value}}]}


def policy(
    name: str,
    selectors: list[dict[str, Any]] | None = None,
    rules: list[dict[str, Any]] | None = None,
    *,
    namespace: str | None = "default",
) -> dict[str, Any]:
    """An OverridePolicy (a ClusterOverridePolicy when ``namespace`` is None)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    spec: dict[str, Any] = {"overrideRules": rules or [{"overriders": label(name)}]}
    if selectors is not None:
        spec["resourceSelectors"] = selectors
    kind = "OverridePolicy" if namespace is not None else "ClusterOverridePolicy"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    }


def cop(name: str, selectors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return policy(name, selectors, namespace=None)


ORDERING = [
    pytest.param(
        [cop("by-name", [BY_NAME])],
        [policy("kind-only", [BY_KIND])],
        "kind-only",
        ["by-name"],
        ["kind-only"],
        id="a namespaced OverridePolicy beats a more specific ClusterOverridePolicy",
    ),
    pytest.param(
        [],
        [
            policy("a-by-name", [BY_NAME]),
            policy("b-by-label", [BY_LABEL]),
            policy("c-kind-only", [BY_KIND]),
        ],
        "a-by-name",
        [],
        ["c-kind-only", "b-by-label", "a-by-name"],
        id="selection by name beats label selector which beats kind only",
    ),
    pytest.param(
        [cop("z-all"), cop("a-by-label", [BY_LABEL])],
        [],
        "a-by-label",
        ["z-all", "a-by-label"],
        [],
        id="a policy without selectors is as unspecific as kind only",
    ),
    pytest.param(
        [],
        [policy("b", [BY_KIND]), policy("a", [BY_KIND])],
        "b",
        [],
        ["a", "b"],
        id="equally specific policies apply by name so the last name wins",
    ),
    pytest.param(
        [],
        [
            policy("mixed", [{**BY_KIND, "name": "other"}, BY_LABEL]),
            policy("a-by-label", [BY_LABEL]),
        ],
        "mixed",
        [],
        ["a-by-label", "mixed"],
        id="a policy ranks by its best matching selector",
    ),
    pytest.param(
        [],
        [
            policy("other-namespace", [BY_NAME], namespace="prod"),
            policy("other-name", [{**BY_KIND, "name": "web"}]),
            policy("other-labels", [{**BY_KIND, "labelSelector": {"matchLabels": {"app": "x"}}}]),
            policy("other-kind", [{"apiVersion": "v1", "kind": "Service"}]),
            policy("other-namespace-selector", [{**BY_KIND, "namespace": "prod"}]),
        ],
        None,
        [],
        [],
        id="policies of other namespaces and non-matching selectors are ignored",
    ),
]


@pytest.mark.parametrize(("cops", "ops", "winner", "applied_cops", "applied_ops"), ORDERING)
def test_policy_order(
    cops: list[dict[str, Any]],
    ops: list[dict[str, Any]],
    winner: str | None,
    applied_cops: list[str],
    applied_ops: list[str],
) -> None:
    result = apply_overrides(
        DEPLOYMENT, CLUSTER, cluster_override_policies=cops, override_policies=ops
    )
    assert result.manifest["metadata"]["labels"].get("winner") == winner
    assert [a.policy_name for a in result.cluster_overrides] == applied_cops
    assert [a.policy_name for a in result.overrides] == applied_ops


def test_cluster_scoped_resources_get_only_cluster_override_policies() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    result = apply_overrides(
        namespace,
        CLUSTER,
        cluster_override_policies=[cop("c")],
        override_policies=[policy("o"), policy("o-empty", namespace="")],
    )
    assert result.manifest["metadata"]["labels"] == {"winner": "c"}
    assert result.overrides == ()


TARGETS = [
    pytest.param({"clusterNames": ["member1"]}, True, id="by cluster name"),
    pytest.param({"clusterNames": ["member2"]}, False, id="another cluster's name"),
    pytest.param({"exclude": ["member1"]}, False, id="exclude wins"),
    pytest.param(
        {"clusterNames": ["member1"], "exclude": ["member1"]}, False, id="exclude before names"
    ),
    pytest.param({"labelSelector": {"matchLabels": {"env": "prod"}}}, True, id="by label"),
    pytest.param({"labelSelector": {"matchLabels": {"env": "dev"}}}, False, id="other label"),
    pytest.param(
        {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Bogus"}]}},
        False,
        id="an invalid label selector matches nothing",
    ),
    pytest.param(
        {
            "fieldSelector": {
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["us-east-1"]}]
            }
        },
        True,
        id="by region",
    ),
    pytest.param(
        {
            "fieldSelector": {
                "matchExpressions": [{"key": "provider", "operator": "NotIn", "values": ["aws"]}]
            }
        },
        False,
        id="provider NotIn",
    ),
    pytest.param(
        {
            "fieldSelector": {
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["us-east-1a"]}]
            }
        },
        False,
        id="zone In needs every zone of the cluster to be listed",
    ),
    pytest.param(
        {
            "fieldSelector": {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["us-east-1a", "us-east-1b", "x"]}
                ]
            }
        },
        True,
        id="zone In with all the cluster's zones",
    ),
    pytest.param(
        {
            "labelSelector": {"matchLabels": {"env": "prod"}},
            "fieldSelector": {
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]
            },
        },
        False,
        id="every given criterion must hold",
    ),
    pytest.param({}, True, id="an empty affinity matches every cluster"),
]


@pytest.mark.parametrize(("affinity", "expected"), TARGETS)
def test_cluster_affinity(affinity: dict[str, Any], expected: bool) -> None:
    assert cluster_matches(CLUSTER, affinity) is expected


def test_rules_apply_only_to_their_target_clusters_in_order() -> None:
    rules = [
        {"targetCluster": {"clusterNames": ["member2"]}, "overriders": label("member2")},
        {
            "targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}},
            "overriders": label("prod"),
        },
        {
            "overriders": {
                "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 7}]
            }
        },
    ]
    result = apply_overrides(DEPLOYMENT, CLUSTER, override_policies=[policy("p", rules=rules)])
    assert result.manifest["metadata"]["labels"]["winner"] == "prod"
    assert result.manifest["spec"]["replicas"] == 7
    assert [a.overriders for a in result.overrides] == [
        rules[1]["overriders"],
        rules[2]["overriders"],
    ]


def test_the_deprecated_single_rule_form_still_applies() -> None:
    old: dict[str, Any] = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": "old", "namespace": "default"},
        "spec": {"targetCluster": {"clusterNames": ["member1"]}, "overriders": label("old")},
    }
    elsewhere = copy.deepcopy(old)
    elsewhere["metadata"]["name"] = "elsewhere"
    elsewhere["spec"]["targetCluster"] = {"clusterNames": ["member9"]}
    result = apply_overrides(DEPLOYMENT, CLUSTER, override_policies=[old, elsewhere])
    assert result.manifest["metadata"]["labels"]["winner"] == "old"
    assert [a.policy_name for a in result.overrides] == ["old"]


def test_an_invalid_rule_names_policy_rule_and_entry() -> None:
    rules = [
        {"overriders": label("fine")},
        {"overriders": {"plaintext": [{"path": "/spec/missing", "operator": "remove"}]}},
    ]
    before = copy.deepcopy(DEPLOYMENT)
    with pytest.raises(OverrideError) as caught:
        apply_overrides(DEPLOYMENT, CLUSTER, override_policies=[policy("broken", rules=rules)])
    error = caught.value
    assert (error.policy, error.rule, error.entry) == ("default/broken", 1, "plaintext[0]")
    assert str(error) == (
        "override policy default/broken rule 1: plaintext[0]: remove /spec/missing: "
        "no member 'missing'"
    )
    assert before == DEPLOYMENT


def test_an_invalid_cluster_override_policy_is_named_without_namespace() -> None:
    broken = cop("broken")
    broken["spec"]["overrideRules"] = [
        {"overriders": {"fieldOverrider": [{"fieldPath": "/spec/replicas", "json": []}]}}
    ]
    with pytest.raises(OverrideError, match=r"^override policy broken rule 0: fieldOverrider\[0\]"):
        apply_overrides(DEPLOYMENT, CLUSTER, cluster_override_policies=[broken])


def test_applied_overrides_are_recorded_as_karmada_json_sorted_by_name() -> None:
    both = {
        "labelsOverrider": [{"operator": "add", "value": {"a": "1"}}],
        "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 3}],
        "argsOverrider": [],
    }
    result = apply_overrides(
        DEPLOYMENT,
        CLUSTER,
        cluster_override_policies=[cop("c-all")],
        override_policies=[
            policy("z-by-name", [BY_NAME], rules=[{"overriders": both}]),
            policy("m-kind", [BY_KIND]),
        ],
    )
    annotations = result.annotations()
    assert annotations[APPLIED_OVERRIDES_ANNOTATION] == (
        '[{"policyName":"m-kind","overriders":{"labelsOverrider":'
        '[{"operator":"add","value":{"winner":"m-kind"}}]}},'
        '{"policyName":"z-by-name","overriders":{"plaintext":'
        '[{"path":"/spec/replicas","operator":"replace","value":3}],'
        '"labelsOverrider":[{"operator":"add","value":{"a":"1"}}]}}]'
    )
    assert json.loads(annotations[APPLIED_CLUSTER_OVERRIDES_ANNOTATION]) == [
        {"policyName": "c-all", "overriders": label("c-all")}
    ]


def test_nothing_applied_records_nothing_and_copies_the_manifest() -> None:
    result = apply_overrides(DEPLOYMENT, CLUSTER)
    assert result.annotations() == {}
    assert result.manifest == DEPLOYMENT
    assert result.manifest is not DEPLOYMENT


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(BY_NAME, PRIORITY_MATCH_NAME, id="by name"),
        pytest.param(
            {**BY_NAME, "labelSelector": {"matchLabels": {"app": "other"}}},
            PRIORITY_MATCH_NAME,
            id="a name makes the label selector ignored",
        ),
        pytest.param(BY_LABEL, PRIORITY_MATCH_LABEL_SELECTOR, id="by label selector"),
        pytest.param(
            {**BY_KIND, "labelSelector": {}}, PRIORITY_MATCH_LABEL_SELECTOR, id="empty selector"
        ),
        pytest.param(BY_KIND, PRIORITY_MATCH_ALL, id="by kind only"),
        pytest.param(
            {**BY_KIND, "namespace": "default"}, PRIORITY_MATCH_ALL, id="by kind in its namespace"
        ),
        pytest.param(
            {**BY_KIND, "apiVersion": "apps/v1beta1"}, PRIORITY_MISMATCH, id="old version"
        ),
        pytest.param({**BY_NAME, "name": "web"}, PRIORITY_MISMATCH, id="another name"),
    ],
)
def test_selector_priority(selector: dict[str, Any], expected: int) -> None:
    assert selector_priority(DEPLOYMENT, selector) == expected


# Found by tests/fuzz/test_fuzz_overrides.py: AttributeError from overrideRules of the wrong type,
# RecursionError from a plaintext value nested 600 deep.
def test_a_selecting_policy_of_the_wrong_shape_is_an_override_error_naming_the_fields() -> None:
    malformed = {**cop("bad"), "spec": {"overrideRules": [[]], "resourceSelectors": [BY_KIND]}}
    with pytest.raises(OverrideError) as raised:
        apply_overrides(DEPLOYMENT, CLUSTER, cluster_override_policies=[malformed])
    assert (raised.value.policy, raised.value.entry) == ("bad", "spec")
    assert 'spec.overrideRules[0]: Invalid value: "array": must be of type object' in str(
        raised.value
    )
    unreadable = {**cop("worse"), "spec": {"resourceSelectors": "all", "overriders": 3}}
    with pytest.raises(OverrideError, match="override policy worse rule 0: spec: invalid"):
        apply_overrides(DEPLOYMENT, CLUSTER, cluster_override_policies=[unreadable])


def test_a_malformed_policy_that_selects_other_kinds_is_ignored() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap"}
    malformed = {**cop("bad"), "spec": {"overrideRules": 7, "resourceSelectors": [other]}}
    result = apply_overrides(DEPLOYMENT, CLUSTER, cluster_override_policies=[malformed])
    assert result.manifest == DEPLOYMENT


def test_a_value_nested_too_deep_is_an_override_error() -> None:
    value: Any = "x"
    for _ in range(600):
        value = [value]
    plaintext = [{"path": "/spec/extra", "operator": "add", "value": value}]
    deep = policy("deep", rules=[{"overriders": {"plaintext": plaintext}}])
    with pytest.raises(OverrideError, match="nested deeper than 100 levels"):
        apply_overrides(DEPLOYMENT, CLUSTER, override_policies=[deep])
