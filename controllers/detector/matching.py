"""Matching decides which propagation policy a resource template belongs to, as Karmada does.

Candidates are the PropagationPolicies of the template's own namespace and every
ClusterPropagationPolicy whose resource selectors match the template; policies being deleted do
not count. A namespaced policy always beats a cluster policy. Among one kind: higher
``spec.priority`` first, then the implicit priority of the best matching selector (by name 3 >
by label selector 2 > apiVersion and kind only 1; a name makes the label selector ignored), then
the smaller name. A resource selector whose label selector Kubernetes would refuse (``validation``)
selects nothing, and so does a policy whose spec does not have the CRD's types.

A template records its policy in claim metadata: the label
``propagationpolicy.karmada.io/permanent-id`` (the policy's own label of that name, a uuid) and
the annotations ``propagationpolicy.karmada.io/namespace`` and ``.../name`` (cluster policies:
``clusterpropagationpolicy.karmada.io/permanent-id`` and ``.../name``). A claimed template stays
with its policy while that policy exists and still selects it, unless a candidate preempts it: a
policy with ``preemption: Always`` takes templates from lower-priority policies of its kind, and a
namespaced one takes them from any cluster policy. Everything here is pure (a policy version's
validation verdict is remembered, which changes no answer).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from controllers.api import (
    CLUSTER_PROPAGATION_POLICY_GVK,
    CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION,
    CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    PROPAGATION_POLICY_NAME_ANNOTATION,
    PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
    PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    preemption_of,
    priority_of,
    propagation_spec,
)
from controllers.binding import PRIORITY_MISMATCH, selectors_priority
from controllers.detector.validation import resource_selector_problems, spec_shape_problems
from reconcile import (
    annotations_of,
    is_being_deleted,
    labels_of,
    name_of,
    namespace_of,
    resource_version_of,
    uid_of,
)

__all__ = [
    "CLUSTER_POLICY_FINALIZER",
    "Changes",
    "Claim",
    "POLICY_FINALIZER",
    "apply_changes",
    "candidates",
    "choose",
    "claim_changes",
    "claim_of",
    "claimed_by",
    "implicit_priority",
    "is_cluster_policy",
    "merge_patch",
    "valid_selectors",
    "pending_changes",
    "permanent_id_label",
    "policy_id",
    "preempts",
    "release_changes",
    "spec_changed",
]

POLICY_FINALIZER: Final = "karmada.io/propagation-policy-controller"
"""Held by a PropagationPolicy until the claims on its templates are removed."""
CLUSTER_POLICY_FINALIZER: Final = "karmada.io/cluster-propagation-policy-controller"
"""Held by a ClusterPropagationPolicy until the claims on its templates are removed."""

# Fields that change without the user changing the object: ignored when comparing versions.
_VOLATILE_METADATA: Final = ("resourceVersion", "managedFields", "generation")

Obj = Mapping[str, Any]
PolicyT = TypeVar("PolicyT", bound=Mapping[str, Any])


@dataclass(frozen=True)
class Changes:
    """Labels and annotations to set (a string) or remove (None) on an object."""

    labels: Mapping[str, str | None]
    annotations: Mapping[str, str | None]


@dataclass(frozen=True)
class Claim:
    """The policy a template or binding says it belongs to (``namespace`` "" for a cluster one)."""

    cluster: bool
    namespace: str
    name: str
    id: str


def is_cluster_policy(policy: Obj) -> bool:
    """Whether ``policy`` is a ClusterPropagationPolicy (else a PropagationPolicy)."""
    return policy.get("kind") == CLUSTER_PROPAGATION_POLICY_GVK.kind


def permanent_id_label(policy: Obj) -> str:
    """The permanent-id label key of this kind of policy."""
    if is_cluster_policy(policy):
        return CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL
    return PROPAGATION_POLICY_PERMANENT_ID_LABEL


def policy_id(policy: Obj) -> str | None:
    """The policy's permanent id (its own permanent-id label), None until one is assigned."""
    return labels_of(policy).get(permanent_id_label(policy)) or None


def implicit_priority(policy: Obj, template: Obj) -> int:
    """How specifically ``policy`` selects ``template`` (0: it does not).

    A PropagationPolicy selects only in its own namespace, so never a cluster-scoped template; a
    policy whose spec lacks the CRD's types selects nothing.
    """
    if not is_cluster_policy(policy) and namespace_of(template) != namespace_of(policy):
        return PRIORITY_MISMATCH
    valid = valid_selectors(policy)
    if valid is None:
        return PRIORITY_MISMATCH
    return selectors_priority(template, valid)


class _SelectorMemo:
    """Each stored policy version's valid resource selectors, for the last MEMO_SIZE versions.

    Validating a policy's spec against the CRD's types cost the detector a third of its time
    for a template whose binding is up to date: one template's reconcile validates every policy
    of its namespace about four times (claim, candidates, rank), and after a relist or a
    leadership change every template is reconciled. A (uid, resourceVersion) names one stored
    version, which never changes, so its verdict is kept.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._verdicts: OrderedDict[tuple[str, str], tuple[Mapping[str, Any], ...] | None] = (
            OrderedDict()
        )

    def valid(self, policy: Obj) -> tuple[Mapping[str, Any], ...] | None:
        key = (uid_of(policy), resource_version_of(policy))
        if not all(key):
            return _validate(policy)  # not a stored object (built in memory): nothing to key on
        if key in self._verdicts:
            self._verdicts.move_to_end(key)
            return self._verdicts[key]
        verdict = self._verdicts[key] = _validate(policy)
        if len(self._verdicts) > self._size:
            self._verdicts.popitem(last=False)
        return verdict


def _validate(policy: Obj) -> tuple[Mapping[str, Any], ...] | None:
    if spec_shape_problems(policy):
        return None
    selectors = propagation_spec(policy).get("resourceSelectors") or []
    return tuple(s for s in selectors if not resource_selector_problems(s))


MEMO_SIZE: Final = 4096
"""Policy versions whose verdicts are kept (far more policies than a control plane has)."""
_memo = _SelectorMemo(MEMO_SIZE)


def valid_selectors(policy: Obj) -> tuple[Mapping[str, Any], ...] | None:
    """The resource selectors of ``policy`` that Kubernetes would accept; None when its spec
    lacks the CRD's types (it selects nothing). Kept per stored version (uid, resourceVersion);
    the selectors returned are shared: read them, never change them."""
    return _memo.valid(policy)


def _rank(policy: Obj, template: Obj) -> tuple[int, int, int, str]:
    cluster = 1 if is_cluster_policy(policy) else 0
    spec = propagation_spec(policy)
    return (cluster, -priority_of(spec), -implicit_priority(policy, template), name_of(policy))


def candidates(template: Obj, policies: Iterable[PolicyT]) -> list[PolicyT]:
    """The policies that select ``template``, best first (see the module docstring)."""
    matching = [
        p
        for p in policies
        if not is_being_deleted(p) and implicit_priority(p, template) > PRIORITY_MISMATCH
    ]
    return sorted(matching, key=lambda policy: _rank(policy, template))


def _same(a: Obj, b: Obj) -> bool:
    keys = (is_cluster_policy(a), namespace_of(a), name_of(a))
    return keys == (is_cluster_policy(b), namespace_of(b), name_of(b))


def preempts(candidate: Obj, claimed: Obj) -> bool:
    """Whether ``candidate`` takes a template away from the policy that ``claimed`` it."""
    if _same(candidate, claimed) or preemption_of(propagation_spec(candidate)) != "Always":
        return False
    if is_cluster_policy(candidate) != is_cluster_policy(claimed):
        # A namespaced policy preempts any cluster policy, never the other way round.
        return not is_cluster_policy(candidate)
    return priority_of(propagation_spec(candidate)) > priority_of(propagation_spec(claimed))


def choose(template: Obj, claimed: PolicyT | None, policies: Iterable[PolicyT]) -> PolicyT | None:
    """The policy ``template`` should belong to: the best candidate when unclaimed; else the
    claiming policy, unless a candidate ranked above it preempts it.

    ``claimed`` must be the policy the template's claim names, still selecting it (or None).
    """
    ranked = candidates(template, policies)
    if claimed is None:
        return ranked[0] if ranked else None
    for policy in ranked:
        if _same(policy, claimed) or preempts(policy, claimed):
            return policy
    return claimed


def claim_of(obj: Obj) -> Claim | None:
    """The claim recorded on a template or binding, None when it carries none."""
    labels, annotations = labels_of(obj), annotations_of(obj)
    name = annotations.get(PROPAGATION_POLICY_NAME_ANNOTATION)
    namespace = annotations.get(PROPAGATION_POLICY_NAMESPACE_ANNOTATION)
    if name and namespace:
        return Claim(False, namespace, name, labels.get(PROPAGATION_POLICY_PERMANENT_ID_LABEL, ""))
    name = annotations.get(CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION)
    if name:
        identifier = labels.get(CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL, "")
        return Claim(True, "", name, identifier)
    return None


def claimed_by(claim: Claim, policy: Obj) -> bool:
    """Whether ``claim`` names ``policy`` as it is now (same kind, name and permanent id)."""
    if claim.cluster != is_cluster_policy(policy) or claim.name != name_of(policy):
        return False
    if not claim.cluster and claim.namespace != namespace_of(policy):
        return False
    return bool(claim.id) and claim.id == policy_id(policy)


def claim_changes(policy: Obj, identifier: str) -> Changes:
    """The metadata that claims an object for ``policy``, dropping a claim of the other kind."""
    if is_cluster_policy(policy):
        labels = {
            CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL: identifier,
            PROPAGATION_POLICY_PERMANENT_ID_LABEL: None,
        }
        annotations = {
            CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION: name_of(policy),
            PROPAGATION_POLICY_NAMESPACE_ANNOTATION: None,
            PROPAGATION_POLICY_NAME_ANNOTATION: None,
        }
        return Changes(labels, annotations)
    labels = {
        PROPAGATION_POLICY_PERMANENT_ID_LABEL: identifier,
        CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL: None,
    }
    annotations = {
        PROPAGATION_POLICY_NAMESPACE_ANNOTATION: namespace_of(policy),
        PROPAGATION_POLICY_NAME_ANNOTATION: name_of(policy),
        CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION: None,
    }
    return Changes(labels, annotations)


def release_changes(cluster: bool) -> Changes:
    """The metadata that removes a claim of a cluster (or namespaced) policy."""
    if cluster:
        return Changes(
            {CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL: None},
            {CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION: None},
        )
    return Changes(
        {PROPAGATION_POLICY_PERMANENT_ID_LABEL: None},
        {PROPAGATION_POLICY_NAMESPACE_ANNOTATION: None, PROPAGATION_POLICY_NAME_ANNOTATION: None},
    )


def _differing(current: Mapping[str, str], wanted: Mapping[str, str | None]) -> dict[str, Any]:
    return {key: value for key, value in wanted.items() if current.get(key) != value}


def pending_changes(obj: Obj, changes: Changes) -> Changes | None:
    """The part of ``changes`` that ``obj`` does not reflect yet, None when nothing is left."""
    labels = _differing(labels_of(obj), changes.labels)
    annotations = _differing(annotations_of(obj), changes.annotations)
    return Changes(labels, annotations) if labels or annotations else None


def merge_patch(changes: Changes, resource_version: str | None = None) -> dict[str, Any]:
    """A JSON merge patch making ``changes`` (null removes a key); with ``resource_version`` it
    applies only to that version of the object (409 Conflict otherwise)."""
    metadata: dict[str, Any] = {"resourceVersion": resource_version} if resource_version else {}
    if changes.labels:
        metadata["labels"] = dict(changes.labels)
    if changes.annotations:
        metadata["annotations"] = dict(changes.annotations)
    return {"metadata": metadata}


def _apply(
    metadata: MutableMapping[str, Any], field: str, values: Mapping[str, str | None]
) -> None:
    current = dict(metadata.get(field) or {})
    for key, value in values.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    metadata[field] = current


def apply_changes(obj: MutableMapping[str, Any], changes: Changes) -> None:
    """Make ``changes`` on ``obj`` in place."""
    metadata = obj.setdefault("metadata", {})
    _apply(metadata, "labels", changes.labels)
    _apply(metadata, "annotations", changes.annotations)


def _comparable(obj: Obj) -> dict[str, Any]:
    shown = {key: value for key, value in obj.items() if key != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_METADATA}
    shown["metadata"] = metadata
    return shown


def spec_changed(old: Obj, new: Obj) -> bool:
    """Whether an update changed more than status, resourceVersion, managedFields, generation."""
    return _comparable(old) != _comparable(new)
