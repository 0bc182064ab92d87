"""Fuzz the scheduler with malformed bindings and Clusters: a result or a failure reason, no raise.

The binding's placement comes from a user's PropagationPolicy and its replicas from a user's
template; Clusters are written by whoever joins a member. Whatever they hold, ``schedule`` must
answer with target clusters or the Scheduled condition's failure (NoClusterFit naming each
refused cluster, or Unschedulable), quickly, and the controller's helpers around it must cope.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from controllers.api import (
    NO_CLUSTER_FIT_REASON,
    SCHEDULE_SUCCESS_REASON,
    UNSCHEDULABLE_REASON,
    binding_spec,
)
from controllers.scheduler import (
    ScheduleResult,
    applied_placement,
    binding_problems,
    schedule,
    scheduled_condition,
)
from controllers.scheduler.controller import condition_message, is_ours, schedule_reason
from tests.fuzz.strategies import crd_schema, from_schema, fuzz_settings, label_maps, within

BINDINGS = "work.karmada.io_resourcebindings.yaml"
CLUSTERS = "cluster.karmada.io_clusters.yaml"
NAMES = ["member1", "member2", "member3", "member4"]

# A status the cluster controller would write, so many cases get past the filters.
READY_STATUS: dict[str, Any] = {
    "apiEnablements": [
        {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
    ],
    "resourceSummary": {
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
        "allocated": {"cpu": "500m", "pods": "3"},
    },
    "conditions": [{"type": "Ready", "status": "True"}],
}


def _cluster(name: str, labels: dict[str, str], spec: Any, status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": status,
    }


def _clusters(malformed: bool) -> st.SearchStrategy[list[dict[str, Any]]]:
    spec = from_schema(crd_schema(CLUSTERS, "spec"), malformed=malformed)
    status = from_schema(crd_schema(CLUSTERS, "status"), malformed=malformed)
    summary = from_schema(crd_schema(CLUSTERS, "status", "resourceSummary"), malformed=malformed)
    # Serving the kind, so the estimator reads the summary.
    serving = summary.map(lambda found: {**READY_STATUS, "resourceSummary": found})
    one = st.tuples(
        label_maps, st.one_of(st.just({}), spec), st.one_of(st.just(READY_STATUS), serving, status)
    )
    return st.lists(one, min_size=1, max_size=len(NAMES)).map(
        lambda found: [_cluster(name, *parts) for name, parts in zip(NAMES, found, strict=False)]
    )


def _binding(
    spec: Any, placement: Any, replicas: Any, current: Any, status: Any, requirements: Any
) -> dict[str, Any]:
    if isinstance(spec, dict):
        spec = {
            **spec,
            "replicaRequirements": requirements,
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u"},
            "placement": placement,
            "replicas": replicas,
            "clusters": current,
        }
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "web-deployment",
            "namespace": "default",
            "generation": 2,
            "labels": {"propagationpolicy.karmada.io/permanent-id": "id"},
        },
        "spec": spec,
        "status": status,
    }


targets = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(NAMES), "replicas": st.integers(-1, 20)}),
    max_size=3,
)


def _bindings(malformed: bool) -> st.SearchStrategy[dict[str, Any]]:
    def part(*path: str) -> st.SearchStrategy[Any]:
        return from_schema(crd_schema(BINDINGS, *path), malformed=malformed)

    empty: st.SearchStrategy[Any] = st.just({})
    rest = st.one_of(empty, empty, part("spec")) if malformed else empty
    status = st.one_of(empty, part("status"))
    replicas = from_schema({"type": "integer"}, malformed=malformed)
    return st.builds(
        _binding, rest, part("spec", "placement"), st.one_of(st.integers(0, 12), replicas),
        st.one_of(targets, part("spec", "clusters")), status,
        st.one_of(st.none(), part("spec", "replicaRequirements")),
    )  # fmt: skip


REASONS = {SCHEDULE_SUCCESS_REASON, NO_CLUSTER_FIT_REASON, UNSCHEDULABLE_REASON}


def _schedule(binding: dict[str, Any], members: list[dict[str, Any]]) -> ScheduleResult:
    """What the controller does with one binding, checked for the invariants of any answer."""
    with within(5):
        is_ours(binding)
        schedule_reason(binding, members)
        result = schedule(binding, members)
        condition = scheduled_condition(result)
        message = condition_message(result)
        if result.scheduled:
            # The controller records the placement it scheduled with.
            applied_placement(binding_spec(binding).get("placement") or {})
    event(result.reason)
    assert isinstance(result, ScheduleResult)
    assert result.reason in REASONS
    assert condition["reason"] == result.reason
    assert isinstance(message, str)
    names = {member["metadata"]["name"] for member in members}
    for target in result.clusters:
        assert target["name"] in names
        assert isinstance(target["replicas"], int)
        assert target["replicas"] >= 0
    if not result.scheduled:
        assert result.message
        assert result.clusters == []
    return result


@fuzz_settings(max_examples=120)
@given(binding=_bindings(malformed=True), members=_clusters(malformed=True))
def test_a_malformed_binding_or_cluster_is_refused_with_a_reason(
    binding: dict[str, Any], members: list[dict[str, Any]]
) -> None:
    result = _schedule(binding, members)
    if binding_problems(binding):
        assert result.message.startswith(
            "the binding is invalid: spec"
        ) or result.message.startswith("the binding is invalid: status")


@fuzz_settings(max_examples=200)
@given(binding=_bindings(malformed=False), members=_clusters(malformed=False))
def test_a_well_typed_binding_is_scheduled_or_fails_with_a_reason(
    binding: dict[str, Any], members: list[dict[str, Any]]
) -> None:
    # Only the quantities may be wrong: the generator keeps to the CRD's types.
    assert not any("must be of type" in problem for problem in binding_problems(binding))
    result = _schedule(binding, members)
    event(result.message[:40])
