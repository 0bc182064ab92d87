"""Objects are Kubernetes objects as plain dicts; these helpers read and change their common parts.

Objects stay the JSON the apiserver sent (camelCase keys). The TypedDicts below describe the parts
the framework reads (metadata, owner references, conditions); the ``*_of`` accessors read them
without copying, so treat what they return as read-only. The mutators (owner references,
finalizers, conditions) change the object in place: copy an object from the cache before calling
them. ``ObjectKey`` is the namespace/name identity of one object, as a Request or a cache key.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Required, TypedDict, cast

from reconcile.gvk import GVK

__all__ = [
    "Obj",
    "deep_copy",
    "object_key",
    "METADATA_API_VERSION",
    "PARTIAL_OBJECT_METADATA",
    "as_partial_object_metadata",
    "CONDITION_MESSAGE_LIMIT",
    "TRUNCATED_MARKER",
    "AlreadyOwned",
    "Condition",
    "ConditionStatus",
    "ObjectKey",
    "ObjectMeta",
    "OwnerReference",
    "add_finalizer",
    "annotations_of",
    "controller_of",
    "deletion_timestamp_of",
    "finalizers_of",
    "generation_of",
    "get_condition",
    "has_finalizer",
    "is_being_deleted",
    "is_condition_false",
    "is_condition_true",
    "labels_of",
    "meta_of",
    "name_of",
    "namespace_of",
    "owner_reference",
    "remove_condition",
    "remove_finalizer",
    "resource_version_of",
    "set_condition",
    "set_controller_reference",
    "set_owner_reference",
    "truncate_message",
    "uid_of",
]

Obj = dict[str, Any]
"""A Kubernetes object as the apiserver sends it: decoded JSON."""


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def deep_copy(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists, scalars); much faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: deep_copy(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) if isinstance(v, dict | list) else v for v in value]
    return value


ConditionStatus = Literal["True", "False", "Unknown"]

CONDITION_MESSAGE_LIMIT: Final = 32_768
"""Characters a condition message may have (metav1.Condition's maxLength, in every Karmada CRD)."""

TRUNCATED_MARKER: Final = " ... (truncated)"
"""What ends a message cut to fit a limit, so a reader knows there was more."""


class OwnerReference(TypedDict, total=False):
    """An entry of ``metadata.ownerReferences``."""

    # Required as in the API (and in reconcile.api.meta.v1.OwnerReference): mypy takes one
    # TypedDict for another only when each key's requiredness matches, so `owner_reference()`
    # fits the ownerReferences of a typed object.
    apiVersion: Required[str]
    kind: Required[str]
    name: Required[str]
    uid: Required[str]
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    """The ``metadata`` of an object: the fields the framework reads."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    finalizers: list[str]
    ownerReferences: list[OwnerReference]
    managedFields: list[dict[str, Any]]


class Condition(TypedDict, total=False):
    """An entry of ``status.conditions`` (metav1.Condition)."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


class AlreadyOwned(ValueError):
    """The object already has a controller other than the one being set."""


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class ObjectKey:
    """The namespace and name of one object; the namespace is "" for cluster-scoped objects."""

    namespace: str = ""
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectKey:
        """The key of an object, from its metadata."""
        return cls(namespace=namespace_of(obj), name=name_of(obj))

    @classmethod
    def parse(cls, key: str) -> ObjectKey:
        """Parse ``namespace/name`` or ``name``."""
        namespace, _, name = key.rpartition("/")
        return cls(namespace=namespace, name=name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# Accessors: they read without copying; the containers they return belong to the object.


def meta_of(obj: Mapping[str, Any]) -> ObjectMeta:
    """The object's metadata (an empty dict, not stored in the object, when it has none)."""
    return cast(ObjectMeta, obj.get("metadata") or {})


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, or ""."""
    return meta_of(obj).get("name", "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, or "" (cluster-scoped, or not set yet)."""
    return meta_of(obj).get("namespace", "")


def uid_of(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``, or "" before the object was created."""
    return meta_of(obj).get("uid", "")


def resource_version_of(obj: Mapping[str, Any]) -> str:
    """``metadata.resourceVersion``, or ""."""
    return meta_of(obj).get("resourceVersion", "")


def generation_of(obj: Mapping[str, Any]) -> int:
    """``metadata.generation``, or 0 for kinds that do not track it."""
    return meta_of(obj).get("generation", 0)


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels`` (read-only view; empty when absent)."""
    return meta_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.annotations`` (read-only view; empty when absent)."""
    return meta_of(obj).get("annotations") or {}


def deletion_timestamp_of(obj: Mapping[str, Any]) -> str | None:
    """``metadata.deletionTimestamp`` (RFC 3339), or None while the object is not being deleted."""
    return meta_of(obj).get("deletionTimestamp")


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    """Whether deletion was requested and finalizers are holding the object."""
    return deletion_timestamp_of(obj) is not None


def finalizers_of(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """``metadata.finalizers``."""
    return tuple(meta_of(obj).get("finalizers") or ())


def _writable(obj: Mapping[str, Any]) -> MutableMapping[str, Any]:
    # The changing helpers take any Mapping so that a typed object (a TypedDict, which is no
    # MutableMapping to a type checker) is accepted; at run time objects are dicts.
    if not isinstance(obj, MutableMapping):
        raise TypeError(f"cannot change a {type(obj).__name__} in place: pass the object's dict")
    return obj


def _metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = _writable(obj).setdefault("metadata", {})
    return metadata


# Owner references.


def owner_reference(owner: Mapping[str, Any], *, controller: bool = False) -> OwnerReference:
    """An owner reference pointing at ``owner``; with ``controller``, also blocking its deletion.

    Raises:
        ValueError: the owner lacks apiVersion, kind, name or uid (it was never created).
    """
    gvk = GVK.of(owner)
    name, uid = name_of(owner), uid_of(owner)
    if not name or not uid:
        raise ValueError(f"owner {gvk.kind} {name!r} has no name or uid: was it created?")
    reference = OwnerReference(apiVersion=gvk.api_version, kind=gvk.kind, name=name, uid=uid)
    if controller:
        reference["controller"] = True
        reference["blockOwnerDeletion"] = True
    return reference


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # Versions of a kind are one object: compare group, kind and name, not the full apiVersion.
    group_a = GVK.from_api_version(str(a.get("apiVersion", "")), "").group
    group_b = GVK.from_api_version(str(b.get("apiVersion", "")), "").group
    return group_a == group_b and a.get("kind") == b.get("kind") and a.get("name") == b.get("name")


def _check_scope(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    # Owners must be cluster-scoped or in the object's namespace, or the GC deletes the object.
    owner_namespace = namespace_of(owner)
    if owner_namespace and owner_namespace != namespace_of(obj):
        raise ValueError(
            f"owner {owner_namespace}/{name_of(owner)} is namespaced and cannot own "
            f"{ObjectKey.of(obj)} from another namespace or cluster scope"
        )


def controller_of(obj: Mapping[str, Any]) -> OwnerReference | None:
    """The owner reference marked ``controller: true``, if any."""
    for reference in meta_of(obj).get("ownerReferences") or ():
        if reference.get("controller"):
            return reference
    return None


def _upsert(obj: Mapping[str, Any], reference: OwnerReference) -> None:
    references: list[OwnerReference] = _metadata(obj).setdefault("ownerReferences", [])
    for index, existing in enumerate(references):
        if _same_owner(existing, reference):
            references[index] = reference
            return
    references.append(reference)


def set_controller_reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    """Make ``owner`` the controller of ``obj`` (in place); idempotent for the same owner.

    Raises:
        AlreadyOwned: another object is already ``obj``'s controller.
        ValueError: the owner was never created, or its namespace cannot own ``obj``.
    """
    reference = owner_reference(owner, controller=True)
    _check_scope(owner, obj)
    current = controller_of(obj)
    if current is not None and not _same_owner(current, reference):
        raise AlreadyOwned(
            f"{ObjectKey.of(obj)} is already controlled by {current.get('kind')} "
            f"{current.get('name')!r}"
        )
    _upsert(obj, reference)


def set_owner_reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    """Add ``owner`` to ``obj``'s owner references (in place), keeping any controller flag.

    Raises:
        ValueError: the owner was never created, or its namespace cannot own ``obj``.
    """
    reference = owner_reference(owner)
    _check_scope(owner, obj)
    for existing in meta_of(obj).get("ownerReferences") or ():
        if _same_owner(existing, reference):
            for flag in ("controller", "blockOwnerDeletion"):
                if flag in existing:
                    reference[flag] = existing[flag]
    _upsert(obj, reference)


# Finalizers.


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Whether ``finalizer`` is in ``metadata.finalizers``."""
    return finalizer in (meta_of(obj).get("finalizers") or ())


def add_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Add ``finalizer`` (in place); returns whether the object changed."""
    finalizers: list[str] = _metadata(obj).setdefault("finalizers", [])
    if finalizer in finalizers:
        return False
    finalizers.append(finalizer)
    return True


def remove_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer`` (in place); returns whether the object changed."""
    metadata = _metadata(obj)
    finalizers: list[str] = metadata.get("finalizers") or []
    kept = [f for f in finalizers if f != finalizer]
    if len(kept) == len(finalizers):
        return False
    metadata["finalizers"] = kept
    return True


# Conditions.


def _conditions(obj: Mapping[str, Any]) -> list[Condition]:
    status = obj.get("status") or {}
    return cast(list[Condition], status.get("conditions") or [])


def get_condition(obj: Mapping[str, Any], type_: str) -> Condition | None:
    """The condition of ``type_`` in ``status.conditions``, if present."""
    for condition in _conditions(obj):
        if condition.get("type") == type_:
            return condition
    return None


def is_condition_true(obj: Mapping[str, Any], type_: str) -> bool:
    """Whether the condition of ``type_`` exists with status "True"."""
    condition = get_condition(obj, type_)
    return condition is not None and condition.get("status") == "True"


def is_condition_false(obj: Mapping[str, Any], type_: str) -> bool:
    """Whether the condition of ``type_`` exists with status "False" (absent or "Unknown": no),
    apimachinery's ``meta.IsStatusConditionFalse``."""
    condition = get_condition(obj, type_)
    return condition is not None and condition.get("status") == "False"


def _timestamp(now: datetime | None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate_message(message: str, limit: int, *, in_bytes: bool = False) -> str:
    """``message`` if it fits in ``limit`` characters (UTF-8 bytes with ``in_bytes``), else its
    start cut to fit together with ``TRUNCATED_MARKER``; a character is never split."""
    size = len(message.encode()) if in_bytes else len(message)
    if size <= limit:
        return message
    room = max(limit - len(TRUNCATED_MARKER), 0)
    head = message.encode()[:room].decode(errors="ignore") if in_bytes else message[:room]
    return head + TRUNCATED_MARKER


def set_condition(
    obj: Mapping[str, Any],
    type_: str,
    status: ConditionStatus | bool,
    reason: str,
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Set the condition ``type_`` in ``status.conditions`` (in place); returns whether it changed.

    ``lastTransitionTime`` moves to ``now`` only when the status changes (or the condition is new);
    reason, message and observedGeneration are always updated. ``observed_generation`` defaults to
    the object's ``metadata.generation`` when it has one. A bool status becomes "True"/"False".
    A message longer than ``CONDITION_MESSAGE_LIMIT`` is truncated (the API would refuse it).
    """
    message = truncate_message(message, CONDITION_MESSAGE_LIMIT)
    value: ConditionStatus = ("True" if status else "False") if isinstance(status, bool) else status
    generation = observed_generation if observed_generation is not None else generation_of(obj)
    wanted = Condition(type=type_, status=value, reason=reason, message=message)
    if generation:
        wanted["observedGeneration"] = generation
    status_: dict[str, Any] = _writable(obj).setdefault("status", {})
    conditions: list[Condition] = status_.setdefault("conditions", [])
    for index, existing in enumerate(conditions):
        if existing.get("type") != type_:
            continue
        transition = existing.get("lastTransitionTime")
        if existing.get("status") != value or not transition:
            transition = _timestamp(now)
        updated = Condition(**wanted, lastTransitionTime=transition)
        if updated == existing:
            return False
        conditions[index] = updated
        return True
    conditions.append(Condition(**wanted, lastTransitionTime=_timestamp(now)))
    return True


def remove_condition(obj: Mapping[str, Any], type_: str) -> bool:
    """Remove the condition of ``type_`` (in place); returns whether it was there."""
    conditions = _conditions(obj)
    kept = [c for c in conditions if c.get("type") != type_]
    if len(kept) == len(conditions):
        return False
    _writable(obj)["status"]["conditions"] = kept
    return True


METADATA_API_VERSION: Final = "meta.k8s.io/v1"
PARTIAL_OBJECT_METADATA: Final = "PartialObjectMetadata"
"""The kind of an object's metadata-only form (apimachinery's ``metav1.PartialObjectMetadata``)."""


def as_partial_object_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The PartialObjectMetadata of an object: its metadata only, typed ``meta.k8s.io/v1``.

    An object in that form already is returned as it is.
    """
    if obj.get("kind") == PARTIAL_OBJECT_METADATA and obj.get("apiVersion") == METADATA_API_VERSION:
        return dict(obj)
    return {
        "apiVersion": METADATA_API_VERSION,
        "kind": PARTIAL_OBJECT_METADATA,
        "metadata": obj.get("metadata") or {},
    }
