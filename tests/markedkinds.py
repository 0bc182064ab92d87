"""Kinds declared with every marker of reconcile.markers, for `reconcile gen crd`'s tests.

``Widget`` (namespaced, v1 storage + deprecated v1beta1, status and scale subresources, printer
columns) and ``Gadget`` (cluster-scoped, one version) in the group ``markers.test``.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

from reconcile.markers import (
    Default,
    Description,
    EmbeddedResource,
    Enum,
    Format,
    Int32,
    IntOrStr,
    Kind,
    ListMapKeys,
    ListType,
    MapType,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    Minimum,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    Nullable,
    Pattern,
    PreserveUnknownFields,
    PrinterColumn,
    Scale,
    XValidation,
)

GROUP = "markers.test"


class Finish(enum.Enum):
    MATTE = "matte"
    GLOSS = "gloss"


@dataclass
class Port:
    """A named port of the widget."""

    name: Annotated[str, MinLength(1), MaxLength(15)]
    port: Annotated[int, Minimum(1), Maximum(65535), Format("int32")]
    protocol: Annotated[Literal["TCP", "UDP"], Default("TCP")] = "TCP"


class Part(TypedDict):
    name: Annotated[str, MaxLength(63)]
    count: NotRequired[Annotated[int, Minimum(0, exclusive=True)]]


class WidgetSpec(TypedDict):
    """WidgetSpec is the desired state of a Widget."""

    replicas: NotRequired[Annotated[Int32, Minimum(0), Maximum(10), Default(1)]]
    """How many widgets to run."""
    size: NotRequired[Annotated[Literal["small", "medium", "large"], Default("small")]]
    shape: NotRequired[Annotated[str, Enum("round", "square")]]
    colour: NotRequired[
        Annotated[str, Pattern("^[a-z]+$"), MinLength(3), MaxLength(20), Description("Lower case.")]
    ]
    weight: NotRequired[Annotated[float, Minimum(0), Maximum(100, exclusive=True), MultipleOf(0.5)]]
    finish: NotRequired[Finish]
    built: NotRequired[datetime.datetime]
    website: NotRequired[Annotated[str, Format("uri")]]
    port: NotRequired[IntOrStr]
    tags: NotRequired[Annotated[list[Annotated[str, MinLength(1)]], ListType("set"), MaxItems(5)]]
    parts: NotRequired[
        Annotated[list[Part], ListType("map"), ListMapKeys("name"), MinItems(1), MaxItems(8)]
    ]
    ports: NotRequired[Annotated[list[Port], ListType("atomic")]]
    labels: NotRequired[Annotated[dict[str, str], MapType("atomic"), MinProperties(1)]]
    owner: NotRequired[Annotated[str | None, MaxLength(30)]]
    note: NotRequired[Annotated[str, Nullable]]
    extra: NotRequired[Annotated[dict[str, Any], MaxProperties(4)]]
    template: NotRequired[Annotated[dict[str, Any], EmbeddedResource(), PreserveUnknownFields()]]
    anything: NotRequired[Any]


class Condition(TypedDict):
    type: Annotated[str, MaxLength(316)]
    status: Literal["True", "False", "Unknown"]
    reason: NotRequired[str]
    lastTransitionTime: NotRequired[Annotated[str, Format("date-time")]]


class WidgetStatus(TypedDict, total=False):
    replicas: Int32
    selector: str
    conditions: Annotated[list[Condition], ListType("map"), ListMapKeys("type")]
    observedGeneration: Required[int]


class Widget(TypedDict):
    """A Widget is made of parts."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: Annotated[
        WidgetSpec,
        XValidation(
            "self.size != 'large' || self.replicas >= 2",
            message="a large widget needs 2 replicas",
            field_path=".replicas",
            reason="FieldValueInvalid",
        ),
    ]
    status: NotRequired[WidgetStatus]


class WidgetV1beta1Spec(TypedDict, total=False):
    replicas: Annotated[int, Minimum(0)]


class WidgetV1beta1(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: WidgetV1beta1Spec


widgets = Kind(GROUP, "Widget", short_names=("wd",), categories=("toys",))
WIDGET = widgets.version(
    "v1",
    Widget,
    storage=True,
    status_subresource=True,
    scale=Scale(label_selector_path=".status.selector"),
    printer_columns=[
        PrinterColumn("Size", ".spec.size"),
        PrinterColumn("Replicas", ".spec.replicas", type="integer", description="desired"),
        PrinterColumn("Colour", ".spec.colour", priority=1),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ],
    selectable_fields=[".spec.size"],
    validations=[XValidation("size(self.metadata.name) <= 20", message="name too long")],
).gvk
WIDGET_V1BETA1 = widgets.version(
    "v1beta1",
    WidgetV1beta1,
    deprecated=True,
    deprecation_warning=f"{GROUP}/v1beta1 Widget is deprecated; use v1",
).gvk


@dataclass
class Gadget:
    """A cluster-wide gadget."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: dict[str, str]


GADGET = Kind(GROUP, "Gadget", scope="Cluster").version("v1", Gadget).gvk
