"""reconcile.gen.crd: each marker's schema keywords, the type mapping, the CRD's shape, and the
errors naming the field of a type that a structural schema cannot express."""

from __future__ import annotations

import datetime
import enum
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, NewType, NotRequired, Optional, Required, TypedDict

import pytest
import typing_extensions
import yaml

from controllers.cli import main
from reconcile import markers as m
from reconcile.gen.crd import CRDError, crd_file_name, crd_for, crd_yaml, find_kinds, schema_for
from reconcile.gvk import GVK

ROOT = Path(__file__).resolve().parents[2]


def field_schema(annotation: Any) -> dict[str, Any]:
    """The schema of one field ``x`` annotated ``annotation`` (under ``spec``)."""
    # The functional form: the field's annotation is a value here.
    Spec = TypedDict("Spec", {"x": annotation})  # noqa: UP013
    Root = TypedDict("Root", {"spec": Spec})  # noqa: UP013
    schema = schema_for(Root)
    return dict(schema["properties"]["spec"]["properties"]["x"])


# Markers: each one's keywords.


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (Annotated[str, m.Enum("a", "b")], {"type": "string", "enum": ["a", "b"]}),
        (Annotated[int, m.Minimum(1)], {"type": "integer", "minimum": 1}),
        (
            Annotated[float, m.Minimum(0, exclusive=True)],
            {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        ),
        (Annotated[int, m.Maximum(9)], {"type": "integer", "maximum": 9}),
        (
            Annotated[int, m.Maximum(9, exclusive=True)],
            {"type": "integer", "maximum": 9, "exclusiveMaximum": True},
        ),
        (Annotated[float, m.MultipleOf(0.5)], {"type": "number", "multipleOf": 0.5}),
        (Annotated[str, m.MinLength(1)], {"type": "string", "minLength": 1}),
        (Annotated[str, m.MaxLength(8)], {"type": "string", "maxLength": 8}),
        (
            Annotated[list[int], m.MinItems(1), m.MaxItems(3)],
            {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        ),
        (
            Annotated[dict[str, int], m.MinProperties(1), m.MaxProperties(2)],
            {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "minProperties": 1,
                "maxProperties": 2,
            },
        ),
        (Annotated[str, m.Pattern("^a$")], {"type": "string", "pattern": "^a$"}),
        (Annotated[str, m.Format("uri")], {"type": "string", "format": "uri"}),
        (m.Int32, {"type": "integer", "format": "int32"}),
        (m.Int64, {"type": "integer", "format": "int64"}),
        (Annotated[int, m.Default(3)], {"type": "integer", "default": 3}),
        (Annotated[float, m.Default(1)], {"type": "number", "default": 1}),
        (
            Annotated[int | None, m.Default(None)],
            {"type": "integer", "nullable": True, "default": None},
        ),
        (
            Annotated[list[list[int]], m.Default(((1, 2),))],
            {
                "type": "array",
                "items": {"type": "array", "items": {"type": "integer"}},
                "default": [[1, 2]],
            },
        ),
        (Annotated[str, m.Nullable()], {"type": "string", "nullable": True}),
        (Annotated[str, m.Nullable], {"type": "string", "nullable": True}),  # the class alone
        (Annotated[str, m.Description("Why.")], {"type": "string", "description": "Why."}),
        (
            Annotated[list[str], m.ListType("set")],
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        ),
        (
            Annotated[list[str], m.ListType("atomic")],
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
        ),
        (
            Annotated[dict[str, str], m.MapType("atomic")],
            {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "x-kubernetes-map-type": "atomic",
            },
        ),
        (
            Annotated[dict[str, Any], m.PreserveUnknownFields()],
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        ),
        (
            Annotated[dict[str, Any], m.EmbeddedResource()],
            {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-embedded-resource": True,
            },
        ),
        (m.IntOrStr, {"x-kubernetes-int-or-string": True}),
        (Annotated[str | int, m.IntOrString()], {"x-kubernetes-int-or-string": True}),
        (
            Annotated[int, m.XValidation("self > 1", message="big", field_path=".x")],
            {
                "type": "integer",
                "x-kubernetes-validations": [
                    {"rule": "self > 1", "message": "big", "fieldPath": ".x"}
                ],
            },
        ),
        (
            Annotated[
                int,
                m.XValidation("self > 1", message_expression="'got ' + string(self)"),
                m.XValidation(
                    "self < oldSelf", reason="FieldValueForbidden", optional_old_self=True
                ),
            ],
            {
                "type": "integer",
                "x-kubernetes-validations": [
                    {"rule": "self > 1", "messageExpression": "'got ' + string(self)"},
                    {
                        "rule": "self < oldSelf",
                        "reason": "FieldValueForbidden",
                        "optionalOldSelf": True,
                    },
                ],
            },
        ),
    ],
)
def test_each_marker_gives_its_schema_keywords(annotation: Any, expected: dict[str, Any]) -> None:
    assert field_schema(annotation) == expected


def test_list_map_keys_with_a_map_list() -> None:
    class Item(TypedDict):
        name: str
        port: int

    schema = field_schema(Annotated[list[Item], m.ListType("map"), m.ListMapKeys("name", "port")])
    assert schema["x-kubernetes-list-type"] == "map"
    assert schema["x-kubernetes-list-map-keys"] == ["name", "port"]
    assert schema["items"]["required"] == ["name", "port"]


# The type mapping.


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


Name = NewType("Name", str)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (bytes, {"type": "string", "format": "byte"}),
        (datetime.datetime, {"type": "string", "format": "date-time"}),
        (datetime.date, {"type": "string", "format": "date"}),
        (Name, {"type": "string"}),
        (Any, {"x-kubernetes-preserve-unknown-fields": True}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (dict[str, bool], {"type": "object", "additionalProperties": {"type": "boolean"}}),
        (dict[Name, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict[str, Any], {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        (str | None, {"type": "string", "nullable": True}),
        (Optional[int], {"type": "integer", "nullable": True}),  # noqa: UP045
        (
            Annotated[int, m.Minimum(0)] | None,
            {"type": "integer", "minimum": 0, "nullable": True},
        ),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Colour, {"type": "string", "enum": ["red", "blue"]}),
        (
            Annotated[Colour, m.Default(Colour.RED)],
            {"type": "string", "enum": ["red", "blue"], "default": "red"},
        ),
        (
            list[Annotated[str, m.MinLength(1)]],
            {"type": "array", "items": {"type": "string", "minLength": 1}},
        ),
    ],
)
def test_python_types_map_to_schema_types(annotation: Any, expected: dict[str, Any]) -> None:
    assert field_schema(annotation) == expected


class Nested(TypedDict, total=False):
    """Nested says what nests."""

    a: str
    b: Required[int]


@dataclass
class Parts:
    """Parts of a thing."""

    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)


@dataclass
class Undocumented:
    name: str


class Spec(TypedDict):
    nested: Nested
    """The field's own words, before its type's."""
    parts: NotRequired[Parts]
    explained: Annotated[Nested, m.Description("This field.")]
    plain: Undocumented


class Root(TypedDict):
    """Root is a kind."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: Spec
    status: NotRequired[dict[str, Any]]


def test_objects_with_their_required_fields_and_descriptions() -> None:
    schema = schema_for(Root)
    assert schema["description"] == "Root is a kind."
    assert schema["required"] == ["spec"]  # apiVersion, kind, metadata: never required
    spec = schema["properties"]["spec"]
    assert spec["required"] == ["explained", "nested", "plain"]
    nested = spec["properties"]["nested"]
    assert nested == {
        "type": "object",
        "description": "The field's own words, before its type's.",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["b"],  # Required[...] in a total=False TypedDict
    }
    parts = spec["properties"]["parts"]
    assert parts["required"] == ["name"]  # dataclass fields with a default are optional
    assert parts["description"] == "Parts of a thing."
    assert parts["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert spec["properties"]["explained"]["description"] == "This field."
    assert spec["properties"]["explained"]["properties"] == nested["properties"]
    assert field_schema(Nested)["description"] == "Nested says what nests."
    assert "description" not in spec["properties"]["plain"]  # not the dataclass's signature


class Qualified(TypedDict):
    inside: Annotated[NotRequired[int], m.Minimum(1)]  # the qualifier under Annotated
    outside: NotRequired[Annotated[int, m.Minimum(1)]]
    needed: int


class Extended(typing_extensions.TypedDict):
    maybe: typing_extensions.NotRequired[str]
    needed: int


@pytest.mark.parametrize("cls", [Qualified, Extended])
def test_requiredness_wherever_the_qualifier_is(cls: Any) -> None:
    assert field_schema(cls)["required"] == ["needed"]


def test_the_root_has_metadata_as_controller_gen_writes_it() -> None:
    class Bare(TypedDict):
        spec: dict[str, str]

    properties = schema_for(Bare)["properties"]
    assert properties["metadata"] == {"type": "object"}
    assert properties["apiVersion"]["type"] == properties["kind"]["type"] == "string"
    # Only at the root: a nested `metadata` field is an ordinary field.
    assert field_schema(dict[str, str]) == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }


# Bad input: errors that name the field and the type.


class Loop(TypedDict):
    name: str
    child: NotRequired[Loop]


class Unresolved(TypedDict):
    x: DoesNotExist  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize(
    ("annotation", "error"),
    [
        (int | str, r"Root\.spec\.x: int \| str: .*Union other than `T \| None`.*IntOrString"),
        (list[int | str], r"Root\.spec\.x\[\*\]: int \| str: .*Union"),
        (dict[str, int | bool], r"Root\.spec\.x\{\*\}: int \| bool"),
        (Annotated[int | bool, m.IntOrString()], r"Root\.spec\.x: int \| bool"),
        (set[str], r"Root\.spec\.x: set\[str\]: JSON has no sets; say list\[T\] with ListType"),
        (frozenset[int], r"Root\.spec\.x: frozenset\[int\]: JSON has no sets"),
        (dict[int, str], r"Root\.spec\.x: dict\[int, str\]: JSON object keys are strings, not int"),
        (Loop, r"Root\.spec\.x\.child: Loop: a recursive type has no structural schema"),
        (Unresolved, r"Root\.spec\.x: Unresolved: its annotations do not resolve.*DoesNotExist"),
        (complex, r"Root\.spec\.x: complex: a CRD schema cannot express this type"),
        (list, r"Root\.spec\.x: list: say the item type"),
        (dict, r"Root\.spec\.x: dict: say the value type"),
        (tuple[int, str], r"Root\.spec\.x: tuple\[int, str\]: only tuple\[T, \.\.\.\]"),
        (
            Annotated[str, m.Minimum(1)],
            r"Root\.spec\.x: Minimum applies to integer or number, not to a string",
        ),
        (
            Annotated[int, m.Pattern("a")],
            r"Root\.spec\.x: Pattern applies to string, not to a integer",
        ),
        (Annotated[str, m.ListType("set")], r"Root\.spec\.x: ListType applies to array"),
        (Annotated[int, m.Default(object())], r"Root\.spec\.x: <object .*> is not a JSON value"),
        (Literal["a", 1], r"Root\.spec\.x: enum values \['a', 1\] are not all strings"),
        (Annotated[str, m.Minimum], r"Root\.spec\.x: say Minimum\(\.\.\.\), with its value"),
        (Annotated[int, m.Default("3")], r"Root\.spec\.x: default '3' is not a integer"),
        (Annotated[int, m.Default(None)], r"Root\.spec\.x: default None is not a integer"),
        (Annotated[str, m.Enum("a", 1)], r"Root\.spec\.x: enum value 1 is not a string"),
        (Annotated[list[int], m.Default([(1, 2j)])], r"Root\.spec\.x: 2j is not a JSON value"),
        (
            Annotated[list[Nested], m.ListType("map")],
            r"Root\.spec\.x: ListType\('map'\) needs ListMapKeys",
        ),
        (Annotated[list[str], m.ListType("map"), m.ListMapKeys("a")], r"needs a list of objects"),
        (
            Annotated[list[Nested], m.ListType("map"), m.ListMapKeys("c")],
            r"Root\.spec\.x: list map keys \['c'\] are not fields of the items",
        ),
        (Annotated[list[Nested], m.ListMapKeys("a")], r"ListMapKeys needs ListType\('map'\)"),
        (Annotated[list[Nested], m.ListType("set")], r"ListType\('set'\) needs scalar items"),
    ],
)
def test_what_a_schema_cannot_express_is_an_error_naming_the_field(
    annotation: Any, error: str
) -> None:
    with pytest.raises(CRDError, match=error):
        field_schema(annotation)


def test_a_root_that_is_not_a_typeddict_or_dataclass_is_an_error() -> None:
    with pytest.raises(CRDError, match=r"dict\[str, Any\]: a kind's objects are a TypedDict"):
        schema_for(dict[str, Any])


# The Kind declaration and the CRD.


def test_the_crd_of_a_kind_with_two_versions() -> None:
    kind = m.Kind("example.com", "Policy", short_names=["pol"], categories=["all"], scope="Cluster")
    kind.version("v1beta1", Root, deprecated=True, deprecation_warning="use v1")
    kind.version(
        "v1",
        Root,
        storage=True,
        status_subresource=True,
        scale=m.Scale(label_selector_path=".status.selector"),
        printer_columns=[
            m.PrinterColumn("Size", ".spec.size", priority=1, description="d", format="f")
        ],
        selectable_fields=[".spec.size"],
        validations=[m.XValidation("self.metadata.name != 'x'", message="not x")],
    )
    crd = crd_for(kind)
    assert crd["metadata"] == {"name": "policies.example.com"}
    assert crd["spec"]["names"] == {
        "kind": "Policy",
        "listKind": "PolicyList",
        "plural": "policies",
        "singular": "policy",
        "shortNames": ["pol"],
        "categories": ["all"],
    }
    assert crd["spec"]["scope"] == "Cluster"
    v1, v1beta1 = crd["spec"]["versions"]  # sorted by name, as controller-gen sorts them
    assert (v1["name"], v1["storage"], v1["served"]) == ("v1", True, True)
    assert v1["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    assert v1["additionalPrinterColumns"] == [
        {
            "name": "Size",
            "jsonPath": ".spec.size",
            "type": "string",
            "priority": 1,
            "description": "d",
            "format": "f",
        }
    ]
    assert (v1beta1["storage"], v1beta1["deprecated"], v1beta1["deprecationWarning"]) == (
        False,
        True,
        "use v1",
    )
    assert "subresources" not in v1beta1
    assert v1["selectableFields"] == [{"jsonPath": ".spec.size"}]
    assert v1["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] == [
        {"rule": "self.metadata.name != 'x'", "message": "not x"}
    ]
    assert "x-kubernetes-validations" not in v1beta1["schema"]["openAPIV3Schema"]
    assert crd_file_name(kind) == "example.com_policies.yaml"


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Widget", "widgets"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Box", "boxes"),
        ("Match", "matches"),
        ("Status", "statuses"),
    ],
)
def test_plural_names(kind: str, plural: str) -> None:
    assert m.Kind("g", kind).plural == plural


def test_storage_versions() -> None:
    one = m.Kind("g", "One")
    one.version("v1", Root)
    assert crd_for(one)["spec"]["versions"][0]["storage"] is True  # the only version
    none = m.Kind("g", "None")
    with pytest.raises(CRDError, match="kind None: no version declared"):
        crd_for(none)
    two = m.Kind("g", "Two")
    two.version("v1", Root)
    two.version("v2", Root)
    with pytest.raises(
        CRDError, match=r"kind Two: exactly one version must say storage=True, not none"
    ):
        crd_for(two)
    both = m.Kind("g", "Both")
    both.version("v1", Root, storage=True)
    both.version("v2", Root, storage=True)
    with pytest.raises(CRDError, match=r"not \['v1', 'v2'\]"):
        crd_for(both)
    with pytest.raises(ValueError, match="version 'v1' is declared twice"):
        both.version("v1", Root)


def test_the_version_gives_the_gvk_handle() -> None:
    kind = m.Kind("example.com", "Handle")
    version = kind.version("v2", Root)
    assert version.gvk == GVK("example.com", "v2", "Handle")
    assert m.declared_kind(version.gvk) is kind
    # A module keeping only the GVK still declares the kind; two Kinds of one CRD are an error.
    assert find_kinds([{"H": version.gvk, "k": kind, "v": version, "x": 1}]) == [kind]
    twin = m.Kind("example.com", "Handle")
    with pytest.raises(CRDError, match=r"handles\.example\.com is declared by two different Kinds"):
        find_kinds([{"a": kind, "b": twin}])


def test_yaml_is_deterministic_and_loads_back() -> None:
    kind = m.Kind("example.com", "Doc")
    kind.version("v1", Root)
    text = crd_yaml(crd_for(kind))
    assert text == crd_yaml(crd_for(kind))
    assert text.startswith(
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    )
    assert yaml.safe_load(text) == crd_for(kind)


# The command.


def test_gen_crd_writes_one_file_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gen", "crd", "tests.markedkinds", "--output", str(tmp_path / "a")]) == 0
    assert main(["gen", "crd", "tests.markedkinds", "-o", str(tmp_path / "b")]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["markers.test_gadgets.yaml", "markers.test_widgets.yaml"]
    for name in names:  # deterministic: the same bytes twice
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    capsys.readouterr()
    assert main(["gen", "crd", "tests.markedkinds", "-o", "-"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["metadata"]["name"] for d in documents] == [
        "gadgets.markers.test",
        "widgets.markers.test",
    ]


def test_gen_crd_takes_a_python_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "api_file.py"
    source.write_text(
        "from typing import Any, TypedDict\n"
        "from reconcile.markers import Kind\n"
        "class Thing(TypedDict):\n    metadata: dict[str, Any]\n    spec: dict[str, int]\n"
        "THING = Kind('things.test', 'Thing').version('v1', Thing).gvk\n"
    )
    assert main(["gen", "crd", str(source), "-o", "-"]) == 0
    [crd] = yaml.safe_load_all(capsys.readouterr().out)
    assert crd["metadata"]["name"] == "things.things.test"


def test_gen_crd_bad_input_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad_union.py"
    bad.write_text(
        "from typing import TypedDict\nfrom reconcile.markers import Kind\n"
        "class Bad(TypedDict):\n    spec: int | str\n"
        "BAD = Kind('bad.test', 'Bad').version('v1', Bad).gvk\n"
    )
    assert main(["gen", "crd", str(bad), "-o", str(tmp_path / "out")]) == 2
    assert "reconcile gen crd: Bad.spec: int | str: a structural schema" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing half-written

    assert main(["gen", "crd", "no_such_module_here", "-o", "-"]) == 2
    assert "No module named 'no_such_module_here'" in capsys.readouterr().err
    assert main(["gen", "crd", str(tmp_path / "missing.py"), "-o", "-"]) == 2
    assert "no such Python file" in capsys.readouterr().err
    broken = tmp_path / "broken_kind.py"
    broken.write_text(
        "from reconcile.markers import Kind\nk = Kind('b.test', 'B')\n"
        "k.version('v1', dict)\nk.version('v1', dict)\n"
    )
    assert main(["gen", "crd", str(broken), "-o", "-"]) == 2
    assert "broken_kind.py does not import: ValueError: kind B: version 'v1' is declared twice" in (
        capsys.readouterr().err
    )
    assert main(["gen", "crd", "tests.builders", "-o", "-"]) == 2
    assert "no reconcile.markers.Kind in tests.builders" in capsys.readouterr().err


# The same declaration types the client's objects.

TYPED = """
from reconcile.gvk import GVK
from tests.markedkinds import WIDGET, Widget

reveal_type(WIDGET)
def wants(gvk: GVK[Widget]) -> None: ...
wants(WIDGET)
spec: Widget = {
    "apiVersion": "markers.test/v1", "kind": "Widget", "metadata": {}, "spec": {"sise": "small"}
}
"""


def test_the_declaration_types_the_handle(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(TYPED)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(probe),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert (
        'Revealed type is "reconcile.gvk.GVK[TypedDict(tests.markedkinds.Widget, {' in done.stdout
    ), done.stdout
    assert 'Extra key "sise" for TypedDict "WidgetSpec"' in done.stdout, done.stdout
    assert done.stdout.count("error:") == 1, done.stdout


def test_a_package_is_searched_with_every_module_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As a scaffolded project lays kinds out: PACKAGE/api/VERSION/KIND.py, imported by nobody.
    version = tmp_path / "walkedproject" / "api" / "v1"
    version.mkdir(parents=True)
    for package in (version.parents[1], version.parent, version):
        (package / "__init__.py").write_text("")
    (version / "gizmo.py").write_text(
        "from typing import Any, TypedDict\n"
        "from reconcile.markers import Kind\n"
        "class Gizmo(TypedDict):\n"
        "    metadata: dict[str, Any]\n"
        "    spec: dict[str, str]\n"
        'GIZMO = Kind("walk.example.com", "Gizmo").version("v1", Gizmo).gvk\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["gen", "crd", "walkedproject.api", "-o", "-"]) == 0
    assert "name: gizmos.walk.example.com" in capsys.readouterr().out
