"""Options are what a Client call says besides its object: selectors, patch type, delete options.

They play the part of apimachinery's ListOptions, PatchOptions and DeleteOptions: ``SelectorLike``
label and field selectors, the ``PatchType`` a patch body is sent as, and a delete's
``Preconditions`` and ``PropagationPolicy``. A ``Target`` (kind, name, namespace, subresource)
and ``ListOptions``, ``WatchOptions``, ``WriteOptions``, ``PatchOptions`` and ``DeleteOptions``
carry a call, already normalised, from the client interfaces to the primitives of a client (HTTP,
testenv's fake, the cache). The functions below encode them for a
request, as query parameters and a DeleteOptions body; ``object_identity`` and ``split_target``
read which object a call is about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from reconcile.gvk import GVK

__all__ = [
    "DeleteOptions",
    "ListOptions",
    "PatchOptions",
    "PatchType",
    "Preconditions",
    "PropagationPolicy",
    "SelectorLike",
    "Target",
    "WatchOptions",
    "WriteOptions",
    "delete_options",
    "object_identity",
    "query_params",
    "selector_string",
    "split_target",
]

SelectorLike = str | Mapping[str, str] | None
"""A label or field selector: the string form (``app=web,tier!=db``) or equality pairs."""

PropagationPolicy = Literal["Orphan", "Background", "Foreground"]


class PatchType(StrEnum):
    """How the apiserver interprets a patch body (its Content-Type)."""

    MERGE = "application/merge-patch+json"
    """RFC 7386: maps merge, ``null`` deletes, lists are replaced."""
    JSON = "application/json-patch+json"
    """RFC 6902: a list of operations (``add``, ``remove``, ``replace``, ``test`` …)."""
    STRATEGIC = "application/strategic-merge-patch+json"
    """Merge with per-field list strategies; built-in kinds only (not custom resources)."""
    APPLY = "application/apply-patch+yaml"
    """Server-side apply: the body is the fields this field manager wants to own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Preconditions:
    """Delete only if the object still has this uid and/or resourceVersion (else 409 Conflict)."""

    uid: str | None = None
    resource_version: str | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Preconditions:
        """Both preconditions from an object as last read: delete exactly that version."""
        meta = obj.get("metadata") or {}
        return cls(uid=meta.get("uid"), resource_version=meta.get("resourceVersion"))

    def to_json(self) -> dict[str, str]:
        """The ``preconditions`` field of DeleteOptions."""
        found = {"uid": self.uid, "resourceVersion": self.resource_version}
        return {key: value for key, value in found.items() if value}


class Target(NamedTuple):
    """The object a call is about: its kind, name and namespace, and the subresource if any.

    A named tuple, not a frozen dataclass: every cached get builds one, and a tuple is built in
    half the time (0.29 against 0.61 us), a third of what a get from the cache costs.
    """

    gvk: GVK[Any]
    name: str
    namespace: str | None = None
    subresource: str = ""
    """"" for the object itself, else "status" or "scale"."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOptions:
    """The options of a create or an update, as ``Client.create``'s."""

    field_manager: str | None = None
    """None: the client's own."""
    dry_run: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PatchOptions(WriteOptions):
    """The options of a patch, as ``Client.patch``'s."""

    patch_type: PatchType = PatchType.MERGE
    force: bool = False
    metadata_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    """The options of a list (and the selectors of a deletecollection), as ``Client.list``'s."""

    label_selector: SelectorLike = None
    field_selector: SelectorLike = None
    limit: int | None = None
    continue_: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    metadata_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchOptions:
    """The options of a watch, as ``Client.watch``'s."""

    label_selector: SelectorLike = None
    field_selector: SelectorLike = None
    resource_version: str | None = None
    timeout_seconds: int = 300
    allow_watch_bookmarks: bool = True
    send_initial_events: bool = False
    metadata_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOptions:
    """The options of a delete or deletecollection, as ``Client.delete``'s."""

    propagation_policy: PropagationPolicy | None = None
    grace_period_seconds: int | None = None
    preconditions: Preconditions | None = None
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        """The DeleteOptions body of the request."""
        return delete_options(
            self.propagation_policy, self.grace_period_seconds, self.preconditions, self.dry_run
        )


def selector_string(value: SelectorLike) -> str | None:
    """A selector in its string form; None for no selector."""
    if value is None or isinstance(value, str):
        return value or None
    return ",".join(f"{key}={item}" for key, item in value.items())


def query_params(**params: str | int | bool | None) -> list[tuple[str, str]]:
    """Query parameters with the API's names, leaving out the unset ones."""
    query: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None or value is False:
            continue
        query.append((key, "true" if value is True else str(value)))
    return query


def delete_options(
    propagation_policy: PropagationPolicy | None,
    grace_period_seconds: int | None,
    preconditions: Preconditions | None,
    dry_run: bool,
) -> dict[str, Any]:
    """The DeleteOptions body of a delete or deletecollection request."""
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if preconditions is not None and preconditions.to_json():
        options["preconditions"] = preconditions.to_json()
    if dry_run:
        options["dryRun"] = ["All"]
    return options


def object_identity(obj: Mapping[str, Any]) -> tuple[GVK, str, str | None]:
    """The kind, name and namespace an object names in itself.

    Raises:
        ValueError: the object has no apiVersion/kind or no name.
    """
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return GVK.of(obj), str(name), meta.get("namespace") or None


def split_target(
    target: GVK[Any] | Mapping[str, Any], args: Sequence[Any], namespace: str | None
) -> tuple[GVK, str, str | None, Any]:
    """Split ``(obj, *rest)`` or ``(gvk, name, *rest)`` into kind, name, namespace and the rest."""
    if isinstance(target, GVK):
        if not args or not isinstance(args[0], str):
            raise TypeError(f"a {target.kind} is named by (gvk, name, ...): the name is missing")
        name, *rest = args
        return target, name, namespace, rest[0] if rest else None
    gvk, name, own_namespace = object_identity(target)
    return gvk, name, own_namespace, args[0] if args else None
