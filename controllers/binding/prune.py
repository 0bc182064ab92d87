"""Prune removes what a member cluster must not receive from a manifest: the host's own fields.

It follows Karmada's native prune (pkg/resourceinterpreter/default/native/prune), run on every
manifest before it goes into a Work:

- every kind: ``metadata`` creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds,
  generation, managedFields, resourceVersion, selfLink, uid, ownerReferences, finalizers, and
  ``status``;
- Deployment: the ``deployment.kubernetes.io/revision`` and ``revision-history`` annotations;
- Job: ``spec.ttlSecondsAfterFinished`` (the member's TTL controller would delete the Job under
  Karmada's feet); unless ``spec.manualSelector``, the generated selector labels
  (``controller-uid`` and ``batch.kubernetes.io/controller-uid``) from ``spec.selector.matchLabels``
  and those plus ``job-name``/``batch.kubernetes.io/job-name`` from the pod template labels;
- Service: ``spec.clusterIP`` and ``spec.clusterIPs`` unless clusterIP is ``None`` (headless);
- ServiceAccount: the auto-generated ``<name>-token-*`` entries of ``secrets``;
- Secret of type ``kubernetes.io/service-account-token``: ``data`` and the
  ``kubernetes.io/service-account.uid`` annotation;
- PersistentVolumeClaim: the ``volume.kubernetes.io/selected-node`` annotation.

Member-owned values Karmada does not prune here (Service nodePorts and healthCheckNodePort, PVC
volumeName, Pod nodeName) are kept on the member by the interpreter's Retain instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from reconcile.sharding import without_sharding_labels

__all__ = ["prune_manifest"]

_METADATA_FIELDS: Final = (
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
    "ownerReferences",
    "finalizers",
)
# Kubernetes' own names (k8s.io/api, k8s.io/kubectl), not Karmada's.
_DEPLOYMENT_REVISION_ANNOTATIONS: Final = (
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
)
_JOB_SELECTOR_LABELS: Final = ("controller-uid", "batch.kubernetes.io/controller-uid")
_JOB_TEMPLATE_LABELS: Final = (
    *_JOB_SELECTOR_LABELS,
    "job-name",
    "batch.kubernetes.io/job-name",
)
_SERVICE_ACCOUNT_TOKEN_TYPE: Final = "kubernetes.io/service-account-token"
_SERVICE_ACCOUNT_UID_ANNOTATION: Final = "kubernetes.io/service-account.uid"
_SELECTED_NODE_ANNOTATION: Final = "volume.kubernetes.io/selected-node"


def _dict_at(obj: Mapping[str, Any], *path: str) -> dict[str, Any] | None:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, dict) else None


def _drop(mapping: dict[str, Any] | None, keys: tuple[str, ...]) -> None:
    for key in keys:
        if mapping is not None:
            mapping.pop(key, None)


def _deployment(obj: dict[str, Any]) -> None:
    _drop(_dict_at(obj, "metadata", "annotations"), _DEPLOYMENT_REVISION_ANNOTATIONS)


def _job(obj: dict[str, Any]) -> None:
    spec = _dict_at(obj, "spec")
    _drop(spec, ("ttlSecondsAfterFinished",))
    if spec is None or spec.get("manualSelector") is True:
        return
    _drop(_dict_at(spec, "selector", "matchLabels"), _JOB_SELECTOR_LABELS)
    _drop(_dict_at(spec, "template", "metadata", "labels"), _JOB_TEMPLATE_LABELS)


def _service(obj: dict[str, Any]) -> None:
    spec = _dict_at(obj, "spec")
    if spec is not None and "clusterIP" in spec and spec["clusterIP"] != "None":
        _drop(spec, ("clusterIP", "clusterIPs"))


def _service_account(obj: dict[str, Any]) -> None:
    secrets = obj.get("secrets")
    if not isinstance(secrets, list):
        return
    token_prefix = f"{(obj.get('metadata') or {}).get('name', '')}-token-"
    obj["secrets"] = [
        s
        for s in secrets
        if not (isinstance(s, Mapping) and str(s.get("name", "")).startswith(token_prefix))
    ]


def _secret(obj: dict[str, Any]) -> None:
    if obj.get("type") == _SERVICE_ACCOUNT_TOKEN_TYPE:
        _drop(_dict_at(obj, "metadata", "annotations"), (_SERVICE_ACCOUNT_UID_ANNOTATION,))
        # The member's token controller fills the data in for its own service account.
        obj.pop("data", None)


def _persistent_volume_claim(obj: dict[str, Any]) -> None:
    annotations = _dict_at(obj, "metadata", "annotations")
    if annotations and annotations.get(_SELECTED_NODE_ANNOTATION):
        del annotations[_SELECTED_NODE_ANNOTATION]


_BY_KIND: Final[Mapping[str, Callable[[dict[str, Any]], None]]] = {
    "Deployment": _deployment,
    "Job": _job,
    "Service": _service,
    "ServiceAccount": _service_account,
    "Secret": _secret,
    "PersistentVolumeClaim": _persistent_volume_claim,
}


def prune_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``manifest`` without the fields a member cluster must not receive."""
    pruned = copy.deepcopy(dict(manifest))
    metadata = _dict_at(pruned, "metadata")
    _drop(metadata, _METADATA_FIELDS)
    labels = _dict_at(pruned, "metadata", "labels")
    if metadata is not None and labels:
        # The host's sharding of the template is no business of the member's.
        metadata["labels"] = without_sharding_labels(labels)
    pruned.pop("status", None)
    kind_pruner = _BY_KIND.get(str(pruned.get("kind")))
    if kind_pruner is not None:
        kind_pruner(pruned)
    return pruned
