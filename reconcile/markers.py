"""Markers declare a custom resource's kind and schema in Python types (controller-gen's role).

A kind's objects are declared as TypedDicts (or dataclasses, for nested parts); ``Annotated``
metadata on a field carries what the type alone cannot say, as kubebuilder's ``+kubebuilder:``
comment markers do in Go. ``Kind`` names the kind; each ``Kind.version`` gives the typed handle
``GVK[Widget]`` that the client uses, and ``reconcile gen crd MODULE`` writes the CRD::

    from typing import Annotated, Any, Literal, NotRequired, TypedDict
    from reconcile.markers import Kind, Maximum, Minimum, Pattern, PrinterColumn, Scale

    class WidgetSpec(TypedDict):
        replicas: Annotated[int, Minimum(0), Maximum(10)]
        size: NotRequired[Literal["small", "large"]]
        colour: NotRequired[Annotated[str, Pattern("^[a-z]+$")]]

    class Widget(TypedDict):
        \"\"\"A Widget is a thing made of parts.\"\"\"
        apiVersion: str
        kind: str
        metadata: dict[str, Any]
        spec: WidgetSpec
        status: NotRequired[dict[str, Any]]

    widgets = Kind("example.com", "Widget", short_names=("wd",))
    WIDGET = widgets.version(
        "v1", Widget, status_subresource=True, scale=Scale(),
        printer_columns=[PrinterColumn("Replicas", ".spec.replicas", type="integer")],
    ).gvk  # GVK[Widget]: client.get(WIDGET, ...) is typed as returning a Widget

Requiredness comes from typing itself: a TypedDict's ``Required``/``NotRequired`` and
``total=``, a dataclass field's default. ``T | None`` is ``nullable``; ``Literal[...]`` and
``enum.Enum`` types are enums. This module imports only the standard library, so declaring
types costs nothing at run time; the generator is ``reconcile.gen.crd``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, overload

from reconcile.gvk import GVK

__all__ = [
    "Default",
    "Description",
    "EmbeddedResource",
    "Enum",
    "Format",
    "Int32",
    "Int64",
    "IntOrStr",
    "IntOrString",
    "Kind",
    "ListMapKeys",
    "ListType",
    "MapType",
    "Marker",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "Maximum",
    "MinItems",
    "MinLength",
    "MinProperties",
    "Minimum",
    "MultipleOf",
    "Nullable",
    "Pattern",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Scale",
    "Version",
    "XValidation",
    "declared_kind",
]

JSONType = Literal["string", "integer", "number", "boolean", "array", "object"]


class Marker:
    """A schema marker: ``apply`` adds its keywords to the OpenAPI v3 schema of one field.

    ``applies_to`` lists the schema types it is meaningful for (empty: any), so that
    ``Minimum`` on a string is an error naming the field rather than a silently odd CRD.
    """

    applies_to: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        """The keywords this marker contributes to the field's schema."""
        raise NotImplementedError


@dataclass(frozen=True)
class Enum(Marker):
    """``enum``: the value is one of ``values`` (``Literal[...]`` and enum.Enum say it too)."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.values)}


@dataclass(frozen=True)
class Minimum(Marker):
    """``minimum`` (``exclusiveMinimum`` when ``exclusive``)."""

    value: float
    exclusive: bool = False
    applies_to = ("integer", "number")

    def schema(self) -> dict[str, Any]:
        return {"minimum": self.value, **({"exclusiveMinimum": True} if self.exclusive else {})}


@dataclass(frozen=True)
class Maximum(Marker):
    """``maximum`` (``exclusiveMaximum`` when ``exclusive``)."""

    value: float
    exclusive: bool = False
    applies_to = ("integer", "number")

    def schema(self) -> dict[str, Any]:
        return {"maximum": self.value, **({"exclusiveMaximum": True} if self.exclusive else {})}


@dataclass(frozen=True)
class MultipleOf(Marker):
    """``multipleOf``."""

    value: float
    applies_to = ("integer", "number")

    def schema(self) -> dict[str, Any]:
        return {"multipleOf": self.value}


@dataclass(frozen=True)
class MinLength(Marker):
    """``minLength`` of a string."""

    value: int
    applies_to = ("string",)

    def schema(self) -> dict[str, Any]:
        return {"minLength": self.value}


@dataclass(frozen=True)
class MaxLength(Marker):
    """``maxLength`` of a string (CEL's cost estimates rely on it)."""

    value: int
    applies_to = ("string",)

    def schema(self) -> dict[str, Any]:
        return {"maxLength": self.value}


@dataclass(frozen=True)
class MinItems(Marker):
    """``minItems`` of a list."""

    value: int
    applies_to = ("array",)

    def schema(self) -> dict[str, Any]:
        return {"minItems": self.value}


@dataclass(frozen=True)
class MaxItems(Marker):
    """``maxItems`` of a list."""

    value: int
    applies_to = ("array",)

    def schema(self) -> dict[str, Any]:
        return {"maxItems": self.value}


@dataclass(frozen=True)
class MinProperties(Marker):
    """``minProperties`` of an object or map."""

    value: int
    applies_to = ("object",)

    def schema(self) -> dict[str, Any]:
        return {"minProperties": self.value}


@dataclass(frozen=True)
class MaxProperties(Marker):
    """``maxProperties`` of an object or map."""

    value: int
    applies_to = ("object",)

    def schema(self) -> dict[str, Any]:
        return {"maxProperties": self.value}


@dataclass(frozen=True)
class Pattern(Marker):
    """``pattern``: an ECMA-262 regular expression the string must match."""

    regex: str
    applies_to = ("string",)

    def schema(self) -> dict[str, Any]:
        return {"pattern": self.regex}


@dataclass(frozen=True)
class Format(Marker):
    """``format``: int32, int64, date-time, date, byte, uri, email, ..."""

    name: str

    def schema(self) -> dict[str, Any]:
        return {"format": self.name}


@dataclass(frozen=True)
class Default(Marker):
    """``default``: the apiserver sets it when the field is missing (the value is JSON)."""

    value: Any

    def schema(self) -> dict[str, Any]:
        return {"default": self.value}


@dataclass(frozen=True)
class Nullable(Marker):
    """``nullable: true``: null is kept rather than refused (``T | None`` says it too)."""

    def schema(self) -> dict[str, Any]:
        return {"nullable": True}


@dataclass(frozen=True)
class Description(Marker):
    """``description`` (else the docstring of the field's class, if any)."""

    text: str

    def schema(self) -> dict[str, Any]:
        return {"description": self.text}


@dataclass(frozen=True)
class ListType(Marker):
    """``x-kubernetes-list-type``: how server-side apply merges the list."""

    kind: Literal["atomic", "set", "map"]
    applies_to = ("array",)

    def schema(self) -> dict[str, Any]:
        return {"x-kubernetes-list-type": self.kind}


@dataclass(frozen=True)
class ListMapKeys(Marker):
    """``x-kubernetes-list-map-keys`` of a ``ListType("map")`` list of objects."""

    keys: tuple[str, ...]
    applies_to = ("array",)

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", keys)

    def schema(self) -> dict[str, Any]:
        return {"x-kubernetes-list-map-keys": list(self.keys)}


@dataclass(frozen=True)
class MapType(Marker):
    """``x-kubernetes-map-type``: ``atomic`` objects are replaced whole by server-side apply."""

    kind: Literal["atomic", "granular"]
    applies_to = ("object",)

    def schema(self) -> dict[str, Any]:
        return {"x-kubernetes-map-type": self.kind}


@dataclass(frozen=True)
class PreserveUnknownFields(Marker):
    """``x-kubernetes-preserve-unknown-fields: true``: fields the schema does not name are kept."""

    def schema(self) -> dict[str, Any]:
        return {"x-kubernetes-preserve-unknown-fields": True}


@dataclass(frozen=True)
class EmbeddedResource(Marker):
    """``x-kubernetes-embedded-resource: true``: the object is a whole Kubernetes object."""

    applies_to = ("object",)

    def schema(self) -> dict[str, Any]:
        return {"x-kubernetes-embedded-resource": True}


@dataclass(frozen=True)
class IntOrString(Marker):
    """``x-kubernetes-int-or-string: true``, for an ``int | str`` field (e.g. a port or 25%)."""

    def schema(self) -> dict[str, Any]:
        return {"x-kubernetes-int-or-string": True}


@dataclass(frozen=True)
class XValidation(Marker):
    """A CEL rule in ``x-kubernetes-validations``; ``self`` is the field's value.

    ``message`` (or ``message_expression``, a CEL string) is what the apiserver answers when the
    rule is false; ``field_path`` (e.g. ``.replicas``) and ``reason`` (FieldValueInvalid,
    FieldValueForbidden, FieldValueRequired, FieldValueDuplicate) shape the error.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    field_path: str | None = None
    reason: str | None = None
    optional_old_self: bool | None = None

    def schema(self) -> dict[str, Any]:
        keys = {
            "rule": self.rule,
            "message": self.message,
            "messageExpression": self.message_expression,
            "fieldPath": self.field_path,
            "reason": self.reason,
            "optionalOldSelf": self.optional_old_self,
        }
        return {"x-kubernetes-validations": [{k: v for k, v in keys.items() if v is not None}]}


Int32 = Annotated[int, Format("int32")]
"""An integer field of Go's int32 range (``format: int32``), as Kubernetes' counts are."""
Int64 = Annotated[int, Format("int64")]
"""An integer field of int64 range (``format: int64``)."""
IntOrStr = Annotated[int | str, IntOrString()]
"""A field holding an integer or a string (``x-kubernetes-int-or-string``)."""


@dataclass(frozen=True)
class PrinterColumn:
    """An ``additionalPrinterColumns`` entry: a column of ``kubectl get``."""

    name: str
    json_path: str
    type: Literal["string", "integer", "number", "boolean", "date"] = "string"
    description: str | None = None
    format: str | None = None
    priority: int = 0
    """0: shown by default; above 0: only with ``kubectl get -o wide``."""


@dataclass(frozen=True)
class Scale:
    """The scale subresource: where the replicas are, and the label selector (for the HPA)."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None


ObjT = TypeVar("ObjT", bound=Mapping[str, Any])


@dataclass(frozen=True)
class Version(Generic[ObjT]):
    """One version of a kind: its object type (the schema's root) and how it is served."""

    kind: Kind
    name: str
    object_type: type[Any]
    served: bool = True
    storage: bool | None = None
    deprecated: bool = False
    deprecation_warning: str | None = None
    status_subresource: bool = False
    scale: Scale | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    selectable_fields: tuple[str, ...] = ()
    validations: tuple[XValidation, ...] = ()

    @property
    def gvk(self) -> GVK[ObjT]:
        """The typed handle of this version's objects, for the client and the builder."""
        return GVK(self.kind.group, self.name, self.kind.kind)


def _plural(kind: str) -> str:
    # The common cases of flect.Pluralize, which kubebuilder uses; `plural=` says any other.
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    return lower + "s"


@dataclass(eq=False)
class Kind:
    """A custom resource's names and scope (the CRD's ``spec.names``); versions are added with
    ``version``. ``plural`` defaults to the kind's English plural in lower case."""

    group: str
    kind: str
    plural: str = ""
    singular: str = ""
    short_names: Sequence[str] = ()
    categories: Sequence[str] = ()
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    list_kind: str = ""
    versions: list[Version[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.plural = self.plural or _plural(self.kind)
        self.singular = self.singular or self.kind.lower()
        self.list_kind = self.list_kind or f"{self.kind}List"

    @property
    def crd_name(self) -> str:
        """``<plural>.<group>``, the name the apiserver requires of the CRD."""
        return f"{self.plural}.{self.group}"

    if TYPE_CHECKING:
        # A TypedDict class is the usual root; a dataclass root types its objects as plain dicts
        # (they are dicts at run time all the same).
        @overload
        def version(  # type: ignore[overload-overlap]
            self,
            name: str,
            object_type: type[ObjT],
            *,
            served: bool = ...,
            storage: bool | None = ...,
            deprecated: bool = ...,
            deprecation_warning: str | None = ...,
            status_subresource: bool = ...,
            scale: Scale | None = ...,
            printer_columns: Sequence[PrinterColumn] = ...,
            selectable_fields: Sequence[str] = ...,
            validations: Sequence[XValidation] = ...,
        ) -> Version[ObjT]: ...

        @overload
        def version(
            self,
            name: str,
            object_type: type[object],
            *,
            served: bool = ...,
            storage: bool | None = ...,
            deprecated: bool = ...,
            deprecation_warning: str | None = ...,
            status_subresource: bool = ...,
            scale: Scale | None = ...,
            printer_columns: Sequence[PrinterColumn] = ...,
            selectable_fields: Sequence[str] = ...,
            validations: Sequence[XValidation] = ...,
        ) -> Version[dict[str, Any]]: ...

    def version(
        self,
        name: str,
        object_type: type[Any],
        *,
        served: bool = True,
        storage: bool | None = None,
        deprecated: bool = False,
        deprecation_warning: str | None = None,
        status_subresource: bool = False,
        scale: Scale | None = None,
        printer_columns: Sequence[PrinterColumn] = (),
        selectable_fields: Sequence[str] = (),
        validations: Sequence[XValidation] = (),
    ) -> Version[Any]:
        """Add version ``name`` whose objects are ``object_type``; the one version of a kind is its
        storage version, else exactly one must say ``storage=True``. ``selectable_fields``
        are JSON paths (``.spec.size``) that field selectors may name; ``validations`` are CEL
        rules on the whole object (``self.metadata.name``, ``self.spec``).

        Raises:
            ValueError: the kind already has a version of that name.
        """
        if any(v.name == name for v in self.versions):
            raise ValueError(f"kind {self.kind}: version {name!r} is declared twice")
        version: Version[Any] = Version(
            self,
            name,
            object_type,
            served=served,
            storage=storage,
            deprecated=deprecated,
            deprecation_warning=deprecation_warning,
            status_subresource=status_subresource,
            scale=scale,
            printer_columns=tuple(printer_columns),
            selectable_fields=tuple(selectable_fields),
            validations=tuple(validations),
        )
        self.versions.append(version)
        _DECLARED[version.gvk] = self
        return version


# Kinds are declared once, at module level, and live as long as the process: a plain dict.
_DECLARED: dict[GVK[Any], Kind] = {}


def declared_kind(gvk: GVK[Any]) -> Kind | None:
    """The Kind that declared ``gvk`` with ``Kind.version``, if any (so that a module keeping
    only ``WIDGET = Kind(...).version(...).gvk`` still declares the kind for the generator)."""
    return _DECLARED.get(gvk)
