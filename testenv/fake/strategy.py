"""Strategy is how the fake writes objects, as the apiserver's per-kind REST strategies do.

Creates get their server fields (uid, creationTimestamp, generation) and a validated name;
updates keep the server's fields and, for kinds with the status subresource, the stored status;
the uid and resourceVersion a write carries are checked against the stored ones; generation is
bumped when the spec changes; deletes of objects with finalizers only mark them, and removing
the last finalizer of a marked object deletes it. Writes that change nothing commit nothing.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Mapping
from typing import Any, Final

from reconcile.client.client import PatchType, Preconditions
from reconcile.gvk import GVK
from reconcile.objects import Obj, deep_copy
from testenv.fake.errors import (
    bad_request,
    conflict,
    details_of,
    failure,
    invalid,
    not_found,
)
from testenv.fake.objects import Key, from_wire, now
from testenv.fake.patches import patch_document
from testenv.fake.registry import FakeKind, NameRule
from testenv.fake.store import Store

__all__ = [
    "apply_create",
    "check_preconditions",
    "check_version",
    "delete",
    "insert",
    "patch",
    "replace",
    "stored_object",
    "update",
    "write_status",
]

# Metadata only the server writes: kept from the stored object on every update.
SERVER_FIELDS: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
# Go's omitempty drops these when empty, so [] and absent are the same object on the wire.
OMITTED_WHEN_EMPTY: Final = ("labels", "annotations", "finalizers", "ownerReferences")
NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"  # generateName suffixes, as the apiserver
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _normalized(obj: Obj) -> Obj:
    meta = obj["metadata"]
    for field in OMITTED_WHEN_EMPTY:
        if field in meta and not meta[field]:
            del meta[field]
    meta.pop("managedFields", None)  # the fake tracks no field managers
    meta.pop("selfLink", None)
    return obj


def _spec_of(kind: FakeKind, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a generation counts: all but metadata, and status when it is a subresource."""
    skipped = {"apiVersion", "kind", "metadata"} | ({"status"} if kind.status else set())
    return {key: value for key, value in obj.items() if key not in skipped}


def _name_problem(rule: NameRule, name: str) -> str | None:
    if rule == "path":
        if name in (".", ".."):
            return f"Invalid value: \"{name}\": may not be '.' or '..'"
        if "/" in name or "%" in name:
            return f"Invalid value: \"{name}\": may not contain '/' or '%'"
        return None
    limit, pattern = (63, _LABEL) if rule == "label" else (253, _SUBDOMAIN)
    if len(name) <= limit and pattern.fullmatch(name):
        return None
    allowed = "'-'" if rule == "label" else "'-' or '.'"
    return (
        f'Invalid value: "{name}": a lowercase RFC 1123 {rule} must consist of lower case '
        f"alphanumeric characters or {allowed}, start and end with an alphanumeric character, "
        f"and be at most {limit} characters"
    )


def _generate_name(store: Store, kind: FakeKind, namespace: str, prefix: str) -> str:
    objects = store.objects[kind.group_kind]
    while True:
        name = prefix + "".join(secrets.choice(NAME_ALPHABET) for _ in range(5))
        if (namespace, name) not in objects:
            return name


def stored_object(store: Store, kind: FakeKind, key: Key) -> Obj:
    """The stored object (not a copy).

    Raises:
        NotFound: no such object.
    """
    obj = store.objects[kind.group_kind].get(key)
    if obj is None:
        raise not_found(kind, key[1])
    return obj


def insert(
    store: Store,
    kind: FakeKind,
    gvk: GVK,
    obj: Mapping[str, Any],
    *,
    seeding: bool,
    dry_run: bool,
) -> Obj:
    """Create: server fields set, name validated; seeding keeps status and given fields."""
    new: Obj = from_wire(dict(obj))
    new["apiVersion"], new["kind"] = gvk.api_version, gvk.kind
    meta = new["metadata"] = dict(new.get("metadata") or {})
    if not kind.namespaced:
        meta.pop("namespace", None)  # the apiserver drops it for cluster-scoped kinds
    namespace = str(meta.get("namespace") or "")
    if not seeding:
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(field, None)
        meta.pop("deletionGracePeriodSeconds", None)
        if kind.status:
            new.pop("status", None)  # set through the status subresource only
    elif meta.get("deletionTimestamp") and not meta.get("finalizers"):
        raise ValueError("a seeded object with a deletionTimestamp needs finalizers")
    name = str(meta.get("name") or "")
    if not name and meta.get("generateName"):
        name = _generate_name(store, kind, namespace, str(meta["generateName"]))
    if not name:
        field, detail = "metadata.name", "Required value: name or generateName is required"
        raise invalid(kind, name, field, detail, "FieldValueRequired")
    problem = _name_problem(kind.names, name)
    if problem:
        raise invalid(kind, name, "metadata.name", problem)
    meta["name"] = name
    key = (namespace, name)
    if key in store.objects[kind.group_kind]:
        message = f'{kind.qualified} "{name}" already exists'
        raise failure(409, "AlreadyExists", message, details_of(kind, name))
    meta.setdefault("uid", str(uuid.uuid4()))
    meta.setdefault("creationTimestamp", now())
    if kind.generation:
        meta.setdefault("generation", 1)
    else:
        meta.pop("generation", None)
    meta.pop("resourceVersion", None)
    return store.commit(
        kind.group_kind, key, _normalized(new), prev=None, deleted=False, dry_run=dry_run
    )


def apply_create(
    store: Store,
    kind: FakeKind,
    gvk: GVK,
    name: str,
    namespace: str | None,
    body: Any,
    dry_run: bool,
) -> Obj:
    """Create the object a server-side apply names, from the applied body.

    Raises:
        BadRequest: the body is not an object.
    """
    if not isinstance(body, Mapping):
        raise bad_request("an apply patch is an object")
    meta = {**(body.get("metadata") or {}), "name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.pop("resourceVersion", None)
    obj = {**body, "metadata": meta}
    return insert(store, kind, gvk, obj, seeding=False, dry_run=dry_run)


def check_version(
    kind: FakeKind, stored: Obj, incoming: Mapping[str, Any], *, required: bool
) -> None:
    """Optimistic concurrency: the incoming uid and resourceVersion must be the stored ones.

    Raises:
        Conflict: a different uid, or a stale resourceVersion.
        Invalid: no resourceVersion where the kind requires one (custom resources' PUT).
    """
    meta, current = incoming.get("metadata") or {}, stored["metadata"]
    name = current["name"]
    uid = meta.get("uid")
    if uid and uid != current["uid"]:
        why = f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
        raise conflict(kind, name, why + current["uid"])
    version = meta.get("resourceVersion")
    if not version:
        if required:
            detail = "Invalid value: 0: must be specified for an update"
            raise invalid(kind, name, "metadata.resourceVersion", detail)
    elif version != current["resourceVersion"]:
        raise conflict(kind, name)


def check_preconditions(kind: FakeKind, stored: Obj, wanted: Preconditions) -> None:
    """A delete's preconditions: the stored object must have the uid and resourceVersion given.

    Raises:
        Conflict: a precondition does not hold.
    """
    meta, name = stored["metadata"], stored["metadata"]["name"]
    if wanted.uid and wanted.uid != meta["uid"]:
        raise conflict(
            kind,
            name,
            f"the UID in the precondition ({wanted.uid}) does not match the UID in record "
            f"({meta['uid']}). The object might have been deleted and then recreated",
        )
    if wanted.resource_version and wanted.resource_version != meta["resourceVersion"]:
        raise conflict(
            kind,
            name,
            f"the ResourceVersion in the precondition ({wanted.resource_version}) does not "
            f"match the ResourceVersion in record ({meta['resourceVersion']}). The object "
            "might have been modified",
        )


def patch(
    store: Store,
    kind: FakeKind,
    gvk: GVK,
    stored: Obj,
    body: Any,
    patch_type: PatchType,
    *,
    status: bool,
    dry_run: bool,
) -> Obj:
    """Write the stored object patched by ``body``; with ``status``, only its status.

    A resourceVersion the patch sets is a precondition.

    Raises:
        ApiError: 415 for a strategic merge patch of a custom resource.
        Invalid: the patch cannot be applied.
        Conflict: the patch sets a stale resourceVersion.
    """
    if patch_type is PatchType.STRATEGIC and kind.custom:
        message = (
            "the body of the request was in an unknown format - accepted media types "
            "include: application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml"
        )
        raise failure(415, "UnsupportedMediaType", message)
    patched = patch_document(stored, body, patch_type)
    check_version(kind, stored, patched, required=False)
    if status:
        return write_status(store, kind, stored, patched, dry_run)
    return replace(store, kind, gvk, stored, patched, dry_run)


def replace(
    store: Store,
    kind: FakeKind,
    gvk: GVK,
    stored: Obj,
    incoming: Mapping[str, Any],
    dry_run: bool,
) -> Obj:
    """Write the whole object: server fields and (with the subresource) status are kept."""
    new: Obj = from_wire(dict(incoming))
    new["apiVersion"], new["kind"] = gvk.api_version, gvk.kind
    meta = new["metadata"] = dict(new.get("metadata") or {})
    current = stored["metadata"]
    for field in SERVER_FIELDS:
        if field in current:
            meta[field] = current[field]
        else:
            meta.pop(field, None)
    if kind.status:
        if "status" in stored:
            new["status"] = deep_copy(stored["status"])
        else:
            new.pop("status", None)
    if current.get("deletionTimestamp"):
        added = [f for f in meta.get("finalizers") or () if f not in current.get("finalizers", ())]
        if added:
            detail = (
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {added}"
            )
            raise invalid(
                kind, current["name"], "metadata.finalizers", detail, "FieldValueForbidden"
            )
    if kind.generation and _spec_of(kind, new) != _spec_of(kind, stored):
        meta["generation"] = int(current.get("generation") or 0) + 1
    return update(store, kind, stored, _normalized(new), dry_run)


def update(store: Store, kind: FakeKind, stored: Obj, new: Obj, dry_run: bool) -> Obj:
    """Commit an update, unless it changes nothing; removing the last finalizer of an object
    being deleted deletes it."""
    if new == stored:
        return stored  # no new resourceVersion and no event, as etcd skips an equal write
    meta = new["metadata"]
    key = (str(meta.get("namespace") or ""), str(meta["name"]))
    deleted = bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")
    return store.commit(kind.group_kind, key, new, prev=stored, deleted=deleted, dry_run=dry_run)


def write_status(
    store: Store, kind: FakeKind, stored: Obj, incoming: Mapping[str, Any], dry_run: bool
) -> Obj:
    """Write only the status of ``incoming``; the rest of the stored object is kept."""
    new = deep_copy(stored)
    status = incoming.get("status")
    if status is None:
        new.pop("status", None)
    else:
        new["status"] = from_wire(status)
    return update(store, kind, stored, new, dry_run)


def delete(store: Store, kind: FakeKind, stored: Obj, dry_run: bool) -> tuple[Obj, bool]:
    """Delete, or mark for deletion while finalizers remain; returns the object and whether
    it is gone."""
    meta = stored["metadata"]
    key = (str(meta.get("namespace") or ""), str(meta["name"]))
    group_kind = kind.group_kind
    if meta.get("finalizers"):
        if meta.get("deletionTimestamp"):
            return stored, False  # already marked: nothing changes
        new = deep_copy(stored)
        marked = new["metadata"]
        marked["deletionTimestamp"] = now()
        marked["deletionGracePeriodSeconds"] = 0
        if marked.get("generation"):
            marked["generation"] += 1  # as the apiserver does when it marks an object
        return store.commit(
            group_kind, key, new, prev=stored, deleted=False, dry_run=dry_run
        ), False
    final = deep_copy(stored)
    return store.commit(group_kind, key, final, prev=stored, deleted=True, dry_run=dry_run), True
