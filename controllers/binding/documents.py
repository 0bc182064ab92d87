"""Documents are the YAML or JSON texts a fieldOverrider edits inside a string field of a template.

The text is the tenant's (a ConfigMap value, say) and is parsed on the event loop for every target
cluster on every retry, so it is bounded before anything is built from it (issue #26 item 3): a
298-byte YAML value whose anchors nest aliases ("billion laughs") expanded to 17.9 MB in 23.4 s.

- at most ``MAX_DOCUMENT_BYTES`` (256 KiB) of UTF-8;
- YAML anchors and aliases are refused, found in one linear pass over libyaml's events before any
  node is composed (sigs.k8s.io/yaml, which Karmada uses, expands aliases; Kubernetes objects
  never need them);
- at most ``MAX_DOCUMENT_DEPTH`` (100) nested collections and ``MAX_DOCUMENT_NODES`` (10,000)
  values, YAML or JSON: building values is Python, 2 s for 256 KiB of one-digit list items.

libyaml (PyYAML's C parser) does the parsing: the pure-Python one took 0.7 s for 146 KB here.
"""

from __future__ import annotations

import json
from typing import Any, Final

import yaml

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_NODES",
    "DocumentError",
    "load_json",
    "load_yaml",
]

MAX_DOCUMENT_BYTES: Final = 256 * 1024
MAX_DOCUMENT_DEPTH: Final = 100
MAX_DOCUMENT_NODES: Final = 10_000
"""Scalars and collections: building them is Python (2 s for 130,000 one-digit items)."""

# PyYAML without libyaml (a build from source without the headers) falls back to Python: slower,
# and stricter on a few texts (a tab after a scalar), refused then as not YAML.
_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DocumentError(ValueError):
    """A document that is too large, too deep, or uses YAML anchors or aliases."""


def _check_size(text: str) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"the document has {size} bytes, more than {MAX_DOCUMENT_BYTES}")


def _too_deep() -> DocumentError:
    return DocumentError(f"the document nests more than {MAX_DOCUMENT_DEPTH} levels")


def _too_many() -> DocumentError:
    return DocumentError(f"the document has more than {MAX_DOCUMENT_NODES} values")


def _check_events(text: str) -> None:
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            line = event.start_mark.line + 1 if event.start_mark else 0
            raise DocumentError(f"YAML anchors and aliases are not supported (line {line})")
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_DOCUMENT_NODES:
                raise _too_many()
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DOCUMENT_DEPTH:
                raise _too_deep()
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_yaml(text: str) -> Any:
    """The YAML document ``text``, as ``yaml.safe_load`` reads it.

    Raises:
        DocumentError: over the size or depth bound, or with an anchor or alias.
        yaml.YAMLError: not YAML (or more than one document).
    """
    _check_size(text)
    _check_events(text)
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        raise
    except (ArithmeticError, LookupError, ValueError, TypeError, AttributeError) as error:
        # PyYAML's constructors fail on some explicit tags without a ConstructorError
        # (``!!int`` alone: IndexError; ``!!bool``: KeyError).
        raise DocumentError(f"the YAML document cannot be constructed: {error!r}") from error


def load_json(text: str) -> Any:
    """The JSON document ``text``.

    Raises:
        DocumentError: over the size or depth bound.
        json.JSONDecodeError: not JSON.
    """
    _check_size(text)
    try:
        document = json.loads(text)
    except RecursionError as error:
        raise _too_deep() from error
    _check_shape(document)
    return document


def _check_shape(value: Any) -> None:
    """Refuse ``value`` when too deep or too large (walked iteratively: deep JSON may parse)."""
    nodes, stack = 0, [(value, 1)]
    while stack:
        current, level = stack.pop()
        nodes += 1
        if nodes > MAX_DOCUMENT_NODES:
            raise _too_many()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if level > MAX_DOCUMENT_DEPTH:
            raise _too_deep()
        stack.extend((child, level + 1) for child in children)
