"""FakeClient is an in-memory apiserver with the Client interface, for unit tests of controllers.

It is a ``Client`` (same methods, signatures, answers and errors) that keeps objects in memory and
follows the apiserver's rules where controllers notice them, which controller-runtime's fake client
does not:

- a kind registry (plural, scope, status and scale subresources) of common built-in kinds, extended
  by ``install_crds`` from CRD manifests; an unknown kind raises ``NoKindMatch``;
- one resourceVersion counter for every write; a stale resourceVersion is a 409 Conflict; a write
  that changes nothing keeps the version and sends no event;
- uid, creationTimestamp, and metadata.generation bumped when the spec changes;
- status subresources: writes of the object keep its status, ``update_status`` changes only status;
- finalizers: delete marks the object (deletionTimestamp) until its last finalizer is removed;
- merge, JSON and strategic merge patches, server-side apply, the scale subresource;
- lists with selectors, consistent pages and exact past versions, rebuilt from an event log;
- watches replayed from that log and then live, so real informers (``SharedInformer``, ``Cache``)
  run on the fake unchanged; a watch from a version older than the log gets a 410 ERROR event.

Simplified on purpose:

- no validation beyond object names, no defaulting, no admission: CRD schemas are not applied and
  namespaces need not exist;
- strategic merge: maps merge, lists whose items are all objects with a ``name`` merge by name
  (patched items first, in patch order, then the others) and ``$patch: delete`` drops an item;
  other lists are replaced and other ``$`` directives ignored. Custom resources refuse it (415);
- server-side apply merges the body like a strategic merge patch, creating a missing object; field
  ownership (managedFields, conflicts between managers, removing fields a manager stopped
  applying) is not modelled, and ``force`` is accepted without effect;
- no garbage collector and no namespace controller: propagation policies and grace periods are
  accepted and ignored, objects without finalizers go at once, a namespace's objects stay;
- no conversion between the versions of a CRD: objects are served with the version asked for;
- watches send no periodic bookmarks; a successful immediate delete answers a Status.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import re
import secrets
import uuid
from bisect import bisect_right
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, overload

import anyio
import anyio.lowlevel
import orjson
from kubernetes_asyncio.client import Configuration

from reconcile.client import (
    DEFAULT_FIELD_MANAGER,
    Client,
    PatchType,
    Preconditions,
    PropagationPolicy,
    SelectorLike,
)
from reconcile.config import ClusterConfig
from reconcile.errors import ApiError, NoKindMatch, api_error
from reconcile.gvk import GVK, Resource
from reconcile.labels import Selector, parse_selector
from reconcile.ratelimit import RetryAfter, Unlimited
from reconcile.restmapper import RESTMapper
from reconcile.store import Obj, deep_copy
from testenv.crds import load_crds

__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_WATCH_HISTORY",
    "FakeClient",
    "FakeKind",
    "ScalePaths",
]

DEFAULT_WATCH_HISTORY: Final = 10_000
"""Watch events the fake keeps (at least) for watches resuming from an older resourceVersion."""

FAKE_HOST: Final = "https://fake.invalid"
VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
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
_FIELD_CLAUSE = re.compile(r"\s*([^!=\s]+)\s*(!=|==|=)(.*)")

NameRule = Literal["subdomain", "label", "path"]
_GroupKind = tuple[str, str]
_Key = tuple[str, str]  # (namespace or "", name)


# The registry.


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalePaths:
    """Where a kind's scale subresource reads and writes (a CRD's ``subresources.scale``)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None
    """A string selector, or a LabelSelector object (built-in workloads' ``.spec.selector``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeKind:
    """How the fake serves one kind: what discovery and the kind's apiserver strategy say."""

    gvk: GVK
    plural: str
    namespaced: bool = True
    status: bool = False
    """Has the status subresource: writes of the object keep the stored status."""
    scale: ScalePaths | None = None
    generation: bool = False
    """Keeps metadata.generation, bumped when anything but metadata (and status) changes."""
    custom: bool = False
    """A custom resource: no strategic merge patch, and updates need a resourceVersion."""
    short_names: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = ()
    """Field selectors served besides metadata.name and metadata.namespace."""
    names: NameRule = "subdomain"

    @property
    def group_kind(self) -> _GroupKind:
        """Storage is per group and kind: every version of a kind shares its objects."""
        return (self.gvk.group, self.gvk.kind)

    @property
    def qualified(self) -> str:
        """``plural.group``, as the apiserver names the resource in messages."""
        return f"{self.plural}.{self.gvk.group}" if self.gvk.group else self.plural

    @property
    def resource(self) -> Resource:
        """The ``Resource`` the REST mapper would report."""
        subresources = {"status"} if self.status else set()
        if self.scale is not None:
            subresources.add("scale")
        return Resource(
            self.gvk, self.plural, self.namespaced, frozenset(subresources), frozenset(VERBS)
        )


def _builtin(api_version: str, kind: str, plural: str, **options: Any) -> FakeKind:
    return FakeKind(gvk=GVK.from_api_version(api_version, kind), plural=plural, **options)


_WORKLOAD_SCALE: Final = ScalePaths(label_selector=".spec.selector")
_RBAC = "rbac.authorization.k8s.io/v1"

BUILTIN_KINDS: Final[tuple[FakeKind, ...]] = (
    _builtin("v1", "ConfigMap", "configmaps", short_names=("cm",)),
    _builtin("v1", "Secret", "secrets", field_labels=("type",)),
    _builtin(
        "v1",
        "Namespace",
        "namespaces",
        namespaced=False,
        status=True,
        short_names=("ns",),
        field_labels=("status.phase",),
        names="label",
    ),
    _builtin(
        "v1",
        "Pod",
        "pods",
        status=True,
        generation=True,
        short_names=("po",),
        field_labels=(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
    ),
    _builtin("v1", "Service", "services", status=True, short_names=("svc",), names="label"),
    _builtin("v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)),
    _builtin(
        "v1",
        "Event",
        "events",
        short_names=("ev",),
        field_labels=(
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
        ),
    ),
    _builtin(
        "v1",
        "Node",
        "nodes",
        namespaced=False,
        status=True,
        short_names=("no",),
        field_labels=("spec.unschedulable",),
    ),
    _builtin(
        "apps/v1",
        "Deployment",
        "deployments",
        status=True,
        scale=_WORKLOAD_SCALE,
        generation=True,
        short_names=("deploy",),
    ),
    _builtin(
        "apps/v1",
        "ReplicaSet",
        "replicasets",
        status=True,
        scale=_WORKLOAD_SCALE,
        generation=True,
        short_names=("rs",),
        field_labels=("status.replicas",),
    ),
    _builtin(
        "apps/v1",
        "StatefulSet",
        "statefulsets",
        status=True,
        scale=_WORKLOAD_SCALE,
        generation=True,
        short_names=("sts",),
    ),
    _builtin(
        "apps/v1", "DaemonSet", "daemonsets", status=True, generation=True, short_names=("ds",)
    ),
    _builtin("coordination.k8s.io/v1", "Lease", "leases"),
    _builtin(_RBAC, "Role", "roles", names="path"),
    _builtin(_RBAC, "RoleBinding", "rolebindings", names="path"),
    _builtin(_RBAC, "ClusterRole", "clusterroles", namespaced=False, names="path"),
    _builtin(_RBAC, "ClusterRoleBinding", "clusterrolebindings", namespaced=False, names="path"),
    _builtin(
        "batch/v1",
        "Job",
        "jobs",
        status=True,
        generation=True,
        field_labels=("status.successful",),
    ),
    _builtin("batch/v1", "CronJob", "cronjobs", status=True, generation=True, short_names=("cj",)),
)
"""The kinds every FakeClient serves: core, apps, batch, coordination and RBAC."""


def _crd_kinds(crd: Mapping[str, Any]) -> Iterator[FakeKind]:
    """One FakeKind per served version of a CustomResourceDefinition (v1, or v1beta1's layout)."""
    spec = crd["spec"]
    names = spec["names"]
    versions = spec.get("versions") or [{"name": spec["version"]}]
    for version in versions:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or spec.get("subresources") or {}
        scale = subresources.get("scale")
        paths = None
        if scale is not None:
            paths = ScalePaths(
                spec_replicas=scale.get("specReplicasPath", ".spec.replicas"),
                status_replicas=scale.get("statusReplicasPath", ".status.replicas"),
                label_selector=scale.get("labelSelectorPath"),
            )
        selectable = version.get("selectableFields") or ()
        yield FakeKind(
            gvk=GVK(spec["group"], version["name"], names["kind"]),
            plural=names["plural"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            status="status" in subresources,
            scale=paths,
            generation=True,
            custom=True,
            short_names=tuple(names.get("shortNames") or ()),
            field_labels=tuple(str(f["jsonPath"]).lstrip(".") for f in selectable),
        )


# Errors, worded as the apiserver words them.


def _failure(
    code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> ApiError:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": dict(details or {}),
        "code": code,
    }
    return api_error(code, status)


def _details(kind: FakeKind, name: str) -> dict[str, Any]:
    details = {"name": name, "kind": kind.plural}
    if kind.gvk.group:
        details["group"] = kind.gvk.group
    return details


def _not_found(kind: FakeKind, name: str) -> ApiError:
    return _failure(404, "NotFound", f'{kind.qualified} "{name}" not found', _details(kind, name))


def _no_subresource() -> ApiError:
    # What the apiserver answers for a path it does not serve, e.g. configmaps/x/status.
    return _failure(404, "NotFound", "the server could not find the requested resource")


def _conflict(
    kind: FakeKind,
    name: str,
    why: str = "the object has been modified; please apply your changes to the latest version "
    "and try again",
) -> ApiError:
    message = f'Operation cannot be fulfilled on {kind.qualified} "{name}": {why}'
    return _failure(409, "Conflict", message, _details(kind, name))


def _invalid(
    kind: FakeKind, name: str, field: str, detail: str, reason: str = "FieldValueInvalid"
) -> ApiError:
    subject = kind.qualified if kind.custom else kind.gvk.kind
    details = {
        **_details(kind, name),
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }
    return _failure(422, "Invalid", f'{subject} "{name}" is invalid: {field}: {detail}', details)


def _bad_request(message: str) -> ApiError:
    return _failure(400, "BadRequest", message)


def _expired(message: str) -> ApiError:
    return _failure(410, "Expired", message)


def _expired_status(requested: int, oldest: int) -> dict[str, Any]:
    error = _expired(f"too old resource version: {requested} ({oldest})")
    return error.status


# Small helpers on objects.


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _from_wire(obj: Any) -> Any:
    """A private copy of what a caller sends, as the apiserver would decode it from JSON.

    Raises:
        TypeError: a value JSON cannot carry (the real client fails the same way).
    """
    return orjson.loads(orjson.dumps(obj))


def _served(obj: Mapping[str, Any], gvk: GVK) -> Obj:
    """A copy of a stored object for a caller, in the version the caller asked for."""
    copied: Obj = deep_copy(dict(obj))
    copied["apiVersion"] = gvk.api_version
    copied["kind"] = gvk.kind
    return copied


def _identity(obj: Mapping[str, Any]) -> tuple[GVK, str, str | None]:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return GVK.of(obj), str(name), meta.get("namespace") or None


def _target(
    target: GVK | Mapping[str, Any], args: Sequence[Any], namespace: str | None
) -> tuple[GVK, str, str | None, Any]:
    """Split ``(obj, *rest)`` or ``(gvk, name, *rest)``, exactly as the real client does."""
    if isinstance(target, GVK):
        if not args or not isinstance(args[0], str):
            raise TypeError(f"a {target.kind} is named by (gvk, name, ...): the name is missing")
        name, *rest = args
        return target, name, namespace, rest[0] if rest else None
    gvk, name, own_namespace = _identity(target)
    return gvk, name, own_namespace, args[0] if args else None


def _key(kind: FakeKind, name: str, namespace: str | None) -> _Key:
    if not kind.namespaced:
        return ("", name)
    if not namespace:
        raise ValueError(f"{kind.gvk.kind} is namespaced: {name!r} needs a namespace")
    return (namespace, name)


def _path_parts(path: str) -> builtins.list[str]:
    return [part for part in path.split(".") if part]


def _path_get(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in _path_parts(path):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _path_set(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = _path_parts(path)
    current = obj
    for part in parents:
        child = current.get(part)
        if not isinstance(child, dict):
            child = current[part] = {}
        current = child
    current[last] = value


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


def _selector_text(value: SelectorLike) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    return ",".join(f"{key}={item}" for key, item in value.items())


def _label_selector_string(spec: Mapping[str, Any]) -> str:
    """A LabelSelector object in its string form, sorted by key as Kubernetes prints it."""
    clauses = [(key, f"{key}={value}") for key, value in (spec.get("matchLabels") or {}).items()]
    for expression in spec.get("matchExpressions") or ():
        key, operator = expression["key"], expression["operator"]
        values = ",".join(sorted(expression.get("values") or ()))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }[operator]
        clauses.append((key, text))
    return ",".join(text for _, text in sorted(clauses))


def _scale_of(kind: FakeKind, obj: Mapping[str, Any]) -> Obj:
    """The autoscaling/v1 Scale of an object, read through the kind's scale paths."""
    paths = kind.scale
    assert paths is not None  # callers check the kind has a scale subresource
    meta = obj["metadata"]
    kept = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    replicas = _path_get(obj, paths.spec_replicas)
    status: dict[str, Any] = {"replicas": _path_get(obj, paths.status_replicas) or 0}
    if paths.label_selector:
        selector = _path_get(obj, paths.label_selector)
        if isinstance(selector, Mapping):
            selector = _label_selector_string(selector)
        if selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {field: meta[field] for field in kept if field in meta},
        # Go's Scale omits zero replicas from the spec (omitempty), never from the status.
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


# Selectors.


@dataclass(frozen=True, slots=True)
class _FieldClause:
    path: str
    value: str
    equal: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        found = _path_get(obj, self.path)
        if isinstance(found, bool):
            text = "true" if found else "false"
        else:
            text = "" if found is None else str(found)
        return (text == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class _Filter:
    """Which objects of a kind a list or watch selects: namespace, labels, fields."""

    namespace: str | None
    labels: Selector
    fields: tuple[_FieldClause, ...]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and all(
            clause.matches(obj) for clause in self.fields
        )


def _filter(
    kind: FakeKind,
    namespace: str | None,
    label_selector: SelectorLike,
    field_selector: SelectorLike,
) -> _Filter:
    """Parse selectors as the apiserver does.

    Raises:
        BadRequest: a selector that does not parse, or a field the kind cannot select on.
    """
    try:
        labels = parse_selector(_selector_text(label_selector))
    except ValueError as error:
        raise _bad_request(f"unable to parse requirement: {error}") from None
    allowed = {"metadata.name", "metadata.namespace", *kind.field_labels}
    clauses = []
    for clause in filter(None, _selector_text(field_selector).split(",")):
        match = _FIELD_CLAUSE.fullmatch(clause)
        if match is None:
            raise _bad_request(f"invalid selector: '{clause}'; can't understand '{clause}'")
        field, operator, value = match.groups()
        if field not in allowed:
            raise _bad_request(f"field label not supported: {field}")
        clauses.append(_FieldClause(field, value.strip(), operator != "!="))
    return _Filter(namespace if kind.namespaced else None, labels, tuple(clauses))


# Patches.


class _PatchError(ValueError):
    """A patch that cannot be applied to the object (the apiserver answers 422 Invalid)."""


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge recursively, ``null`` deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged


def _strategic_merge(target: Any, patch: Any) -> Any:
    """A strategic merge patch as the fake models it (see the module docstring)."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    if patch.get("$patch") == "replace":
        return {k: deep_copy(v) for k, v in patch.items() if not k.startswith("$")}
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # $setElementOrder/…, $retainKeys, $patch: directives not modelled
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, list):
            current = merged.get(key)
            merged[key] = _merge_list(current if isinstance(current, list) else [], value)
        else:
            merged[key] = _strategic_merge(merged.get(key), value)
    return merged


def _named(items: Sequence[Any]) -> bool:
    return all(isinstance(item, dict) and "name" in item for item in items)


def _merge_list(current: builtins.list[Any], patch: builtins.list[Any]) -> builtins.list[Any]:
    if not (_named(patch) and _named(current)):
        return [_strategic_merge(None, item) for item in patch]
    by_name = {item["name"]: item for item in current}
    merged = [
        _strategic_merge(by_name.get(item["name"]), item)
        for item in patch
        if item.get("$patch") != "delete"
    ]
    patched = {item["name"] for item in patch}
    return merged + [deep_copy(item) for item in current if item["name"] not in patched]


def _pointer(path: Any) -> builtins.list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise _PatchError(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]


def _index(token: str, size: int) -> int:
    if not token.isdigit() or (token != "0" and token.startswith("0")) or int(token) >= size:
        raise _PatchError(f"array index {token!r} is out of range")
    return int(token)


def _resolve(doc: Any, tokens: Sequence[str]) -> Any:
    for token in tokens:
        if isinstance(doc, dict):
            if token not in doc:
                raise _PatchError(f"path /{'/'.join(tokens)} does not exist")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(token, len(doc))]
        else:
            raise _PatchError(f"path /{'/'.join(tokens)} does not exist")
    return doc


def _add(doc: Any, tokens: Sequence[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _resolve(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else _index(last, len(parent) + 1), value)
    else:
        raise _PatchError(f"cannot add to /{'/'.join(tokens)}: the parent is not a container")
    return doc


def _remove(doc: Any, tokens: Sequence[str]) -> Any:
    if not tokens:
        raise _PatchError("cannot remove the whole document")
    parent, last = _resolve(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _PatchError(f"cannot remove /{'/'.join(tokens)}: it does not exist")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, len(parent)))
    raise _PatchError(f"cannot remove /{'/'.join(tokens)}: the parent is not a container")


def _json_patch(doc: Any, operations: Any) -> Any:
    """Apply RFC 6902 operations (add, remove, replace, move, copy, test) to a copy of ``doc``.

    Raises:
        ValueError: an operation failed (a ``test`` mismatch, a missing path…); ``doc`` is intact.
    """
    if not isinstance(operations, list):
        raise _PatchError("a JSON patch is a list of operations")
    result = deep_copy(doc)
    for operation in operations:
        if not isinstance(operation, dict):
            raise _PatchError(f"not an operation: {operation!r}")
        op, path = operation.get("op"), _pointer(operation.get("path"))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise _PatchError(f"{op} at {operation.get('path')} needs a value")
        if op == "add":
            result = _add(result, path, deep_copy(operation["value"]))
        elif op == "remove":
            _remove(result, path)
        elif op == "replace":
            if path:
                _remove(result, path)
            result = _add(result, path, deep_copy(operation["value"]))
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from"))
            if op == "move" and path[: len(source)] == source and path != source:
                raise _PatchError("cannot move a value into one of its own children")
            value = _remove(result, source) if op == "move" else deep_copy(_resolve(result, source))
            result = _add(result, path, value)
        elif op == "test":
            if _resolve(result, path) != operation["value"]:
                raise _PatchError(
                    f"test failed: {operation.get('path')} is not {operation['value']!r}"
                )
        else:
            raise _PatchError(f"unknown operation {op!r}")
    return result


def _patched(doc: Obj, body: Any, patch_type: PatchType) -> Obj:
    """``doc`` with ``body`` applied (``doc`` is not changed).

    Raises:
        ValueError: a JSON patch failed, or the result is not an object.
    """
    result: Any
    if patch_type is PatchType.JSON:
        result = _json_patch(doc, body)
    elif patch_type is PatchType.MERGE:
        result = _merge_patch(deep_copy(doc), body)
    else:
        result = _strategic_merge(deep_copy(doc), body)
    if not isinstance(result, dict) or not isinstance(result.get("metadata"), dict):
        raise _PatchError("the patched document is not an object with metadata")
    return result


# Watches.


@dataclass(frozen=True, slots=True)
class _Change:
    """One committed write, as the event log keeps it; ``obj`` and ``prev`` are never mutated."""

    resource_version: int
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    group_kind: _GroupKind
    key: _Key
    obj: Obj
    prev: Obj | None


class _Watch:
    """One open watch: replays the event log after its cursor, then waits for more writes."""

    def __init__(
        self, fake: FakeClient, kind: FakeKind, gvk: GVK, matcher: _Filter, deadline: float
    ) -> None:
        self._fake = fake
        self._group_kind = kind.group_kind
        self._gvk = gvk
        self._matcher = matcher
        self._deadline = deadline
        self._pending: deque[Obj] = deque()
        self._ended = False
        self.cursor = 0
        self.closed = False

    def __aiter__(self) -> _Watch:
        return self

    async def __anext__(self) -> Obj:
        await anyio.lowlevel.checkpoint()
        while not self.closed:
            if self._pending:
                return self._pending.popleft()
            if self._ended:
                break
            # Taken before the scan: a write committed after the scan still wakes this wait.
            changed = self._fake._next_change()
            self._catch_up()
            if self._pending or self._ended:
                continue
            remaining = self._deadline - anyio.current_time()
            if remaining <= 0:
                break  # timeout_seconds passed: the server ends the watch
            with anyio.move_on_after(remaining):
                await changed.wait()
        raise StopAsyncIteration

    def close(self) -> None:
        """End the stream; a task waiting for the next event wakes and stops."""
        self.closed = True
        self._fake._notify()

    def start_from_state(self, *, bookmark: bool) -> None:
        """Send the current objects as ADDED (resourceVersion "0", or WatchList), then go live."""
        fake = self._fake
        objects = fake._objects[self._group_kind]
        for key in sorted(objects):
            if self._matcher.matches(objects[key]):
                self._pending.append({"type": "ADDED", "object": _served(objects[key], self._gvk)})
        self.cursor = fake._rv
        if bookmark:
            meta = {"resourceVersion": str(fake._rv), "annotations": {INITIAL_EVENTS_END: "true"}}
            bookmark_object = {"apiVersion": self._gvk.api_version, "kind": self._gvk.kind}
            self._pending.append(
                {"type": "BOOKMARK", "object": {**bookmark_object, "metadata": meta}}
            )

    def _catch_up(self) -> None:
        fake = self._fake
        if self.cursor < fake._compacted:
            # Events this watch needs are gone: ask the client to list again, as etcd would.
            status = _expired_status(self.cursor, fake._compacted + 1)
            self._pending.append({"type": "ERROR", "object": status})
            self._ended = True
            return
        for change in fake._changes_after(self.cursor):
            self.cursor = change.resource_version
            if change.group_kind == self._group_kind:
                event = self._event(change)
                if event is not None:
                    self._pending.append(event)

    def _event(self, change: _Change) -> Obj | None:
        # As the apiserver's watch cache: an object that stops matching is DELETED for this watch,
        # one that starts matching is ADDED.
        before = change.prev is not None and self._matcher.matches(change.prev)
        now = change.type != "DELETED" and self._matcher.matches(change.obj)
        if now:
            kind = "MODIFIED" if before else "ADDED"
            return {"type": kind, "object": _served(change.obj, self._gvk)}
        if not before:
            return None
        if change.type == "DELETED":
            return {"type": "DELETED", "object": _served(change.obj, self._gvk)}
        assert change.prev is not None
        gone = _served(change.prev, self._gvk)
        gone["metadata"]["resourceVersion"] = str(change.resource_version)
        return {"type": "DELETED", "object": gone}


# The fake client.


def _continue_token(resource_version: int, after: _Key) -> str:
    raw = orjson.dumps({"rv": resource_version, "after": list(after)})
    return base64.urlsafe_b64encode(raw).decode()


def _parse_continue(token: str) -> tuple[int, _Key]:
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = decoded["after"]
        return int(decoded["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError):
        raise _bad_request(f"continue key is not valid: {token!r}") from None


def _parse_version(value: str) -> int:
    if not value.isdigit():
        raise _bad_request(f"resourceVersion: Invalid value: {value!r}: must be an integer")
    return int(value)


class FakeClient(Client):
    """An in-memory apiserver with the ``Client`` interface; see the module docstring.

    Args:
        objects: preloaded as by ``seed`` (after ``crds`` are installed).
        crds: CustomResourceDefinitions (dicts, or YAML/JSON files and directories of them).
        kinds: more kinds to serve besides ``BUILTIN_KINDS`` (e.g. an aggregated API).
        field_manager: kept for code that reads it; the fake records no managedFields.
        history: watch events kept for watches resuming from an older resourceVersion (older
            ones get a 410 ERROR event). Defaults to 10000.
    """

    def __init__(
        self,
        *,
        objects: Iterable[Mapping[str, Any]] = (),
        crds: Iterable[Mapping[str, Any] | Path | str] = (),
        kinds: Iterable[FakeKind] = (),
        field_manager: str = DEFAULT_FIELD_MANAGER,
        history: int = DEFAULT_WATCH_HISTORY,
    ) -> None:
        # Client.__init__ prepares an HTTP connection; the fake sets the attributes callers read
        # itself. The host can never resolve, so a request that slipped through goes nowhere.
        self.config = ClusterConfig(Configuration(host=FAKE_HOST), source="testenv.fake")
        self.field_manager = field_manager
        self.limiter = Unlimited()
        self.retry = RetryAfter()
        self.request_timeout = None
        self.mapper = RESTMapper(self._discovery, min_refresh_interval=0)
        self.write_guard = None
        self._api = None
        self._kinds: dict[GVK, FakeKind] = {}
        self._objects: dict[_GroupKind, dict[_Key, Obj]] = {}
        self._log: builtins.list[_Change] = []
        self._history = max(history, 1)
        self._compacted = 0
        # The empty store is version 1: a list of it must not answer "0", which a watch reads
        # as "send the current state first" instead of "everything after this version".
        self._rv = 1
        self._changed: anyio.Event | None = None
        self._watches: set[_Watch] = set()
        for kind in (*BUILTIN_KINDS, *kinds):
            self.register(kind)
        self.install_crds(crds)
        self.seed(*objects)

    def __repr__(self) -> str:
        count = sum(len(objects) for objects in self._objects.values())
        return f"FakeClient(objects={count}, resourceVersion={self._rv})"

    # --- setting up ------------------------------------------------------------------------------

    def register(self, kind: FakeKind) -> None:
        """Serve ``kind`` (replacing what was registered for its GVK); its objects are kept."""
        self._kinds[kind.gvk] = kind
        self._objects.setdefault(kind.group_kind, {})
        self.mapper.invalidate()

    def install_crds(
        self, crds: Iterable[Mapping[str, Any] | Path | str]
    ) -> builtins.list[Resource]:
        """Serve the kinds of CustomResourceDefinitions: dicts, or files and directories of them.

        Status and scale subresources, scope, short names and selectable fields come from the
        CRD. Returns the resources now served, one per served version.

        Raises:
            ValueError: a dict is not a CustomResourceDefinition, or a file does not parse.
            FileNotFoundError: a path does not exist.
        """
        manifests: builtins.list[Mapping[str, Any]] = []
        paths: builtins.list[Path | str] = []
        for crd in crds:
            if isinstance(crd, Mapping):
                if crd.get("kind") != "CustomResourceDefinition":
                    raise ValueError(f"not a CustomResourceDefinition: kind {crd.get('kind')!r}")
                manifests.append(crd)
            else:
                paths.append(crd)
        manifests += load_crds(paths)
        installed = []
        for crd in manifests:
            for kind in _crd_kinds(crd):
                self.register(kind)
                installed.append(kind.resource)
        return installed

    def seed(self, *objects: Mapping[str, Any]) -> builtins.list[Obj]:
        """Store objects as given, status and deletionTimestamp included; returns them as stored.

        Synchronous, so fixtures may call it before an event loop runs. The server still sets
        resourceVersion, and uid, creationTimestamp and generation unless given.

        Raises:
            AlreadyExists: the name is taken.
            NoKindMatch: the kind is not served.
            ValueError: a namespaced object without a namespace, or a deletionTimestamp without
                finalizers (the apiserver would have deleted that object).
        """
        seeded = []
        for obj in objects:
            gvk = GVK.of(obj)
            kind = self._kind(gvk)
            namespace = (obj.get("metadata") or {}).get("namespace")
            if kind.namespaced and not namespace:
                raise ValueError(f"{gvk.kind} is namespaced: metadata.namespace is required")
            seeded.append(_served(self._insert(kind, gvk, obj, seeding=True, dry_run=False), gvk))
        return seeded

    def compact(self) -> None:
        """Forget the event log, as etcd compaction does: a watch (or a list's continue token)
        from an older resourceVersion then gets 410 Expired and its reflector lists again."""
        self._compacted = self._rv
        self._log.clear()

    def end_watches(self) -> None:
        """End every open watch stream, as an apiserver restart would; reflectors re-watch."""
        for stream in builtins.list(self._watches):
            stream.close()

    async def close(self) -> None:
        """End open watches. The fake keeps its objects and stays usable."""
        self.end_watches()

    # --- internals: lookups, commits, the event log ---------------------------------------------

    def _kind(self, gvk: GVK) -> FakeKind:
        kind = self._kinds.get(gvk)
        if kind is None:
            raise NoKindMatch(f"no resource is served for {gvk}")
        return kind

    def _stored(self, kind: FakeKind, key: _Key) -> Obj:
        obj = self._objects[kind.group_kind].get(key)
        if obj is None:
            raise _not_found(kind, key[1])
        return obj

    def _guard(
        self,
        method: str,
        kind: FakeKind,
        namespace: str | None,
        name: str | None,
        subresource: str = "",
    ) -> None:
        # The same hook as the real client's, with the path the request would have used.
        if self.write_guard is not None:
            path = kind.resource.path(namespace, name)
            self.write_guard(method, f"{path}/{subresource}" if subresource else path)

    def _next_change(self) -> anyio.Event:
        # Created lazily: seeding may happen before an event loop runs.
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def _changes_after(self, resource_version: int) -> builtins.list[_Change]:
        start = bisect_right(self._log, resource_version, key=lambda c: c.resource_version)
        return self._log[start:]

    def _commit(
        self, kind: FakeKind, key: _Key, new: Obj, *, prev: Obj | None, deleted: bool, dry_run: bool
    ) -> Obj:
        """Store ``new`` (or delete it) at the next resourceVersion, log it and wake watches."""
        if dry_run:
            return new
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        objects = self._objects[kind.group_kind]
        change_type: Literal["ADDED", "MODIFIED", "DELETED"]
        if deleted:
            del objects[key]
            change_type = "DELETED"
        else:
            objects[key] = new
            change_type = "ADDED" if prev is None else "MODIFIED"
        self._log.append(_Change(self._rv, change_type, kind.group_kind, key, new, prev))
        if len(self._log) > 2 * self._history:  # trimmed in batches: appends stay O(1)
            drop = len(self._log) - self._history
            self._compacted = self._log[drop - 1].resource_version
            del self._log[:drop]
        self._notify()
        return new

    def _state_at(self, group_kind: _GroupKind, resource_version: int) -> Mapping[_Key, Obj]:
        """The objects of a kind as they were at ``resource_version`` (the log goes back to it)."""
        current = self._objects[group_kind]
        if resource_version >= self._rv:
            return current
        state = dict(current)
        for change in reversed(self._log):
            if change.resource_version <= resource_version:
                break
            if change.group_kind != group_kind:
                continue
            if change.prev is None:
                state.pop(change.key, None)
            else:
                state[change.key] = change.prev
        return state

    def _read_version(
        self, resource_version: str | None, match: str | None, token: str | None
    ) -> tuple[int, _Key | None]:
        """The version a list reads at, and the key a continued list resumes after."""
        if token:
            at, after = _parse_continue(token)
            if at < self._compacted:
                raise _expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
            return at, after
        if resource_version in (None, "", "0"):
            return self._rv, None
        wanted = _parse_version(resource_version)
        if wanted > self._rv:
            message = f"Too large resource version: {wanted}, current: {self._rv}"
            raise _failure(504, "Timeout", message, {"retryAfterSeconds": 1})
        if match != "Exact":
            return self._rv, None  # NotOlderThan: the newest state is not older
        if wanted < self._compacted:
            raise _expired(f"too old resource version: {wanted} ({self._compacted + 1})")
        return wanted, None

    def _generate_name(self, kind: FakeKind, namespace: str, prefix: str) -> str:
        objects = self._objects[kind.group_kind]
        while True:
            name = prefix + "".join(secrets.choice(NAME_ALPHABET) for _ in range(5))
            if (namespace, name) not in objects:
                return name

    def _insert(
        self, kind: FakeKind, gvk: GVK, obj: Mapping[str, Any], *, seeding: bool, dry_run: bool
    ) -> Obj:
        """Create: server fields set, name validated; seeding keeps status and given fields."""
        new: Obj = _from_wire(dict(obj))
        new["apiVersion"], new["kind"] = gvk.api_version, gvk.kind
        meta = new["metadata"] = dict(new.get("metadata") or {})
        if not kind.namespaced:
            meta.pop("namespace", None)  # the apiserver drops it for cluster-scoped kinds
        namespace = str(meta.get("namespace") or "")
        if not seeding:
            if meta.get("resourceVersion"):
                raise _bad_request("resourceVersion should not be set on objects to be created")
            for field in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
                meta.pop(field, None)
            meta.pop("deletionGracePeriodSeconds", None)
            if kind.status:
                new.pop("status", None)  # set through the status subresource only
        elif meta.get("deletionTimestamp") and not meta.get("finalizers"):
            raise ValueError("a seeded object with a deletionTimestamp needs finalizers")
        name = str(meta.get("name") or "")
        if not name and meta.get("generateName"):
            name = self._generate_name(kind, namespace, str(meta["generateName"]))
        if not name:
            field, detail = "metadata.name", "Required value: name or generateName is required"
            raise _invalid(kind, name, field, detail, "FieldValueRequired")
        problem = _name_problem(kind.names, name)
        if problem:
            raise _invalid(kind, name, "metadata.name", problem)
        meta["name"] = name
        key = (namespace, name)
        if key in self._objects[kind.group_kind]:
            message = f'{kind.qualified} "{name}" already exists'
            raise _failure(409, "AlreadyExists", message, _details(kind, name))
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", _now())
        if kind.generation:
            meta.setdefault("generation", 1)
        else:
            meta.pop("generation", None)
        meta.pop("resourceVersion", None)
        return self._commit(kind, key, _normalized(new), prev=None, deleted=False, dry_run=dry_run)

    def _check_version(
        self, kind: FakeKind, stored: Obj, incoming: Mapping[str, Any], *, required: bool
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
            raise _conflict(kind, name, why + current["uid"])
        version = meta.get("resourceVersion")
        if not version:
            if required:
                detail = "Invalid value: 0: must be specified for an update"
                raise _invalid(kind, name, "metadata.resourceVersion", detail)
        elif version != current["resourceVersion"]:
            raise _conflict(kind, name)

    def _replace(
        self, kind: FakeKind, gvk: GVK, stored: Obj, incoming: Mapping[str, Any], dry_run: bool
    ) -> Obj:
        """Write the whole object: server fields and (with the subresource) status are kept."""
        new: Obj = _from_wire(dict(incoming))
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
            added = [
                f for f in meta.get("finalizers") or () if f not in current.get("finalizers", ())
            ]
            if added:
                detail = (
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {added}"
                )
                raise _invalid(
                    kind, current["name"], "metadata.finalizers", detail, "FieldValueForbidden"
                )
        if kind.generation and _spec_of(kind, new) != _spec_of(kind, stored):
            meta["generation"] = int(current.get("generation") or 0) + 1
        return self._update(kind, stored, _normalized(new), dry_run)

    def _update(self, kind: FakeKind, stored: Obj, new: Obj, dry_run: bool) -> Obj:
        """Commit an update, unless it changes nothing; removing the last finalizer of an object
        being deleted deletes it."""
        if new == stored:
            return stored  # no new resourceVersion and no event, as etcd skips an equal write
        meta = new["metadata"]
        key = (str(meta.get("namespace") or ""), str(meta["name"]))
        deleted = bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")
        return self._commit(kind, key, new, prev=stored, deleted=deleted, dry_run=dry_run)

    def _write_status(
        self, kind: FakeKind, stored: Obj, incoming: Mapping[str, Any], dry_run: bool
    ) -> Obj:
        new = deep_copy(stored)
        status = incoming.get("status")
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = _from_wire(status)
        return self._update(kind, stored, new, dry_run)

    def _delete(self, kind: FakeKind, stored: Obj, dry_run: bool) -> tuple[Obj, bool]:
        """Delete, or mark for deletion while finalizers remain; returns the object and whether
        it is gone."""
        meta = stored["metadata"]
        key = (str(meta.get("namespace") or ""), str(meta["name"]))
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return stored, False  # already marked: nothing changes
            new = deep_copy(stored)
            marked = new["metadata"]
            marked["deletionTimestamp"] = _now()
            marked["deletionGracePeriodSeconds"] = 0
            if marked.get("generation"):
                marked["generation"] += 1  # as the apiserver does when it marks an object
            return self._commit(kind, key, new, prev=stored, deleted=False, dry_run=dry_run), False
        final = deep_copy(stored)
        return self._commit(kind, key, final, prev=stored, deleted=True, dry_run=dry_run), True

    async def _discovery(self, path: str) -> Any:
        """Discovery documents for the REST mapper, generated from the registry."""
        await anyio.lowlevel.checkpoint()
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            groups: dict[str, builtins.list[str]] = {}
            for gvk in self._kinds:
                versions = groups.setdefault(gvk.group, [])
                if gvk.group and gvk.version not in versions:
                    versions.append(gvk.version)
            return {
                "kind": "APIGroupList",
                "groups": [
                    {
                        "name": group,
                        "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in vs],
                        "preferredVersion": {"groupVersion": f"{group}/{vs[0]}", "version": vs[0]},
                    }
                    for group, vs in groups.items()
                    if group
                ],
            }
        group, _, version = path.removeprefix("/api/").removeprefix("/apis/").rpartition("/")
        resources: builtins.list[dict[str, Any]] = []
        for kind in self._kinds.values():
            if (kind.gvk.group, kind.gvk.version) != (group, version):
                continue
            entry = {"name": kind.plural, "kind": kind.gvk.kind, "namespaced": kind.namespaced}
            resources.append(
                {
                    **entry,
                    "singularName": kind.gvk.kind.lower(),
                    "verbs": builtins.list(VERBS),
                    "shortNames": builtins.list(kind.short_names),
                }
            )
            for sub in sorted(kind.resource.subresources):
                sub_kind = "Scale" if sub == "scale" else kind.gvk.kind
                verbs = ["get", "patch", "update"]
                resources.append(
                    {**entry, "name": f"{kind.plural}/{sub}", "kind": sub_kind, "verbs": verbs}
                )
        if not resources:
            raise _no_subresource()
        group_version = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}

    # --- reads -----------------------------------------------------------------------------------

    async def resource_for(self, gvk: GVK) -> Resource:
        """How the fake serves ``gvk``.

        Raises:
            NoKindMatch: the kind is not registered.
        """
        await anyio.lowlevel.checkpoint()
        return self._kind(gvk).resource

    async def get(self, gvk: GVK, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """The object ``name`` of kind ``gvk``, as a copy.

        Raises:
            NotFound: no such object.
            NoKindMatch: the kind is not served.
            ValueError: a namespaced kind without a namespace.
        """
        await anyio.lowlevel.checkpoint()
        kind = self._kind(gvk)
        return _served(self._stored(kind, _key(kind, name, namespace)), gvk)

    async def list(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> dict[str, Any]:
        """One List object, ordered by namespace and name; items carry apiVersion and kind.

        Field selectors: metadata.name, metadata.namespace and the kind's field labels, with
        ``=``, ``==`` and ``!=``. Pages (``limit``/``continue_``) are one consistent snapshot;
        ``resource_version_match="Exact"`` reads the past from the event log.

        Raises:
            BadRequest: a selector that does not parse or selects on an unsupported field.
            Gone: the continue token or exact version is older than the event log.
            NoKindMatch: the kind is not served.
        """
        await anyio.lowlevel.checkpoint()
        kind = self._kind(gvk)
        matcher = _filter(kind, namespace, label_selector, field_selector)
        at, after = self._read_version(resource_version, resource_version_match, continue_)
        objects = self._state_at(kind.group_kind, at)
        keys = sorted(
            key
            for key, obj in objects.items()
            if (after is None or key > after) and matcher.matches(obj)
        )
        page = keys[:limit] if limit else keys
        meta: dict[str, Any] = {"resourceVersion": str(at)}
        if len(page) < len(keys):
            meta["continue"] = _continue_token(at, page[-1])
            meta["remainingItemCount"] = len(keys) - len(page)
        return {
            "apiVersion": gvk.api_version,
            "kind": f"{gvk.kind}List",
            "metadata": meta,
            "items": [_served(objects[key], gvk) for key in page],
        }

    async def get_status(
        self, gvk: GVK, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The object read through its status subresource.

        Raises:
            NotFound: no such object, or the kind has no status subresource.
        """
        if not self._kind(gvk).status:
            raise _no_subresource()
        return await self.get(gvk, name, namespace=namespace)

    # --- writes of whole objects -----------------------------------------------------------------

    async def create(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Create ``obj``; returns it as stored (uid, creationTimestamp, resourceVersion,
        generation set; status dropped where it is a subresource).

        Raises:
            AlreadyExists: the name is taken.
            BadRequest: ``obj`` carries a resourceVersion.
            Invalid: no name or generateName, or an invalid name.
            NoKindMatch: the kind is not served.
            ValueError: ``obj`` lacks apiVersion/kind, or a namespace for a namespaced kind.
        """
        await anyio.lowlevel.checkpoint()
        gvk = GVK.of(obj)
        kind = self._kind(gvk)
        namespace = (obj.get("metadata") or {}).get("namespace") or None
        if kind.namespaced and not namespace:
            raise ValueError(f"{gvk.kind} is namespaced: metadata.namespace is required")
        self._guard("POST", kind, namespace, None)
        return _served(self._insert(kind, gvk, obj, seeding=False, dry_run=dry_run), gvk)

    async def update(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Replace ``obj``; its ``metadata.resourceVersion`` makes this an optimistic update.

        Raises:
            Conflict: the resourceVersion is stale.
            NotFound: no such object.
            Invalid: a custom resource without a resourceVersion; a finalizer added to an object
                being deleted.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace = _identity(obj)
        kind = self._kind(gvk)
        key = _key(kind, name, namespace)
        self._guard("PUT", kind, namespace, name)
        stored = self._stored(kind, key)
        self._check_version(kind, stored, obj, required=kind.custom)
        return _served(self._replace(kind, gvk, stored, obj, dry_run), gvk)

    async def update_status(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Replace ``obj``'s status through the status subresource; everything else is ignored.

        Raises:
            Conflict: the resourceVersion is stale.
            NotFound: no such object, or the kind has no status subresource.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, namespace = _identity(obj)
        kind = self._kind(gvk)
        if not kind.status:
            raise _no_subresource()
        key = _key(kind, name, namespace)
        self._guard("PUT", kind, namespace, name, "status")
        stored = self._stored(kind, key)
        self._check_version(kind, stored, obj, required=kind.custom)
        return _served(self._write_status(kind, stored, obj, dry_run), gvk)

    # --- patches ---------------------------------------------------------------------------------

    @overload
    async def patch(
        self,
        obj: Mapping[str, Any],
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def patch(
        self,
        gvk: GVK,
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch an object (default: JSON merge patch); returns the patched object.

        A resourceVersion the patch sets is a precondition (Conflict when stale). APPLY creates
        a missing object.

        Raises:
            NotFound: no such object (apply creates instead).
            Conflict: the patch sets a stale resourceVersion.
            Invalid: a JSON patch operation failed (a ``test`` included), as the apiserver says.
            ApiError: 415 for a strategic merge patch of a custom resource.
            ValueError: ``force`` with a patch type other than APPLY.
        """
        gvk, name, ns, body = _target(target, args, namespace)
        return await self._patch_stored(gvk, name, ns, "", body, patch_type, force, dry_run)

    async def _patch_stored(
        self,
        gvk: GVK,
        name: str,
        namespace: str | None,
        subresource: Literal["", "status"],
        body: Any,
        patch_type: PatchType,
        force: bool,
        dry_run: bool,
    ) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        if force and patch_type is not PatchType.APPLY:
            raise ValueError("force is only valid for server-side apply (PatchType.APPLY)")
        kind = self._kind(gvk)
        if subresource and not kind.status:
            raise _no_subresource()
        key = _key(kind, name, namespace)
        self._guard("PATCH", kind, namespace, name, subresource)
        stored = self._objects[kind.group_kind].get(key)
        if stored is None:
            if patch_type is not PatchType.APPLY or subresource:
                raise _not_found(kind, name)
            return _served(self._apply_create(kind, gvk, name, namespace, body, dry_run), gvk)
        if patch_type is PatchType.STRATEGIC and kind.custom:
            message = (
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml"
            )
            raise _failure(415, "UnsupportedMediaType", message)
        try:
            patched = _patched(stored, _from_wire(body), patch_type)
        except _PatchError as error:
            raise _failure(422, "Invalid", f"the patch could not be applied: {error}") from None
        self._check_version(kind, stored, patched, required=False)
        if subresource:
            return _served(self._write_status(kind, stored, patched, dry_run), gvk)
        return _served(self._replace(kind, gvk, stored, patched, dry_run), gvk)

    def _apply_create(
        self, kind: FakeKind, gvk: GVK, name: str, namespace: str | None, body: Any, dry_run: bool
    ) -> Obj:
        if not isinstance(body, Mapping):
            raise _bad_request("an apply patch is an object")
        meta = {**(body.get("metadata") or {}), "name": name}
        if namespace:
            meta["namespace"] = namespace
        meta.pop("resourceVersion", None)
        obj = {**body, "metadata": meta}
        return self._insert(kind, gvk, obj, seeding=False, dry_run=dry_run)

    @overload
    async def patch_status(
        self,
        obj: Mapping[str, Any],
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def patch_status(
        self,
        gvk: GVK,
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        force: bool = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def patch_status(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch the status subresource, like ``patch``; only the status changes.

        Raises:
            NotFound: no such object, or the kind has no status subresource.
        """
        gvk, name, ns, body = _target(target, args, namespace)
        return await self._patch_stored(gvk, name, ns, "status", body, patch_type, force, dry_run)

    # --- deletes ---------------------------------------------------------------------------------

    @overload
    async def delete(
        self,
        obj: Mapping[str, Any],
        /,
        *,
        propagation_policy: PropagationPolicy | None = ...,
        grace_period_seconds: int | None = ...,
        preconditions: Preconditions | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def delete(
        self,
        gvk: GVK,
        name: str,
        /,
        *,
        namespace: str | None = ...,
        propagation_policy: PropagationPolicy | None = ...,
        grace_period_seconds: int | None = ...,
        preconditions: Preconditions | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def delete(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Preconditions | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object: answers a Success Status, or the object when finalizers hold it
        (marked with deletionTimestamp until an update removes the last one).

        ``propagation_policy`` and ``grace_period_seconds`` are accepted and ignored.

        Raises:
            NotFound: no such object.
            Conflict: a precondition (uid, resourceVersion) does not hold.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, ns, _ = _target(target, args, namespace)
        kind = self._kind(gvk)
        key = _key(kind, name, ns)
        self._guard("DELETE", kind, ns, name)
        stored = self._stored(kind, key)
        if preconditions is not None:
            self._check_preconditions(kind, stored, preconditions)
        obj, gone = self._delete(kind, stored, dry_run)
        if not gone:
            return _served(obj, gvk)
        details = {**_details(kind, name), "uid": obj["metadata"]["uid"]}
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def _check_preconditions(self, kind: FakeKind, stored: Obj, wanted: Preconditions) -> None:
        meta, name = stored["metadata"], stored["metadata"]["name"]
        if wanted.uid and wanted.uid != meta["uid"]:
            raise _conflict(
                kind,
                name,
                f"the UID in the precondition ({wanted.uid}) does not match the UID in record "
                f"({meta['uid']}). The object might have been deleted and then recreated",
            )
        if wanted.resource_version and wanted.resource_version != meta["resourceVersion"]:
            raise _conflict(
                kind,
                name,
                f"the ResourceVersion in the precondition ({wanted.resource_version}) does not "
                f"match the ResourceVersion in record ({meta['resourceVersion']}). The object "
                "might have been modified",
            )

    async def delete_all_of(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete every matching object (finalizers hold theirs); answers a List of them.

        Raises:
            ValueError: a namespaced kind without a namespace.
            BadRequest: a selector that does not parse.
            NoKindMatch: the kind is not served.
        """
        await anyio.lowlevel.checkpoint()
        kind = self._kind(gvk)
        if kind.namespaced and not namespace:
            raise ValueError(f"{gvk.kind} is namespaced: delete_all_of needs a namespace")
        matcher = _filter(kind, namespace, label_selector, field_selector)
        self._guard("DELETE", kind, namespace, None)
        objects = self._objects[kind.group_kind]
        chosen = [objects[key] for key in sorted(objects) if matcher.matches(objects[key])]
        items = [_served(self._delete(kind, obj, dry_run)[0], gvk) for obj in chosen]
        return {
            "apiVersion": gvk.api_version,
            "kind": f"{gvk.kind}List",
            "metadata": {"resourceVersion": str(self._rv)},
            "items": items,
        }

    # --- the scale subresource -------------------------------------------------------------------

    def _scalable(self, gvk: GVK, name: str, namespace: str | None) -> tuple[FakeKind, Obj]:
        kind = self._kind(gvk)
        if kind.scale is None:
            raise _no_subresource()
        return kind, self._stored(kind, _key(kind, name, namespace))

    def _write_scale(
        self, kind: FakeKind, gvk: GVK, stored: Obj, scale: Mapping[str, Any], dry_run: bool
    ) -> Obj:
        assert kind.scale is not None
        self._check_version(kind, stored, scale, required=False)
        new = deep_copy(stored)
        _path_set(new, kind.scale.spec_replicas, (scale.get("spec") or {}).get("replicas", 0))
        return _scale_of(kind, self._replace(kind, gvk, stored, new, dry_run))

    async def get_scale(
        self, gvk: GVK, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The object's autoscaling/v1 Scale, read through the kind's scale paths.

        Raises:
            NotFound: no such object, or the kind has no scale subresource.
        """
        await anyio.lowlevel.checkpoint()
        kind, stored = self._scalable(gvk, name, namespace)
        return _scale_of(kind, stored)

    async def update_scale(
        self,
        gvk: GVK,
        scale: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Set the replicas of the ``gvk`` object named in ``scale``'s metadata.

        Raises:
            Conflict: ``scale`` carries a stale resourceVersion.
            NotFound: no such object, or the kind has no scale subresource.
        """
        await anyio.lowlevel.checkpoint()
        meta = scale.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), meta.get("namespace") or None
        kind, stored = self._scalable(gvk, name, namespace)
        self._guard("PUT", kind, namespace, name, "scale")
        return self._write_scale(kind, gvk, stored, scale, dry_run)

    @overload
    async def patch_scale(
        self,
        obj: Mapping[str, Any],
        patch: Any,
        /,
        *,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    async def patch_scale(
        self,
        gvk: GVK,
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        field_manager: str | None = ...,
        dry_run: bool = ...,
    ) -> dict[str, Any]: ...

    async def patch_scale(
        self,
        target: GVK | Mapping[str, Any],
        /,
        *args: Any,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch the Scale, e.g. ``{"spec": {"replicas": 3}}``; returns the new Scale.

        Raises:
            NotFound: no such object, or the kind has no scale subresource.
            Invalid: a JSON patch operation failed.
        """
        await anyio.lowlevel.checkpoint()
        gvk, name, ns, body = _target(target, args, namespace)
        kind, stored = self._scalable(gvk, name, ns)
        self._guard("PATCH", kind, ns, name, "scale")
        try:
            patched = _patched(_scale_of(kind, stored), _from_wire(body), patch_type)
        except _PatchError as error:
            raise _failure(422, "Invalid", f"the patch could not be applied: {error}") from None
        return self._write_scale(kind, gvk, stored, patched, dry_run)

    # --- watches ---------------------------------------------------------------------------------

    def watch(
        self,
        gvk: GVK,
        *,
        namespace: str | None = None,
        label_selector: SelectorLike = None,
        field_selector: SelectorLike = None,
        resource_version: str | None = None,
        timeout_seconds: int = 300,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """Watch changes of kind ``gvk`` after ``resource_version``: ``async with`` it for an
        iterator of raw events that ends after ``timeout_seconds``, on ``end_watches()``, or when
        the block is left.

        Without a version (or "0") the current objects come first as ADDED events;
        ``send_initial_events`` adds the BOOKMARK annotated ``k8s.io/initial-events-end``. A
        version older than the event log yields one ERROR event (410 Expired) and the end.

        Raises:
            BadRequest: a selector or resourceVersion that does not parse.
            NoKindMatch: the kind is not served.
        """
        return self._watch(
            gvk,
            namespace,
            label_selector,
            field_selector,
            resource_version,
            timeout_seconds,
            initial=send_initial_events or resource_version in (None, "", "0"),
            bookmark=send_initial_events and allow_watch_bookmarks,
        )

    @contextlib.asynccontextmanager
    async def _watch(
        self,
        gvk: GVK,
        namespace: str | None,
        label_selector: SelectorLike,
        field_selector: SelectorLike,
        resource_version: str | None,
        timeout_seconds: int,
        *,
        initial: bool,
        bookmark: bool,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        await anyio.lowlevel.checkpoint()
        kind = self._kind(gvk)
        matcher = _filter(kind, namespace, label_selector, field_selector)
        deadline = anyio.current_time() + timeout_seconds
        stream = _Watch(self, kind, gvk, matcher, deadline)
        if initial or not resource_version:
            stream.start_from_state(bookmark=bookmark)
        else:
            stream.cursor = _parse_version(resource_version)
        self._watches.add(stream)
        try:
            yield stream
        finally:
            self._watches.discard(stream)
            stream.close()
