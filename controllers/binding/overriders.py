"""Overriders change one object the way one override rule says, in Karmada's fixed order.

A rule's ``overriders`` run as image, command, args, labels, annotations, field, plaintext
(pkg/util/overridemanager); within a kind, entries run in list order. Each works on the object in
place and raises ``OverriderError`` naming the entry (``plaintext[1]``) when it cannot apply:

- imageOverrider: the image at ``predicate.path``, or by default every ``containers[*].image`` of a
  Pod (``spec``) or of the pod template of a Deployment, ReplicaSet, StatefulSet, DaemonSet or Job
  (``spec.template.spec``); Karmada has no default for init containers or CronJobs.
- commandOverrider/argsOverrider: the containers named ``containerName`` of a Pod, Deployment,
  ReplicaSet, StatefulSet, DaemonSet or Job (as Karmada), and of a CronJob's
  ``spec.jobTemplate``; ``add`` appends (creating the list), ``remove`` drops every equal entry (a
  missing list stays missing).
- labelsOverrider/annotationsOverrider: ``add`` sets keys (creating the map); ``remove`` and
  ``replace`` skip keys the object does not have.
- fieldOverrider: parses the YAML (preferred when both are given) or JSON document held in the
  string at ``fieldPath`` (bounded: ``controllers.binding.documents``; no YAML anchors or
  aliases), applies the JSON patch of ``subPath`` operations, writes it back.
- plaintext: RFC 6902 add/remove/replace on the object (``reconcile.apply_json_patch``).

No entry may change the object's identity (apiVersion, kind, namespace, name; ``controllers.api
.identity``): Karmada lets a plaintext ``replace /kind`` through, we refuse it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import yaml

from controllers.api.identity import identity_change, identity_of
from controllers.binding.documents import load_json, load_yaml
from controllers.binding.images import override_image
from reconcile import JsonPatchError, apply_json_patch, parse_pointer, resolve_pointer

__all__ = ["OVERRIDER_ORDER", "OverriderError", "apply_overriders"]

OVERRIDER_ORDER: Final = (
    "imageOverrider",
    "commandOverrider",
    "argsOverrider",
    "labelsOverrider",
    "annotationsOverrider",
    "fieldOverrider",
    "plaintext",
)

_POD_SPEC: Final = ("spec",)
_TEMPLATE_POD_SPEC: Final = ("spec", "template", "spec")
_IMAGE_KINDS: Final = {
    "Pod": _POD_SPEC,
    **dict.fromkeys(
        ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"), _TEMPLATE_POD_SPEC
    ),
}
_JOB_TEMPLATE_POD_SPEC: Final = ("spec", "jobTemplate", "spec", "template", "spec")
# Karmada's command/args overriders take Jobs too (since 2023); a CronJob's containers are those
# of its jobTemplate, which is what a user overriding a CronJob's command means.
_COMMAND_KINDS: Final = {
    "Pod": _POD_SPEC,
    **dict.fromkeys(
        ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"), _TEMPLATE_POD_SPEC
    ),
    "CronJob": _JOB_TEMPLATE_POD_SPEC,
}


class OverriderError(ValueError):
    """An overrider entry that cannot be applied; ``entry`` names it, e.g. ``plaintext[1]``."""

    def __init__(self, entry: str, reason: str) -> None:
        super().__init__(f"{entry}: {reason}")
        self.entry = entry
        self.reason = reason


def _apply(document: Any, operations: list[dict[str, Any]]) -> Any:
    # Karmada's overriders take add, remove and replace only.
    return apply_json_patch(document, operations, allowed=("add", "remove", "replace"))


def _set(obj: dict[str, Any], pointer: str, value: Any) -> None:
    # Replace in place: the overriders share one working copy of the object.
    patched = _apply(obj, [{"op": "replace", "path": pointer, "value": value}])
    obj.clear()
    obj.update(patched)


def _containers(obj: Mapping[str, Any], prefix: Sequence[str]) -> list[Any]:
    node: Any = obj
    for key in (*prefix, "containers"):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, list) else []


def _image(obj: dict[str, Any], overrider: Mapping[str, Any]) -> None:
    predicate = overrider.get("predicate")
    if predicate is not None:
        pointers = [str(predicate.get("path", ""))]
    else:
        prefix = _IMAGE_KINDS.get(str(obj.get("kind")))
        containers = _containers(obj, prefix) if prefix else []
        base = "/" + "/".join(prefix or ())
        pointers = [f"{base}/containers/{i}/image" for i in range(len(containers))]
    for pointer in pointers:
        current = resolve_pointer(obj, pointer)
        if not isinstance(current, str):
            raise ValueError(f"{pointer} is not a string")
        component, operator = str(overrider.get("component")), str(overrider.get("operator"))
        value = str(overrider.get("value") or "")
        _set(obj, pointer, override_image(current, component, operator, value))


def _command_args(field: str) -> Callable[[dict[str, Any], Mapping[str, Any]], None]:
    def apply(obj: dict[str, Any], overrider: Mapping[str, Any]) -> None:
        operator, values = overrider.get("operator"), list(overrider.get("value") or [])
        if operator not in ("add", "remove"):
            raise ValueError(f"unsupported operator {operator!r} (want add or remove)")
        prefix, name = _COMMAND_KINDS.get(str(obj.get("kind"))), overrider.get("containerName")
        for container in _containers(obj, prefix) if prefix else []:
            if not isinstance(container, dict) or container.get("name") != name:
                continue
            current = container.get(field)
            if current is not None and not isinstance(current, list):
                raise ValueError(f"container {container.get('name')!r} {field} is not a list")
            if operator == "add":
                container[field] = [*(current or []), *values]
            elif current is not None:
                container[field] = [v for v in current if v not in values]

    return apply


def _label_annotation(field: str) -> Callable[[dict[str, Any], Mapping[str, Any]], None]:
    def apply(obj: dict[str, Any], overrider: Mapping[str, Any]) -> None:
        operator = overrider.get("operator")
        if operator not in ("add", "remove", "replace"):
            raise ValueError(f"unsupported operator {operator!r} (want add, remove or replace)")
        metadata = obj.setdefault("metadata", {})
        for key, value in (overrider.get("value") or {}).items():
            current = metadata.get(field)
            if operator == "add":
                metadata[field] = {**(current or {}), key: value}
            elif current and key in current:
                if operator == "remove":
                    del current[key]
                else:
                    current[key] = value

    return apply


def _patch_operations(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"op": e.get("operator"), "path": e.get("subPath"), "value": e.get("value")}
        for e in entries
    ]


def _edit_document(text: str, overrider: Mapping[str, Any]) -> str | None:
    if overrider.get("yaml"):
        try:
            document = load_yaml(text)
        except yaml.YAMLError as error:
            raise ValueError(f"the field does not hold valid YAML: {error}") from error
        patched = _apply(document, _patch_operations(overrider["yaml"]))
        # sigs.k8s.io/yaml writes block style with sorted keys and no line folding.
        return yaml.safe_dump(patched, sort_keys=True, allow_unicode=True, width=2**31 - 1)
    if overrider.get("json"):
        try:
            document = load_json(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"the field does not hold valid JSON: {error}") from error
        patched = _apply(document, _patch_operations(overrider["json"]))
        return json.dumps(patched, separators=(",", ":"), ensure_ascii=False)
    return None


def _field(obj: dict[str, Any], overrider: Mapping[str, Any]) -> None:
    pointer = str(overrider.get("fieldPath", ""))
    parse_pointer(pointer)
    current = resolve_pointer(obj, pointer)
    if not isinstance(current, str):
        raise ValueError(f"{pointer} is not a string")
    edited = _edit_document(current, overrider)
    if edited is not None:
        _set(obj, pointer, edited)


def _plaintext(obj: dict[str, Any], overrider: Mapping[str, Any]) -> None:
    operation = {"op": overrider.get("operator"), "path": overrider.get("path")}
    _set_whole(obj, _apply(obj, [{**operation, "value": overrider.get("value")}]))


def _set_whole(obj: dict[str, Any], patched: Any) -> None:
    if not isinstance(patched, dict):
        raise ValueError("the patched object is not a JSON object")
    obj.clear()
    obj.update(patched)


_APPLIERS: Final[Mapping[str, Callable[[dict[str, Any], Mapping[str, Any]], None]]] = {
    "imageOverrider": _image,
    "commandOverrider": _command_args("command"),
    "argsOverrider": _command_args("args"),
    "labelsOverrider": _label_annotation("labels"),
    "annotationsOverrider": _label_annotation("annotations"),
    "fieldOverrider": _field,
    "plaintext": _plaintext,
}


def apply_overriders(obj: dict[str, Any], overriders: Mapping[str, Any]) -> None:
    """Apply a rule's overriders to ``obj`` in place, in Karmada's order.

    Raises:
        OverriderError: an entry cannot be applied (bad pointer, missing path, invalid document,
            unsupported operator, unparsable image) or changed the object's identity
            (apiVersion, kind, namespace, name); ``obj`` may be partly changed.
    """
    pinned = identity_of(obj)
    for kind in OVERRIDER_ORDER:
        for index, overrider in enumerate(overriders.get(kind) or []):
            try:
                _APPLIERS[kind](obj, overrider)
            except (JsonPatchError, ValueError, TypeError, AttributeError) as error:
                raise OverriderError(f"{kind}[{index}]", str(error)) from error
            # After each entry, so the refusal names the one that did it.
            change = identity_change(pinned, obj)
            if change is not None:
                reason = f"changes the object's identity ({change}); refused"
                raise OverriderError(f"{kind}[{index}]", reason)
