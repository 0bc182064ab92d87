"""The TypedDict generator on small OpenAPI documents: how each schema form is written, and the
clear error for what it cannot express."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from reconcile.gen.cli import add_gen_parser
from reconcile.gen.types import SchemaError, render_types

REF = "#/components/schemas/"


def _document(schemas: dict[str, Any], paths: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "info": {"version": "1.99"},
        "components": {"schemas": schemas},
        "paths": paths or {},
    }


def _get(path: str, ref: str, group: str, version: str, kind: str) -> dict[str, Any]:
    schema = {"$ref": REF + ref}
    return {
        path: {
            "get": {
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": {
                    "group": group,
                    "version": version,
                    "kind": kind,
                },
                "responses": {"200": {"content": {"application/json": {"schema": schema}}}},
            }
        }
    }


META = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta": {
        "description": "ListMeta describes metadata. Second sentence.",
        "type": "object",
        "properties": {"continue": {"type": "string"}},
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "oneOf": [{"type": "string"}, {"type": "number"}]
    },
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object"},
}

WIDGET = {
    "io.example.api.shop.v1.Widget": {
        "description": "Widget is sold, e.g. online. It has parts.",
        "type": "object",
        "required": ["spec"],
        "properties": {
            "metadata": {
                "default": {},
                "allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
            },
            "spec": {"allOf": [{"$ref": REF + "io.example.api.shop.v1.WidgetSpec"}]},
        },
    },
    "io.example.api.shop.v1.WidgetSpec": {
        "type": "object",
        "required": ["size"],
        "properties": {
            "size": {"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
            "price": {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"},
            "since": {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "ratio": {"type": "number", "format": "double"},
            "raw": {"$ref": REF + "io.k8s.apimachinery.pkg.runtime.RawExtension"},
            "anything": {"description": "Free-form JSON."},
            "parts": {"type": "array", "items": {"$ref": REF + "io.example.api.shop.v1.Part"}},
        },
    },
    "io.example.api.shop.v1.Part": {
        "type": "object",
        "properties": {
            "of": {"$ref": REF + "io.example.api.shop.v1.Part"},
            "from": {"type": "string"},
        },
    },
}


def _render(extra: dict[str, Any] | None = None) -> dict[str, str]:
    paths = _get("/apis/shop.example.io/v1/widgets/{name}", *_WIDGET_GVK)
    return render_types({"apis/shop": _document({**META, **WIDGET, **(extra or {})}, paths)})


_WIDGET_GVK = ("io.example.api.shop.v1.Widget", "shop.example.io", "v1", "Widget")


def test_each_package_version_is_a_module_with_its_package() -> None:
    assert sorted(_render()) == ["meta/__init__.py", "meta/v1.py", "shop/__init__.py", "shop/v1.py"]


def test_fields_map_to_python_types_and_required_ones_are_marked() -> None:
    shop = _render()["shop/v1.py"]
    assert "class WidgetSpec(TypedDict, total=False):" in shop
    for line in (
        "size: Required[int | str]",
        "price: str",
        "since: str",
        "tags: list[str]",
        "counts: dict[str, int]",
        "ratio: float",
        "raw: dict[str, Any]",
        "anything: Any",
        "spec: Required[WidgetSpec]",
        'metadata: "meta_v1.ObjectMeta"',
    ):
        assert f"    {line}\n" in shop, line
    assert "from reconcile.api.meta import v1 as meta_v1" in shop


def test_docstrings_are_the_first_sentence() -> None:
    shop = _render()["shop/v1.py"]
    assert '"""Widget is sold, e.g. online."""' in shop
    assert '"""Free-form JSON."""' in shop


def test_a_served_kind_gets_a_typed_handle() -> None:
    shop = _render()["shop/v1.py"]
    assert 'WIDGET: Final[GVK[Widget]] = GVK("shop.example.io", "v1", "Widget")' in shop
    assert "PART:" not in shop  # no path serves it


def test_keyword_fields_use_the_call_form_and_cycles_a_forward_reference() -> None:
    shop = _render()["shop/v1.py"]
    call_form = 'Part = TypedDict(\n    "Part",\n    {\n        "from": str,\n        "of": "Part",'
    assert call_form in shop
    meta = _render()["meta/v1.py"]
    assert '"continue": str,' in meta
    assert '"""ListMeta describes metadata."""' in meta


def test_the_generated_modules_run_and_type_nothing_at_run_time() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_render()["shop/v1.py"], "shop/v1.py", "exec"), namespace)
    widget = namespace["Widget"](spec={"size": 1})
    assert widget == {"spec": {"size": 1}}
    assert type(widget) is dict
    assert namespace["WIDGET"].kind == "Widget"


def test_meta_carries_the_generic_object_list() -> None:
    meta = _render()["meta/v1.py"]
    assert "class ObjectList(TypedDict, Generic[ItemT], total=False):" in meta
    assert "items: Required[list[ItemT]]" in meta


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param(
            {"anyOf": [{"type": "string"}, {"type": "object"}]},
            r"io\.example\.api\.shop\.v1\.Gadget\.mode: cannot express",
            id="anyOf",
        ),
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "string"}}},
            r"Gadget\.mode: an inline object with properties has no class",
            id="inline object",
        ),
        pytest.param(
            {"$ref": REF + "io.example.api.shop.v1.Missing"},
            r"Gadget\.mode: references io\.example\.api\.shop\.v1\.Missing, which no document",
            id="dangling reference",
        ),
    ],
)
def test_a_schema_it_cannot_express_is_an_error_naming_the_field(
    schema: dict[str, Any], message: str
) -> None:
    gadget = {"io.example.api.shop.v1.Gadget": {"type": "object", "properties": {"mode": schema}}}
    with pytest.raises(SchemaError, match=message):
        _render(gadget)


def test_the_command_without_a_kubeconfig_or_a_local_apiserver_says_what_to_give(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser(prog="reconcile")
    add_gen_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["gen", "types"])
    assert args.func(args) == 2
    assert "give --kubeconfig" in capsys.readouterr().err


def test_gen_needs_a_generator_named() -> None:
    parser = argparse.ArgumentParser(prog="reconcile")
    add_gen_parser(parser.add_subparsers(dest="command", required=True))
    with pytest.raises(SystemExit):
        parser.parse_args(["gen"])
