"""Native is the built-in interpreter for Kubernetes' own kinds, the last source the facade asks.

It answers like Karmada's default interpreter (pkg/resourceinterpreter/default/native):

- replicas: Deployment, ReplicaSet, StatefulSet ``spec.replicas`` (nil → 0); Job
  ``min(parallelism, completions)``; Pod 1; requirements from the pod template (see ``pods``).
- revise: ``spec.replicas`` (Job: ``spec.parallelism``), only when the template sets it, so a
  template without replicas is never scaled to what the scheduler computed for "no replicas".
- retain: what member controllers own (Service cluster IPs and health-check port, ServiceAccount
  secrets, PVC volume name, PV claim ref, Pod node/volumes, Job selector labels, token Secret data,
  Deployment/StatefulSet replicas when labelled ``resourcetemplate.karmada.io/retain-replicas``).
- health: Deployment/StatefulSet/ReplicaSet/DaemonSet rolled out, Pod running and ready or
  succeeded, Service (LoadBalancer) and Ingress with an address, PVC bound, PDB healthy enough;
  the other native kinds are healthy.
- dependencies: what the pod template names; Ingress TLS secrets.
- components: the single pod template of replica kinds, as one component named ``main``.
- status reflection and aggregation live in ``native_status``.

Every reader tolerates missing or mistyped fields: they count as absent or zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from controllers.interpreter import native_status
from controllers.interpreter.native_status import dig, number
from controllers.interpreter.pods import pod_dependencies, replica_requirements
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    NotSupported,
    Operation,
    ReplicaRequirements,
)
from reconcile import GVK, deep_copy

__all__ = [
    "CRON_JOB",
    "DAEMON_SET",
    "DEPLOYMENT",
    "HORIZONTAL_POD_AUTOSCALER",
    "INGRESS",
    "JOB",
    "NATIVE_KINDS",
    "NativeBackend",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "POD",
    "POD_DISRUPTION_BUDGET",
    "REPLICA_SET",
    "RETAIN_REPLICAS_LABEL",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "SINGLE_COMPONENT",
    "STATEFUL_SET",
]

Obj = dict[str, Any]
_Rule = TypeVar("_Rule")

DEPLOYMENT: Final = GVK("apps", "v1", "Deployment")
REPLICA_SET: Final = GVK("apps", "v1", "ReplicaSet")
STATEFUL_SET: Final = GVK("apps", "v1", "StatefulSet")
DAEMON_SET: Final = GVK("apps", "v1", "DaemonSet")
JOB: Final = GVK("batch", "v1", "Job")
CRON_JOB: Final = GVK("batch", "v1", "CronJob")
POD: Final = GVK("", "v1", "Pod")
SERVICE: Final = GVK("", "v1", "Service")
INGRESS: Final = GVK("networking.k8s.io", "v1", "Ingress")
PERSISTENT_VOLUME_CLAIM: Final = GVK("", "v1", "PersistentVolumeClaim")
PERSISTENT_VOLUME: Final = GVK("", "v1", "PersistentVolume")
SERVICE_ACCOUNT: Final = GVK("", "v1", "ServiceAccount")
SECRET: Final = GVK("", "v1", "Secret")
POD_DISRUPTION_BUDGET: Final = GVK("policy", "v1", "PodDisruptionBudget")
HORIZONTAL_POD_AUTOSCALER: Final = GVK("autoscaling", "v2", "HorizontalPodAutoscaler")

NATIVE_KINDS: Final = frozenset(
    {
        DEPLOYMENT, REPLICA_SET, STATEFUL_SET, DAEMON_SET, JOB, CRON_JOB, POD, SERVICE, INGRESS,
        PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, SERVICE_ACCOUNT, SECRET,
        POD_DISRUPTION_BUDGET, HORIZONTAL_POD_AUTOSCALER,
    }
)  # fmt: skip
"""The kinds the native interpreter knows."""

RETAIN_REPLICAS_LABEL: Final = "resourcetemplate.karmada.io/retain-replicas"
"""On a template: keep the member's replicas (an HPA scales it there)."""

SINGLE_COMPONENT: Final = "main"
"""The name of the one component of a single-template workload."""

_SERVICE_ACCOUNT_TOKEN: Final = "kubernetes.io/service-account-token"
_SERVICE_ACCOUNT_UID: Final = "kubernetes.io/service-account.uid"


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _map(obj.get("spec"))


def _namespace(obj: Mapping[str, Any]) -> str:
    namespace = _map(obj.get("metadata")).get("namespace")
    return namespace if isinstance(namespace, str) else ""


def _set_path(obj: Obj, path: Sequence[str], value: Any) -> None:
    """Set obj[path] = value, making (or replacing non-dict) intermediate objects."""
    node = obj
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


# --- InterpretReplica -------------------------------------------------------------------------


def _template_replicas(obj: Obj) -> tuple[int, ReplicaRequirements | None]:
    spec = _spec(obj)
    return number(spec.get("replicas")), replica_requirements(spec.get("template"), _namespace(obj))


def _job_replicas(obj: Obj) -> tuple[int, ReplicaRequirements | None]:
    spec = _spec(obj)
    parallelism = number(spec.get("parallelism"))
    # A Job never runs more pods at once than it has completions left.
    completions = spec.get("completions")
    replicas = min(parallelism, number(completions)) if completions is not None else parallelism
    return replicas, replica_requirements(spec.get("template"), _namespace(obj))


def _pod_replicas(obj: Obj) -> tuple[int, ReplicaRequirements | None]:
    return 1, replica_requirements({"spec": _spec(obj)}, _namespace(obj))


_REPLICAS: Final[dict[GVK, Callable[[Obj], tuple[int, ReplicaRequirements | None]]]] = {
    DEPLOYMENT: _template_replicas,
    REPLICA_SET: _template_replicas,
    STATEFUL_SET: _template_replicas,
    JOB: _job_replicas,
    POD: _pod_replicas,
}

# --- ReviseReplica ----------------------------------------------------------------------------

_REVISE_FIELD: Final = {
    DEPLOYMENT: "replicas",
    REPLICA_SET: "replicas",
    STATEFUL_SET: "replicas",
    JOB: "parallelism",
}

# --- Retain -----------------------------------------------------------------------------------


def _retain_replicas(desired: Obj, observed: Obj) -> None:
    labels = _map(_map(desired.get("metadata")).get("labels"))
    replicas = _spec(observed).get("replicas")
    if labels.get(RETAIN_REPLICAS_LABEL) == "true" and replicas is not None:
        _set_path(desired, ("spec", "replicas"), replicas)


def _retain_service(desired: Obj, observed: Obj) -> None:
    spec = _spec(observed)
    # The member allocates these; sending other values would be rejected as immutable.
    if spec.get("clusterIP"):
        _set_path(desired, ("spec", "clusterIP"), spec["clusterIP"])
    if isinstance(spec.get("clusterIPs"), list) and spec["clusterIPs"]:
        _set_path(desired, ("spec", "clusterIPs"), deep_copy(spec["clusterIPs"]))
    if number(spec.get("healthCheckNodePort")) > 0:
        _set_path(desired, ("spec", "healthCheckNodePort"), spec["healthCheckNodePort"])


def _retain_service_account(desired: Obj, observed: Obj) -> None:
    wanted = desired.get("secrets")
    secrets = [s for s in wanted if isinstance(s, dict)] if isinstance(wanted, list) else []
    names = {s.get("name") for s in secrets if isinstance(s.get("name"), str)}
    observed_secrets = observed.get("secrets")
    for secret in observed_secrets if isinstance(observed_secrets, list) else []:
        name = secret.get("name") if isinstance(secret, dict) else None
        if isinstance(name, str) and name not in names:
            secrets.append(deep_copy(secret))  # token secrets the member's controller added
    if secrets:
        desired["secrets"] = secrets


def _retain_claim(desired: Obj, observed: Obj) -> None:
    volume = _spec(observed).get("volumeName")
    if isinstance(volume, str) and volume:
        _set_path(desired, ("spec", "volumeName"), volume)


def _retain_volume(desired: Obj, observed: Obj) -> None:
    claim = _spec(observed).get("claimRef")
    if claim is not None:
        _set_path(desired, ("spec", "claimRef"), deep_copy(claim))


def _copy_field(desired: dict[str, Any], observed: Mapping[str, Any], key: str) -> None:
    if key in observed:
        desired[key] = deep_copy(observed[key])
    else:
        desired.pop(key, None)


def _is_name(value: Any) -> bool:
    return isinstance(value, str)


def _retain_mounts(desired: dict[str, Any], observed: Mapping[str, Any]) -> None:
    for field in ("containers", "initContainers"):
        wanted, found = desired.get(field), observed.get(field)
        if not isinstance(wanted, list) or not isinstance(found, list):
            continue
        by_name = {c["name"]: c for c in found if isinstance(c, dict) and _is_name(c.get("name"))}
        for container in wanted:
            name = container.get("name") if isinstance(container, dict) else None
            if _is_name(name) and name in by_name:
                _copy_field(container, by_name[name], "volumeMounts")


def _retain_pod(desired: Obj, observed: Obj) -> None:
    spec = desired.get("spec")
    if not isinstance(spec, dict):
        spec = desired["spec"] = {}
    found = _spec(observed)
    # The member's scheduler and admission fill these; a pod spec cannot change them later.
    for key in ("nodeName", "serviceAccountName", "volumes"):
        _copy_field(spec, found, key)
    _retain_mounts(spec, found)


def _retain_job(desired: Obj, observed: Obj) -> None:
    # The member's Job controller generates the selector and matching template labels.
    selector = dig(observed, "spec", "selector", "matchLabels")
    if isinstance(selector, dict):
        _set_path(desired, ("spec", "selector", "matchLabels"), dict(selector))
    labels = dig(observed, "spec", "template", "metadata", "labels")
    if isinstance(labels, dict):
        _set_path(desired, ("spec", "template", "metadata", "labels"), dict(labels))


def _retain_secret(desired: Obj, observed: Obj) -> None:
    if desired.get("type") != _SERVICE_ACCOUNT_TOKEN:
        return
    # The token controller of the member fills the data and binds it to the account's uid.
    if isinstance(observed.get("data"), dict):
        desired["data"] = dict(observed["data"])
    uid = _map(_map(observed.get("metadata")).get("annotations")).get(_SERVICE_ACCOUNT_UID)
    if isinstance(uid, str):
        _set_path(desired, ("metadata", "annotations", _SERVICE_ACCOUNT_UID), uid)


_RETAIN: Final[dict[GVK, Callable[[Obj, Obj], None]]] = {
    DEPLOYMENT: _retain_replicas,
    STATEFUL_SET: _retain_replicas,
    SERVICE: _retain_service,
    SERVICE_ACCOUNT: _retain_service_account,
    PERSISTENT_VOLUME_CLAIM: _retain_claim,
    PERSISTENT_VOLUME: _retain_volume,
    POD: _retain_pod,
    JOB: _retain_job,
    SECRET: _retain_secret,
}

# --- InterpretHealth --------------------------------------------------------------------------


def _generation_observed(obj: Obj) -> bool:
    generation = number(dig(obj, "metadata", "generation"))
    return number(dig(obj, "status", "observedGeneration")) == generation


def _rolled_out(obj: Obj) -> bool:
    status, wanted = _map(obj.get("status")), _spec(obj).get("replicas")
    updated = number(status.get("updatedReplicas"))
    if wanted is not None and updated < number(wanted):
        return False
    return _generation_observed(obj) and number(status.get("availableReplicas")) >= updated


def _replica_set_healthy(obj: Obj) -> bool:
    wanted = _spec(obj).get("replicas")
    available = number(dig(obj, "status", "availableReplicas"))
    return _generation_observed(obj) and (wanted is None or available >= number(wanted))


def _daemon_set_healthy(obj: Obj) -> bool:
    status = _map(obj.get("status"))
    updated = number(status.get("updatedNumberScheduled"))
    return (
        _generation_observed(obj)
        and updated >= number(status.get("desiredNumberScheduled"))
        and number(status.get("numberAvailable")) >= updated
    )


def _has_address(obj: Obj) -> bool:
    ingress = dig(obj, "status", "loadBalancer", "ingress")
    entries = ingress if isinstance(ingress, list) else []
    return any(isinstance(e, dict) and (e.get("hostname") or e.get("ip")) for e in entries)


def _service_healthy(obj: Obj) -> bool:
    return _spec(obj).get("type") != "LoadBalancer" or _has_address(obj)


def _pod_healthy(obj: Obj) -> bool:
    phase = dig(obj, "status", "phase")
    if phase == "Succeeded":
        return True
    conditions = dig(obj, "status", "conditions")
    ready = any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else [])
    )
    return phase == "Running" and ready


def _budget_healthy(obj: Obj) -> bool:
    status = _map(obj.get("status"))
    return number(status.get("currentHealthy")) >= number(status.get("desiredHealthy"))


def _healthy(obj: Obj) -> bool:
    return True


_HEALTH: Final[dict[GVK, Callable[[Obj], bool]]] = {
    DEPLOYMENT: _rolled_out,
    STATEFUL_SET: _rolled_out,
    REPLICA_SET: _replica_set_healthy,
    DAEMON_SET: _daemon_set_healthy,
    SERVICE: _service_healthy,
    INGRESS: _has_address,
    PERSISTENT_VOLUME_CLAIM: lambda obj: dig(obj, "status", "phase") == "Bound",
    POD: _pod_healthy,
    POD_DISRUPTION_BUDGET: _budget_healthy,
    JOB: _healthy,
    CRON_JOB: _healthy,
    PERSISTENT_VOLUME: _healthy,
    SERVICE_ACCOUNT: _healthy,
    SECRET: _healthy,
    HORIZONTAL_POD_AUTOSCALER: _healthy,
}

# --- InterpretDependency ----------------------------------------------------------------------

_POD_SPEC_PATH: Final = {
    DEPLOYMENT: ("spec", "template", "spec"),
    REPLICA_SET: ("spec", "template", "spec"),
    STATEFUL_SET: ("spec", "template", "spec"),
    DAEMON_SET: ("spec", "template", "spec"),
    JOB: ("spec", "template", "spec"),
    CRON_JOB: ("spec", "jobTemplate", "spec", "template", "spec"),
    POD: ("spec",),
}


def _ingress_dependencies(obj: Obj) -> list[DependentObjectReference]:
    tls = _spec(obj).get("tls")
    names = [_map(t).get("secretName") for t in (tls if isinstance(tls, list) else [])]
    namespace = _namespace(obj)
    return [
        DependentObjectReference("v1", "Secret", namespace=namespace, name=name)
        for name in names
        if isinstance(name, str) and name
    ]


class NativeBackend:
    """The built-in interpretations of native kinds (see the module docstring); stateless."""

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        """Whether ``operation`` has a native rule for ``gvk`` (status reflection: every kind)."""
        return gvk in _KINDS_BY_OPERATION[operation] or operation is Operation.INTERPRET_STATUS

    @staticmethod
    def _rule(table: Mapping[GVK, _Rule], obj: Mapping[str, Any], operation: Operation) -> _Rule:
        gvk = GVK.of(obj)
        rule = table.get(gvk)
        if rule is None:
            raise NotSupported(gvk, operation)
        return rule

    async def get_replicas(self, obj: Obj) -> tuple[int, ReplicaRequirements | None]:
        """Replicas and per-replica requirements. Raises: NotSupported, InterpreterError."""
        return self._rule(_REPLICAS, obj, Operation.INTERPRET_REPLICA)(obj)

    async def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        """A copy with the replica field set, if the template has it. Raises: NotSupported."""
        field = self._rule(_REVISE_FIELD, obj, Operation.REVISE_REPLICA)
        revised: Obj = deep_copy(obj)
        spec = revised.get("spec")
        if isinstance(spec, dict) and field in spec:
            spec[field] = replicas
        return revised

    async def retain(self, desired: Obj, observed: Obj) -> Obj:
        """``desired`` keeping what the member owns in ``observed``. Raises: NotSupported."""
        rule = self._rule(_RETAIN, desired, Operation.RETAIN)
        retained: Obj = deep_copy(desired)
        rule(retained, observed if isinstance(observed, dict) else {})
        return retained

    async def aggregate_status(self, obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        """A copy of ``obj`` with the members' statuses combined. Raises: NotSupported."""
        rule = self._rule(native_status.AGGREGATE, obj, Operation.AGGREGATE_STATUS)
        return rule(obj, items)

    async def reflect_status(self, obj: Obj) -> Obj | None:
        """The status fields worth collecting (whole status for unknown kinds), None if none."""
        rule = native_status.REFLECT.get(GVK.of(obj), native_status.reflect_whole_status)
        return rule(obj)

    async def interpret_health(self, obj: Obj) -> bool:
        """Whether the member object is healthy. Raises: NotSupported."""
        return self._rule(_HEALTH, obj, Operation.INTERPRET_HEALTH)(obj)

    async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
        """Objects the pod template (or Ingress TLS) names. Raises: NotSupported."""
        gvk = GVK.of(obj)
        if gvk == INGRESS:
            return _ingress_dependencies(obj)
        path = self._rule(_POD_SPEC_PATH, obj, Operation.INTERPRET_DEPENDENCY)
        return pod_dependencies(_map(dig(obj, *path)), _namespace(obj))

    async def get_components(self, obj: Obj) -> list[Component]:
        """The one pod template of a replica kind as a component. Raises: NotSupported."""
        replicas, requirements = self._rule(_REPLICAS, obj, Operation.INTERPRET_COMPONENT)(obj)
        return [Component(SINGLE_COMPONENT, replicas, requirements)]


_KINDS_BY_OPERATION: Final[dict[Operation, frozenset[GVK]]] = {
    Operation.INTERPRET_REPLICA: frozenset(_REPLICAS),
    Operation.REVISE_REPLICA: frozenset(_REVISE_FIELD),
    Operation.RETAIN: frozenset(_RETAIN),
    Operation.AGGREGATE_STATUS: frozenset(native_status.AGGREGATE),
    Operation.INTERPRET_STATUS: NATIVE_KINDS,
    Operation.INTERPRET_HEALTH: frozenset(_HEALTH),
    Operation.INTERPRET_DEPENDENCY: frozenset(_POD_SPEC_PATH) | {INGRESS},
    Operation.INTERPRET_COMPONENT: frozenset(_REPLICAS),
}
