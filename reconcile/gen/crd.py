"""Crd turns a ``reconcile.markers.Kind`` into an apiextensions.k8s.io/v1 CustomResourceDefinition.

controller-gen's ``crd`` generator, for Python types: each version's object type (a TypedDict or
a dataclass) becomes a structural OpenAPI v3 schema, its ``Annotated`` markers become schema
keywords, and the Kind's names, scope, printer columns and subresources fill the rest. As in
controller-gen, the root's ``metadata`` is ``{type: object}`` and ``apiVersion``/``kind`` are
strings. A type that a structural schema cannot express is a ``CRDError`` naming the field::

    from reconcile.gen.crd import crd_for, crd_yaml
    from myproject.api import widgets          # a reconcile.markers.Kind

    print(crd_yaml(crd_for(widgets)))          # what `reconcile gen crd myproject.api -o -` prints

Mapping: str → string; int → integer (``Int32``/``Int64``/``Format`` give a format); float →
number; bool → boolean; bytes → string/byte; datetime/date → string/date-time, date; ``Any`` →
``x-kubernetes-preserve-unknown-fields``; ``list[T]`` → array; ``dict[str, T]`` → object with
``additionalProperties`` (``dict[str, Any]``: an object keeping unknown fields); ``T | None`` →
nullable; ``Literal[...]`` and enum.Enum → enum; nested TypedDicts and dataclasses → objects.

The client's objects are JSON dicts: a field typed ``datetime``, an enum.Enum or a dataclass
holds a string or a dict at run time. For types that also type the client's objects, prefer
``Annotated[str, Format("date-time")]``, ``Literal[...]`` and nested TypedDicts.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import datetime
import enum
import functools
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Iterable, Iterator
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

from reconcile import markers
from reconcile.gvk import GVK
from reconcile.markers import Kind, Marker, Version

__all__ = ["CRDError", "crd_file_name", "crd_for", "crd_yaml", "find_kinds", "schema_for"]


class CRDError(ValueError):
    """A kind or type that a CRD cannot express; the message names the field and the type."""


_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bytes: {"type": "string", "format": "byte"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
}
_LISTS = {list, collections.abc.Sequence, collections.abc.MutableSequence, tuple}
_MAPS = {dict, collections.abc.Mapping, collections.abc.MutableMapping}
_SETS = {set, frozenset, collections.abc.Set, collections.abc.MutableSet}
_ROOT_FIELDS = {
    "apiVersion": {
        "type": "string",
        "description": "APIVersion defines the versioned schema of this representation of an "
        "object.",
    },
    "kind": {
        "type": "string",
        "description": "Kind is a string value representing the REST resource this object "
        "represents.",
    },
    # As controller-gen: the apiserver validates metadata itself, the schema only says object.
    "metadata": {"type": "object"},
}


def _name(tp: Any) -> str:
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _unwrap(tp: Any, path: str) -> tuple[Any, list[Marker], bool | None]:
    """The type under Annotated/Required/NotRequired, its markers and the explicit requiredness."""
    found: list[Marker] = []
    required: bool | None = None
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            found.extend(_markers(tp.__metadata__, path))
            tp = tp.__origin__
        elif origin in (Required, NotRequired):
            required = origin is Required
            tp = get_args(tp)[0]
        else:
            return tp, found, required


def _markers(metadata: Iterable[Any], path: str) -> Iterator[Marker]:
    for item in metadata:
        # `Annotated[str, Nullable]` (the class) means the marker without arguments.
        if isinstance(item, type) and issubclass(item, Marker):
            try:
                item = item()
            except TypeError:
                raise CRDError(f"{path}: say {item.__name__}(...), with its value") from None
        if isinstance(item, Marker):
            yield item


def _json_value(value: Any, path: str) -> Any:
    """``value`` as JSON (an enum member as its value, a tuple as a list)."""
    value = value.value if isinstance(value, enum.Enum) else value
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json_value(v, path) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_value(v, path) for k, v in value.items()}
    raise CRDError(f"{path}: {value!r} is not a JSON value")


_JSON_TYPES: tuple[tuple[type[Any], str], ...] = (
    (bool, "boolean"),  # before int: a bool is an int
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: Any) -> str:
    return next((name for python, name in _JSON_TYPES if isinstance(value, python)), "null")


def _check_value(schema: dict[str, Any], value: Any, what: str, path: str) -> None:
    """The apiserver refuses a CRD whose default or enum value is not of the field's type."""
    expected, actual = schema.get("type"), _json_type(value)
    if not expected or actual == expected or (expected, actual) == ("number", "integer"):
        return
    if actual == "null" and schema.get("nullable"):
        return
    raise CRDError(f"{path}: {what} {value!r} is not a {expected}")


def _enum_type(values: list[Any], path: str) -> str:
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return "string"
    if kinds == {bool}:
        return "boolean"
    if kinds <= {int} and kinds:
        return "integer"
    if kinds <= {int, float} and kinds:
        return "number"
    raise CRDError(f"{path}: enum values {values!r} are not all strings, integers or booleans")


def _is_typeddict(tp: Any) -> bool:
    # typing_extensions' TypedDict (before Python 3.13) is not typing's, but has the same keys.
    return typing.is_typeddict(tp) or (
        isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")
    )


@functools.cache
def _field_docs(cls: type[Any]) -> dict[str, str]:
    """The attribute docstrings (a string right under a field, as Sphinx reads them) of
    ``cls`` and its bases: the field comments that controller-gen makes descriptions."""
    docs: dict[str, str] = {}
    # A TypedDict's __mro__ is (cls, dict, object): only dataclasses bring their bases' docs.
    for base in reversed(cls.__mro__ if isinstance(cls, type) else ()):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(base)))
        except (OSError, TypeError, SyntaxError):  # built in, made at run time, or no source
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _doc(tp: Any) -> str | None:
    if not isinstance(tp, type):
        return None
    doc = tp.__dict__.get("__doc__")
    # A dataclass without a docstring gets its signature as one: not a description.
    if not doc or (dataclasses.is_dataclass(tp) and doc.startswith(f"{tp.__name__}(")):
        return None
    return inspect.cleandoc(doc)


class _Schemas:
    """Builds schemas, keeping the classes being expanded to refuse recursive types."""

    def __init__(self) -> None:
        self._expanding: list[Any] = []

    def node(self, annotation: Any, path: str) -> dict[str, Any]:
        tp, found, _ = _unwrap(annotation, path)
        if get_origin(tp) in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) == 1:
                schema = self.node(members[0], path)
            else:
                schema = self._union(tp, found, path)
            if len(members) < len(get_args(tp)):
                schema["nullable"] = True
        else:
            schema = self._plain(tp, path)
        return self.apply(schema, found, path)

    def _union(self, tp: Any, found: list[Marker], path: str) -> dict[str, Any]:
        members = {_unwrap(a, path)[0] for a in get_args(tp)} - {type(None)}
        if any(isinstance(m, markers.IntOrString) for m in found) and members == {int, str}:
            return {}
        raise CRDError(
            f"{path}: {_name(tp)}: a structural schema cannot express a Union other than "
            "`T | None`; for an integer or a string say Annotated[int | str, IntOrString()]"
        )

    def _plain(self, tp: Any, path: str) -> dict[str, Any]:
        supertype = getattr(tp, "__supertype__", None)  # typing.NewType
        if supertype is not None:
            return self._plain(supertype, path)
        if tp is Any:
            return {"x-kubernetes-preserve-unknown-fields": True}
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        origin = get_origin(tp) or tp
        if origin is Literal:
            values = [_json_value(v, path) for v in get_args(tp)]
            return {"type": _enum_type(values, path), "enum": values}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            values = [_json_value(member, path) for member in tp]
            return {"type": _enum_type(values, path), "enum": values}
        if origin in _LISTS:
            return self._list(tp, path)
        if origin in _MAPS:
            return self._map(tp, path)
        if origin in _SETS:
            raise CRDError(
                f"{path}: {_name(tp)}: JSON has no sets; say list[T] with ListType('set')"
            )
        if _is_typeddict(tp) or (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
            return self.object(tp, path)
        raise CRDError(f"{path}: {_name(tp)}: a CRD schema cannot express this type")

    def _list(self, tp: Any, path: str) -> dict[str, Any]:
        args = get_args(tp)
        if get_origin(tp) is tuple and (len(args) != 2 or args[1] is not Ellipsis):
            raise CRDError(f"{path}: {_name(tp)}: only tuple[T, ...] is a list")
        if not args:
            raise CRDError(f"{path}: {_name(tp)}: say the item type, e.g. list[str]")
        return {"type": "array", "items": self.node(args[0], f"{path}[*]")}

    def _map(self, tp: Any, path: str) -> dict[str, Any]:
        args = get_args(tp)
        if not args:
            raise CRDError(f"{path}: {_name(tp)}: say the value type, e.g. dict[str, str]")
        key = _unwrap(args[0], path)[0]
        if getattr(key, "__supertype__", key) is not str:
            raise CRDError(f"{path}: {_name(tp)}: JSON object keys are strings, not {_name(key)}")
        if _unwrap(args[1], path)[0] is Any:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"type": "object", "additionalProperties": self.node(args[1], f"{path}{{*}}")}

    def object(self, cls: Any, path: str, root: bool = False) -> dict[str, Any]:
        """The object schema of a TypedDict or dataclass ``cls``."""
        if cls in self._expanding:
            raise CRDError(f"{path}: {_name(cls)}: a recursive type has no structural schema")
        self._expanding.append(cls)
        try:
            fields, docs = _fields(cls, path), _field_docs(cls)
            properties, required = {}, []
            for name, (annotation, is_required) in fields.items():
                if root and name in _ROOT_FIELDS:
                    continue
                properties[name] = self.node(annotation, f"{path}.{name}")
                described = any(
                    isinstance(m, markers.Description)
                    for m in _unwrap(annotation, f"{path}.{name}")[1]
                )
                if name in docs and not described:
                    properties[name]["description"] = docs[name]
                if is_required:
                    required.append(name)
        finally:
            self._expanding.pop()
        if root:
            properties.update({k: dict(v) for k, v in _ROOT_FIELDS.items()})
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = sorted(required)
        doc = _doc(cls)
        if doc:
            schema["description"] = doc
        return schema

    def apply(self, schema: dict[str, Any], found: list[Marker], path: str) -> dict[str, Any]:
        """``schema`` with the keywords of the markers ``found`` on the field at ``path``."""
        kind = schema.get("type")
        for marker in found:
            if kind and marker.applies_to and kind not in marker.applies_to:
                raise CRDError(
                    f"{path}: {type(marker).__name__} applies to "
                    f"{' or '.join(marker.applies_to)}, not to a {kind}"
                )
            keywords = marker.schema()
            if isinstance(marker, markers.Enum):
                keywords = {"enum": [_json_value(v, path) for v in marker.values]}
            elif isinstance(marker, markers.Default):
                keywords = {"default": _json_value(marker.value, path)}
            rules = keywords.pop("x-kubernetes-validations", [])
            schema.update(keywords)
            if rules:
                schema.setdefault("x-kubernetes-validations", []).extend(rules)
        for value in schema.get("enum", []):
            _check_value(schema, value, "enum value", path)
        if "default" in schema:
            _check_value(schema, schema["default"], "default", path)
        _check_list(schema, path)
        return schema


def _fields(cls: Any, path: str) -> dict[str, tuple[Any, bool]]:
    """Each field's annotation (markers kept) and whether the object must have it."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as error:  # a NameError of a forward reference, or any other
        raise CRDError(f"{path}: {_name(cls)}: its annotations do not resolve: {error}") from None
    if _is_typeddict(cls):
        required_keys = cls.__required_keys__
        return {
            name: (hint, explicit if explicit is not None else name in required_keys)
            for name, hint in hints.items()
            for explicit in [_unwrap(hint, f"{path}.{name}")[2]]
        }
    return {
        f.name: (hints[f.name], _dataclass_required(f))
        for f in dataclasses.fields(cls)
        if f.init or f.default is not dataclasses.MISSING
    }


def _dataclass_required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _check_list(schema: dict[str, Any], path: str) -> None:
    """The apiserver's rules of list types, said with the field's name before it says them."""
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys")
    items = schema.get("items", {})
    if keys is not None and list_type != "map":
        raise CRDError(f"{path}: ListMapKeys needs ListType('map')")
    if list_type == "map":
        if items.get("type") != "object" or "properties" not in items:
            raise CRDError(f"{path}: ListType('map') needs a list of objects")
        if not keys:
            raise CRDError(f"{path}: ListType('map') needs ListMapKeys(...)")
        missing = [k for k in keys if k not in items["properties"]]
        if missing:
            raise CRDError(f"{path}: list map keys {missing} are not fields of the items")
    if list_type == "set" and items.get("type") not in ("string", "integer", "number", "boolean"):
        raise CRDError(f"{path}: ListType('set') needs scalar items")


def schema_for(object_type: Any, validations: Iterable[Marker] = ()) -> dict[str, Any]:
    """The root ``openAPIV3Schema`` of a version whose objects are ``object_type``, with
    ``validations`` (``XValidation`` rules) on the whole object.

    Raises:
        CRDError: a field's type or marker that a structural schema cannot express.
    """
    if not (_is_typeddict(object_type) or dataclasses.is_dataclass(object_type)):
        raise CRDError(f"{_name(object_type)}: a kind's objects are a TypedDict or a dataclass")
    schemas, path = _Schemas(), _name(object_type)
    return schemas.apply(schemas.object(object_type, path, root=True), list(validations), path)


def _version(version: Version[Any], storage: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": version.name,
        "served": version.served,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema_for(version.object_type, version.validations)},
    }
    if version.selectable_fields:
        out["selectableFields"] = [{"jsonPath": path} for path in version.selectable_fields]
    if version.deprecated:
        out["deprecated"] = True
        if version.deprecation_warning:
            out["deprecationWarning"] = version.deprecation_warning
    if version.printer_columns:
        out["additionalPrinterColumns"] = [_column(c) for c in version.printer_columns]
    subresources: dict[str, Any] = {}
    if version.status_subresource:
        subresources["status"] = {}
    if version.scale is not None:
        scale = {
            "specReplicasPath": version.scale.spec_replicas_path,
            "statusReplicasPath": version.scale.status_replicas_path,
        }
        if version.scale.label_selector_path:
            scale["labelSelectorPath"] = version.scale.label_selector_path
        subresources["scale"] = scale
    if subresources:
        out["subresources"] = subresources
    return out


def _column(column: markers.PrinterColumn) -> dict[str, Any]:
    out: dict[str, Any] = {"name": column.name, "jsonPath": column.json_path, "type": column.type}
    if column.description:
        out["description"] = column.description
    if column.format:
        out["format"] = column.format
    if column.priority:
        out["priority"] = column.priority
    return out


def _storage_version(kind: Kind) -> str:
    if not kind.versions:
        raise CRDError(f"kind {kind.kind}: no version declared (Kind.version)")
    if len(kind.versions) == 1 and kind.versions[0].storage is not False:
        return kind.versions[0].name
    storage = [v.name for v in kind.versions if v.storage]
    if len(storage) != 1:
        raise CRDError(
            f"kind {kind.kind}: exactly one version must say storage=True, not {storage or 'none'}"
        )
    return storage[0]


def crd_for(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of ``kind``, its versions sorted by name (as controller-gen).

    Raises:
        CRDError: a version's type cannot be expressed, or not exactly one storage version.
    """
    storage = _storage_version(kind)
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": kind.list_kind,
        "plural": kind.plural,
        "singular": kind.singular,
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    versions = sorted(kind.versions, key=lambda v: v.name)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": kind.scope,
            "versions": [_version(v, v.name == storage) for v in versions],
        },
    }


def crd_file_name(kind: Kind) -> str:
    """``<group>_<plural>.yaml``, the name controller-gen gives the CRD's file."""
    return f"{kind.group}_{kind.plural}.yaml"


def crd_yaml(crd: dict[str, Any]) -> str:
    """The CRD as a YAML document, keys sorted, as controller-gen writes it (deterministic)."""
    import yaml  # only the generator needs it, never a controller's start

    return "---\n" + yaml.safe_dump(crd, sort_keys=True, default_flow_style=False)


def find_kinds(namespaces: Iterable[dict[str, Any]]) -> list[Kind]:
    """The Kinds in modules' namespaces (a Kind, a Version or the GVK of one), by CRD name.

    Raises:
        CRDError: two different Kinds declare the same CRD name.
    """
    found: dict[str, Kind] = {}
    for namespace in namespaces:
        for value in namespace.values():
            kind = value.kind if isinstance(value, Version) else value
            if isinstance(value, GVK):
                kind = markers.declared_kind(value)
            if not isinstance(kind, Kind):
                continue
            seen = found.setdefault(kind.crd_name, kind)
            if seen is not kind:
                raise CRDError(f"{kind.crd_name} is declared by two different Kinds")
    return [found[name] for name in sorted(found)]
