"""Native status is how the built-in interpreter collects member statuses and combines them.

Reflection (InterpretStatus) picks the fields worth carrying from a member object's status; for
Deployment, StatefulSet, DaemonSet and ReplicaSet it adds the member's ``metadata.generation`` as
``generation`` and its ``resourcetemplate.karmada.io/generation`` annotation (the template
generation the member was last applied from) as ``resourceTemplateGeneration``. Kinds without a
rule reflect their whole status.

Aggregation (AggregateStatus) returns a copy of the template with the members' statuses combined:
counts are summed, and ``observedGeneration`` becomes the template's generation only when every
member is up to date (its controller observed its own generation, and it was applied from the
current template generation); otherwise the template keeps its previous ``observedGeneration``.

Fields follow the apiserver's JSON: zero counts are left out unless the API requires them, so an
aggregated status equals what the apiserver returns after writing it (no endless no-op writes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from controllers.interpreter.types import AggregatedStatusItem
from reconcile import GVK, deep_copy

__all__ = [
    "AGGREGATE",
    "GENERATION_ANNOTATION",
    "REFLECT",
    "dig",
    "number",
    "reflect_whole_status",
]

Obj = dict[str, Any]

GENERATION_ANNOTATION: Final = "resourcetemplate.karmada.io/generation"
"""Set on member objects: the template generation they were applied from."""


def dig(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]..., or None when any step is missing or not an object."""
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def number(value: Any) -> int:
    """An integer count from JSON: ints and finite floats; anything else (None, text) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _statuses(items: Sequence[AggregatedStatusItem]) -> list[Mapping[str, Any]]:
    return [item.status for item in items if isinstance(item.status, Mapping)]


def _status_of(obj: Obj) -> Obj:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    return status


class _Counts:
    """The integer status fields of one kind, and which of them the API always serializes."""

    def __init__(self, optional: Sequence[str], required: Sequence[str] = ()) -> None:
        self.fields = (*required, *optional)
        self.required = frozenset(required)

    def put(self, status: Obj, name: str, value: int) -> None:
        if value or name in self.required:
            status[name] = value
        else:
            status.pop(name, None)

    def pick(self, status: Mapping[str, Any]) -> Obj:
        picked: Obj = {}
        for name in self.fields:
            self.put(picked, name, number(status.get(name)))
        return picked


_DEPLOYMENT: Final = _Counts(
    ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
     "unavailableReplicas"),
)  # fmt: skip
_STATEFUL_SET: Final = _Counts(
    ("observedGeneration", "readyReplicas", "currentReplicas", "updatedReplicas"),
    ("replicas", "availableReplicas"),
)
_DAEMON_SET: Final = _Counts(
    ("observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable"),
    ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"),
)
_REPLICA_SET: Final = _Counts(
    ("observedGeneration", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
    ("replicas",),
)
_BUDGET: Final = _Counts(
    (), ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
)
_AUTOSCALER: Final = _Counts(("currentReplicas",), ("desiredReplicas",))
_JOB: Final = _Counts(("active", "succeeded", "failed"))

# --- InterpretStatus --------------------------------------------------------------------------


def reflect_whole_status(obj: Obj) -> Obj | None:
    """A copy of the whole ``status``, None when the object has none."""
    status = obj.get("status")
    return deep_copy(status) if isinstance(status, dict) else None


def _template_generation(obj: Obj) -> int:
    raw = dig(obj, "metadata", "annotations", GENERATION_ANNOTATION)
    try:
        return int(raw) if isinstance(raw, str) else 0
    except ValueError:
        return 0  # like Karmada: an unreadable annotation counts as "not applied yet"


def _reflect_workload(counts: _Counts) -> Callable[[Obj], Obj | None]:
    def reflect(obj: Obj) -> Obj | None:
        status = obj.get("status")
        if not isinstance(status, dict):
            return None
        reflected = counts.pick(status)
        generation, template_generation = (
            number(dig(obj, "metadata", "generation")),
            (_template_generation(obj)),
        )
        if generation:
            reflected["generation"] = generation
        if template_generation:
            reflected["resourceTemplateGeneration"] = template_generation
        return reflected or None

    return reflect


def _reflect_fields(counts: _Counts, extra: Sequence[str] = ()) -> Callable[[Obj], Obj | None]:
    def reflect(obj: Obj) -> Obj | None:
        status = obj.get("status")
        if not isinstance(status, dict):
            return None
        reflected = counts.pick(status)
        for name in extra:
            if status.get(name):
                reflected[name] = deep_copy(status[name])
        return reflected

    return reflect


def _reflect_service(obj: Obj) -> Obj | None:
    status = obj.get("status")
    if dig(obj, "spec", "type") != "LoadBalancer" or not isinstance(status, dict):
        return None
    balancer = status.get("loadBalancer")
    return {"loadBalancer": deep_copy(balancer) if isinstance(balancer, dict) else {}}


_WORKLOADS: Final = {
    GVK("apps", "v1", "Deployment"): _DEPLOYMENT,
    GVK("apps", "v1", "StatefulSet"): _STATEFUL_SET,
    GVK("apps", "v1", "DaemonSet"): _DAEMON_SET,
    GVK("apps", "v1", "ReplicaSet"): _REPLICA_SET,
}

REFLECT: Final[dict[GVK, Callable[[Obj], Obj | None]]] = {
    **{gvk: _reflect_workload(counts) for gvk, counts in _WORKLOADS.items()},
    GVK("", "v1", "Service"): _reflect_service,
    GVK("batch", "v1", "Job"): _reflect_fields(_JOB, ("conditions", "startTime", "completionTime")),
    GVK("policy", "v1", "PodDisruptionBudget"): _reflect_fields(_BUDGET, ("disruptedPods",)),
    GVK("autoscaling", "v2", "HorizontalPodAutoscaler"): _reflect_fields(_AUTOSCALER),
}
"""Status reflection rules by kind; other kinds reflect their whole status."""

# --- AggregateStatus --------------------------------------------------------------------------


def _up_to_date(member: Mapping[str, Any], template_generation: int) -> bool:
    applied = number(member.get("resourceTemplateGeneration")) >= template_generation
    return applied and number(member.get("observedGeneration")) >= number(member.get("generation"))


def _aggregate_workload(counts: _Counts) -> Callable[[Obj, Sequence[AggregatedStatusItem]], Obj]:
    def aggregate(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        result: Obj = deep_copy(obj)
        status, members = _status_of(result), _statuses(items)
        for name in counts.fields:
            if name != "observedGeneration":
                counts.put(status, name, sum(number(m.get(name)) for m in members))
        generation = number(dig(obj, "metadata", "generation"))
        # Items without a status count as stale: a member not yet reporting is not up to date.
        fresh = sum(_up_to_date(member, generation) for member in members)
        if fresh == len(items):
            counts.put(status, "observedGeneration", generation)
        return result

    return aggregate


def _aggregate_counts(counts: _Counts) -> Callable[[Obj, Sequence[AggregatedStatusItem]], Obj]:
    def aggregate(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        result: Obj = deep_copy(obj)
        status, members = _status_of(result), _statuses(items)
        for name in counts.fields:
            counts.put(status, name, sum(number(m.get(name)) for m in members))
        return result

    return aggregate


def _aggregate_budget(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result = _aggregate_counts(_BUDGET)(obj, items)
    disrupted = {
        f"{item.cluster_name}/{pod}": deep_copy(time)
        for item in items
        for pod, time in _mapping(dig(item.status, "disruptedPods")).items()
    }
    status = _status_of(result)
    if disrupted:
        status["disruptedPods"] = disrupted
    else:
        status.pop("disruptedPods", None)
    return result


def _balancer_ingress(items: Sequence[AggregatedStatusItem]) -> list[Obj]:
    entries: list[Obj] = []
    for item in items:
        ingress = dig(item.status, "loadBalancer", "ingress")
        for entry in ingress if isinstance(ingress, list) else []:
            if isinstance(entry, dict):
                entry = deep_copy(entry)
                # Without a hostname the address would not say which member it came from.
                entry.setdefault("hostname", item.cluster_name)
                entries.append(entry)
    return entries


def _aggregate_balancer(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result: Obj = deep_copy(obj)
    if GVK.of(obj).kind == "Service" and dig(obj, "spec", "type") != "LoadBalancer":
        return result
    ingress = _balancer_ingress(items)
    result["status"] = {"loadBalancer": {"ingress": ingress} if ingress else {}}
    return result


def _phase_of(items: Sequence[AggregatedStatusItem], pending: str) -> set[str]:
    # A member that has not reported yet counts as pending, not as absent.
    return {
        str(dig(item.status, "phase")) if isinstance(item.status, Mapping) else pending
        for item in items
    }


def _worst_phase(phases: set[str], order: Sequence[str]) -> str | None:
    return next((phase for phase in order if phase in phases), None)


def _aggregate_pod(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result: Obj = deep_copy(obj)
    if not items:
        return result
    order = ("Failed", "Pending", "Running", "Succeeded")
    status: Obj = {}
    phase = _worst_phase(_phase_of(items, "Pending"), order)
    if phase:
        status["phase"] = phase
    containers = [
        {key: deep_copy(c[key]) for key in ("ready", "state") if key in c}
        for member in _statuses(items)
        for c in _list(dig(member, "containerStatuses"))
        if isinstance(c, dict)
    ]
    if containers:
        status["containerStatuses"] = containers
    result["status"] = status
    return result


def _aggregate_volume(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result: Obj = deep_copy(obj)
    order = ("Failed", "Pending", "Available", "Bound", "Released")
    phase = _worst_phase(_phase_of(items, "Pending"), order)
    result["status"] = {"phase": phase} if phase else {}
    return result


def _aggregate_claim(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result: Obj = deep_copy(obj)
    phase = "Bound"
    for member in _statuses(items):
        member_phase = member.get("phase")
        if member_phase == "Lost":
            phase = "Lost"
            break
        if isinstance(member_phase, str) and member_phase != "Bound":
            phase = member_phase
    result["status"] = {"phase": phase}
    return result


def _latest(values: Sequence[Any]) -> Any:
    # RFC 3339 UTC timestamps, as the apiserver writes them, sort as text.
    present = [v for v in values if isinstance(v, str) and v]
    return max(present) if present else None


def _aggregate_cron_job(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result: Obj = deep_copy(obj)
    status, members = _status_of(result), _statuses(items)
    active = [deep_copy(a) for m in members for a in _list(m.get("active")) if isinstance(a, dict)]
    fields = {
        "active": active,
        "lastScheduleTime": _latest([m.get("lastScheduleTime") for m in members]),
        "lastSuccessfulTime": _latest([m.get("lastSuccessfulTime") for m in members]),
    }
    for name, value in fields.items():
        if value:
            status[name] = value
        else:
            status.pop(name, None)
    return result


def _job_finished(status: Any) -> str | None:
    conditions = dig(status, "conditions")
    for condition in conditions if isinstance(conditions, list) else []:
        kind = dig(condition, "type")
        if kind in ("Complete", "Failed") and dig(condition, "status") == "True":
            return str(kind)
    return None


def _job_condition(old: Any, kind: str, reason: str, message: str) -> Obj:
    previous = next((c for c in _list(old) if isinstance(c, dict) and c.get("type") == kind), None)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # Keep the old timestamps of an unchanged condition so the status stays stable.
    since = previous if previous and previous.get("status") == "True" else {}
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": since.get("lastProbeTime", now),
        "lastTransitionTime": since.get("lastTransitionTime", now),
        "reason": reason,
        "message": message,
    }


def _aggregate_job(obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
    result: Obj = deep_copy(obj)
    old = obj.get("status")
    if _job_finished(old):
        return result  # a finished Job's status is final
    members = [(item.cluster_name, item.status) for item in items if isinstance(item.status, dict)]
    status: Obj = {}
    for name in _JOB.fields:
        _JOB.put(status, name, sum(number(m.get(name)) for _, m in members))
    failed = [cluster for cluster, m in members if _job_finished(m) == "Failed"]
    complete = sum(_job_finished(m) == "Complete" for _, m in members)
    conditions = []
    old_conditions = dig(old, "conditions")
    if failed:
        message = f"Job executed failed in member clusters {','.join(failed)}"
        conditions.append(_job_condition(old_conditions, "Failed", "JobFailed", message))
    if items and complete == len(items):
        conditions.append(_job_condition(old_conditions, "Complete", "Completed", "Job completed"))
    if conditions:
        status["conditions"] = conditions
    starts = [start for _, m in members if isinstance(start := m.get("startTime"), str)]
    if starts:
        status["startTime"] = min(starts)
    ends = [m.get("completionTime") for _, m in members]
    if items and len([e for e in ends if e]) == len(items):
        status["completionTime"] = _latest(ends)
    result["status"] = status
    return result


AGGREGATE: Final[dict[GVK, Callable[[Obj, Sequence[AggregatedStatusItem]], Obj]]] = {
    **{gvk: _aggregate_workload(counts) for gvk, counts in _WORKLOADS.items()},
    GVK("", "v1", "Service"): _aggregate_balancer,
    GVK("networking.k8s.io", "v1", "Ingress"): _aggregate_balancer,
    GVK("batch", "v1", "Job"): _aggregate_job,
    GVK("batch", "v1", "CronJob"): _aggregate_cron_job,
    GVK("", "v1", "Pod"): _aggregate_pod,
    GVK("", "v1", "PersistentVolume"): _aggregate_volume,
    GVK("", "v1", "PersistentVolumeClaim"): _aggregate_claim,
    GVK("policy", "v1", "PodDisruptionBudget"): _aggregate_budget,
    GVK("autoscaling", "v2", "HorizontalPodAutoscaler"): _aggregate_counts(_AUTOSCALER),
}
"""Status aggregation rules by kind."""
