"""No object, however malformed, crashes the native interpreter: it answers or raises its errors.

Hypothesis builds objects of every native kind whose spec, status and metadata are random JSON
over the field names the rules read, so wrong types, nulls and missing fields meet every rule.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controllers.interpreter import AggregatedStatusItem, InterpreterError, NativeBackend
from controllers.interpreter.native import NATIVE_KINDS
from reconcile import GVK

FIELDS = [
    "replicas", "template", "spec", "containers", "initContainers", "resources", "requests",
    "limits", "cpu", "memory", "nvidia.com/gpu", "status", "conditions", "type", "phase",
    "loadBalancer", "ingress", "hostname", "ip", "volumes", "configMap", "secret", "name", "env",
    "valueFrom", "secretKeyRef", "envFrom", "tolerations", "nodeSelector", "affinity",
    "nodeAffinity", "observedGeneration", "generation", "annotations", "labels", "selector",
    "matchLabels", "metadata", "secrets", "clusterIP", "clusterIPs", "active", "containerStatuses",
    "disruptedPods", "tls", "secretName", "parallelism", "completions", "jobTemplate",
    "persistentVolumeClaim", "claimName", "projected", "sources", "imagePullSecrets",
    "serviceAccountName", "data", "overhead", "nodeName", "volumeMounts", "startTime",
    "completionTime", "resourcetemplate.karmada.io/generation", "currentHealthy", "updatedReplicas",
]  # fmt: skip

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=True),
    st.sampled_from(["", "1", "100m", "1Gi", "x", "True", "LoadBalancer", "Running", "Complete"]),
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(FIELDS), inner, max_size=5)
    ),
    max_leaves=25,
)
objects = st.fixed_dictionaries(
    {"metadata": json_values, "spec": json_values, "status": json_values},
    optional={"secrets": json_values, "data": json_values, "type": scalars},
)

native = NativeBackend()


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Drive a coroutine that never waits (the native backend computes synchronously)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the native backend awaited something")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(NATIVE_KINDS, key=str)), body=objects, other=objects,
       status=json_values)  # fmt: skip
def test_every_operation_answers_or_raises_an_interpreter_error(
    kind: GVK, body: dict[str, Any], other: dict[str, Any], status: Any
) -> None:
    gvk = {"apiVersion": kind.api_version, "kind": kind.kind}
    obj, observed = {**body, **gvk}, {**other, **gvk}
    statuses = [status, other.get("status")]
    items = [
        AggregatedStatusItem(f"m{i}", s if isinstance(s, dict) else None)
        for i, s in enumerate(statuses)
    ]
    calls: list[Callable[[], Coroutine[Any, Any, Any]]] = [
        lambda: native.get_replicas(obj),
        lambda: native.revise_replica(obj, 2),
        lambda: native.retain(obj, observed),
        lambda: native.aggregate_status(obj, items),
        lambda: native.reflect_status(obj),
        lambda: native.interpret_health(obj),
        lambda: native.get_dependencies(obj),
        lambda: native.get_components(obj),
    ]
    for call in calls:
        with contextlib.suppress(InterpreterError):  # NotSupported, or an unparsable quantity
            run(call())
