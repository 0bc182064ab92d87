"""Pods holds what interpreters read from a pod spec: replica requirements and dependencies.

Native defaults and the Lua ``kube`` library share these, so a Deployment and a CloneSet with the
same pod template report the same requirements and dependencies. The rules are Karmada's:

- resources: requests default to limits per container; app containers are summed, each init
  container's requests raise the total to at least its own, then the pod overhead is added; CPU is
  counted in millicores and memory, storage, pods and extended resources in whole units.
- node claim: node selector, tolerations and the required node affinity; none when all are empty.
- dependencies: ConfigMaps, Secrets, the ServiceAccount (unless ``default``) and
  PersistentVolumeClaims the pod names, each kind sorted by name.

Missing or mistyped fields count as absent; only an unparsable quantity raises.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from controllers.interpreter.types import (
    DependentObjectReference,
    InterpreterError,
    NodeClaim,
    ReplicaRequirements,
    parse_quantity,
)
from reconcile import Quantity, QuantityError, QuantityFormat

__all__ = [
    "node_claim",
    "pod_dependencies",
    "pod_resource_request",
    "replica_requirements",
]

_EMPTY: Final[Mapping[str, Any]] = {}
_CONTAINER_LISTS: Final = ("initContainers", "containers", "ephemeralContainers")
# Volume sources that name a Secret, and the field holding its name.
_SECRET_VOLUMES: Final = (
    ("secret", "secretName"),
    ("azureFile", "secretName"),
    ("cephfs", "secretRef"),
    ("cinder", "secretRef"),
    ("flexVolume", "secretRef"),
    ("rbd", "secretRef"),
    ("scaleIO", "secretRef"),
    ("iscsi", "secretRef"),
    ("storageos", "secretRef"),
    ("csi", "nodePublishSecretRef"),
)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


def _maps(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, Mapping))


def _name(value: Any) -> str:
    name = _map(value).get("name")
    return name if isinstance(name, str) else ""


class _Resources:
    """Karmada's util.Resource: millicores, bytes and counts accumulated from resource lists."""

    def __init__(self) -> None:
        self.amounts: dict[str, int] = {}

    @staticmethod
    def _amount(name: str, raw: Any) -> int | None:
        try:
            quantity = parse_quantity(raw)[0]
        except QuantityError as err:
            raise InterpreterError(f"resource {name}: {err}") from err
        if name == "cpu":
            return quantity.milli_value()
        if name in ("memory", "ephemeral-storage", "pods") or _is_scalar(name):
            return quantity.value()
        return None  # not a schedulable resource (e.g. "storage"): ignored like Karmada

    def add(self, resources: Any) -> None:
        for name, raw in _map(resources).items():
            amount = self._amount(name, raw)
            if amount is not None:
                self.amounts[name] = self.amounts.get(name, 0) + amount

    def raise_to(self, resources: Any) -> None:
        for name, raw in _map(resources).items():
            amount = self._amount(name, raw)
            if amount is not None and amount > self.amounts.get(name, 0):
                self.amounts[name] = amount

    def resource_list(self) -> dict[str, str] | None:
        result = {
            name: str(_quantity_of(name, amount))
            for name, amount in sorted(self.amounts.items())
            if amount > 0
        }
        return result or None


def _is_scalar(name: str) -> bool:
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return "/" in name and not name.startswith("requests.")  # an extended resource


def _quantity_of(name: str, amount: int) -> Quantity:
    if name == "cpu":
        return Quantity.from_milli(amount, QuantityFormat.DECIMAL_SI)
    binary = name in ("memory", "ephemeral-storage") or name.startswith("hugepages-")
    return Quantity.from_units(
        amount, QuantityFormat.BINARY_SI if binary else QuantityFormat.DECIMAL_SI
    )


def _requests(container: Mapping[str, Any]) -> dict[str, Any]:
    resources = _map(container.get("resources"))
    requests = dict(_map(resources.get("requests")))
    for name, limit in _map(resources.get("limits")).items():
        requests.setdefault(name, limit)  # requests default to limits, as the apiserver does
    return requests


def pod_resource_request(spec: Mapping[str, Any] | None) -> dict[str, str] | None:
    """What one pod with this spec requests, as canonical quantity strings; None when nothing.

    Raises:
        InterpreterError: a request, limit or overhead is not a quantity.
    """
    spec = _map(spec)
    total = _Resources()
    for container in _maps(spec.get("containers")):
        total.add(_requests(container))
    for container in _maps(spec.get("initContainers")):
        total.raise_to(_requests(container))
    total.add(spec.get("overhead"))
    return total.resource_list()


def node_claim(spec: Mapping[str, Any] | None) -> NodeClaim | None:
    """The node selector, tolerations and required node affinity of a pod spec, if any."""
    spec = _map(spec)
    selector = {k: v for k, v in _map(spec.get("nodeSelector")).items() if isinstance(v, str)}
    tolerations = [dict(t) for t in _maps(spec.get("tolerations"))]
    node_affinity = _map(_map(spec.get("affinity")).get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    affinity = dict(required) if isinstance(required, Mapping) else None
    if not selector and not tolerations and affinity is None:
        return None
    return NodeClaim(selector or None, tolerations or None, affinity)


def replica_requirements(
    template: Mapping[str, Any] | None, namespace: str
) -> ReplicaRequirements | None:
    """What each replica of a pod template needs; None when it names no resources or nodes.

    ``namespace`` is the workload's: quota checks count the replicas there.

    Raises:
        InterpreterError: a request, limit or overhead is not a quantity.
    """
    spec = _map(_map(template).get("spec"))
    claim = node_claim(spec)
    request = pod_resource_request(spec)
    if claim is None and request is None:
        return None
    priority = spec.get("priorityClassName")
    return ReplicaRequirements(
        node_claim=claim,
        resource_request=request,
        namespace=namespace,
        priority_class_name=priority if isinstance(priority, str) else "",
    )


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for field in _CONTAINER_LISTS:
        yield from _maps(spec.get(field))


def _config_map_names(spec: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for volume in _maps(spec.get("volumes")):
        names.add(_name(volume.get("configMap")))
        for source in _maps(_map(volume.get("projected")).get("sources")):
            names.add(_name(source.get("configMap")))
    for container in _containers(spec):
        for env in _maps(container.get("env")):
            names.add(_name(_map(env.get("valueFrom")).get("configMapKeyRef")))
        for env_from in _maps(container.get("envFrom")):
            names.add(_name(env_from.get("configMapRef")))
    return names - {""}


def _secret_names(spec: Mapping[str, Any]) -> set[str]:
    names = {_name(ref) for ref in _maps(spec.get("imagePullSecrets"))}
    for volume in _maps(spec.get("volumes")):
        for source_field, name_field in _SECRET_VOLUMES:
            value = _map(volume.get(source_field)).get(name_field)
            names.add(value if isinstance(value, str) else _name(value))
        for source in _maps(_map(volume.get("projected")).get("sources")):
            names.add(_name(source.get("secret")))
    for container in _containers(spec):
        for env in _maps(container.get("env")):
            names.add(_name(_map(env.get("valueFrom")).get("secretKeyRef")))
        for env_from in _maps(container.get("envFrom")):
            names.add(_name(env_from.get("secretRef")))
    return names - {""}


def _claim_names(spec: Mapping[str, Any]) -> set[str]:
    names = set()
    for volume in _maps(spec.get("volumes")):
        claim = _map(volume.get("persistentVolumeClaim")).get("claimName")
        names.add(claim if isinstance(claim, str) else "")
    return names - {""}


def pod_dependencies(
    spec: Mapping[str, Any] | None, namespace: str
) -> list[DependentObjectReference]:
    """The ConfigMaps, Secrets, ServiceAccount and PVCs a pod spec refers to, in ``namespace``."""
    spec = _map(spec)
    account = spec.get("serviceAccountName")
    accounts = {account} if isinstance(account, str) and account not in ("", "default") else set()
    groups = (
        ("ConfigMap", _config_map_names(spec)),
        ("Secret", _secret_names(spec)),
        ("ServiceAccount", accounts),
        ("PersistentVolumeClaim", _claim_names(spec)),
    )
    return [
        DependentObjectReference("v1", kind, namespace=namespace, name=name)
        for kind, names in groups
        for name in sorted(names)
    ]
