"""The native interpreter answers every operation for Kubernetes kinds like Karmada's defaults.

Each rule is checked on a realistic object and on objects with missing, null or mistyped fields,
which must read as absent (never a crash). Inputs are never changed.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.interpreter import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    InterpreterError,
    NativeBackend,
    NodeClaim,
    NotSupported,
    Operation,
    ReplicaRequirements,
)
from controllers.interpreter.native import (
    CRON_JOB,
    DAEMON_SET,
    DEPLOYMENT,
    HORIZONTAL_POD_AUTOSCALER,
    INGRESS,
    JOB,
    NATIVE_KINDS,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    POD_DISRUPTION_BUDGET,
    REPLICA_SET,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    STATEFUL_SET,
)
from reconcile import GVK

pytestmark = pytest.mark.asyncio(loop_scope="session")

native = NativeBackend()
Obj = dict[str, Any]


def obj(gvk: GVK, *, spec: Any = None, status: Any = None, **metadata: Any) -> Obj:
    """An object of kind ``gvk`` named ``x`` in namespace ``ns`` (metadata overrides)."""
    out: Obj = {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": {"name": "x", "namespace": "ns", **metadata},
    }
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


POD_SPEC: Obj = {
    "containers": [
        {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
        {"name": "b", "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}}},
    ],
    "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}],
    "overhead": {"memory": "512Mi"},
    "nodeSelector": {"disk": "ssd"},
    "tolerations": [{"key": "gpu", "operator": "Exists"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]
            }
        }
    },
    "priorityClassName": "high",
}

EXPECTED_REQUIREMENTS = ReplicaRequirements(
    node_claim=NodeClaim(
        node_selector={"disk": "ssd"},
        tolerations=[{"key": "gpu", "operator": "Exists"}],
        hard_node_affinity={
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]
        },
    ),
    # cpu: max(250m + 500m, init 2) = 2; memory: max(1Gi, 64Mi) + overhead 512Mi = 1536Mi
    resource_request={"cpu": "2", "memory": "1536Mi", "nvidia.com/gpu": "1"},
    namespace="ns",
    priority_class_name="high",
)


# --- InterpretReplica ---------------------------------------------------------------------------


@pytest.mark.parametrize("gvk", [DEPLOYMENT, REPLICA_SET, STATEFUL_SET], ids=lambda g: g.kind)
async def test_workload_replicas_come_with_the_pod_templates_requirements(gvk: GVK) -> None:
    workload = obj(gvk, spec={"replicas": 3, "template": {"spec": POD_SPEC}})
    before = copy.deepcopy(workload)
    assert await native.get_replicas(workload) == (3, EXPECTED_REQUIREMENTS)
    assert workload == before


async def test_requests_default_to_limits_and_are_summed_per_container() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "2"}}},
            {"name": "c", "resources": {"requests": {"ephemeral-storage": "1Gi", "storage": "5"}}},
        ]
    }
    _, requirements = await native.get_replicas(obj(DEPLOYMENT, spec={"template": {"spec": spec}}))
    assert requirements is not None
    # "storage" is not schedulable and is left out, like Karmada does.
    assert requirements.resource_request == {
        "cpu": "1100m",
        "ephemeral-storage": "1Gi",
        "memory": "1Gi",
    }
    assert requirements.node_claim is None


@pytest.mark.parametrize(
    "spec",
    [
        None,
        {},
        {"replicas": None},
        {"replicas": "three", "template": "nope"},
        {"template": {"spec": {"containers": None, "tolerations": "x", "nodeSelector": []}}},
        {"template": {"spec": {"containers": [None, {"resources": None}, {"resources": {}}]}}},
    ],
    ids=["no-spec", "empty-spec", "null-replicas", "mistyped", "mistyped-pod", "empty-containers"],
)
async def test_workload_without_replicas_or_template_reads_as_zero_without_requirements(
    spec: Any,
) -> None:
    assert await native.get_replicas(obj(DEPLOYMENT, spec=spec)) == (0, None)


async def test_an_unparsable_quantity_is_a_clear_error() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}
    with pytest.raises(InterpreterError, match="resource cpu: quantity 'lots'"):
        await native.get_replicas(obj(DEPLOYMENT, spec={"template": {"spec": spec}}))


@pytest.mark.parametrize(
    ("spec", "replicas"),
    [
        ({"parallelism": 5, "completions": 3}, 3),
        ({"parallelism": 2, "completions": 10}, 2),
        ({"parallelism": 4}, 4),
        ({"completions": 4}, 0),
        ({}, 0),
    ],
    ids=["completions-cap", "parallelism", "no-completions", "no-parallelism", "empty"],
)
async def test_job_replicas_are_parallelism_capped_by_completions(spec: Obj, replicas: int) -> None:
    assert (await native.get_replicas(obj(JOB, spec=spec)))[0] == replicas


async def test_pod_is_one_replica_with_its_own_requirements() -> None:
    assert await native.get_replicas(obj(POD, spec=POD_SPEC)) == (1, EXPECTED_REQUIREMENTS)
    assert await native.get_replicas(obj(POD)) == (1, None)


async def test_kinds_without_replicas_are_not_supported() -> None:
    with pytest.raises(NotSupported, match="InterpretReplica for v1 Service"):
        await native.get_replicas(obj(SERVICE))


# --- ReviseReplica ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gvk", "field"),
    [(DEPLOYMENT, "replicas"), (REPLICA_SET, "replicas"), (STATEFUL_SET, "replicas"),
     (JOB, "parallelism")],
    ids=lambda v: v.kind if isinstance(v, GVK) else v,
)  # fmt: skip
async def test_revise_sets_the_replica_field_on_a_copy(gvk: GVK, field: str) -> None:
    workload = obj(gvk, spec={field: 3, "template": {}})
    revised = await native.revise_replica(workload, 7)
    assert revised["spec"][field] == 7
    assert workload["spec"][field] == 3


@pytest.mark.parametrize("spec", [None, {}, "mistyped"], ids=["no-spec", "no-field", "mistyped"])
async def test_revise_leaves_a_template_without_replicas_alone(spec: Any) -> None:
    workload = obj(DEPLOYMENT, spec=spec)
    assert await native.revise_replica(workload, 7) == workload


async def test_revise_of_a_kind_without_replicas_is_not_supported() -> None:
    with pytest.raises(NotSupported):
        await native.revise_replica(obj(POD, spec={}), 2)


# --- Retain -------------------------------------------------------------------------------------

RETAIN_CASES: list[tuple[str, Obj, Obj, Obj]] = [
    (
        "deployment-hpa-label",
        obj(DEPLOYMENT, spec={"replicas": 2},
            labels={"resourcetemplate.karmada.io/retain-replicas": "true"}),
        obj(DEPLOYMENT, spec={"replicas": 5}),
        {"spec": {"replicas": 5}},
    ),
    (
        "deployment-no-label",
        obj(DEPLOYMENT, spec={"replicas": 2}),
        obj(DEPLOYMENT, spec={"replicas": 5}),
        {"spec": {"replicas": 2}},
    ),
    (
        "statefulset-label-observed-without-replicas",
        obj(STATEFUL_SET, spec={"replicas": 2},
            labels={"resourcetemplate.karmada.io/retain-replicas": "true"}),
        obj(STATEFUL_SET),
        {"spec": {"replicas": 2}},
    ),
    (
        "service-ips",
        obj(SERVICE, spec={"type": "LoadBalancer", "ports": [{"port": 80}]}),
        obj(SERVICE, spec={"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"],
                           "healthCheckNodePort": 31000}),
        {"spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "clusterIP": "10.0.0.7",
                  "clusterIPs": ["10.0.0.7"], "healthCheckNodePort": 31000}},
    ),
    (
        "service-nothing-allocated",
        obj(SERVICE, spec={"clusterIP": "None"}),
        obj(SERVICE, spec={"clusterIP": "", "healthCheckNodePort": 0}),
        {"spec": {"clusterIP": "None"}},
    ),
    (
        "service-account-secrets",
        {**obj(SERVICE_ACCOUNT), "secrets": [{"name": "mine"}]},
        {**obj(SERVICE_ACCOUNT), "secrets": [{"name": "mine"}, {"name": "token-abc"}]},
        {"secrets": [{"name": "mine"}, {"name": "token-abc"}]},
    ),
    (
        "service-account-none",
        obj(SERVICE_ACCOUNT),
        {**obj(SERVICE_ACCOUNT), "secrets": None},
        {},
    ),
    (
        "pvc-volume-name",
        obj(PERSISTENT_VOLUME_CLAIM, spec={"resources": {}}),
        obj(PERSISTENT_VOLUME_CLAIM, spec={"volumeName": "pv-1"}),
        {"spec": {"resources": {}, "volumeName": "pv-1"}},
    ),
    (
        "pv-claim-ref",
        obj(PERSISTENT_VOLUME, spec={"capacity": {"storage": "1Gi"}}),
        obj(PERSISTENT_VOLUME, spec={"claimRef": {"name": "c", "namespace": "ns"}}),
        {"spec": {"capacity": {"storage": "1Gi"}, "claimRef": {"name": "c", "namespace": "ns"}}},
    ),
    (
        "pod-scheduled",
        obj(POD, spec={"containers": [{"name": "a", "image": "v2"}, {"name": "b"}]}),
        obj(POD, spec={"nodeName": "n1", "serviceAccountName": "default",
                       "volumes": [{"name": "token"}],
                       "containers": [{"name": "a", "volumeMounts": [{"name": "token"}]}]}),
        {"spec": {"nodeName": "n1", "serviceAccountName": "default",
                  "volumes": [{"name": "token"}],
                  "containers": [{"name": "a", "image": "v2", "volumeMounts": [{"name": "token"}]},
                                 {"name": "b"}]}},
    ),
    (
        "job-selector",
        obj(JOB, spec={"template": {"spec": {}}}),
        obj(JOB, spec={"selector": {"matchLabels": {"controller-uid": "u1"}},
                       "template": {"metadata": {"labels": {"controller-uid": "u1"}}}}),
        {"spec": {"selector": {"matchLabels": {"controller-uid": "u1"}},
                  "template": {"spec": {}, "metadata": {"labels": {"controller-uid": "u1"}}}}},
    ),
    (
        "secret-service-account-token",
        {**obj(SECRET), "type": "kubernetes.io/service-account-token"},
        {**obj(SECRET, annotations={"kubernetes.io/service-account.uid": "uid-9"}),
         "type": "kubernetes.io/service-account-token", "data": {"token": "dG9r"}},
        {"data": {"token": "dG9r"},
         "metadata": {"annotations": {"kubernetes.io/service-account.uid": "uid-9"}}},
    ),
    (
        "secret-opaque",
        {**obj(SECRET), "type": "Opaque", "data": {"a": "b"}},
        {**obj(SECRET), "type": "Opaque", "data": {"a": "changed"}},
        {"data": {"a": "b"}},
    ),
]  # fmt: skip


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    return bool(expected == actual)


@pytest.mark.parametrize(
    ("desired", "observed", "expected"),
    [case[1:] for case in RETAIN_CASES],
    ids=[case[0] for case in RETAIN_CASES],
)
async def test_retain_keeps_what_the_member_owns(
    desired: Obj, observed: Obj, expected: Obj
) -> None:
    before = copy.deepcopy((desired, observed))
    retained = await native.retain(desired, observed)
    assert _subset(expected, retained), retained
    assert (desired, observed) == before


async def test_retained_pod_drops_what_the_member_does_not_have() -> None:
    desired = obj(POD, spec={"nodeName": "wanted", "volumes": [{"name": "v"}]})
    retained = await native.retain(desired, obj(POD, spec=None))
    assert "nodeName" not in retained["spec"]
    assert "volumes" not in retained["spec"]


@pytest.mark.parametrize("gvk", sorted(
    {DEPLOYMENT, STATEFUL_SET, SERVICE, SERVICE_ACCOUNT, PERSISTENT_VOLUME_CLAIM,
     PERSISTENT_VOLUME, POD, JOB, SECRET}, key=str), ids=lambda g: g.kind)  # fmt: skip
async def test_retain_against_an_empty_observed_object_changes_nothing_required(gvk: GVK) -> None:
    desired = obj(gvk, spec={"replicas": 1})
    retained = await native.retain(desired, {})
    assert retained["metadata"] == desired["metadata"]


async def test_retain_of_a_kind_without_rule_is_not_supported() -> None:
    with pytest.raises(NotSupported, match="Retain"):
        await native.retain(obj(INGRESS), obj(INGRESS))


# --- InterpretHealth ----------------------------------------------------------------------------

ROLLED_OUT = {"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3}
HEALTH_CASES: list[tuple[str, Obj, bool]] = [
    ("deployment-rolled-out", obj(DEPLOYMENT, spec={"replicas": 3}, status=ROLLED_OUT,
                                  generation=2), True),
    ("deployment-old-generation", obj(DEPLOYMENT, spec={"replicas": 3}, status=ROLLED_OUT,
                                      generation=3), False),
    ("deployment-updating", obj(DEPLOYMENT, spec={"replicas": 4}, status=ROLLED_OUT,
                                generation=2), False),
    ("deployment-unavailable", obj(DEPLOYMENT, spec={"replicas": 3}, generation=2,
                                   status={**ROLLED_OUT, "availableReplicas": 1}), False),
    ("deployment-no-status", obj(DEPLOYMENT), True),
    ("statefulset-rolled-out", obj(STATEFUL_SET, spec={"replicas": 3}, status=ROLLED_OUT,
                                   generation=2), True),
    ("replicaset-available", obj(REPLICA_SET, spec={"replicas": 2}, generation=1,
                                 status={"observedGeneration": 1, "availableReplicas": 2}), True),
    ("replicaset-short", obj(REPLICA_SET, spec={"replicas": 2}, generation=1,
                             status={"observedGeneration": 1, "availableReplicas": 1}), False),
    ("daemonset-rolled-out", obj(DAEMON_SET, generation=1, status={
        "observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2,
        "numberAvailable": 2}), True),
    ("daemonset-updating", obj(DAEMON_SET, generation=1, status={
        "observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 1,
        "numberAvailable": 1}), False),
    ("service-cluster-ip", obj(SERVICE, spec={"type": "ClusterIP"}), True),
    ("service-no-spec", obj(SERVICE), True),
    ("service-lb-pending", obj(SERVICE, spec={"type": "LoadBalancer"}, status={}), False),
    ("service-lb-address", obj(SERVICE, spec={"type": "LoadBalancer"},
                               status={"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}), True),
    ("ingress-address", obj(INGRESS, status={
        "loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}), True),
    ("ingress-pending", obj(INGRESS, status={"loadBalancer": {"ingress": [{}]}}), False),
    ("pvc-bound", obj(PERSISTENT_VOLUME_CLAIM, status={"phase": "Bound"}), True),
    ("pvc-pending", obj(PERSISTENT_VOLUME_CLAIM, status={"phase": "Pending"}), False),
    ("pvc-no-status", obj(PERSISTENT_VOLUME_CLAIM), False),
    ("pod-ready", obj(POD, status={"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}), True),
    ("pod-running-not-ready", obj(POD, status={"phase": "Running", "conditions": [
        {"type": "Ready", "status": "False"}]}), False),
    ("pod-succeeded", obj(POD, status={"phase": "Succeeded"}), True),
    ("pod-conditions-mistyped", obj(POD, status={"phase": "Running", "conditions": "x"}), False),
    ("pdb-healthy", obj(POD_DISRUPTION_BUDGET, status={"currentHealthy": 3,
                                                       "desiredHealthy": 2}), True),
    ("pdb-short", obj(POD_DISRUPTION_BUDGET, status={"currentHealthy": 1,
                                                     "desiredHealthy": 2}), False),
    ("job", obj(JOB), True),
    ("cronjob", obj(CRON_JOB), True),
    ("pv", obj(PERSISTENT_VOLUME), True),
    ("service-account", obj(SERVICE_ACCOUNT), True),
    ("secret", obj(SECRET), True),
    ("hpa", obj(HORIZONTAL_POD_AUTOSCALER), True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("member", "healthy"),
    [case[1:] for case in HEALTH_CASES],
    ids=[case[0] for case in HEALTH_CASES],
)
async def test_health(member: Obj, healthy: bool) -> None:
    assert await native.interpret_health(member) is healthy


async def test_health_of_an_unknown_kind_is_not_supported() -> None:
    with pytest.raises(NotSupported, match="InterpretHealth"):
        await native.interpret_health(obj(GVK("example.io", "v1", "Thing")))


# --- InterpretStatus ----------------------------------------------------------------------------

TEMPLATE_GENERATION = {"resourcetemplate.karmada.io/generation": "7"}
REFLECT_CASES: list[tuple[str, Obj, Obj | None]] = [
    (
        "deployment",
        obj(DEPLOYMENT, generation=4, annotations=TEMPLATE_GENERATION, status={
            "replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2,
            "unavailableReplicas": 1, "observedGeneration": 4,
            "conditions": [{"type": "Available"}]}),
        {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2,
         "unavailableReplicas": 1, "observedGeneration": 4, "generation": 4,
         "resourceTemplateGeneration": 7},
    ),
    (
        "deployment-zero-counts-left-out",
        obj(DEPLOYMENT, generation=1, status={"replicas": 0, "observedGeneration": 1}),
        {"observedGeneration": 1, "generation": 1},
    ),
    ("deployment-no-status", obj(DEPLOYMENT, generation=1), None),
    (
        "deployment-bad-annotation",
        obj(DEPLOYMENT, generation=2, annotations={
            "resourcetemplate.karmada.io/generation": "x"}, status={"replicas": 1}),
        {"replicas": 1, "generation": 2},
    ),
    (
        "statefulset-required-fields",
        obj(STATEFUL_SET, generation=2, annotations=TEMPLATE_GENERATION, status={
            "readyReplicas": 1, "observedGeneration": 2}),
        {"replicas": 0, "availableReplicas": 0, "readyReplicas": 1, "observedGeneration": 2,
         "generation": 2, "resourceTemplateGeneration": 7},
    ),
    (
        "daemonset",
        obj(DAEMON_SET, generation=1, status={"numberReady": 2, "desiredNumberScheduled": 2}),
        {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
         "numberReady": 2, "generation": 1},
    ),
    (
        "replicaset",
        obj(REPLICA_SET, status={"replicas": 2, "fullyLabeledReplicas": 2}),
        {"replicas": 2, "fullyLabeledReplicas": 2},
    ),
    (
        "service-lb",
        obj(SERVICE, spec={"type": "LoadBalancer"}, status={
            "loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}, "conditions": []}),
        {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}},
    ),
    ("service-lb-empty", obj(SERVICE, spec={"type": "LoadBalancer"}, status={}),
     {"loadBalancer": {}}),
    ("service-cluster-ip", obj(SERVICE, spec={"type": "ClusterIP"}, status={}), None),
    ("service-no-type", obj(SERVICE, spec={}, status={}), None),
    (
        "job",
        obj(JOB, status={"active": 1, "succeeded": 0, "startTime": "2024-01-01T00:00:00Z",
                         "conditions": [{"type": "Complete"}], "ready": 1}),
        {"active": 1, "startTime": "2024-01-01T00:00:00Z", "conditions": [{"type": "Complete"}]},
    ),
    (
        "pdb",
        obj(POD_DISRUPTION_BUDGET, status={"currentHealthy": 2, "desiredHealthy": 1,
                                           "observedGeneration": 3}),
        {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 0},
    ),
    (
        "hpa",
        obj(HORIZONTAL_POD_AUTOSCALER, status={"currentReplicas": 2, "desiredReplicas": 4,
                                                "conditions": []}),
        {"currentReplicas": 2, "desiredReplicas": 4},
    ),
    ("ingress-whole-status", obj(INGRESS, status={"loadBalancer": {}}), {"loadBalancer": {}}),
    ("pod-whole-status", obj(POD, status={"phase": "Running"}), {"phase": "Running"}),
    ("custom-kind-whole-status", obj(GVK("example.io", "v1", "Thing"), status={"a": [1]}),
     {"a": [1]}),
    ("custom-kind-no-status", obj(GVK("example.io", "v1", "Thing")), None),
    ("status-mistyped", obj(DEPLOYMENT, status="broken"), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("member", "expected"),
    [case[1:] for case in REFLECT_CASES],
    ids=[case[0] for case in REFLECT_CASES],
)
async def test_reflect_status(member: Obj, expected: Obj | None) -> None:
    assert await native.reflect_status(member) == expected


async def test_reflected_status_is_a_copy() -> None:
    member = obj(POD, status={"conditions": [{"type": "Ready"}]})
    status = await native.reflect_status(member)
    assert status is not None
    status["conditions"].append("changed")
    assert member["status"]["conditions"] == [{"type": "Ready"}]


# --- AggregateStatus ----------------------------------------------------------------------------


def item(cluster: str, status: Obj | None, **kwargs: Any) -> AggregatedStatusItem:
    return AggregatedStatusItem(cluster, status, applied=status is not None, **kwargs)


def member_deployment(replicas: int, *, generation: int = 1, observed: int = 1,
                      template: int = 5) -> Obj:  # fmt: skip
    return {
        "replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
        "availableReplicas": replicas, "observedGeneration": observed, "generation": generation,
        "resourceTemplateGeneration": template,
    }  # fmt: skip


TEMPLATE = obj(DEPLOYMENT, generation=5, spec={"replicas": 6},
               status={"observedGeneration": 4, "conditions": [{"type": "Available"}]})  # fmt: skip


async def test_deployment_status_sums_members_and_observes_the_generation_when_all_are_current(
) -> None:  # fmt: skip
    items = [item("m1", member_deployment(2)), item("m2", member_deployment(4))]
    aggregated = await native.aggregate_status(TEMPLATE, items)
    assert aggregated["status"] == {
        "observedGeneration": 5, "replicas": 6, "readyReplicas": 6, "updatedReplicas": 6,
        "availableReplicas": 6, "conditions": [{"type": "Available"}],
    }  # fmt: skip
    assert TEMPLATE["status"]["observedGeneration"] == 4


@pytest.mark.parametrize(
    "stale",
    [
        member_deployment(2, template=4),  # applied from the previous template generation
        member_deployment(2, generation=3, observed=2),  # member controller lags its generation
        None,  # member has not reported yet
    ],
    ids=["old-template", "member-controller-behind", "no-status"],
)
async def test_deployment_keeps_its_observed_generation_while_a_member_is_stale(
    stale: Obj | None,
) -> None:
    items = [item("m1", member_deployment(2)), item("m2", stale)]
    aggregated = await native.aggregate_status(TEMPLATE, items)
    assert aggregated["status"]["observedGeneration"] == 4
    assert aggregated["status"]["replicas"] == 2 + (2 if stale else 0)


async def test_deployment_with_no_members_observes_its_generation_with_zero_counts() -> None:
    aggregated = await native.aggregate_status(TEMPLATE, [])
    assert aggregated["status"] == {"observedGeneration": 5, "conditions": [{"type": "Available"}]}


async def test_deployment_without_status_or_generation_aggregates_from_scratch() -> None:
    template = obj(DEPLOYMENT, spec={})
    aggregated = await native.aggregate_status(template, [item("m1", {"replicas": "x"})])
    assert aggregated["status"] == {}


async def test_statefulset_daemonset_replicaset_keep_required_zero_counts() -> None:
    members = [item("m1", {"replicas": 1, "generation": 1, "observedGeneration": 1,
                           "resourceTemplateGeneration": 1})]  # fmt: skip
    sts = await native.aggregate_status(obj(STATEFUL_SET, generation=1), members)
    assert sts["status"] == {"replicas": 1, "availableReplicas": 0, "observedGeneration": 1}
    ds = await native.aggregate_status(
        obj(DAEMON_SET, generation=2),
        [item("m1", {"numberReady": 2, "resourceTemplateGeneration": 2}), item("m2", None)],
    )
    assert ds["status"] == {
        "currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
        "numberReady": 2,
    }  # fmt: skip
    rs = await native.aggregate_status(obj(REPLICA_SET), [item("m1", {"fullyLabeledReplicas": 3})])
    assert rs["status"] == {"replicas": 0, "fullyLabeledReplicas": 3}  # generation 0: omitted


async def test_load_balancer_ingress_is_collected_with_the_cluster_as_default_hostname() -> None:
    service = obj(SERVICE, spec={"type": "LoadBalancer"})
    items = [
        item("m1", {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}),
        item("m2", {"loadBalancer": {"ingress": [{"ip": "2.2.2.2", "hostname": "lb"}]}}),
        item("m3", None),
    ]
    aggregated = await native.aggregate_status(service, items)
    assert aggregated["status"] == {
        "loadBalancer": {"ingress": [{"ip": "1.1.1.1", "hostname": "m1"},
                                     {"ip": "2.2.2.2", "hostname": "lb"}]}
    }  # fmt: skip
    ingress = await native.aggregate_status(obj(INGRESS), [])
    assert ingress["status"] == {"loadBalancer": {}}
    cluster_ip = obj(SERVICE, spec={"type": "ClusterIP"}, status={"x": 1})
    assert await native.aggregate_status(cluster_ip, items) == cluster_ip


async def test_job_status_sums_counts_and_reports_failed_members() -> None:
    items = [
        item("m1", {"succeeded": 2, "startTime": "2024-01-02T00:00:00Z",
                    "completionTime": "2024-01-03T00:00:00Z",
                    "conditions": [{"type": "Complete", "status": "True"}]}),
        item("m2", {"failed": 1, "active": 1, "startTime": "2024-01-01T00:00:00Z",
                    "conditions": [{"type": "Failed", "status": "True"}]}),
    ]  # fmt: skip
    status = (await native.aggregate_status(obj(JOB), items))["status"]
    assert status["succeeded"] == 2
    assert status["failed"] == 1
    assert status["active"] == 1
    assert status["startTime"] == "2024-01-01T00:00:00Z"
    assert "completionTime" not in status  # m2 has not completed
    assert [c["type"] for c in status["conditions"]] == ["Failed"]
    assert status["conditions"][0]["message"] == "Job executed failed in member clusters m2"


async def test_job_completes_when_every_member_completed_and_keeps_condition_times() -> None:
    done = {"succeeded": 1, "completionTime": "2024-01-03T00:00:00Z",
            "conditions": [{"type": "Complete", "status": "True"}]}  # fmt: skip
    items = [item("m1", done), item("m2", {**done, "completionTime": "2024-01-04T00:00:00Z"})]
    first = (await native.aggregate_status(obj(JOB), items))["status"]
    assert first["completionTime"] == "2024-01-04T00:00:00Z"
    assert [c["type"] for c in first["conditions"]] == ["Complete"]
    running = obj(JOB, status={"conditions": [{**first["conditions"][0], "status": "False"}]})
    again = (await native.aggregate_status(running, items))["status"]
    assert again["conditions"][0]["status"] == "True"


async def test_finished_job_status_is_final_and_no_members_never_complete() -> None:
    finished = obj(JOB, status={"conditions": [{"type": "Failed", "status": "True"}]})
    assert await native.aggregate_status(finished, [item("m1", {"active": 3})]) == finished
    assert (await native.aggregate_status(obj(JOB), []))["status"] == {}


async def test_cron_job_status_merges_active_jobs_and_latest_times() -> None:
    items = [
        item("m1", {"active": [{"name": "a"}], "lastScheduleTime": "2024-01-01T00:00:00Z"}),
        item("m2", {"active": [{"name": "b"}], "lastScheduleTime": "2024-01-02T00:00:00Z",
                    "lastSuccessfulTime": "2024-01-01T00:00:00Z"}),
        item("m3", None),
    ]  # fmt: skip
    status = (await native.aggregate_status(obj(CRON_JOB, status={"active": []}), items))["status"]
    assert status == {
        "active": [{"name": "a"}, {"name": "b"}],
        "lastScheduleTime": "2024-01-02T00:00:00Z",
        "lastSuccessfulTime": "2024-01-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        (["Running", "Succeeded"], "Running"),
        (["Running", None], "Pending"),
        (["Failed", "Pending"], "Failed"),
        (["Succeeded", "Succeeded"], "Succeeded"),
    ],
    ids=["running", "unreported-is-pending", "failed-wins", "succeeded"],
)
async def test_pod_phase_is_the_worst_member_phase(phases: list[str | None], expected: str) -> None:
    items = [
        item(f"m{i}", None if phase is None else {
            "phase": phase, "containerStatuses": [{"name": "c", "ready": True, "state": {}}]})
        for i, phase in enumerate(phases)
    ]  # fmt: skip
    status = (await native.aggregate_status(obj(POD), items))["status"]
    assert status["phase"] == expected
    assert status["containerStatuses"][0] == {"ready": True, "state": {}}


async def test_pod_without_members_keeps_its_status() -> None:
    pod = obj(POD, status={"phase": "Running"})
    assert await native.aggregate_status(pod, []) == pod


async def test_volume_and_claim_phases() -> None:
    pv = await native.aggregate_status(
        obj(PERSISTENT_VOLUME), [item("a", {"phase": "Bound"}), item("b", {"phase": "Available"})]
    )
    assert pv["status"] == {"phase": "Available"}
    claim = await native.aggregate_status(
        obj(PERSISTENT_VOLUME_CLAIM),
        [item("a", {"phase": "Pending"}), item("b", {"phase": "Lost"}), item("c", None)],
    )
    assert claim["status"] == {"phase": "Lost"}
    bound = await native.aggregate_status(obj(PERSISTENT_VOLUME_CLAIM), [])
    assert bound["status"] == {"phase": "Bound"}


async def test_budget_and_autoscaler_sum_members() -> None:
    items = [
        item("m1", {"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2,
                    "disruptionsAllowed": 1, "disruptedPods": {"p": "2024-01-01T00:00:00Z"}}),
        item("m2", {"currentHealthy": 1, "disruptedPods": "mistyped"}),
    ]  # fmt: skip
    pdb = (await native.aggregate_status(obj(POD_DISRUPTION_BUDGET), items))["status"]
    assert pdb == {
        "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 1, "expectedPods": 2,
        "disruptedPods": {"m1/p": "2024-01-01T00:00:00Z"},
    }  # fmt: skip
    hpa_items = [item("m1", {"currentReplicas": 2, "desiredReplicas": 3}), item("m2", None)]
    hpa = await native.aggregate_status(obj(HORIZONTAL_POD_AUTOSCALER), hpa_items)
    assert hpa["status"] == {"desiredReplicas": 3, "currentReplicas": 2}


async def test_aggregate_of_kinds_without_status_is_not_supported() -> None:
    with pytest.raises(NotSupported):
        await native.aggregate_status(obj(SECRET), [])


# --- InterpretDependency ------------------------------------------------------------------------

DEPENDENT_POD: Obj = {
    "serviceAccountName": "runner",
    "imagePullSecrets": [{"name": "registry"}],
    "volumes": [
        {"name": "a", "configMap": {"name": "cm-volume"}},
        {"name": "b", "secret": {"secretName": "secret-volume"}},
        {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "d", "projected": {"sources": [{"configMap": {"name": "cm-projected"}},
                                                {"secret": {"name": "secret-projected"}}]}},
        {"name": "e", "csi": {"nodePublishSecretRef": {"name": "csi-secret"}}},
        {"name": "f", "azureFile": {"secretName": "azure"}},
        {"name": "g", "configMap": None},
    ],
    "initContainers": [{"envFrom": [{"configMapRef": {"name": "cm-init"}}]}],
    "containers": [
        {"env": [{"valueFrom": {"secretKeyRef": {"name": "secret-env"}}},
                 {"valueFrom": {"configMapKeyRef": {"name": "cm-env"}}}, {"value": "x"}],
         "envFrom": [{"secretRef": {"name": "secret-envfrom"}}]},
    ],
}  # fmt: skip


def refs(kind: str, *names: str) -> list[DependentObjectReference]:
    return [DependentObjectReference("v1", kind, namespace="ns", name=n) for n in names]


EXPECTED_DEPENDENCIES = (
    refs("ConfigMap", "cm-env", "cm-init", "cm-projected", "cm-volume")
    + refs("Secret", "azure", "csi-secret", "registry", "secret-env", "secret-envfrom",
           "secret-projected", "secret-volume")
    + refs("ServiceAccount", "runner")
    + refs("PersistentVolumeClaim", "data")
)  # fmt: skip


@pytest.mark.parametrize(
    ("gvk", "spec"),
    [
        (DEPLOYMENT, {"template": {"spec": DEPENDENT_POD}}),
        (REPLICA_SET, {"template": {"spec": DEPENDENT_POD}}),
        (STATEFUL_SET, {"template": {"spec": DEPENDENT_POD}}),
        (DAEMON_SET, {"template": {"spec": DEPENDENT_POD}}),
        (JOB, {"template": {"spec": DEPENDENT_POD}}),
        (CRON_JOB, {"jobTemplate": {"spec": {"template": {"spec": DEPENDENT_POD}}}}),
        (POD, DEPENDENT_POD),
    ],
    ids=lambda v: v.kind if isinstance(v, GVK) else "",
)
async def test_dependencies_are_what_the_pod_template_names(gvk: GVK, spec: Obj) -> None:
    assert await native.get_dependencies(obj(gvk, spec=spec)) == EXPECTED_DEPENDENCIES


@pytest.mark.parametrize(
    "spec",
    [None, {}, {"template": None}, {"template": {"spec": {"serviceAccountName": "default",
                                                           "volumes": "x", "containers": [1]}}}],
    ids=["no-spec", "empty", "null-template", "default-account-and-junk"],
)  # fmt: skip
async def test_no_dependencies_when_the_template_names_none(spec: Any) -> None:
    assert await native.get_dependencies(obj(DEPLOYMENT, spec=spec)) == []


async def test_ingress_depends_on_its_tls_secrets() -> None:
    ingress = obj(INGRESS, spec={"tls": [{"secretName": "tls-a"}, {"hosts": ["x"]}, "junk"]})
    assert await native.get_dependencies(ingress) == refs("Secret", "tls-a")
    assert await native.get_dependencies(obj(INGRESS)) == []


async def test_dependencies_of_a_kind_without_pods_are_not_supported() -> None:
    with pytest.raises(NotSupported):
        await native.get_dependencies(obj(SERVICE))


# --- InterpretComponent -------------------------------------------------------------------------


async def test_single_template_workloads_have_one_component() -> None:
    deployment = obj(DEPLOYMENT, spec={"replicas": 3, "template": {"spec": POD_SPEC}})
    assert await native.get_components(deployment) == [Component("main", 3, EXPECTED_REQUIREMENTS)]
    assert await native.get_components(obj(JOB)) == [Component("main", 0, None)]
    with pytest.raises(NotSupported):
        await native.get_components(obj(DAEMON_SET))


# --- which kinds and operations ----------------------------------------------------------------

SUPPORTED: dict[Operation, frozenset[GVK] | set[GVK]] = {
    Operation.INTERPRET_REPLICA: {DEPLOYMENT, REPLICA_SET, STATEFUL_SET, JOB, POD},
    Operation.REVISE_REPLICA: {DEPLOYMENT, REPLICA_SET, STATEFUL_SET, JOB},
    Operation.RETAIN: {DEPLOYMENT, STATEFUL_SET, SERVICE, SERVICE_ACCOUNT, PERSISTENT_VOLUME_CLAIM,
                       PERSISTENT_VOLUME, POD, JOB, SECRET},
    Operation.AGGREGATE_STATUS: NATIVE_KINDS - {SERVICE_ACCOUNT, SECRET},
    Operation.INTERPRET_STATUS: set(NATIVE_KINDS),
    Operation.INTERPRET_HEALTH: set(NATIVE_KINDS),
    Operation.INTERPRET_DEPENDENCY: {DEPLOYMENT, REPLICA_SET, STATEFUL_SET, DAEMON_SET, JOB,
                                     CRON_JOB, POD, INGRESS},
    Operation.INTERPRET_COMPONENT: {DEPLOYMENT, REPLICA_SET, STATEFUL_SET, JOB, POD},
}  # fmt: skip


@pytest.mark.parametrize("operation", list(Operation), ids=str)
async def test_handles_exactly_the_documented_kinds(operation: Operation) -> None:
    handled = {gvk for gvk in NATIVE_KINDS if native.handles(gvk, operation)}
    assert handled == SUPPORTED[operation]
    custom = GVK("example.io", "v1", "Thing")
    assert native.handles(custom, operation) is (operation is Operation.INTERPRET_STATUS)


async def test_apps_v1beta_kinds_are_not_native() -> None:
    assert not native.handles(GVK("apps", "v1beta1", "Deployment"), Operation.INTERPRET_REPLICA)
