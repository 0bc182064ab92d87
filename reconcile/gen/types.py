"""Types generates ``reconcile.api``: a module of TypedDicts per API group version, from the
kube-apiserver's OpenAPI v3 documents, and a typed GVK handle per kind the apiserver serves.

Objects stay plain dicts at run time; only type checkers see the TypedDicts. Each definition
(``io.k8s.api.apps.v1.Deployment``) becomes a ``TypedDict`` with ``total=False`` in the module of
its package and version (``reconcile/api/apps/v1.py``), the schema's ``required`` fields marked
``Required[...]``, the first sentence of each description as docstring. Scalars map as
client-gen's do: int-or-string to ``int | str``, Quantity and Time to ``str``, objects without
properties (RawExtension, FieldsV1) to ``dict[str, Any]``, free-form JSON to ``Any``.

The output is deterministic (sorted, wrapped at the repository's line length, ruff-formatted as
written) so that regenerating against the same Kubernetes minor gives the same files.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from reconcile.client import Client
from reconcile.gen.openapi import GROUP_VERSIONS, fetch_openapi

__all__ = ["SchemaError", "generate_types", "render_types", "write_types"]

PACKAGE: Final = "reconcile.api"
LINE_LENGTH: Final = 100

_REF_PREFIX: Final = "#/components/schemas/"

# Definitions that are written inline, never as classes (apimachinery's custom JSON types).
_INLINE: Final[Mapping[str, str]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int | str",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "str",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "str",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "str",
}

_SCALARS: Final[Mapping[str, str]] = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
}

# Names the generated modules import; a definition of the same name would shadow them.
_RESERVED: Final = frozenset(
    {"Any", "Final", "Generic", "GVK", "Required", "TYPE_CHECKING", "TypedDict", "TypeVar"}
)


class SchemaError(ValueError):
    """A schema the generator cannot express as a Python type; the message names the field."""


@dataclass(frozen=True, slots=True)
class _Module:
    package: str  # "apps"
    version: str  # "v1"

    @property
    def alias(self) -> str:
        """The name other generated modules import this one as."""
        return f"{self.package}_{self.version}"

    @property
    def path(self) -> str:
        return f"{self.package}/{self.version}.py"


@dataclass(slots=True)
class _Definition:
    name: str  # the OpenAPI name, io.k8s.api.apps.v1.Deployment
    schema: dict[str, Any]
    module: _Module
    cls: str  # Deployment


@dataclass(slots=True)
class _Context:
    """What one module's rendering needs: where it is and which classes precede the current one."""

    module: _Module
    inline: Mapping[str, Mapping[str, Any]]  # definitions that are no class, by name
    defined: set[str] = field(default_factory=set)
    imports: set[_Module] = field(default_factory=set)


def render_types(documents: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The generated files, by path relative to the ``reconcile/api`` directory.

    ``documents`` are OpenAPI v3 documents by group version (``fetch_openapi``'s answer); a
    definition several of them carry is taken from the first.

    Raises:
        SchemaError: a schema the generator cannot express, naming the definition and field.
    """
    definitions = _definitions(documents)
    inline = _inline_schemas(documents, definitions)
    handles = _handles(documents, definitions)
    version = _kubernetes_version(documents)
    modules = sorted({d.module for d in definitions.values()}, key=lambda m: m.path)
    files: dict[str, str] = {}
    for module in modules:
        members = {n: d for n, d in definitions.items() if d.module == module}
        context = _Context(module, inline)
        files[module.path] = _render_module(context, members, definitions, handles, version)
    for package in sorted({m.package for m in modules}):
        files[f"{package}/__init__.py"] = (
            f'"""The {package} API group\'s objects as TypedDicts, one module per version '
            '(generated\nby ``reconcile gen types``)."""\n'
        )
    return files


def write_types(files: Mapping[str, str], output: Path) -> list[Path]:
    """Write ``render_types``' files under ``output`` (the ``reconcile/api`` directory)."""
    written = []
    for relative, text in sorted(files.items()):
        path = output / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


async def generate_types(
    client: Client, output: Path, group_versions: Iterable[str] = GROUP_VERSIONS
) -> list[Path]:
    """Fetch the OpenAPI documents of ``group_versions`` through ``client`` and write the modules
    under ``output``; returns the files written.

    Raises:
        OpenAPIError: a document the apiserver does not serve.
        SchemaError: a schema the generator cannot express.
    """
    documents = await fetch_openapi(client, group_versions)
    return write_types(render_types(documents), output)


def _kubernetes_version(documents: Mapping[str, Mapping[str, Any]]) -> str:
    versions = {str((d.get("info") or {}).get("version", "")) for d in documents.values()}
    return ", ".join(sorted(v for v in versions if v)) or "unknown"


def _definitions(documents: Mapping[str, Mapping[str, Any]]) -> dict[str, _Definition]:
    definitions: dict[str, _Definition] = {}
    for document in documents.values():
        schemas = (document.get("components") or {}).get("schemas") or {}
        for name, schema in schemas.items():
            if name in definitions or name in _INLINE or not _is_class(schema):
                continue
            *_, package, version, cls = name.split(".")
            if cls in _RESERVED or keyword.iskeyword(cls):
                raise SchemaError(f"{name}: the class name {cls!r} would shadow a Python name")
            module = _Module(package.replace("-", "_"), version)
            definitions[name] = _Definition(name, schema, module, cls)
    return definitions


def _inline_schemas(
    documents: Mapping[str, Mapping[str, Any]], definitions: Mapping[str, _Definition]
) -> dict[str, Mapping[str, Any]]:
    inline: dict[str, Mapping[str, Any]] = {}
    for document in documents.values():
        schemas = (document.get("components") or {}).get("schemas") or {}
        for name, schema in schemas.items():
            if name not in definitions and name not in _INLINE:
                inline.setdefault(name, schema)
    return inline


def _is_class(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" and bool(schema.get("properties"))


def _handles(
    documents: Mapping[str, Mapping[str, Any]], definitions: Mapping[str, _Definition]
) -> dict[str, tuple[str, str, str]]:
    """The served kinds: definition name to (group, version, kind), from the paths that get
    one object (``.../{name}``, the action ``get``)."""
    handles: dict[str, tuple[str, str, str]] = {}
    for document in documents.values():
        for path, item in (document.get("paths") or {}).items():
            operation = (item or {}).get("get") or {}
            gvk = operation.get("x-kubernetes-group-version-kind")
            if operation.get("x-kubernetes-action") != "get" or not path.endswith("/{name}"):
                continue
            ref = _response_ref(operation)
            if ref in definitions and isinstance(gvk, dict):
                handles[ref] = (str(gvk["group"]), str(gvk["version"]), str(gvk["kind"]))
    return handles


def _response_ref(operation: Mapping[str, Any]) -> str:
    content = ((operation.get("responses") or {}).get("200") or {}).get("content") or {}
    schema = (content.get("application/json") or {}).get("schema") or {}
    return str(schema.get("$ref", "")).removeprefix(_REF_PREFIX)


def _render_module(
    context: _Context,
    members: Mapping[str, _Definition],
    definitions: Mapping[str, _Definition],
    handles: Mapping[str, tuple[str, str, str]],
    version: str,
) -> str:
    module = context.module
    classes = []
    for name in _ordered(members):
        classes.append(_render_class(members[name], definitions, context))
        context.defined.add(members[name].cls)
    if module == _Module("meta", "v1"):
        classes.append(_OBJECT_LIST)
    constants = [
        _render_handle(definitions[name].cls, gvk)
        for name, gvk in sorted(handles.items(), key=lambda item: item[1][2])
        if definitions[name].module == module
    ]
    names = sorted(
        [d.cls for d in members.values()]
        + [_constant(gvk[2]) for n, gvk in handles.items() if definitions[n].module == module]
        + (["ObjectList"] if module == _Module("meta", "v1") else [])
    )
    return _module_text(module, version, context, classes, constants, names)


def _module_text(
    module: _Module,
    version: str,
    context: _Context,
    classes: list[str],
    constants: list[str],
    names: list[str],
) -> str:
    group_version = f"{module.package}/{module.version}"
    lines = [
        f'"""Kubernetes {group_version} objects as TypedDicts, generated by ``reconcile gen '
        f"types``\nfrom the kube-apiserver's OpenAPI v3 (Kubernetes {version}). Do not edit: "
        'regenerate."""',
        "",
        "from typing import TYPE_CHECKING, Any, Final, Generic, Required, TypedDict, TypeVar",
        "",
        "from reconcile.gvk import GVK",
        "",
    ]
    imports = sorted(context.imports, key=lambda m: m.path)
    if imports:
        lines.append("if TYPE_CHECKING:")
        lines += [
            f"    from {PACKAGE}.{m.package} import {m.version} as {m.alias}" for m in imports
        ]
        lines.append("")
    lines.append("__all__ = [")
    lines += [f'    "{name}",' for name in names]
    lines += ["]", "", ""]
    text = "\n".join(lines) + "\n" + "\n\n\n".join(classes) + "\n"
    if constants:
        text += "\n\n" + "\n".join(constants) + "\n"
    return _drop_unused_imports(text)


def _drop_unused_imports(text: str) -> str:
    header, _, body = text.partition("from reconcile.gvk import GVK\n")
    used = [
        name
        for name in ("TYPE_CHECKING", "Any", "Final", "Generic", "Required", "TypedDict", "TypeVar")
        if re.search(rf"\b{name}\b", body)
    ]
    header = header.replace(
        "TYPE_CHECKING, Any, Final, Generic, Required, TypedDict, TypeVar", ", ".join(used)
    )
    gvk = "from reconcile.gvk import GVK\n" if "GVK(" in body else ""
    if not gvk:
        header = header.rstrip("\n") + "\n"
    return header + gvk + body


def _ordered(members: Mapping[str, _Definition]) -> list[str]:
    """Definitions in dependency order (a class before those whose fields name it) so the
    annotations evaluate when the class is made; a cycle leaves a quoted forward reference."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for ref in sorted(_refs(members[name].schema)):
            if ref in members:
                visit(ref)
        order.append(name)

    for name in sorted(members):
        visit(name)
    return order


def _refs(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        found = {str(schema["$ref"]).removeprefix(_REF_PREFIX)} if "$ref" in schema else set()
        for value in schema.values():
            found |= _refs(value)
        return found
    if isinstance(schema, list):
        return set().union(*(_refs(item) for item in schema))
    return set()


def _render_class(
    definition: _Definition, definitions: Mapping[str, _Definition], context: _Context
) -> str:
    schema = definition.schema
    required = set(schema.get("required") or ())
    fields = []
    for prop, prop_schema in sorted(schema["properties"].items()):
        where = f"{definition.name}.{prop}"
        annotation = _annotation(prop_schema, definitions, context, where)
        if prop in required:
            annotation = f"Required[{annotation}]"
        fields.append((prop, annotation, _sentence(prop_schema.get("description", ""))))
    doc = _sentence(schema.get("description", "")) or f"A {definition.cls}."
    if all(prop.isidentifier() and not keyword.iskeyword(prop) for prop, _, _ in fields):
        return _class_syntax(definition.cls, doc, fields)
    return _functional_syntax(definition.cls, doc, fields)


def _class_syntax(cls: str, doc: str, fields: list[tuple[str, str, str]]) -> str:
    lines = [f"class {cls}(TypedDict, total=False):", _docstring(doc, 4), ""]
    for prop, annotation, description in fields:
        lines.append(f"    {prop}: {annotation}")
        if description:
            lines.append(_docstring(description, 4))
    return "\n".join(lines)


def _functional_syntax(cls: str, doc: str, fields: list[tuple[str, str, str]]) -> str:
    # A field named like a keyword (``continue``, ``from``) or not an identifier (``$ref``)
    # can only be declared through the call form, which carries no field docstrings.
    lines = [f"{cls} = TypedDict(", f'    "{cls}",', "    {"]
    lines += [f'        "{prop}": {annotation},' for prop, annotation, _ in fields]
    lines += ["    },", "    total=False,", ")", _docstring(doc, 0)]
    return "\n".join(lines)


def _annotation(
    schema: Mapping[str, Any], definitions: Mapping[str, _Definition], context: _Context, where: str
) -> str:
    ref = _single_ref(schema)
    if ref is not None:
        return _reference(ref, definitions, context, where)
    kind = schema.get("type")
    if kind == "array":
        return f"list[{_annotation(schema.get('items') or {}, definitions, context, where)}]"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return f"dict[str, {_annotation(values, definitions, context, where)}]"
        if schema.get("properties"):
            raise SchemaError(f"{where}: an inline object with properties has no class to name")
        return "dict[str, Any]"
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    if kind is None and not schema.get("oneOf") and not schema.get("anyOf"):
        return "Any"  # free-form JSON (apiextensions' JSON, x-kubernetes-preserve-unknown-fields)
    if schema.get("format") == "int-or-string":
        return "int | str"
    raise SchemaError(f"{where}: cannot express {_short(schema)} as a Python type")


def _single_ref(schema: Mapping[str, Any]) -> str | None:
    if "$ref" in schema:
        return str(schema["$ref"]).removeprefix(_REF_PREFIX)
    all_of = schema.get("allOf") or []
    if len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).removeprefix(_REF_PREFIX)
    if all_of:
        raise SchemaError(f"allOf of {len(all_of)} schemas has no Python type")
    return None


def _reference(
    ref: str, definitions: Mapping[str, _Definition], context: _Context, where: str
) -> str:
    if ref in _INLINE:
        return _INLINE[ref]
    target = definitions.get(ref)
    if target is None:
        return _inline_reference(ref, definitions, context, where)
    if target.module != context.module:
        context.imports.add(target.module)
        return f'"{target.module.alias}.{target.cls}"'
    return target.cls if target.cls in context.defined else f'"{target.cls}"'


def _inline_reference(
    ref: str, definitions: Mapping[str, _Definition], context: _Context, where: str
) -> str:
    # A definition that is no class (JSON, RawExtension, ...) is written as what it holds.
    inline = context.inline.get(ref)
    if inline is None:
        raise SchemaError(f"{where}: references {ref}, which no document defines")
    return _annotation(inline, definitions, context, where)


def _short(schema: Mapping[str, Any]) -> str:
    text = repr({k: v for k, v in schema.items() if k != "description"})
    return text if len(text) <= 120 else text[:117] + "..."


# Double quotes would end a docstring; typographic ones are ambiguous to ruff (RUF001).
_QUOTES: Final = ('"', "\u2018", "\u2019", "\u201c", "\u201d")
_SENTENCE_END: Final = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)\.(\s|$)")


def _sentence(description: str) -> str:
    """The first sentence of a description, on one line."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    match = _SENTENCE_END.search(paragraph)
    sentence = paragraph[: match.start() + 1] if match else paragraph
    for quote in _QUOTES:
        sentence = sentence.replace(quote, "'")
    return sentence.replace("\\", "\\\\")


def _docstring(text: str, indent: int) -> str:
    prefix = " " * indent
    if len(prefix) + len(text) + 6 <= LINE_LENGTH:
        return f'{prefix}"""{text}"""'
    # Room for the quotes on the first and the last line alike.
    lines = textwrap.wrap(text, LINE_LENGTH - indent - 6, break_on_hyphens=False)
    body = f"\n{prefix}".join(lines)
    if len(prefix) + len(lines[-1]) + 3 > LINE_LENGTH:
        return f'{prefix}"""{body}\n{prefix}"""'
    return f'{prefix}"""{body}"""'


def _constant(kind: str) -> str:
    """``DEPLOYMENT`` for Deployment, ``CONFIG_MAP`` for ConfigMap, ``API_SERVICE`` for
    APIService."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", kind).upper()


def _render_handle(cls: str, gvk: tuple[str, str, str]) -> str:
    group, version, kind = gvk
    arguments = f'"{group}", "{version}", "{kind}"'
    line = f"{_constant(kind)}: Final[GVK[{cls}]] = GVK({arguments})"
    if len(line) <= LINE_LENGTH:
        return line
    return f"{_constant(kind)}: Final[GVK[{cls}]] = GVK(\n    {arguments}\n)"


_OBJECT_LIST: Final = '''ItemT = TypeVar("ItemT")


class ObjectList(TypedDict, Generic[ItemT], total=False):
    """A List of one kind's objects, as a list answers: a DeploymentList is an
    ``ObjectList[Deployment]``."""

    apiVersion: str
    kind: str
    metadata: ListMeta
    items: Required[list[ItemT]]'''
