"""Karmada's admission, ours: each defaulter and validator of controllers.webhook on its own."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.cluster import MemberOptions
from controllers.webhook.cluster import ClusterValidator, cluster_problems
from controllers.webhook.config import (
    CustomizationValidator,
    conflict_problems,
    interpreter_webhook_problems,
)
from controllers.webhook.fields import Refused, new_problems
from controllers.webhook.override import (
    OverridePolicyDefaulter,
    OverridePolicyValidator,
    override_policy_problems,
)
from controllers.webhook.placement import placement_problems
from controllers.webhook.propagation import (
    PropagationPolicyDefaulter,
    PropagationPolicyValidator,
    default_propagation_policy,
    propagation_policy_problems,
    propagation_update_problems,
)
from controllers.webhook.work import PermanentIdDefaulter, default_permanent_id

pytestmark = pytest.mark.anyio

PP_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_ID = "clusterpropagationpolicy.karmada.io/permanent-id"
DEPLOYMENTS = {"apiVersion": "apps/v1", "kind": "Deployment"}


def policy(kind: str = "PropagationPolicy", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p"}
    if not kind.startswith("Cluster"):
        metadata["namespace"] = "team"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": {"resourceSelectors": [dict(DEPLOYMENTS)], **spec},
    }


def defaulted(obj: dict[str, Any], *, creating: bool = True) -> dict[str, Any]:
    default_propagation_policy(obj, creating=creating, new_id=lambda: "new-id")
    return obj


# --- PropagationPolicy / ClusterPropagationPolicy defaults ------------------------------------


def test_a_new_policy_gets_a_permanent_id_the_finalizer_and_the_scheduler() -> None:
    given = policy()
    given["metadata"]["labels"] = {PP_ID: "copied-from-elsewhere", "app": "web"}
    obj = defaulted(given)
    assert obj["metadata"]["labels"] == {PP_ID: "new-id", "app": "web"}
    assert obj["metadata"]["finalizers"] == ["karmada.io/propagation-policy-controller"]
    assert obj["spec"]["schedulerName"] == "default-scheduler"


def test_a_cluster_policy_gets_its_own_label_and_finalizer() -> None:
    obj = defaulted(policy("ClusterPropagationPolicy"))
    assert obj["metadata"]["labels"] == {CPP_ID: "new-id"}
    assert obj["metadata"]["finalizers"] == ["karmada.io/cluster-propagation-policy-controller"]
    # A cluster-wide policy selects in every namespace: nothing to fill in.
    assert "namespace" not in obj["spec"]["resourceSelectors"][0]


def test_an_update_keeps_the_id_and_gives_one_only_to_a_policy_without() -> None:
    kept = policy()
    kept["metadata"]["labels"] = {PP_ID: "old-id"}
    assert defaulted(kept, creating=False)["metadata"]["labels"][PP_ID] == "old-id"
    assert "finalizers" not in kept["metadata"]
    assert defaulted(policy(), creating=False)["metadata"]["labels"][PP_ID] == "new-id"


def test_placement_and_selector_defaults_are_karmadas() -> None:
    obj = defaulted(
        policy(
            placement={
                "spreadConstraints": [{"maxGroups": 2}, {"spreadByLabel": "tier", "minGroups": 2}],
                "replicaScheduling": {"replicaSchedulingType": "Divided"},
            },
            failover={"application": {"purgeMode": "Graciously"}},
            schedulerName="mine",
        )
    )
    spec = obj["spec"]
    assert spec["resourceSelectors"] == [{**DEPLOYMENTS, "namespace": "team"}]
    assert spec["placement"]["spreadConstraints"] == [
        {"maxGroups": 2, "spreadByField": "cluster", "minGroups": 1},
        {"spreadByLabel": "tier", "minGroups": 2},
    ]
    assert spec["placement"]["replicaScheduling"]["replicaDivisionPreference"] == "Weighted"
    assert spec["failover"]["application"]["gracePeriodSeconds"] == 600
    assert spec["schedulerName"] == "mine"


def test_selecting_a_service_import_propagates_dependencies() -> None:
    obj = policy()
    obj["spec"]["resourceSelectors"] = [
        {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport", "name": "s"}
    ]
    assert defaulted(obj)["spec"]["propagateDeps"] is True


def test_a_spec_of_the_wrong_shape_is_left_for_the_validator() -> None:
    obj = policy()
    obj["spec"]["resourceSelectors"] = "Deployment"
    before = copy.deepcopy(obj["spec"])
    assert defaulted(obj)["spec"] == before


async def test_the_defaulter_tells_create_from_update_by_the_request() -> None:
    defaulter = PropagationPolicyDefaulter(new_id=lambda: "new-id")
    existing = policy()
    existing["metadata"] |= {"uid": "u1", "labels": {PP_ID: "old-id"}}
    await defaulter.default(existing)
    assert existing["metadata"]["labels"][PP_ID] == "old-id"
    created = policy()
    await defaulter.default(created)
    assert created["metadata"]["labels"][PP_ID] == "new-id"


# --- PropagationPolicy / ClusterPropagationPolicy validation ----------------------------------


def valid(kind: str = "PropagationPolicy", **spec: Any) -> dict[str, Any]:
    return defaulted(policy(kind, **spec))


def test_a_defaulted_policy_is_valid() -> None:
    assert propagation_policy_problems(valid()) == []
    assert propagation_policy_problems(valid("ClusterPropagationPolicy")) == []


def test_an_invalid_label_selector_is_refused_with_the_detectors_words() -> None:
    obj = valid()
    obj["spec"]["resourceSelectors"][0]["labelSelector"] = {
        "matchExpressions": [{"key": "app", "operator": "In"}]
    }
    assert propagation_policy_problems(obj) == [
        "spec.resourceSelectors[0].labelSelector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn'"
    ]


def test_a_policy_without_its_permanent_id_is_refused() -> None:
    obj = valid("ClusterPropagationPolicy")
    del obj["metadata"]["labels"][CPP_ID]
    (problem,) = propagation_policy_problems(obj)
    assert problem.startswith("metadata.labels: Required value: label " + CPP_ID)


def test_fields_of_the_wrong_type_are_refused_before_karmadas_rules_run() -> None:
    obj = valid(placement={"spreadConstraints": "cluster"})
    assert propagation_policy_problems(obj) == [
        'spec.placement.spreadConstraints: Invalid value: "string": must be of type array'
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"failover": {"application": {"purgeMode": "Never", "gracePeriodSeconds": 5}}},
            [
                "spec.propagateDeps: Invalid value: false: application failover is set, "
                "propagateDeps must be true",
                "spec.failover.application.gracePeriodSeconds: Invalid value: 5: only takes "
                "effect when purgeMode is graciously",
            ],
            id="failover",
        ),
        pytest.param(
            {"preemption": "Always"},
            [
                'spec.resourceSelectors[0].name: Invalid value: "": name cannot be empty if '
                "preemption is Always, the empty name may cause unexpected resources preemption"
            ],
            id="preemption-without-names",
        ),
        pytest.param(
            {"suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["a"]}}},
            [
                'spec.suspension: Invalid value: {"dispatching":true,"dispatchingOnClusters":'
                '{"clusterNames":["a"]}}: suspension dispatching cannot co-exist with '
                "dispatchingOnClusters.clusterNames"
            ],
            id="suspension",
        ),
    ],
)
def test_karmadas_spec_rules(spec: dict[str, Any], expected: list[str]) -> None:
    assert propagation_policy_problems(valid(**spec)) == expected


def test_an_update_may_not_change_the_scheduler_or_the_id() -> None:
    old = valid()
    new = copy.deepcopy(old)
    new["spec"]["schedulerName"] = "other"
    new["metadata"]["labels"][PP_ID] = "forged"
    assert propagation_update_problems(old, new) == [
        'spec.schedulerName: Invalid value: "other": the schedulerName should not be updated',
        f'metadata.labels[{PP_ID}]: Invalid value: "forged": label {PP_ID} is immutable, it can '
        "only be set by the system during creation",
    ]
    # A policy admitted before the webhook ran may get its first id.
    unlabelled = copy.deepcopy(old)
    del unlabelled["metadata"]["labels"][PP_ID]
    assert propagation_update_problems(unlabelled, old) == []


async def test_the_validator_refuses_with_every_problem_and_ratchets_updates() -> None:
    validator = PropagationPolicyValidator()
    bad = valid(preemption="Always")
    with pytest.raises(Refused) as refused:
        await validator.validate_create(bad)
    assert "preemption is Always" in str(refused.value)
    # An old problem does not block an update (the detector's finalizer), a new one does.
    touched = copy.deepcopy(bad)
    touched["metadata"]["finalizers"] = []
    assert await validator.validate_update(bad, touched) == []
    worse = copy.deepcopy(bad)
    worse["spec"]["placement"] = {"clusterAffinity": {}, "clusterAffinities": []}
    with pytest.raises(Refused, match="cannot co-exist"):
        await validator.validate_update(bad, worse)
    assert await validator.validate_delete(bad) == []


# --- placement rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("placement", "details"),
    [
        ({"clusterAffinity": {}, "clusterAffinities": []}, ["clusterAffinities cannot co-exist"]),
        (
            {"clusterAffinities": [{"affinityName": "a"}, {"affinityName": "a"}]},
            ["each affinity term in a policy must have a unique name"],
        ),
        ({"clusterAffinities": [{"affinityName": "-bad"}]}, ["the name part must consist"]),
        (
            {"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "name"}]}}},
            ["unsupported key 'name', must be provider, region, or zone"],
        ),
        (
            {"spreadConstraints": [{"spreadByField": "cluster", "spreadByLabel": "x"}]},
            ["spreadByLabel should not co-exist with spreadByField"],
        ),
        (
            {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 2}]},
            ["maxGroups lower than minGroups is not allowed"],
        ),
        (
            {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": -1}]},
            ["minGroups lower than 0 is not allowed"],
        ),
        (
            {"spreadConstraints": [{"spreadByField": "region"}]},
            ["the cluster spread constraint must be enabled"],
        ),
        (
            {
                "spreadConstraints": [
                    {"spreadByField": "cluster"},
                    {"spreadByField": "cluster"},
                    {"spreadByField": "cluster"},
                ]
            },
            ["multiple cluster spread constraints are not allowed"],
        ),
        ({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2}]}, []),
    ],
)
def test_placement_rules(placement: dict[str, Any], details: list[str]) -> None:
    problems = placement_problems(placement, "spec.placement")
    assert len(problems) == len(details), problems
    for problem, detail in zip(problems, details, strict=True):
        assert detail in problem


# --- OverridePolicy / ClusterOverridePolicy ---------------------------------------------------


def override(kind: str = "OverridePolicy", **spec: Any) -> dict[str, Any]:
    obj = policy(kind, **spec)
    obj["spec"].setdefault("overrideRules", [])
    return obj


async def test_an_override_policy_gets_its_namespace_in_its_selectors() -> None:
    obj = override()
    await OverridePolicyDefaulter().default(obj)
    assert obj["spec"]["resourceSelectors"] == [{**DEPLOYMENTS, "namespace": "team"}]
    cluster_wide = override("ClusterOverridePolicy")
    await OverridePolicyDefaulter().default(cluster_wide)
    assert cluster_wide["spec"]["resourceSelectors"] == [DEPLOYMENTS]


def rule(**overriders: Any) -> dict[str, Any]:
    return {"overriders": overriders}


@pytest.mark.parametrize(
    ("spec", "details"),
    [
        ({"overrideRules": [rule(labelsOverrider=[{"operator": "add", "value": {"a": "b"}}])]}, []),
        (
            {"overrideRules": [rule(labelsOverrider=[{"operator": "add", "value": {"a": "-"}}])]},
            ["spec.overrideRules[0].overriders.labelsOverrider[0].value[a]: Invalid value"],
        ),
        (
            {
                "overrideRules": [
                    rule(annotationsOverrider=[{"operator": "add", "value": {"a/": "b"}}])
                ]
            },
            ["spec.overrideRules[0].overriders.annotationsOverrider[0].value: Invalid value"],
        ),
        (
            {
                "overrideRules": [
                    rule(
                        imageOverrider=[
                            {
                                "component": "Tag",
                                "operator": "replace",
                                "value": "1",
                                "predicate": {"path": "spec"},
                            }
                        ]
                    )
                ]
            },
            ["predicate.path: Invalid value: \"spec\": JSON pointer 'spec' must start with '/'"],
        ),
        (
            {
                "overrideRules": [
                    rule(
                        fieldOverrider=[
                            {
                                "fieldPath": "/data/x",
                                "json": [{"subPath": "/a", "operator": "add"}],
                                "yaml": [{"subPath": "b", "operator": "remove", "value": 1}],
                            }
                        ]
                    )
                ]
            },
            [
                "FieldOverrider has both YAML and JSON set",
                "json[0].value: Invalid value: null: value is required for add or replace",
                "yaml[0].subPath: Invalid value",
                "yaml[0].value: Invalid value: 1: value is not allowed for remove operation",
            ],
        ),
        (
            {"overrideRules": [rule(plaintext=[{"path": "x", "operator": "remove"}])]},
            ["plaintext[0].path: Invalid value"],
        ),
        (
            {"targetCluster": {"clusterNames": ["a"]}, "overriders": {"plaintext": []}},
            ["overrideRules and targetCluster can't co-exist"],
        ),
        (
            {"overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]}},
            ["overrideRules and overriders can't co-exist"],
        ),
        (
            {"overrideRules": [{"targetCluster": {"labelSelector": {"matchLabels": {"a": "-"}}}}]},
            ["spec.overrideRules[0].targetCluster.labelSelector.matchLabels[a]: Invalid value"],
        ),
        (
            {"overrideRules": [rule(plaintext="replace")]},
            [
                'spec.overrideRules[0].overriders.plaintext: Invalid value: "string": must be of '
                "type array"
            ],
        ),
    ],
)
def test_override_rules(spec: dict[str, Any], details: list[str]) -> None:
    problems = override_policy_problems(override(**spec))
    assert len(problems) == len(details), problems
    for problem, detail in zip(problems, details, strict=True):
        assert detail in problem


async def test_the_override_validator_refuses_and_ratchets() -> None:
    validator = OverridePolicyValidator()
    bad = override(overrideRules=[rule(plaintext=[{"path": "x", "operator": "remove"}])])
    with pytest.raises(Refused, match="must start with"):
        await validator.validate_create(bad)
    assert await validator.validate_update(bad, copy.deepcopy(bad)) == []


# --- bindings and Works ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "label"),
    [
        ("ResourceBinding", "resourcebinding.karmada.io/permanent-id"),
        ("ClusterResourceBinding", "clusterresourcebinding.karmada.io/permanent-id"),
        ("Work", "work.karmada.io/permanent-id"),
    ],
)
async def test_bindings_and_works_get_a_permanent_id_once(kind: str, label: str) -> None:
    obj: dict[str, Any] = {"kind": kind, "metadata": {"name": "x"}}
    await PermanentIdDefaulter(new_id=lambda: "first").default(obj)
    await PermanentIdDefaulter(new_id=lambda: "second").default(obj)
    assert obj["metadata"]["labels"] == {label: "first"}


def test_a_permanent_id_for_an_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no permanent id for kind 'Pod'"):
        default_permanent_id({"kind": "Pod"}, lambda: "x")


# --- Clusters --------------------------------------------------------------------------------


def cluster(name: str = "member1", **spec: Any) -> dict[str, Any]:
    spec.setdefault("apiEndpoint", "https://member1.example:6443")
    spec.setdefault("secretRef", {"namespace": "karmada-cluster", "name": "member1"})
    return {"kind": "Cluster", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (cluster(), []),
        (cluster("x" * 49), ["metadata.name: Invalid value: ", "no more than 48 characters"]),
        (cluster("Member_1"), ["a lowercase RFC 1123 label"]),
        (cluster(apiEndpoint="http://m:80"), ["InsecureEndpoint: spec.apiEndpoint 'http://m:80'"]),
        (cluster(apiEndpoint="https://u:p@m"), ["InvalidEndpoint: spec.apiEndpoint carries user"]),
        (cluster(insecureSkipTLSVerification=True), ["InsecureEndpoint: insecureSkipTLS"]),
        (
            cluster(secretRef={"namespace": "default", "name": "s"}),
            ["SecretRefNotAllowed: spec.secretRef names Secret default/s"],
        ),
        (cluster(proxyURL="ftp://proxy"), ["unsupported scheme 'ftp'"]),
        (cluster(syncMode="Pull", apiEndpoint="http://agent-side"), []),
    ],
)
def test_cluster_rules(obj: dict[str, Any], expected: list[str]) -> None:
    problems = cluster_problems(obj, MemberOptions())
    assert len(problems) == (1 if expected else 0), problems
    for part in expected:
        assert part in problems[0]


async def test_the_cluster_validator_follows_the_controller_managers_options() -> None:
    plain = cluster(apiEndpoint="http://member1:6443")
    with pytest.raises(Refused, match="--allow-insecure-member-endpoints"):
        await ClusterValidator().validate_create(plain)
    allowing = ClusterValidator(MemberOptions(allow_insecure_endpoints=True))
    assert await allowing.validate_create(plain) == []
    elsewhere = cluster(secretRef={"namespace": "members", "name": "member1"})
    assert (
        await ClusterValidator(MemberOptions(cluster_namespace="members")).validate_create(
            elsewhere
        )
        == []
    )
    # A Cluster from before the webhook keeps getting its finalizer; it may not get worse.
    touched = copy.deepcopy(plain)
    touched["metadata"]["finalizers"] = ["karmada.io/cluster-controller"]
    assert await ClusterValidator().validate_update(plain, touched) == []
    with pytest.raises(Refused, match="InvalidEndpoint"):
        await ClusterValidator().validate_update(plain, cluster(apiEndpoint="https://a?b"))


# --- interpreter customizations and webhooks -------------------------------------------------


def customization(name: str, **rules: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": name},
        "spec": {
            "target": {"apiVersion": "example.io/v1", "kind": "Thing"},
            "customizations": {field: {"luaScript": script} for field, script in rules.items()},
        },
    }


HEALTH = "function InterpretHealth(observed) return true end"
DEPENDENCIES = "function GetDependencies(desired) return {} end"


def test_two_customizations_may_not_define_one_operation_for_one_kind() -> None:
    mine = customization("mine", healthInterpretation=HEALTH, dependencyInterpretation=DEPENDENCIES)
    theirs = customization(
        "theirs", healthInterpretation=HEALTH, dependencyInterpretation=DEPENDENCIES
    )
    assert conflict_problems(mine, [theirs, mine]) == [
        "spec.customizations.healthInterpretation: conflicting with "
        "InterpreterOperation(InterpretHealth) of existing ResourceInterpreterCustomization(theirs)"
    ]
    other_kind = copy.deepcopy(theirs)
    other_kind["spec"]["target"]["kind"] = "Other"
    assert conflict_problems(mine, [other_kind]) == []


async def test_a_customization_whose_lua_does_not_compile_is_refused() -> None:
    async def none() -> list[dict[str, Any]]:
        return []

    validator = CustomizationValidator(none)
    assert await validator.validate_create(customization("ok", healthInterpretation=HEALTH)) == []
    broken = customization("broken", healthInterpretation="function InterpretHealth(")
    with pytest.raises(Refused, match="broken/healthInterpretation"):
        await validator.validate_create(broken)
    with pytest.raises(Refused, match="must be a non-empty string"):
        await validator.validate_create(customization("empty", healthInterpretation=" "))


def test_interpreter_webhooks_the_interpreter_could_not_call_are_refused() -> None:
    hook = {
        "name": "a.example.io",
        "clientConfig": {"url": "https://hook.example:8443/interpret"},
        "interpreterContextVersions": ["v1alpha1"],
        "rules": [],
    }
    configuration = {"metadata": {"name": "c"}, "webhooks": [hook]}
    assert interpreter_webhook_problems(configuration) == []
    plain = {**hook, "clientConfig": {"url": "http://hook.example"}}
    configuration["webhooks"] = [hook, plain]
    assert interpreter_webhook_problems(configuration) == [
        "webhooks[1]: clientConfig.url must be https://host[:port][/path], got "
        "'http://hook.example'",
        'webhooks[1].name: Duplicate value: "a.example.io"',
    ]


def test_new_problems_are_those_an_update_brings() -> None:
    assert new_problems(["a", "b"], ["b", "c"]) == ["c"]
